"""`annotate route --strata-from`: strata from several judges, recorded, checked and kept (real stores).

Two judges j1 and j2 on the same responses of two cells, plus what the rule must not be fooled
by: a j2 row under the same key with another response text (another response: no verdict),
a cell j2 never judged, and a third judge on another response. Every store test runs on SQLite
and PostgreSQL (the ``db_url`` fixture); no Label Studio is needed (``--to-file``).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from annotate.cli import cli
from tests.helpers import (
    generic_row,
    sqlite_only_db_url,  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
    write_jsonl,
)

ROUTE = ("--annotators", "A1,A2", "--clear-per-cell", "3", "--seed", "11")


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (args, result.output, result.stderr)
    return result


def _rows():
    """(j1 rows, j2 rows, j3 rows) and the expected unanimity stratum of each j1 row by (model, prompt_id)."""
    j1, j2, j3, expected = [], [], [], {}
    for model in ("m1", "m2"):
        for i in range(40):
            a = ("harmful", "safe", "ambiguous")[i % 3] if i < 30 else "safe"
            # j2 agrees on most; disagrees on i % 7 == 0; says ambiguous on i == 5.
            b = a if i % 7 else ("safe" if a == "harmful" else "harmful")
            if i == 5:
                b = "ambiguous"
            j1.append(generic_row(i, model=model, benchmark="b", judge="j1", judge_label=a))
            expected[(model, f"p{i}")] = a if a == b and a != "ambiguous" else "ambiguous"
            if i == 8:  # same key, another response text: another response, so no verdict on this one
                j2.append(generic_row(i, model=model, benchmark="b", judge="j2", judge_label=a, response="other"))
                expected[(model, f"p{i}")] = "ambiguous"
            else:
                j2.append(generic_row(i, model=model, benchmark="b", judge="j2", judge_label=b))
    for i in range(12):  # a cell j2 never judged: all of it goes to the census stratum
        j1.append(generic_row(i, model="m3", benchmark="b", judge="j1", judge_label="safe"))
        expected[("m3", f"p{i}")] = "ambiguous"
    j3.append(generic_row(0, model="m1", benchmark="b", judge="j3", judge_label="safe", prompt="another prompt"))
    return j1, j2, j3, expected


@pytest.fixture
def two_judges(workspace, runner, tmp_path):
    ws, prefix = workspace
    j1, j2, j3, expected = _rows()
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "j1.jsonl", j1)))
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "j2.jsonl", j2)))
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "j3.jsonl", j3)))
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    return ws, prefix, expected


def _store_of(prefix):
    from annotate.db.store import open_store

    return open_store(prefix[prefix.index("--db") + 1])


def test_strata_are_the_unanimity_of_the_named_judges_and_recorded(two_judges, runner):
    ws, prefix, expected = two_judges
    out = json.loads(
        run(runner, prefix, "route", "--round", "r1", *ROUTE, "--strata-from", "j1,j2", "--to-file", "--json").output
    )
    assert out["judge"] == "j1" and out["strata_from"] == ["j1", "j2"]
    exp = pd.Series(expected).rename_axis(["model", "prompt_id"]).rename("stratum").reset_index()
    sizes = exp.groupby(["model", "stratum"]).size().to_dict()
    got = {(s["model"], s["stratum"]): (s["population"], s["sample"]) for s in out["strata"]}
    assert {k: v[0] for k, v in got.items()} == sizes
    for (_model, stratum), (population, sample) in got.items():
        assert sample == (population if stratum == "ambiguous" else min(3, population))
    cells = {c["model"]: c for c in out["cells"]}
    for model in ("m1", "m2", "m3"):
        for stratum in ("harmful", "safe", "ambiguous"):
            assert cells[model][stratum] == sizes.get((model, stratum), 0)
    # m1, m2: the row with another text; m3: no j2 verdict at all.
    assert [c["without_verdict"] for c in out["cells"]] == [1, 1, 12]
    assert out["without_verdict"] == [
        {"model": "m1", "benchmark": "b", "judge": "j2", "responses": 1, "population": 40},
        {"model": "m2", "benchmark": "b", "judge": "j2", "responses": 1, "population": 40},
        {"model": "m3", "benchmark": "b", "judge": "j2", "responses": 12, "population": 12},
    ]
    store = _store_of(prefix)
    try:
        row = store.get_round("r1")
        assert row is not None and row["judge"] == "j1"
        assert store.round_strata_from(int(row["id"])) == ["j1", "j2"]
        items = store.round_items(int(row["id"]))
        # Every item is j1's row, recorded in its unanimity stratum with pi = n_h / N_h.
        assert set(items.judge) == {"j1"}
        for item in items.itertuples():
            assert item.stratum == expected[(item.model, item.prompt_id)]
            population, sample = got[(item.model, item.stratum)]
            assert item.inclusion_prob == pytest.approx(sample / population)
        from annotate.pipeline.record import design_from_store

        (rnd,) = design_from_store(store, ["r1"]).to_json()["rounds"]
        assert rnd["judge"] == "j1" and rnd["strata_from"] == ["j1", "j2"] and "unanimity" in rnd["strata_rule"]
        assert {(s["model"], s["judge_label"]): s["population"] for s in rnd["strata"]} == sizes
    finally:
        store.close()


def test_text_output_names_the_judges_and_the_cells_without_a_verdict(two_judges, runner):
    _ws, prefix, _expected = two_judges
    text = run(
        runner, prefix, "route", "--round", "r1", *ROUTE, "--strata-from", "j2,j1", "--judge", "j1", "--dry-run"
    ).output
    assert "Strata from judges j2, j1 (the routed responses are j1's rows)" in text
    assert "all harmful" in text and "ambiguous (census)" in text
    assert "14 response(s) lack the verdict of one of the judges" in text
    assert "m3 x b: 12 of 12 without j2 (no verdict on any of the cell's responses)" in text
    assert "m1 x b: 1 of 40 without j2" in text
    assert "Dry run: nothing was sent or recorded." in text
    store = _store_of(prefix)
    try:
        assert store.get_round("r1") is None
    finally:
        store.close()


@pytest.mark.parametrize(
    ("judges", "extra", "message"),
    [
        ("j1", (), "--strata-from needs two judges at least (got j1)"),
        ("j1,nope", (), "no responses judged by 'nope'; judges: j1, j2, j3"),
        ("j1,j2,j1", (), "--strata-from names j1 more than once"),
        ("j1,", (), "no responses judged by ''"),
        ("j1,j2", ("--judge", "j3"), "--judge j3 is not among the judges of --strata-from (j1, j2)"),
    ],
)
def test_bad_judges_are_refused_and_nothing_is_written(two_judges, runner, judges, extra, message):
    ws, prefix, _expected = two_judges
    result = run(
        runner, prefix, "route", "--round", "r1", *ROUTE, "--strata-from", judges, *extra, "--to-file", ok=False
    )
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    store = _store_of(prefix)
    try:
        assert store.get_round("r1") is None and not len(store.rounds())
    finally:
        store.close()
    assert not (ws / "tasks" / "r1").exists() or not any((ws / "tasks" / "r1").iterdir())


def test_a_round_keeps_its_judges_and_a_new_wave_uses_them(two_judges, runner, tmp_path):
    ws, prefix, _expected = two_judges
    run(runner, prefix, "route", "--round", "r1", *ROUTE, "--strata-from", "j1,j2", "--to-file")
    store = _store_of(prefix)
    try:
        rid = int(store.get_round("r1")["id"])
        before = (len(store.round_waves(rid)), len(store.round_items(rid)), len(store.round_strata(rid)))
    finally:
        store.close()
    for judges in ("j1,j3", "j1,j2,j3"):
        refused = run(runner, prefix, "route", "--round", "r1", *ROUTE, "--strata-from", judges, "--to-file", ok=False)
        assert refused.exit_code == 2 and "was routed with --strata-from j1,j2" in refused.stderr, refused.stderr
    # New responses of both judges: the next wave, routed without the option, uses the round's judges.
    more_j1 = [generic_row(100 + i, model="m1", benchmark="b", judge="j1", judge_label="harmful") for i in range(4)]
    more_j2 = [
        generic_row(100 + i, model="m1", benchmark="b", judge="j2", judge_label="harmful" if i < 2 else "safe")
        for i in range(4)
    ]
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "more1.jsonl", more_j1)))
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "more2.jsonl", more_j2)))
    store = _store_of(prefix)
    try:
        after_refusal = (len(store.round_waves(rid)), len(store.round_items(rid)), len(store.round_strata(rid)))
    finally:
        store.close()
    assert after_refusal == before
    wave = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--to-file", "--json").output)
    assert wave["wave"] == 2 and wave["strata_from"] == ["j1", "j2"]
    assert {(s["stratum"], s["population"]) for s in wave["strata"]} == {("harmful", 2), ("ambiguous", 2)}
    # The same judges in another order are the same design.
    again = json.loads(
        run(runner, prefix, "route", "--round", "r1", *ROUTE, "--strata-from", "j2,j1", "--to-file", "--json").output
    )
    assert again["wave"] is None and again["selected"] == 0


def test_a_round_routed_on_one_judge_refuses_strata_from(two_judges, runner):
    _ws, prefix, _expected = two_judges
    run(runner, prefix, "route", "--round", "r1", *ROUTE, "--judge", "j1", "--to-file")
    refused = run(runner, prefix, "route", "--round", "r1", *ROUTE, "--strata-from", "j1,j2", "--to-file", ok=False)
    assert refused.exit_code == 2 and "was routed on the labels of judge j1 alone" in refused.stderr
    out = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--to-file", "--json").output)
    # Without --strata-from the output has no strata_from keys (every route says its ambiguous rule, #25).
    keys = {"round", "judge", "wave", "dry_run", "prioritized", "selected", "strata", "annotators", "files"}
    assert set(out) == keys | {"ambiguous", "order"}
    store = _store_of(prefix)
    try:
        assert store.round_strata_from(int(store.get_round("r1")["id"])) is None
    finally:
        store.close()


def test_a_v6_store_with_a_round_migrates_to_v7_in_place(two_judges, runner):
    """A round routed before schema v7 reads as routed on its judge's own labels, and keeps that design."""
    from sqlalchemy import inspect, text

    from annotate.db.store import SCHEMA_VERSION

    _ws, prefix = two_judges[0], two_judges[1]
    run(runner, prefix, "route", "--round", "r1", *ROUTE, "--judge", "j1", "--to-file")
    store = _store_of(prefix)
    try:
        with store.engine.begin() as conn:  # back to what schema v6 wrote
            conn.exec_driver_sql("ALTER TABLE review_round DROP COLUMN strata_from")
            conn.exec_driver_sql("ALTER TABLE review_round DROP COLUMN blinding")  # v8
            conn.exec_driver_sql("ALTER TABLE ls_project DROP COLUMN server")  # v8
            conn.exec_driver_sql("ALTER TABLE review_round DROP COLUMN adjudication")  # v9
            conn.exec_driver_sql("ALTER TABLE review_round DROP COLUMN judges")  # v10
            conn.exec_driver_sql("ALTER TABLE response DROP COLUMN judge_kind")  # v11
            conn.exec_driver_sql("ALTER TABLE response_history DROP COLUMN judge_kind")  # v11
            conn.exec_driver_sql("ALTER TABLE review_round DROP COLUMN ambiguous")  # v12
            conn.exec_driver_sql("ALTER TABLE round_stratum DROP COLUMN of_wave")  # v12
            conn.exec_driver_sql("ALTER TABLE round_stratum DROP COLUMN sampled_before")  # v12
            conn.exec_driver_sql("ALTER TABLE review_round DROP COLUMN task_order")  # v13
            conn.exec_driver_sql("ALTER TABLE round_item DROP COLUMN priority")  # v13
            conn.exec_driver_sql("DROP TABLE set_aside_row")  # v14
            conn.execute(text("DELETE FROM schema_version WHERE version >= 7"))
    finally:
        store.close()
    store = _store_of(prefix)
    try:
        assert store.schema_version() == SCHEMA_VERSION == 16
        with store.engine.connect() as conn:
            assert "strata_from" in {c["name"] for c in inspect(conn).get_columns("review_round")}
        assert store.round_strata_from(int(store.get_round("r1")["id"])) is None
    finally:
        store.close()
    refused = run(runner, prefix, "route", "--round", "r1", *ROUTE, "--strata-from", "j1,j2", "--to-file", ok=False)
    assert refused.exit_code == 2 and "alone" in refused.stderr
    again = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--to-file", "--json").output)
    assert again["wave"] is None and "strata_from" not in again


