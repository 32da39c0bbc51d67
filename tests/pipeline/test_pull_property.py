"""Property (issue #12): hostile exports interleaved with valid pulls change nothing.

For any sequence of valid exports of A1's project (labels added, edited, skipped, deleted and
re-made) and any hostile exports pulled in between (every case of the corpus in
``tests/pipeline/hostile_exports``: another annotator's file, two projects in one file, another
user's annotation, altered task text, mismatched or missing ids, repeated ids, ids that are not
integers, results on the wrong control or type, fractional ratings, an oversized rationale,
malformed fields, structurally broken files), the final labels, their history and Krippendorff's
alpha of A1 and A2 equal those of the valid pulls alone. Every hostile export is refused or
quarantined with its case's reason.

Each example works on a copy of one routed SQLite store (routing once keeps the examples fast).
The first pull of the project is a valid one: a file-mode project trusts the user of its first
pull (or ``--ls-user``), see ``labelstudio.tasks.decide_pin``.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotate.cli import cli
from annotate.errors import InputError
from tests.helpers import generic_row, write_jsonl
from tests.pipeline.hostile_exports import A1_USER, A2_USER, CASES, STRUCTURAL, Context, Label, dump, valid_export

N_TASKS = 8  # labels go on A1's first tasks


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A workspace with the offline round r1 routed to A1 and A2 (SQLite), and its task files."""
    from click.testing import CliRunner

    runner = CliRunner()
    root = tmp_path_factory.mktemp("property") / "ws"
    assert runner.invoke(cli, ["init", str(root)]).exit_code == 0
    rows = [
        generic_row(i, model=m, benchmark="b", judge_label=("ambiguous", "harmful", "safe")[i % 3], judge="j")
        for m in ("m1", "m2")
        for i in range(9)
    ]
    path = write_jsonl(root.parent / "r.jsonl", rows)
    for args in (
        ["ingest", str(path)],
        ["annotators", "add", "a1@example.org", "--offline"],
        ["annotators", "add", "a2@example.org", "--offline"],
        ["route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "2", "--to-file"],
    ):
        result = runner.invoke(cli, ["-w", str(root), *args])
        assert result.exit_code == 0, (result.output, result.stderr)
    tasks = {w: json.loads((root / "tasks" / "r1" / f"{w}.json").read_text()) for w in ("A1", "A2")}
    assert len(tasks["A1"]) >= N_TASKS
    return root, root / ".annotate" / "annotate.db", tasks


verdicts = st.sampled_from(["harmful", "safe", "unsure", None])  # None: a skip
entry = st.tuples(verdicts, st.one_of(st.none(), st.integers(1, 5)), st.integers(0, 1))
snapshot = st.dictionaries(st.integers(0, N_TASKS - 1), entry, max_size=N_TASKS)
HOSTILE = sorted(CASES) + [f"structural:{p.name}" for p in STRUCTURAL]


def _labels(snap: dict[int, tuple[str | None, int | None, int]]) -> dict[int, Label]:
    # The annotation id changes with the version: a label deleted and made again is a new annotation.
    return {k: Label(1000 + 100 * version + k, v, confidence=c) for k, (v, c, version) in snap.items()}


class _Run:
    """A copy of the template store, and pulls into it through the pipeline."""

    def __init__(self, template, tmp: Path, name: str):
        from annotate.config import Workspace
        from annotate.db import open_store
        from annotate.pipeline.session import Session

        root, db, self.tasks = template
        copy = tmp / f"{name}.db"
        with sqlite3.connect(db) as src, sqlite3.connect(copy) as dst:
            src.backup(dst)
        url = f"sqlite:///{copy}"
        self.session = Session(Workspace(root, url), open_store(url))
        self.tmp, self.name, self.n = tmp, name, 0

    def pull(self, export, who="A1"):
        from annotate.pipeline.pull import pull

        self.n += 1
        path = export if isinstance(export, Path) else dump(export, self.tmp / f"{self.name}-{self.n}.json")
        return pull(self.session, round_name="r1", from_files=[path], annotator=who, allow_deletions=True)

    def result(self):
        store = self.session.store
        # (pulled_at: when this run stored it, a wall-clock time of its own)
        ann = store.annotations(include_inactive=True).drop(columns=["annotation_id", "pulled_at"])
        ann = ann.sort_values("ls_annotation_id").astype(object).where(ann.notna(), None)
        history = store.annotation_history().drop(columns=["id", "replaced_at"])
        history = history.astype(object).where(history.notna(), None)
        return ann.to_dict("records"), history.to_dict("records"), _alpha(store.annotations())

    def close(self):
        self.session.close()


def _alpha(annotations) -> float | None:
    """Krippendorff's alpha (nominal, 3-way) of A1 and A2's current labels; None when undefined."""
    import warnings

    import krippendorff

    from annotate.stats.agreement.votes import current_labels

    votes = current_labels(annotations, {"A1", "A2"})
    table = votes.pivot(index="round_item_id", columns="annotator", values="verdict")
    if not {"A1", "A2"} <= set(table.columns):
        return None
    codes = {"harmful": 0.0, "safe": 1.0, "unsure": 2.0}
    data = np.array([[codes.get(v, np.nan) for v in table[w]] for w in ("A1", "A2")], dtype=float)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            value = float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    except ValueError:  # no unit with two values, or one value only
        return None
    return None if value != value else round(value, 12)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    snapshots=st.lists(snapshot, min_size=1, max_size=4).filter(lambda s: bool(s[0])),
    hostile=st.lists(st.lists(st.sampled_from(HOSTILE), max_size=3), min_size=4, max_size=4),
)
def test_hostile_exports_interleaved_with_valid_pulls_change_nothing(template, snapshots, hostile):
    a2 = valid_export(
        template[2]["A2"], {k: Label(2000 + k, ("safe", "harmful")[k % 2]) for k in range(N_TASKS)}, A2_USER
    )
    with tempfile.TemporaryDirectory() as tmp:
        alone, mixed = _Run(template, Path(tmp), "alone"), _Run(template, Path(tmp), "mixed")
        try:
            for run in (alone, mixed):
                run.pull(a2, "A2")
            for snap, attacks in zip(snapshots, hostile, strict=False):
                valid = valid_export(template[2]["A1"], _labels(snap), A1_USER)
                alone.pull(valid)
                mixed.pull(valid)
                for name in attacks:
                    _attack(mixed, name, Context(own=valid, other=a2))
            assert mixed.result() == alone.result()
        finally:
            alone.close()
            mixed.close()


def _attack(run: _Run, name: str, ctx: Context) -> None:
    """Pull one hostile export; it must be refused, or quarantined with its case's reason."""
    if name.startswith("structural:"):
        with pytest.raises(InputError):
            run.pull(next(p for p in STRUCTURAL if p.name == name.split(":", 1)[1]))
        return
    case = CASES[name]
    export = case.build(ctx)
    if export is None:  # nothing in this export for the case to bend
        return
    if case.expect == "refused":
        with pytest.raises(InputError, match=case.message or None):
            run.pull(export)
        return
    out = run.pull(export)
    assert case.expect in out.reasons.get("A1", {}), (name, out.reasons)
