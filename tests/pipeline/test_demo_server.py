"""`annotate demo` with a real Label Studio: labels replayed through the API as the annotators."""

from __future__ import annotations

import json

import pytest

from annotate.pipeline.demo import run_demo
from tests.ls_fixture import golden_template_dir, label_studio_or_skip

pytestmark = pytest.mark.labelstudio


def test_demo_with_label_studio(tmp_path):
    label_studio_or_skip()
    lines: list[str] = []
    result = run_demo(
        tmp_path / "ws", offline=False, keep_server=False, echo=lines.append, seed_from=golden_template_dir()
    )
    assert any("Label Studio ready: a server of their own for each of A1, A2, E1" in line for line in lines)
    assert any("from Label Studio" in line for line in lines)
    assert result.alpha_pipeline == pytest.approx(result.alpha_direct, abs=1e-12)
    assert result.final_matches == result.final_total > 200
    assert result.verified and result.url is None  # the server was stopped
    manifest = json.loads((result.export / "manifest.json").read_text())
    state = tmp_path / "ws" / ".annotate"
    servers = sorted((state / "reviewer-servers").glob("[AE]*/annotate-secrets.json"))
    assert [p.parent.name for p in servers] == ["A1", "A2", "E1"]  # one server each, none shared
    assert not (state / "labelstudio").exists()
    secret_texts = []
    for path in servers:
        secrets = json.loads(path.read_text())
        secret_texts += [secrets["token"], secrets["admin_password"]]
    for sheet in sorted((state / "access").glob("*.txt")):
        secret_texts.append(sheet.read_text().split("Password:")[1].split()[0])
    assert len(secret_texts) == 9 and len(set(secret_texts)) == 9  # every server and person its own
    for f in result.export.iterdir():
        text = f.read_text(encoding="utf-8", errors="replace")
        assert not any(secret in text for secret in secret_texts), f.name
        assert "127.0.0.1:" not in text, f"a server URL in {f.name}"
    assert manifest["command"] == ["annotate", "demo"]