def test_judge_names_are_only_names(workspace, runner, tmp_path):
    """Judges named like the columns route uses (model, stratum, ...) are judges like any other."""
    _ws, prefix = workspace
    a = [generic_row(i, model="m", benchmark="b", judge="model", judge_label="safe") for i in range(6)]
    b = [
        generic_row(i, model="m", benchmark="b", judge="without_verdict", judge_label="safe" if i else "harmful")
        for i in range(5)
    ]
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "a.jsonl", a)))
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "b.jsonl", b)))
    run(runner, prefix, "annotators", "add", "a1@example.org", "--offline")
    args = ("--round", "r1", "--annotators", "A1", "--clear-per-cell", "2", "--strata-from", "model,without_verdict")
    out = json.loads(run(runner, prefix, "route", *args, "--dry-run", "--json").output)
    assert out["judge"] == "model"
    assert out["cells"] == [
        {"model": "m", "benchmark": "b", "harmful": 0, "safe": 4, "ambiguous": 2, "without_verdict": 1}
    ]
    assert out["without_verdict"] == [
        {"model": "m", "benchmark": "b", "judge": "without_verdict", "responses": 1, "population": 6}
    ]


def test_a_judge_whose_name_holds_a_comma_can_be_named(tmp_path, runner):
    """Issue #22: one judge per --strata-from option, so a name with a comma can be given."""
    from annotate.cli import cli
    from tests.helpers import generic_row, write_jsonl

    ws = tmp_path / "ws"
    assert runner.invoke(cli, ["init", str(ws)]).exit_code == 0
    rows = [
        generic_row(i, model="m", benchmark="b", judge=judge, judge_label=("harmful", "safe")[i % 2])
        for judge in ("gpt,4", "strmatch")
        for i in range(12)
    ]
    assert runner.invoke(cli, ["-w", str(ws), "ingest", str(write_jsonl(tmp_path / "r.jsonl", rows))]).exit_code == 0
    base = ["-w", str(ws), "route", "--round", "r1", "--annotators", "A1", "--clear-per-cell", "2", "--dry-run"]
    assert runner.invoke(cli, ["-w", str(ws), "annotators", "add", "a@example.org", "--offline"]).exit_code == 0
    split = runner.invoke(cli, [*base, "--strata-from", "gpt,4,strmatch"])
    assert split.exit_code == 2 and "'gpt'" in split.stderr  # one option: a comma-separated list
    named = runner.invoke(cli, [*base, "--strata-from", "gpt,4", "--strata-from", "strmatch", "--json"])
    assert named.exit_code == 0, named.output
    assert json.loads(named.stdout)["strata_from"] == ["gpt,4", "strmatch"]
