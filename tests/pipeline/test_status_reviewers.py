"""`annotate status --round R` while a round runs: per reviewer progress, time per task, agreement so far, flags.

A real SQLite store built through the CLI; the round is routed to the in-memory Label Studio
(tests/labelstudio_fake.py), labelled there as each reviewer's own user with Label Studio's
``lead_time``, and pulled. `status` itself must not reach Label Studio: it runs with a connect
that fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from annotate.cli import cli
from annotate.labelstudio.labelconfig import choices_result
from tests.helpers import generic_row, use_shared_server, write_jsonl
from tests.labelstudio_fake import FakeLabelStudio

REVIEWERS = ("A1", "A2", "A3")


@pytest.fixture
def fake() -> FakeLabelStudio:
    return FakeLabelStudio()


@pytest.fixture
def ws(tmp_path: Path, runner) -> Path:
    root = tmp_path / "ws"
    assert runner.invoke(cli, ["init", str(root)]).exit_code == 0
    use_shared_server(root)  # one fake Label Studio for everyone
    rows = []
    for m in ("model-a", "model-b"):
        for i in range(40):
            label = "ambiguous" if i < 5 else ("harmful" if i < 15 else "safe")
            rows.append(generic_row(i, model=m, benchmark="bench", judge_label=label, judge="j"))
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert runner.invoke(cli, ["-w", str(root), "ingest", str(path)]).exit_code == 0
    return root


def run(runner, ws: Path, fake: Any, *args: str, ok: bool = True):
    result = runner.invoke(cli, ["-w", str(ws), *args], obj={"connect": fake})
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr)
    return result


def _no_label_studio(*_: Any) -> Any:
    raise AssertionError("`annotate status` must read the store only, never Label Studio")


def status(runner, ws: Path, *args: str, ok: bool = True):
    return run(runner, ws, _no_label_studio, "status", *args, ok=ok)


def status_json(runner, ws: Path, *args: str) -> dict[str, Any]:
    return json.loads(status(runner, ws, "--round", "r1", "--json", *args).stdout)


def by_reviewer(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["annotator"]: r for r in out["reviewers"]}


class Round:
    """A round r1 routed to the fake Label Studio; reviewers label there as their own users."""

    def __init__(self, runner, ws: Path, fake: FakeLabelStudio, reviewers: tuple[str, ...] = REVIEWERS) -> None:
        self.runner, self.ws, self.fake = runner, ws, fake
        self.reviewers = reviewers
        for k in range(len(reviewers)):
            run(runner, ws, fake, "annotators", "add", f"rev{k + 1}@example.org")
        routed = run(
            runner,
            ws,
            fake,
            "route",
            "--round",
            "r1",
            "--annotators",
            ",".join(reviewers),
            "--clear-per-cell",
            "10",
            "--seed",
            "3",
            "--json",
        )
        self.n_items = json.loads(routed.stdout)["selected"]
        self.tasks = self._tasks()  # pseudonym -> [(task id, round item)] in the reviewer's own order

    def _tasks(self) -> dict[str, list[tuple[int, int]]]:
        from annotate.config import open_workspace
        from annotate.db.store import open_store

        with open_store(open_workspace(str(self.ws), None).db_url) as store:
            out: dict[str, list[tuple[int, int]]] = {}
            for p in store.ls_projects().itertuples():
                tasks = store.ls_tasks(int(p.id)).dropna(subset=["task_id"])
                out[str(p.pseudonym)] = list(
                    zip(tasks.task_id.astype(int), tasks.round_item_id.astype(int), strict=True)
                )
        return out

    def user(self, who: str) -> int:
        return self.fake.users[f"rev{self.reviewers.index(who) + 1}@example.org"]

    def label(self, who: str, n: int, verdict: Any, *, lead_time: Any = 20.0, skip: int = 0) -> None:
        """``who`` labels their first ``n`` tasks (``verdict(item)`` each), then skips ``skip`` more.

        ``lead_time``: seconds per task, or a list of them (one per labelled task), or None.
        """
        tasks = self.tasks[who]
        times = lead_time if isinstance(lead_time, list) else [lead_time] * n
        for (task_id, item), seconds in zip(tasks[:n], times, strict=True):
            self.fake.create_annotation(
                task_id, choices_result(verdict(item)), completed_by=self.user(who), lead_time=seconds
            )
        for task_id, _ in tasks[n : n + skip]:
            self.fake.create_annotation(task_id, [], completed_by=self.user(who), was_cancelled=True, lead_time=2.0)

    def pull(self) -> None:
        run(self.runner, self.ws, self.fake, "pull", "--round", "r1")


def truth(item: int) -> str:
    return "harmful" if item % 2 else "safe"


def contrary(item: int) -> str:
    """The opposite of the truth on 3 items in 5."""
    if item % 5 in (0, 1, 2):
        return "safe" if truth(item) == "harmful" else "harmful"
    return truth(item)


@pytest.fixture
def rnd(runner, ws, fake) -> Round:
    return Round(runner, ws, fake)


def test_progress_counts_and_median_time_per_reviewer(rnd, runner, ws):
    # A1: 10 to 29 s and one task left open for an hour; the median is 19.5 s (the mean would be 198 s)
    rnd.label("A1", 20, truth, lead_time=[*[10.0 + k for k in range(19)], 3600.0], skip=2)
    rnd.label("A2", rnd.n_items, truth, lead_time=30.0)
    rnd.label("A3", 7, truth, lead_time=None)
    rnd.pull()
    out = status_json(runner, ws)
    rows = by_reviewer(out)
    assert list(rows) == ["A1", "A2", "A3"]
    n = rnd.n_items
    assert n == 50
    a1, a2, a3 = rows["A1"], rows["A2"], rows["A3"]
    assert (a1["tasks"], a1["done"], a1["skipped"], a1["left"]) == (n, 20, 2, n - 22)
    assert a1["share_done"] == pytest.approx(20 / n)
    assert (a2["done"], a2["left"], a2["share_done"]) == (n, 0, 1.0)
    assert a1["median_seconds"] == 19.5 and a1["n_timed"] == 20  # skips (2 s each) are not timed labels
    assert a2["median_seconds"] == 30.0
    assert a3["median_seconds"] is None and a3["n_timed"] == 0 and "no lead_time" in a3["time_note"]
    assert out["flags"] == []
    # the per-stratum rows are still there, under their old keys, and agree with the reviewers' totals
    a1_strata = [r for r in out["progress"] if r["annotator"] == "A1"]
    assert sum(r["done"] for r in a1_strata) == 20 and sum(r["skipped"] for r in a1_strata) == 2
    assert {"round", "annotator", "stratum", "tasks", "imported", "remaining", "median_lead_time_s", "eta_s"} <= set(
        a1_strata[0]
    )

    text = status(runner, ws, "--round", "r1").stdout
    head, rest = text.split("\n", 1)
    assert head.startswith("Round r1, per reviewer (labels as of the last pull")
    lines = rest.splitlines()
    assert lines[0].split()[:6] == ["reviewer", "tasks", "done", "skipped", "left", "done"]
    a1_line = next(line for line in lines if line.startswith("A1 "))
    assert a1_line.split()[:8] == ["A1", "50", "20", "2", "28", "40.0%", "20", "s"]
    assert "unknown" in next(line for line in lines if line.startswith("A3 "))
    assert "stratum" in text and "ETA" in text  # then the per-stratum table
    # the plain reading, then whether adjudication is worth running, last
    import textwrap

    said = [out["reading"], out["adjudication"]["advice"]]  # each sentence wrapped to 100 columns
    wrapped = [textwrap.fill(x, 100, break_on_hyphens=False, break_long_words=False) for x in said]
    assert text.rstrip().endswith("\n".join(wrapped)), text


def test_a_reviewer_much_faster_than_the_others_is_flagged(rnd, runner, ws):
    rnd.label("A1", 30, truth, lead_time=22.0)
    rnd.label("A2", 30, truth, lead_time=26.0)
    rnd.label("A3", 30, truth, lead_time=1.8)
    rnd.pull()
    out = status_json(runner, ws)
    rows = by_reviewer(out)
    assert rows["A3"]["flags"] == ["fast"] and rows["A1"]["flags"] == rows["A2"]["flags"] == []
    assert rows["A3"]["others_median_seconds"] == 24.0
    (flag,) = out["flags"]
    assert flag["annotator"] == "A3" and flag["kind"] == "fast"
    assert "under 1/3 of it" in flag["reason"] and "under 3 s" in flag["reason"]
    assert out["reading"] == (
        "A3 is much faster than the others (median 1.8 s per task against 24 s): check their labels."
    )
    text = status(runner, ws, "--round", "r1").stdout
    assert text.rstrip().splitlines()[-2] == out["reading"]
    assert next(line for line in text.splitlines() if line.startswith("A3 ")).rstrip().endswith("fast")


def test_reviewers_all_under_the_floor_are_not_said_to_be_faster_than_each_other(rnd, runner, ws):
    """Issue #43: at 0.3 s and 0.1 s both are under the 3 s floor; before, status said each was "much
    faster than the others", the slower one included."""
    rnd.label("A1", 30, truth, lead_time=0.3)
    rnd.label("A2", 30, truth, lead_time=0.1)
    rnd.pull()
    out = status_json(runner, ws)
    assert sorted(f["annotator"] for f in out["flags"]) == ["A1", "A2"]
    assert "faster than the others" not in out["reading"], out["reading"]
    assert out["reading"].startswith("Under 3 s per task (median: A1 0.3 s, A2 0.1 s): too short to read"), out[
        "reading"
    ]


