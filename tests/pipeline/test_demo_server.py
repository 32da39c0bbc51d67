"""`annotate demo` with a real Label Studio: labels replayed through the API as the annotators."""

from __future__ import annotations

import json

import pytest

from annotate.pipeline.demo import run_demo
from tests.ls_fixture import golden_data_dir, label_studio_or_skip

pytestmark = pytest.mark.labelstudio


def test_demo_with_label_studio(tmp_path):
    label_studio_or_skip()
    lines: list[str] = []
    result = run_demo(tmp_path / "ws", offline=False, keep_server=False, echo=lines.append, seed_from=golden_data_dir())
    assert any("Label Studio ready" in line for line in lines)
    assert any("from Label Studio" in line for line in lines)
    assert result.alpha_pipeline == pytest.approx(result.alpha_direct, abs=1e-12)
    assert result.final_matches == result.final_total > 200
    assert result.verified and result.url is None  # the server was stopped
    manifest = json.loads((result.export / "manifest.json").read_text())
    secrets = json.loads((tmp_path / "ws" / ".annotate" / "labelstudio" / "annotate-secrets.json").read_text())
    for f in result.export.iterdir():
        text = f.read_text(encoding="utf-8", errors="replace")
        assert secrets["token"] not in text and secrets["admin_password"] not in text, f.name
        assert "127.0.0.1:" not in text, f"a server URL in {f.name}"
    assert manifest["command"] == ["annotate", "demo"]
