"""Small builders shared by the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def generic_row(i: int, **over: Any) -> dict[str, Any]:
    row = {
        "model": f"model-{i % 3}",
        "benchmark": "bench-a" if i % 2 else "bench-b",
        "prompt_id": f"p{i}",
        "prompt": f"prompt number {i}",
        "response": f"response number {i}",
        "judge_label": ("harmful", "safe", "ambiguous")[i % 3],
        "judge": "judge-x",
    }
    row.update(over)
    return row


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    import csv

    cols = list(rows[0])
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    return path


def use_shared_server(root: Path) -> None:
    """Make a workspace made by `annotate init` use one shared Label Studio server for everyone
    (``[labelstudio] one_server_per_person = false``): what the tests of route and pull logic
    against one fake server need."""
    config = root / "annotate.toml"
    text = config.read_text(encoding="utf-8")
    assert "one_server_per_person = true" in text
    config.write_text(text.replace("one_server_per_person = true", "one_server_per_person = false"), encoding="utf-8")


def design_strata(doc: dict[str, Any]) -> Any:
    """The strata of a design.json document as the estimators take them
    (``stats.scoring.strata.DESIGN_STRATA_COLUMNS``), for tests that build a design by hand."""
    import pandas as pd

    from annotate.stats.scoring.strata import DESIGN_STRATA_COLUMNS

    rows = [{**s, "round": r["round"]} for r in doc["rounds"] for s in r["strata"]]
    return pd.DataFrame(rows).reindex(columns=list(DESIGN_STRATA_COLUMNS))


def pull_task_files(
    runner: Any,
    prefix: list[str],
    ws: Path,
    tmp: Path,
    say: Any,
    *,
    reviewers: tuple[str, ...] = ("A1", "A2"),
    round_name: str = "r1",
) -> None:
    """Each reviewer labels every task of their task file (``route --to-file``) and it is pulled.

    ``say(who, task)`` gives the verdict of reviewer ``who`` on a task (its ``data`` as routed), or the
    whole Label Studio ``result`` list of their answer (a list: more questions than the verdict);
    the export is what Label Studio writes for those annotations (``completed_by`` the reviewer's
    own user), pulled with ``pull --from-file``.
    """
    from annotate.cli import cli

    for k, who in enumerate(reviewers):
        tasks = json.loads((ws / "tasks" / round_name / f"{who}.json").read_text())
        export = [
            {
                "id": 1000 + n,
                "data": task["data"],
                "meta": task["meta"],
                "annotations": [{"id": 5000 + n, "completed_by": 7 + k, "result": _result(say(who, task))}],
            }
            for n, task in enumerate(tasks)
        ]
        path = tmp / f"export-{who}.json"
        path.write_text(json.dumps(export))
        args = [*prefix, "pull", "--round", round_name, "--from-file", str(path), "--annotator", who]
        result = runner.invoke(cli, args)
        assert result.exit_code == 0, (args, result.output, result.stderr)


def _result(answer: Any) -> list[dict[str, Any]]:
    from annotate.labelstudio.labelconfig import choices_result

    return answer if isinstance(answer, list) else choices_result(answer)


@pytest.fixture(name="db_url")
def sqlite_only_db_url(tmp_path: Path) -> str:
    """One real SQLite store, for a module whose subject is not the store (hostile input, statistics,
    signatures): imported there, it replaces conftest's two lanes. The store's own tests, and the
    transactional paths of ingest, pull, import and adjudication, keep running on PostgreSQL too."""
    return f"sqlite:///{tmp_path / 'store.db'}"