def test_the_speed_limits_come_from_the_agreement_settings(rnd, runner, ws):
    rnd.label("A1", 30, truth, lead_time=22.0)
    rnd.label("A2", 30, truth, lead_time=26.0)
    rnd.label("A3", 30, truth, lead_time=6.0)  # a quarter of the others' 24 s, over the 3 s floor
    rnd.pull()
    assert [f["annotator"] for f in status_json(runner, ws)["flags"]] == ["A3"]
    toml = ws / "annotate.toml"
    toml.write_text(toml.read_text().replace("[agreement]\n", "[agreement]\nfast_ratio = 0.2\n"))
    out = status_json(runner, ws)
    assert out["flags"] == [] and out["limits"]["fast_ratio"] == 0.2
    toml.write_text(toml.read_text().replace("fast_ratio = 0.2\n", "fast_ratio = 0.2\nfast_seconds = 8\n"))
    assert [(f["annotator"], f["kind"]) for f in status_json(runner, ws)["flags"]] == [("A3", "fast")]
    toml.write_text(toml.read_text().replace("fast_seconds = 8\n", 'fast_seconds = "fast"\n'))
    bad = status(runner, ws, "--round", "r1", ok=False)
    assert bad.exit_code == 1 and "[agreement] fast_seconds must be a number" in bad.stderr


