"""Issue #12, "Nothing wrong passes as verified": pulls in file mode through the CLI, on a real store.

An offline round r1 with reviewers A1, A2 (`annotators add --offline`, `route --to-file`); Label
Studio JSON exports pulled with `pull --from-file`. One test per finding: labels bound to their
annotator, other users' annotations quarantined, every hostile result validated or quarantined
with its reason, a structurally broken export one error line, names that are names.
"""

from __future__ import annotations

import doctest
import json
import os

import pytest

from annotate.cli import cli
from annotate.labelstudio import tasks as t
from tests.helpers import (
    generic_row,
    sqlite_only_db_url,  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
    write_jsonl,
)
from tests.pipeline.hostile_exports import (
    A1_USER,
    A2_USER,
    CASES,
    STRANGER,
    STRUCTURAL,
    Context,
    Label,
    annotation,
    dump,
    valid_export,
)


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr)
    return result


def refused(result, *fragments):
    """Exit 2 with one `Error:` line naming what is wrong, and no traceback."""
    assert result.exit_code == 2, (result.output, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output + result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


class Round:
    """The offline round r1 of a workspace: its task files, and pulls of exports into it."""

    def __init__(self, ws, prefix, runner, tmp_path):
        self.ws, self.prefix, self.runner, self.tmp = ws, prefix, runner, tmp_path
        self.files = 0

    def tasks(self, who):
        return json.loads((self.ws / "tasks" / "r1" / f"{who}.json").read_text(encoding="utf-8"))

    def export(self, who, labels, user):
        return valid_export(self.tasks(who), labels, user)

    def pull(self, export, who="A1", *extra, ok=True):
        self.files += 1
        path = export if isinstance(export, os.PathLike) else dump(export, self.tmp / f"export-{self.files}.json")
        return run(
            self.runner,
            self.prefix,
            "pull",
            "--round",
            "r1",
            "--from-file",
            str(path),
            "--annotator",
            who,
            *extra,
            ok=ok,
        )

    def store(self):
        from annotate.config import open_workspace
        from annotate.db.store import open_store

        return open_store(open_workspace(self.prefix[1], self.prefix[3]).db_url)

    def state(self):
        """Everything a pull may write: annotations (all), their history, quarantine, pins."""
        with self.store() as store:
            ann = store.annotations(include_inactive=True).sort_values("ls_annotation_id")
            pins = store.ls_projects().filter(["pseudonym", "pinned_user_id"])
            state = (
                ann.to_dict("records"),
                len(store.annotation_history()),
                len(store.quarantined()),
                pins.to_dict("records"),
            )
        return json.dumps(state, default=str)  # NaN (a missing value) equals itself as text

    def labels(self, who="A1"):
        """The current labels of an annotator: ls_annotation_id -> (item, verdict, confidence, rationale)."""
        with self.store() as store:
            ann = store.annotations()
        mine = ann[ann.annotator == who]
        return {
            int(r.ls_annotation_id): (int(r.round_item_id), r.verdict, r.confidence, r.rationale)
            for r in mine.itertuples()
        }

    def quarantine(self):
        return json.loads(run(self.runner, self.prefix, "status", "--round", "r1", "--json").output)["quarantine"]


@pytest.fixture
def r1(workspace, runner, tmp_path):
    ws, prefix = workspace
    rows = []
    for m in ("m1", "m2"):
        for i in range(12):
            label = "ambiguous" if i < 3 else ("harmful" if i < 6 else "safe")
            rows.append(generic_row(i, model=m, benchmark="b", judge_label=label, judge="j"))
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "r.jsonl", rows)))
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    run(runner, prefix, "annotators", "add", "lead@example.org", "--offline", "--expert")
    run(
        runner,
        prefix,
        *("route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "2", "--seed", "7", "--to-file"),
    )
    return Round(ws, prefix, runner, tmp_path)


A1_LABELS = {k: Label(100 + k, "harmful", confidence=4, rationale="gives steps") for k in range(6)}
A2_LABELS = {k: Label(200 + k, "safe" if k % 2 else "harmful") for k in range(6)}


# -- 1. labels land under the right person ---------------------------------------------------------
def test_another_annotators_export_is_refused_and_says_whose(r1):
    r1.pull(r1.export("A1", A1_LABELS, A1_USER))
    before = r1.state()
    a2_export = r1.export("A2", A2_LABELS, A2_USER)
    refused(r1.pull(a2_export, "A1", ok=False), "belong to A2's project", "--annotator A2")
    assert r1.state() == before  # A1's labels are not marked deleted, A2's are not stored as A1's
    r1.pull(a2_export, "A2")
    assert len(r1.labels("A1")) == len(r1.labels("A2")) == 6


def test_a_reviewers_export_pulled_as_the_expert_is_refused(r1):
    r1.pull(r1.export("A1", A1_LABELS, A1_USER))
    r1.pull(r1.export("A2", A2_LABELS, A2_USER), "A2")
    out = json.loads(
        run(r1.runner, r1.prefix, "adjudicate", "--round", "r1", "--expert", "E1", "--to-file", "--json").output
    )
    assert out["sent_to_expert"] >= 3  # the disagreements
    before = r1.state()
    refused(r1.pull(r1.export("A1", A1_LABELS, A1_USER), "E1", ok=False), "belong to A1's project")
    assert r1.state() == before  # a reviewer's votes never become expert decisions
    expert_file = r1.tasks("E1-adjudication")
    a1_ids = {task["data"]["ext_id"] for task in r1.tasks("A1")}
    assert expert_file and not {task["data"]["ext_id"] for task in expert_file} & a1_ids


def test_a_file_mixing_projects_or_of_no_project_is_refused(r1, tmp_path):
    own, other = r1.export("A1", A1_LABELS, A1_USER), r1.export("A2", A2_LABELS, A2_USER)
    before = r1.state()
    refused(r1.pull(own[:5] + other[5:], "A1", ok=False), "one project's export", "belong to A1's project")
    stranger = [
        {**task, "data": {**task["data"], "ext_id": f"{k:032x}"}, "meta": {"ext_id": f"{k:032x}"}}
        for k, task in enumerate(own)
    ]
    refused(r1.pull(stranger, "A1", ok=False), "none of its", "is a task of A1's project")
    assert r1.state() == before


# -- 2. other users' annotations are never counted -----------------------------------------------------
def test_another_users_annotation_in_a_file_is_quarantined_and_completed_by_stored(r1):
    r1.pull(r1.export("A1", A1_LABELS, A1_USER))
    before = r1.labels()
    export = r1.export("A1", A1_LABELS, A1_USER)
    newer = annotation(Label(900, "safe", confidence=1), STRANGER)
    newer["updated_at"] = "2030-01-01T00:00:00.000000Z"  # newer than A1's vote: it used to replace it
    export[0]["annotations"].append(newer)
    out = json.loads(r1.pull(export, "A1", "--json").output)
    assert r1.labels() == before
    assert out["annotators"]["A1"]["new"] == 0 and out["annotators"]["A1"]["quarantined"] == 1
    assert out["not_counted"]["A1"] == {t.R_OTHER_USER: 1}
    (q,) = r1.quarantine()
    assert q["kind"] == t.R_OTHER_USER and f"user {STRANGER}" in q["reason"] and q["ls_annotation_id"] == 900
    with r1.store() as store:
        stored = store.annotations_of_project(int(store.ls_projects().set_index("pseudonym").loc["A1", "id"]))
        pins = store.ls_projects().set_index("pseudonym").pinned_user_id
    assert {row["completed_by"] for row in stored.values()} == {A1_USER}
    assert int(pins["A1"]) == A1_USER


def test_a_first_pull_by_several_users_pins_nobody_until_told(r1):
    export = r1.export("A1", {k: A1_LABELS[k] for k in range(3)}, A1_USER)
    for k in range(3, 6):
        export[k]["annotations"] = [annotation(Label(300 + k, "safe"), STRANGER)]
    before = r1.state()
    refused(r1.pull(export, "A1", ok=False), "several Label Studio users", "--ls-user")
    assert r1.state() == before
    out = json.loads(r1.pull(export, "A1", "--ls-user", str(A1_USER), "--json").output)
    assert out["pinned"] == {"A1": A1_USER} and out["annotators"]["A1"]["new"] == 3
    assert out["not_counted"]["A1"] == {t.R_OTHER_USER: 3}
    refused(r1.pull(export, "A1", "--ls-user", str(STRANGER), ok=False), f"pinned to Label Studio user {A1_USER}")


def test_a_clear_majority_is_pinned_and_an_annotation_without_completed_by_is_quarantined(r1):
    labels = {k: Label(400 + k, "harmful") for k in range(len(r1.tasks("A1")))}
    export = r1.export("A1", labels, A1_USER)
    export[0]["annotations"][0]["completed_by"] = STRANGER  # 1 of 20: a clear minority
    del export[1]["annotations"][0]["completed_by"]
    out = json.loads(r1.pull(export, "A1", "--json").output)
    assert out["annotators"]["A1"]["new"] == len(labels) - 2
    assert out["annotators"]["A1"]["quarantined"] == 2
    assert out["pinned"] == {"A1": A1_USER}
    assert out["not_counted"]["A1"] == {t.R_OTHER_USER: 1, t.R_NO_AUTHOR: 1}


# -- 3. every pulled result validated or quarantined with its reason ---------------------------------
FINDING_3 = [
    "task text changed",
    "meta and data ext_id differ",
    "annotation id twice",
    "annotation id as text",
    "verdict on the prompt",
    "verdict as labels",
    "rating 2.7",
    "rationale over the bound",
]


@pytest.mark.parametrize("name", FINDING_3)
def test_a_hostile_result_is_quarantined_with_its_reason_and_counts_for_nothing(r1, name):
    case = CASES[name]
    own = r1.export("A1", A1_LABELS, A1_USER)
    r1.pull(own)
    before = r1.labels()
    r1.pull(case.build(Context(own=own, other=r1.export("A2", A2_LABELS, A2_USER))))
    assert r1.labels() == before  # nothing counted, no other item's label deleted
    kinds = {q["kind"] for q in r1.quarantine()}
    assert kinds == {case.expect}


def test_every_case_of_the_hostile_corpus_is_refused_or_quarantined_and_changes_no_label(r1):
    """The whole corpus (tests/pipeline/hostile_exports), one case after the other on one store."""
    own = r1.export("A1", A1_LABELS, A1_USER)
    other = r1.export("A2", A2_LABELS, A2_USER)
    r1.pull(own)
    labels = r1.labels()
    seen = set()
    for name, case in CASES.items():
        export = case.build(Context(own=own, other=other))
        assert export is not None, name
        if case.expect == "refused":
            before = r1.state()
            refused(r1.pull(export, ok=False), case.message)
            assert r1.state() == before, name
        else:
            out = json.loads(r1.pull(export, "A1", "--json").output)
            assert case.expect in out["not_counted"]["A1"], (name, out["not_counted"])
            seen.add(case.expect)
        assert r1.labels() == labels, name
    assert seen == set(t.QUARANTINE_REASONS)  # the corpus covers every reason
    assert {q["kind"] for q in r1.quarantine()} == seen


def test_a_rationale_of_30_mb_is_not_stored(r1):
    export = r1.export("A1", A1_LABELS, A1_USER)
    export[0]["annotations"][0]["result"][-1]["value"]["text"] = ["why " * (30 * 2**20 // 4)]
    out = json.loads(r1.pull(export, "A1", "--json").output)
    assert len(r1.labels()) == 5
    with r1.store() as store:
        payloads = store.quarantined().payload
        assert store.annotations().rationale.str.len().max() == len("gives steps")
    assert 0 < payloads.str.len().max() < t.MAX_QUARANTINE_PAYLOAD_CHARS + 1000  # evidence kept, bounded
    assert out["not_counted"]["A1"] == {t.R_INVALID_RESULT: 1}


def test_a_structurally_broken_export_is_one_error_line_and_stores_nothing(r1):
    r1.pull(r1.export("A1", A1_LABELS, A1_USER))
    before = r1.state()
    assert len(STRUCTURAL) >= 10
    for path in STRUCTURAL:
        refused(r1.pull(path, "A1", ok=False), str(path))
    for name in ("ext_id is a list", "annotation is a string"):
        case = CASES[name]
        refused(r1.pull(case.build(Context(own=r1.export("A1", A1_LABELS, A1_USER), other=[])), ok=False), case.message)
    assert r1.state() == before


def test_a_pull_that_would_delete_most_labels_is_refused_unless_allowed(r1):
    r1.pull(r1.export("A1", A1_LABELS, A1_USER))
    before = r1.state()
    emptied = r1.export("A1", {k: A1_LABELS[k] for k in range(2)}, A1_USER)  # 4 of 6 gone
    refused(r1.pull(emptied, "A1", ok=False), "4 of the 6 current labels", "--allow-deletions")
    assert r1.state() == before
    out = json.loads(r1.pull(emptied, "A1", "--allow-deletions", "--json").output)
    assert out["annotators"]["A1"]["deleted"] == 4 and len(r1.labels()) == 2


# -- 4. names are names, and task files stay under tasks/ -----------------------------------------
@pytest.mark.parametrize("name", ["ABS", "../../x", "..", "", ".", "r\n1", "a/b", ".hidden", "r 1", "x" * 101])
def test_a_round_name_that_is_not_a_name_is_refused(workspace, runner, tmp_path, name):
    ws, prefix = workspace
    if name == "ABS":
        name = str(tmp_path / "abs" / "dir")
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "r.jsonl", [generic_row(i, judge="j") for i in range(9)])))
    run(runner, prefix, "annotators", "add", "a1@example.org", "--offline")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if ".annotate" not in p.parts)
    result = run(runner, prefix, "route", "--round", name, "--annotators", "A1", "--to-file", ok=False)
    refused(result, "round name", "is not a valid name")
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if ".annotate" not in p.parts)
    assert after == before  # no file written anywhere
    status = json.loads(run(runner, prefix, "status", "--json").output)
    assert status["progress"] == []  # no round recorded


