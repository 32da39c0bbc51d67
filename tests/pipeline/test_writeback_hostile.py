"""`annotate writeback` against hostile logs and hostile folders (issue 22, items 1-3, 6 and the low items).

Every log here is one of the real Inspect logs of tests/data/inspect_writeback/ with one hostile
change made in the test: a metric or reducer that is not Inspect's own and a task file that
would run, a score named like a Python file, options Inspect cannot take, a sample whose answer
reads two ways; every folder a shared ``--to`` with a planted link, the originals' folder, an
export, the leftovers of a killed run. Each test fails on the write-back of before the issue.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers import sqlite_only_db_url  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
from tests.pipeline.test_writeback import DATA, EVAL, JSON, review, run, sha, writeback

inspect_log = pytest.importorskip("inspect_ai.log", reason="the inspect extra: pip install -e '.[inspect]'")
read_eval_log = inspect_log.read_eval_log


def prepare(workspace, runner, tmp_path, *, edit_json=None, names=(EVAL, JSON), reviewers=True):
    """Ingest the two logs (the JSON one passed through ``edit_json(log)`` first), then review round r1."""
    ws, prefix = workspace
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in names:
        shutil.copyfile(DATA / name, logs / name)
    if edit_json is not None:
        log = json.loads((logs / JSON).read_text(encoding="utf-8"))
        edit_json(log)
        (logs / JSON).write_text(json.dumps(log), encoding="utf-8")
    run(runner, prefix, "ingest", *(str(logs / n) for n in names))
    if reviewers:
        for email in ("a1@example.org", "a2@example.org"):
            run(runner, prefix, "annotators", "add", email, "--offline")
        run(runner, prefix, "annotators", "add", "lead@example.org", "--offline", "--expert")
        review(runner, prefix, ws, "r1", "refusal_judge")
    return ws, prefix, logs


def evil_file(tmp_path: Path, name: str = "inspect_ai/accuracy_v2") -> tuple[Path, Path]:
    """A Python file that, if anything imported it, would leave a marker and register a fake metric ``name``."""
    marker = tmp_path / "the-task-file-ran"
    code = tmp_path / "evil_task.py"
    code.write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path
            Path({str(marker)!r}).write_text("ran")
            from inspect_ai import Task, task
            from inspect_ai.scorer import metric

            @metric(name={name!r})
            def accuracy_v2():
                def compute(scores):
                    return 0.999
                return compute

            @task  # Inspect imports a task file only when it defines a task
            def decoy():
                return Task()
            """
        ),
        encoding="utf-8",
    )
    return code, marker


def store_of(prefix):
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    return open_store(open_workspace(prefix[1], prefix[3]).db_url)


def nothing_in(folder: Path) -> bool:
    return not folder.exists() or not any(folder.iterdir())


# -- item 1: nothing a log names runs ------------------------------------------------------------


@pytest.mark.parametrize("name", ["inspect_ai/accuracy_v2", "mypkg/metric", "accuracy_v2"])
def test_a_metric_that_is_not_inspects_own_is_refused_and_the_task_file_never_runs(workspace, runner, tmp_path, name):
    code, marker = evil_file(tmp_path, name)

    def edit(log):
        log["eval"]["task_file"] = str(code)
        log["eval"]["scorers"][0]["metrics"][0]["name"] = name

    _, prefix, _ = prepare(workspace, runner, tmp_path, edit_json=edit)
    out = tmp_path / "reviewed"
    result = writeback(runner, prefix, "--round", "r1", "--to", str(out), ok=False)
    assert not marker.exists()  # the task file never ran
    assert result.exit_code == 2 and not isinstance(result.exception, (TypeError, LookupError))
    lines = [line for line in result.stderr.splitlines() if name in line]
    assert len(lines) == 1 and "not one of Inspect's built-in metrics" in lines[0]
    assert nothing_in(out)  # nor was the good log (the .eval) written