@pytest.mark.parametrize("a3", [contrary, lambda item: "safe"], ids=["contrary", "always-safe"])
def test_a_reviewer_with_far_lower_agreement_is_flagged(rnd, runner, ws, a3):
    n = rnd.n_items
    rnd.label("A1", n, truth)
    rnd.label("A2", n, truth)
    rnd.label("A3", n, a3)
    rnd.pull()
    out = status_json(runner, ws)
    rows = by_reviewer(out)
    a3_row = rows["A3"]
    assert a3_row["flags"] == ["low agreement"]
    assert a3_row["n_agreement_items"] == n  # A1 and A2 agree everywhere: a majority on every item
    assert a3_row["kappa_ci_low"] <= a3_row["kappa"] <= a3_row["kappa_ci_high"] < 0.6
    assert rows["A1"]["flags"] == rows["A2"]["flags"] == []
    (flag,) = out["flags"]
    assert (flag["annotator"], flag["kind"]) == ("A3", "low agreement")
    assert out["reading"].startswith("A3 agrees far less with the others (kappa ")
    if a3 is contrary:
        # A1's reference is where A2 and A3 agree (both categories there): perfect, and A3's interval is below it
        assert rows["A1"]["kappa"] == rows["A2"]["kappa"] == 1.0
        assert a3_row["kappa_ci_high"] < min(rows[w]["kappa_ci_low"] for w in ("A1", "A2"))
        assert out["reading"].endswith("with their majority against 1.00): check their labels.")
    else:
        # A2 and A3 agree only where the truth is safe: A1's kappa there is 0/0, said so, never a number
        assert rows["A1"]["kappa"] is None and "one category" in rows["A1"]["agreement_note"]
        assert rows["A1"]["agreement_with_majority"] == 1.0
        assert out["reading"].endswith("with their majority): check their labels.")
    line = next(line for line in status(runner, ws, "--round", "r1").stdout.splitlines() if line.startswith("A3 "))
    assert f"[{a3_row['kappa_ci_low']:.3f}, {a3_row['kappa_ci_high']:.3f}]" in line and "low agreement" in line


