"""The house rules of .ci/house_rules.py hold (no hidden imports in pipeline/ and audit/, no module
over 1,000 lines, no document cited outside the repository), and the script can fail."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "house_rules.py"


def test_the_house_rules_hold():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout


def test_a_hidden_import_is_found(tmp_path):
    spec = importlib.util.spec_from_file_location("house_rules", SCRIPT)
    assert spec and spec.loader
    rules = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rules)
    module = ROOT / "annotate" / "pipeline" / "_probe_hidden_import.py"
    module.write_text("def f():\n    from annotate.errors import InputError\n    return InputError\n")
    try:
        found = rules.hidden_imports(module)
    finally:
        module.unlink()
    assert found == ["annotate/pipeline/_probe_hidden_import.py:2: import of annotate.* inside a function"]