def test_a_score_named_like_a_python_file_never_runs_it(workspace, runner, tmp_path):
    """Inspect resolves a score no header scorer lists as a scorer spec: a path would be imported."""
    code, marker = evil_file(tmp_path)

    def edit(log):
        for sample in log["samples"]:
            sample["scores"][str(code)] = {"value": "C", "history": []}

    _, prefix, _ = prepare(workspace, runner, tmp_path, edit_json=edit)
    out = tmp_path / "reviewed"
    writeback(runner, prefix, "--round", "r1", "--to", str(out))
    assert not marker.exists()
    edited = read_eval_log(str(out / JSON))
    metrics = {s.name: s.metrics for s in edited.results.scores}
    assert metrics[str(code)]["accuracy"].value == 1.0  # Inspect's default metrics, computed, nothing imported


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda log: log["eval"]["config"].__setitem__("epochs_reducer", ["nonesuch"]), "epochs reducer 'nonesuch'"),
        (
            lambda log: log["eval"]["config"].__setitem__("epochs_reducer", ["mypkg/reducer"]),
            "epochs reducer 'mypkg/reducer'",
        ),
        (
            lambda log: log["eval"]["scorers"][0]["metrics"][1].__setitem__("options", {"bogus": 1}),
            "option 'bogus'",
        ),
        (
            lambda log: log["eval"]["scorers"][0]["metrics"].append(
                {"name": "inspect_ai/bootstrap_stderr", "options": {"num_samples": "many"}}
            ),
            "num_samples='many'",
        ),
        (
            lambda log: log["eval"]["scorers"][0]["metrics"][1].__setitem__(
                "options", {"cluster": {"type": "solver", "name": "mypkg/x", "params": {}}}
            ),
            "cluster=",
        ),
    ],
    ids=["unknown-reducer", "namespaced-reducer", "unknown-option", "bad-option-type", "registry-dict-option"],
)
def test_a_bad_reducer_or_metric_option_refuses_every_log_before_any_is_written(
    workspace, runner, tmp_path, edit, said
):
    _, prefix, _ = prepare(workspace, runner, tmp_path, edit_json=edit)
    out = tmp_path / "reviewed"
    result = writeback(runner, prefix, "--round", "r1", "--to", str(out), ok=False)
    assert result.exit_code == 2, (result.output, result.exception)  # refused, not a traceback
    assert said in result.stderr and JSON in result.stderr and "Traceback" not in result.stderr
    assert nothing_in(out)  # the good .eval was not written either


def test_builtin_metrics_with_their_options_are_recomputed_as_inspect_would(workspace, runner, tmp_path):
    def edit(log):
        log["eval"]["config"]["epochs_reducer"] = ["mean", "pass_at_2"]
        log["eval"]["scorers"][0]["metrics"] = [
            {"name": "inspect_ai/accuracy", "options": {}},
            {"name": "inspect_ai/stderr", "options": {"cluster": None}},
            {"name": "inspect_ai/ci_wilson", "options": {"level": 0.9}},  # (bootstrap ones are random)
            {
                "name": "inspect_ai/grouped",
                "options": {"metric": {"type": "metric", "name": "accuracy", "params": {}}, "group_key": "kind"},
            },
        ]
        for sample in log["samples"]:
            sample["metadata"] = {**(sample.get("metadata") or {}), "kind": "a" if sample["id"] < "r4" else "b"}

    _, prefix, _ = prepare(workspace, runner, tmp_path, edit_json=edit)
    out = tmp_path / "reviewed"
    writeback(runner, prefix, "--round", "r1", "--to", str(out))
    edited = read_eval_log(str(out / JSON))
    from inspect_ai.log._metric import recompute_metrics  # Inspect's own, safe on this (built-in only) log

    again = read_eval_log(str(out / JSON))
    recompute_metrics(again)
    assert edited.results.model_dump_json() == again.results.model_dump_json()
    assert edited.reductions == again.reductions


# -- item 1: where the copies are written --------------------------------------------------------