def test_one_disagreement_is_not_far_lower_agreement(rnd, runner, ws):
    n = rnd.n_items
    rnd.label("A1", n, truth)
    rnd.label("A2", n, truth)
    odd = rnd.tasks["A3"][0][1]
    rnd.label("A3", n, lambda item: "unsure" if item == odd else truth(item))
    rnd.pull()
    out = status_json(runner, ws)
    assert out["flags"] == []
    assert by_reviewer(out)["A3"]["kappa"] < 1.0
    assert out["reading"] == "No reviewer stands out so far: times per task and agreement are in line."


def test_too_few_items_gives_no_interval_and_no_flag(rnd, runner, ws):
    # Each reviewer labels their first 8 tasks: in their own orders, few items are shared.
    rnd.label("A1", 8, truth)
    rnd.label("A2", 8, truth)
    rnd.label("A3", 8, lambda item: "safe" if truth(item) == "harmful" else "harmful")
    rnd.pull()
    out = status_json(runner, ws)
    for row in out["reviewers"]:
        assert row["n_agreement_items"] < 10
        assert row["kappa_ci_low"] is None and row["kappa_ci_high"] is None
        assert row["agreement_note"].startswith(f"too few items ({row['n_agreement_items']} < 10)")
        assert "low agreement" not in row["flags"]
        assert "too few timed labels (8 < 10)" in row["time_note"]
    assert out["flags"] == []
    assert "too few items labelled by several reviewers" in out["reading"]
    text = status(runner, ws, "--round", "r1").stdout
    assert "too few items (" in next(line for line in text.splitlines() if line.startswith("A3 "))


def test_two_reviewers_share_one_figure_and_are_never_flagged_for_agreement(runner, ws, fake):
    rnd = Round(runner, ws, fake, reviewers=("A1", "A2"))
    rnd.label("A1", rnd.n_items, truth)
    rnd.label("A2", rnd.n_items, contrary)
    rnd.pull()
    out = status_json(runner, ws)
    a1, a2 = out["reviewers"]
    assert a1["kappa"] == a2["kappa"] < 0.6 and a1["n_agreement_items"] == rnd.n_items
    assert a1["kappa_ci_high"] == a2["kappa_ci_high"] < 0.6
    assert "cannot say who disagrees" in a1["agreement_note"]
    assert out["flags"] == []


def test_json_structure(rnd, runner, ws):
    rnd.label("A1", 12, truth, lead_time=15.0)
    rnd.pull()
    out = status_json(runner, ws, "--quarantine")
    assert list(out) == [
        "progress",
        "quarantine",
        "round",
        "reviewers",
        "flags",
        "reading",
        "statistic",
        "limits",
        "adjudication",
    ]
    assert out["round"] == "r1" and out["quarantine"] == []
    assert out["limits"] == {
        "fast_ratio": pytest.approx(1 / 3),
        "fast_seconds": 3.0,
        "min_items": 10,
        "kappa_consensus": 0.6,
    }
    assert "leave-one-out majority" in out["statistic"]
    assert isinstance(out["reading"], str) and "\n" not in out["reading"]
    expected = {
        "annotator",
        "tasks",
        "imported",
        "done",
        "skipped",
        "left",
        "share_done",
        "n_timed",
        "median_seconds",
        "others_median_seconds",
        "time_note",
        "n_agreement_items",
        "agreement_with_majority",
        "kappa",
        "kappa_ci_low",
        "kappa_ci_high",
        "agreement_note",
        "alpha_without",
        "flags",
        "last_pulled_at",
        "last_file_pull_at",
    }
    for row in out["reviewers"]:
        assert set(row) == expected
        assert "@" not in json.dumps(row)  # pseudonyms only, never an e-mail
    a2 = by_reviewer(out)["A2"]
    assert a2["done"] == 0 and a2["median_seconds"] is None and a2["time_note"] == "nothing labelled yet"
    assert a2["kappa"] is None and a2["share_done"] == 0.0
    # Without --round: the per-stratum table as before, and no reviewer summary.
    every = json.loads(status(runner, ws, "--json").stdout)
    assert every["progress"] and every["reviewers"] == [] and every["flags"] == [] and every["reading"] is None
    assert "annotate status --round NAME" in status(runner, ws).stdout


def test_nothing_pulled_yet(rnd, runner, ws):
    out = status_json(runner, ws)
    assert all(r["done"] == 0 and r["left"] == r["tasks"] == 50 for r in out["reviewers"])
    assert out["reading"] == "Nothing labelled yet (as of the last `annotate pull`)."
    assert "nothing pulled yet" in status(runner, ws, "--round", "r1").stdout
