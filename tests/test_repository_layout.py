"""The repository's top level: the canonical label config, tasks/ and exports/, the root as a ready workspace."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from annotate.cli import cli
from tests.helpers import generic_row, write_jsonl

REPO = Path(__file__).resolve().parents[1]


def test_the_package_ships_the_root_label_config_itself():
    shipped = resources.files("annotate").joinpath("data", "label_config.xml").read_bytes()
    assert shipped == (REPO / "label_config.xml").read_bytes()
    in_checkout = REPO / "annotate" / "data" / "label_config.xml"
    # One file: in the repository the package's copy is a link to the root file, never a second copy.
    assert in_checkout.is_symlink() and in_checkout.resolve() == (REPO / "label_config.xml").resolve()


def test_tasks_and_exports_are_at_the_top_level_with_a_readme():
    for name in ("tasks", "exports"):
        assert (REPO / name / "README.md").is_file()
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8")
    assert "/tasks/*" in ignored and "!/tasks/README.md" in ignored
    assert "/exports/*" in ignored and "!/exports/README.md" in ignored


def test_the_repository_root_is_a_ready_workspace(runner, tmp_path):
    """With nothing but the checkout: ingest, summary and a dry-run route work in the root.

    The database goes to a temporary file (--db) so the test leaves the checkout as it was.
    """
    db = f"sqlite:///{tmp_path / 'root.db'}"
    rows = [generic_row(i, judge="j") for i in range(30)]
    path = write_jsonl(tmp_path / "runs.jsonl", rows)
    base = ["-w", str(REPO), "--db", db]
    ingested = runner.invoke(cli, [*base, "ingest", str(path)])
    assert ingested.exit_code == 0, ingested.output + ingested.stderr
    summary = runner.invoke(cli, [*base, "summary", "--json"])
    assert summary.exit_code == 0 and len(json.loads(summary.output)["cells"]) == 6
    runner.invoke(cli, [*base, "annotators", "add", "a@example.org", "--offline"])
    dry = runner.invoke(cli, [*base, "route", "--round", "r1", "--annotators", "A1", "--dry-run"])
    assert dry.exit_code == 0 and "nothing was sent or recorded" in dry.output


def test_init_still_makes_a_fresh_workspace_anywhere(runner, tmp_path):
    ws = tmp_path / "elsewhere"
    assert runner.invoke(cli, ["init", str(ws)]).exit_code == 0
    assert (ws / "label_config.xml").read_bytes() == (REPO / "label_config.xml").read_bytes()
    for name in ("annotate.toml", "tasks", "exports", ".gitignore", ".annotate"):
        assert (ws / name).exists(), name