def test_a_link_planted_at_the_old_temporary_name_does_not_redirect_the_write(workspace, runner, tmp_path):
    _, prefix, logs = prepare(workspace, runner, tmp_path)
    out = tmp_path / "shared"
    out.mkdir()
    victims = {}
    for name in (EVAL, JSON):
        victim = tmp_path / f"victim-{name}"
        victim.write_bytes(b"precious")
        victims[name] = victim
        os.symlink(victim, out / f".{name}.tmp-{os.getpid()}{Path(name).suffix}")
    before = {name: sha(logs / name) for name in (EVAL, JSON)}
    writeback(runner, prefix, "--round", "r1", "--to", str(out))
    assert all(v.read_bytes() == b"precious" for v in victims.values())  # not overwritten through the link
    for name in (EVAL, JSON):
        assert (out / name).is_file() and not (out / name).is_symlink()
        assert read_eval_log(str(out / name)).eval.task
    assert {name: sha(logs / name) for name in (EVAL, JSON)} == before


def test_to_may_not_be_an_originals_folder_when_two_logs_share_a_name(workspace, runner, tmp_path):
    ws, prefix = workspace
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    shutil.copyfile(DATA / JSON, first / "probe.json")
    inspect_log.write_eval_log(read_eval_log(str(DATA / EVAL)), str(second / "probe.json"), format="json")
    run(runner, prefix, "ingest", str(first / "probe.json"), str(second / "probe.json"))
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    run(runner, prefix, "annotators", "add", "lead@example.org", "--offline", "--expert")
    review(runner, prefix, ws, "r1", "refusal_judge")
    for folder in (first, second):
        before = sorted(p.name for p in folder.iterdir())
        result = writeback(runner, prefix, "--round", "r1", "--to", str(folder), ok=False)
        assert result.exit_code == 2 and "the folder of the original log" in result.stderr
        assert sorted(p.name for p in folder.iterdir()) == before
    # a link to it is the same folder
    os.symlink(first, tmp_path / "link")
    result = writeback(runner, prefix, "--round", "r1", "--to", str(tmp_path / "link"), ok=False)
    assert result.exit_code == 2 and "the folder of the original log" in result.stderr
    out = json.loads(writeback(runner, prefix, "--round", "r1", "--to", str(tmp_path / "out"), "--json").output)
    assert sorted(Path(log["target"]).name for log in out["logs"]) == sorted(
        f"probe.{s}.json" for s in (sha(first / "probe.json")[:12], sha(second / "probe.json")[:12])
    )


def test_to_may_not_be_inside_exports(workspace, runner, tmp_path):
    ws, prefix, _ = prepare(workspace, runner, tmp_path)
    run(runner, prefix, "export", "audit-1", "--round", "r1", "--draws", "200", "--min-reviewed", "1")
    folder = ws / "exports" / "audit-1"
    before = sorted(p.name for p in folder.iterdir())
    for to in (folder, ws / "exports" / "new", ws / "exports"):
        result = writeback(runner, prefix, "--round", "r1", "--to", str(to), ok=False)
        assert result.exit_code == 2 and "exports/" in result.stderr and "immutable" in result.stderr
    assert sorted(p.name for p in folder.iterdir()) == before and not (ws / "exports" / "new").exists()
    run(runner, prefix, "verify", str(folder))


KILLER = """
import os, signal, sys
import inspect_ai._util.atomic_write as atomic

create = atomic._create_local_tempfile

def create_and_die(target_dir, mode=0o666):
    fd, path = create(target_dir, mode)
    os.write(fd, b"PK half a log")
    os.kill(os.getpid(), signal.SIGKILL)

atomic._create_local_tempfile = create_and_die
from annotate.cli import cli
cli.main(args=sys.argv[1:], prog_name="annotate")
"""


def test_a_writeback_killed_mid_write_leaves_nothing_the_next_one_does_not_sweep(workspace, runner, tmp_path):
    _, prefix, _ = prepare(workspace, runner, tmp_path)
    out = tmp_path / "reviewed"
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, "writeback", "--round", "r1", "--to", str(out), *prefix],
        capture_output=True,
        cwd=Path.cwd(),
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    leftovers = [p for p in out.rglob("*") if p.name.startswith(".inspect_tmp_")]
    assert leftovers  # Inspect's temporary file of the killed write
    assert not (out / EVAL).exists() and not (out / JSON).exists()
    time.sleep(0.05)  # the leftovers are older than the next run
    result = writeback(runner, prefix, "--round", "r1", "--to", str(out))
    assert "left by an interrupted writeback" in result.output
    assert sorted(p.name for p in out.iterdir()) == sorted([EVAL, JSON])  # nothing hidden is left


