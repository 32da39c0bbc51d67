"""The statistics packages import their submodules when a name is first used (PEP 562).

A name missing from a package's map would raise AttributeError only when some caller first
asks for it; these tests ask for every public name, in a fresh interpreter so that no earlier
import has filled the package's namespace already.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

LAZY_PACKAGES = ["annotate.stats.agreement", "annotate.stats.scoring"]

_PROBE = """
import importlib, json, sys
package = importlib.import_module(sys.argv[1])
loaded_at_import = sorted(m for m in sys.modules if m.startswith(sys.argv[1] + "."))
missing = [name for name in package.__all__ if not hasattr(package, name)]
unknown = [name for name in package._SUBMODULE if not hasattr(package, name)]
print(json.dumps({"missing": missing, "unknown": unknown, "loaded": loaded_at_import}))
"""


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_public_name_resolves_from_a_fresh_interpreter(package: str) -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE, package], capture_output=True, text=True, check=True)
    found = json.loads(out.stdout)
    assert found["missing"] == [], f"{package}.__all__ names its map cannot resolve"
    assert found["unknown"] == [], f"{package}._SUBMODULE names its submodules do not define"


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_the_package_loads_no_submodule_until_a_name_is_used(package: str) -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE, package], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["loaded"] == []


def test_a_name_no_submodule_defines_is_an_attribute_error() -> None:
    import annotate.stats.scoring as scoring

    with pytest.raises(AttributeError, match="no_such_name"):
        _ = scoring.no_such_name  # type: ignore[attr-defined]
    assert "corrected_scores" in dir(scoring)