def test_task_files_are_never_written_outside_tasks(r1, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (r1.ws / "tasks" / "r2").symlink_to(outside, target_is_directory=True)
    result = run(
        r1.runner, r1.prefix, "route", "--round", "r2", "--annotators", "A1", "--to-file", "--seed", "1", ok=False
    )
    refused(result, "outside")
    assert list(outside.iterdir()) == []
    with r1.store() as store:
        assert store.get_round("r2") is None  # checked before anything was recorded
    # adjudicate --to-file builds its path the same way
    r1.pull(r1.export("A1", A1_LABELS, A1_USER))
    r1.pull(r1.export("A2", A2_LABELS, A2_USER), "A2")
    (r1.ws / "tasks" / "r1").rename(r1.ws / "tasks" / "r1-moved")
    (r1.ws / "tasks" / "r1").symlink_to(outside, target_is_directory=True)
    refused(
        run(r1.runner, r1.prefix, "adjudicate", "--round", "r1", "--expert", "E1", "--to-file", ok=False), "outside"
    )
    assert list(outside.iterdir()) == []
    with r1.store() as store:
        assert store.final_labels(int(store.get_round("r1")["id"])).empty
        assert store.escalations(int(store.get_round("r1")["id"])).empty


def test_names_and_task_ids_doctests():
    import annotate.names

    for module in (annotate.names, t):
        failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert tried and not failures, module.__name__