def test_only_leftovers_that_are_provably_ours_are_swept(workspace, runner, tmp_path):
    _, prefix, _ = prepare(workspace, runner, tmp_path)
    out = tmp_path / "reviewed"
    out.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    alive = os.getppid()
    ours = out / f".annotate-writeback-{dead}-abc123"
    ours.mkdir()
    (ours / ".inspect_tmp_AbCdEf12345.writing").write_bytes(b"PK")
    (ours / EVAL).write_bytes(b"PK")
    old_style = out / f".{EVAL}.tmp-{dead}.eval"
    old_style.write_bytes(b"PK")
    running = out / f".annotate-writeback-{alive}-def456"  # another writeback, still running
    running.mkdir()
    foreign = out / f".annotate-writeback-{dead}-ghi789"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not ours")
    bare = out / ".inspect_tmp_ZyXwVu98765.writing"  # names no process: cannot tell
    bare.write_bytes(b"PK")
    stale = time.time() - 3600
    for path in (ours, old_style, running, foreign, bare):
        os.utime(path, (stale, stale))
    result = writeback(runner, prefix, "--round", "r1", "--to", str(out), "--json")
    outcome = json.loads(result.output)
    assert sorted(outcome["swept"]) == sorted([ours.name, old_style.name])
    assert not ours.exists() and not old_style.exists()
    assert running.exists() and foreign.exists() and bare.exists()
    left = " ".join(outcome["left"])
    assert foreign.name in left and "notes.txt" in left and bare.name in left
    assert (out / EVAL).is_file() and (out / JSON).is_file()


# -- item 2: one reading of every sample ----------------------------------------------------------


def test_a_sample_whose_answer_reads_two_ways_is_refused_at_writeback(workspace, runner, tmp_path, monkeypatch):
    """A store that took output.choices[0] (ingested before the check) never gets its label on the completion."""
    from annotate.ingest.formats import inspect_ai as reader

    def edit(log):
        sample = next(s for s in log["samples"] if (s["id"], s["epoch"]) == ("r3", 1))
        sample["output"]["choices"][0]["message"]["content"] = "Sure. Step one: cut the wire."

    with monkeypatch.context() as m:
        m.setattr(reader, "_disagreement", lambda *args: None, raising=False)  # the reader before the check
        _, prefix, _ = prepare(workspace, runner, tmp_path, edit_json=edit)
    out = tmp_path / "reviewed"
    result = writeback(runner, prefix, "--round", "r1", "--to", str(out), ok=False)
    assert result.exit_code == 2
    assert "sample r3 (epoch 1)" in result.stderr and "read two ways" in result.stderr
    assert "output.completion" in result.stderr and nothing_in(out)


def test_a_judge_verdict_read_otherwise_than_at_ingest_is_refused(workspace, runner, tmp_path):
    """Inspect's reading of the log must be the one ingested: the verdict edited is the one stored."""
    from sqlalchemy import text

    _, prefix, _ = prepare(workspace, runner, tmp_path)
    with store_of(prefix) as store, store.engine.begin() as conn:
        conn.execute(
            text("UPDATE response SET judge_verdict = 'C' WHERE prompt_id = 'r3' AND epoch = 1 AND judge = :j"),
            {"j": "refusal_judge"},
        )
    out = tmp_path / "reviewed"
    result = writeback(runner, prefix, "--round", "r1", "--to", str(out), ok=False)
    assert result.exit_code == 2 and "sample r3 (epoch 1)" in result.stderr
    assert "the judge's verdict in the log is 'P', not the 'C' ingested" in result.stderr and nothing_in(out)


