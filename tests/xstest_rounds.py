"""A workspace with both bundled XSTest judges and rounds reviewed offline by XSTest's own human labels.

The GPT-4 judge (``*_gpteval.csv``, bundled in the package) and the string-match judge
(``*_streval.csv``) labelled the same 2,250 responses. :func:`two_judge_workspace` ingests both and
adds two reviewers and an expert (offline); :func:`replay` answers a routed round's tasks with
XSTest's two real human annotations (as A1 and A2) or its final label (as the expert), through
Label Studio export files pulled back, as ``annotate demo --offline`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

from annotate.cli import cli
from tests.data_files import XSTEST, xstest_gpteval

MODELS = ("gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct")


def run(runner, prefix, *args):
    """One CLI call that must succeed (its output on failure)."""
    result = runner.invoke(cli, [*prefix, *args])
    assert result.exit_code == 0, (args, result.output, result.stderr)
    return result


def streval(model: str) -> Path:
    """The string-match judge's file of one XSTest model."""
    return XSTEST / "automated_evaluation_labels" / f"xstest_v2_completions_{model}_streval.csv"


def two_judge_workspace(runner, ws: Path) -> list[str]:
    """A new workspace at ``ws`` with both judges ingested, reviewers A1, A2 and expert E1; its CLI prefix."""
    run(runner, [], "init", str(ws))
    prefix = ["--workspace", str(ws)]
    run(runner, prefix, "ingest", "--format", "xstest", *[str(xstest_gpteval(m)) for m in MODELS])
    run(runner, prefix, "ingest", "--format", "xstest", *[str(streval(m)) for m in MODELS])
    for email in ("a1@demo.invalid", "a2@demo.invalid"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    run(runner, prefix, "annotators", "add", "lead@demo.invalid", "--expert", "--offline")
    return prefix


def replay(ws_path: Path, round_name: str, who: dict[str, str], *, experts_only: bool = False) -> None:
    """Each routed response's XSTest label (``who``: pseudonym -> XSTest column) as that annotator's export, pulled."""
    from annotate.config import open_workspace
    from annotate.pipeline._resolve import resolve_round
    from annotate.pipeline.demo import _replay, xstest_verdict
    from annotate.pipeline.session import session_for

    s = session_for(open_workspace(str(ws_path), None))
    try:
        round_row = resolve_round(s.store, round_name)
        items = s.store.round_items(int(round_row["id"]))
        meta = s.store.responses(["id", "meta", "category"]).rename(columns={"id": "response_id"})
        items = items.merge(meta, on="response_id", how="left", suffixes=("", "_r"))
        parsed = items.meta.map(lambda m: json.loads(m) if isinstance(m, str) else {})
        for col in ("annotation_1", "annotation_2", "final_label"):
            items[col] = [xstest_verdict(p.get(col), t) for p, t in zip(parsed, items.category, strict=True)]
        _replay(s, round_row, items, who, offline=True, only_expert_tasks=experts_only)
    finally:
        s.store.close()