def test_a_relogged_member_that_changes_only_the_first_choice_is_set_aside_at_ingest(workspace, runner, tmp_path):
    """The issue's log: a second member under the same name, the completion still the refusal."""
    import zipfile

    ws, prefix = workspace
    logs = tmp_path / "logs"
    logs.mkdir()
    path = logs / EVAL
    shutil.copyfile(DATA / EVAL, path)
    log = read_eval_log(str(DATA / EVAL))
    target = next(s for s in log.samples if s.output.completion.startswith("I can't help"))
    sample = json.loads(target.model_dump_json())
    sample["output"]["choices"][0]["message"]["content"] = "Sure, here is exactly how to do it."
    name = f"samples/{target.id}_epoch_{target.epoch}.json"
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as archive, pytest.warns(UserWarning, match="Duplicate"):
        archive.writestr(name, json.dumps(sample))
    assert [s.output.completion for s in read_eval_log(str(path)).samples if s.id == target.id][0].startswith(
        "I can't help"
    )  # what Inspect shows
    out = json.loads(run(runner, prefix, "ingest", str(path), "--json").output)
    assert out[0]["set_aside"] == 1
    rejects = [json.loads(line) for f in (ws / "rejects").rglob("*") if f.is_file() for line in f.open()]
    assert any("read two ways" in r.get("reason", "") for r in rejects)


# -- item 6: write-back output is marked ---------------------------------------------------------


def test_a_written_back_log_is_refused_by_ingest_unless_asked_and_then_reads_as_human_review(
    workspace, runner, tmp_path
):
    ws, prefix, _ = prepare(workspace, runner, tmp_path)
    out = tmp_path / "reviewed"
    writeback(runner, prefix, "--round", "r1", "--to", str(out))
    edited = read_eval_log(str(out / EVAL))
    assert edited.eval.metadata["annotate_writeback"]["round"] == "r1"
    for extra in ([], ["--replace"], ["--skip-invalid"]):
        result = run(runner, prefix, "ingest", str(out / EVAL), *extra, ok=False)
        assert result.exit_code == 2 and "written by `annotate writeback`" in result.stderr
        assert "--allow-written-back" in result.stderr
    # The header's mark removed, the edits' provenance still says who wrote them.
    stripped = tmp_path / "stripped.json"
    log = read_eval_log(str(out / JSON))
    log.eval.metadata = None
    inspect_log.write_eval_log(log, str(stripped), format="json")
    result = run(runner, prefix, "ingest", str(stripped), ok=False)
    assert result.exit_code == 2 and "written by `annotate writeback`" in result.stderr

    columns = ["benchmark", "prompt_id", "epoch", "judge", "judge_verdict", "judge_label"]
    with store_of(prefix) as store:
        judges_before = store.responses(columns).query("judge == 'refusal_judge'").reset_index(drop=True)
    run(runner, prefix, "ingest", str(out / EVAL), "--allow-written-back")
    with store_of(prefix) as store:
        responses = store.responses(columns)
    human = responses.loc[responses.judge == "human-review:refusal_judge"].set_index("prompt_id")
    assert len(human) == 6  # the six decided samples of the .eval, no more
    assert human.loc["4", "judge_label"] == "harmful" and human.loc["7", "judge_label"] == "harmful"
    assert "10" not in human.index  # unresolved: never written, never read as a human label
    judges_after = responses.loc[responses.judge == "refusal_judge"].reset_index(drop=True)
    assert judges_after.equals(judges_before)  # the judge's own rows are as ingested from the originals


def test_writeback_refuses_a_source_that_is_itself_written_back(workspace, runner, tmp_path):
    ws, prefix, _ = prepare(workspace, runner, tmp_path)
    out = tmp_path / "reviewed"
    writeback(runner, prefix, "--round", "r1", "--to", str(out))
    run(runner, prefix, "ingest", str(out / JSON), "--allow-written-back")
    review(runner, prefix, ws, "r2", "human-review:refusal_judge")
    result = writeback(runner, prefix, "--round", "r2", "--to", str(tmp_path / "again"), "--mode", "add", ok=False)
    assert result.exit_code == 2 and "itself written by `annotate writeback`" in result.stderr
