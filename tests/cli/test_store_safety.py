"""The store from the command line: private files, supported databases, concurrent commands.

Whichever command creates the store, its folder is 0700 and its files 0600; an existing store
that others can open gets one warning with the chmod to run (on stderr, never in --json); an
unsupported --db is refused before anything is created; a busy store is one `Error:` line and
exit 1, never a traceback.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import click
import pytest

from annotate.cli import AnnotateGroup, cli
from tests.db.processes import HOLD_SQLITE_FILE, HOLD_WRITE, Holder, annotate
from tests.helpers import generic_row, write_jsonl

REPO = Path(__file__).resolve().parents[2]
BUSY = "Error: the store is busy (another annotate command is writing); try again"
WAITING = "waiting for another annotate command to finish writing..."


@pytest.fixture
def umask_022():
    """The usual umask, under which the old code made the store world-readable."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def _ready_folder(tmp_path: Path) -> Path:
    """A workspace like a fresh clone of the repository: a label config, no .annotate/."""
    folder = tmp_path / "clone"
    folder.mkdir()
    (folder / "label_config.xml").write_text((REPO / "label_config.xml").read_text(encoding="utf-8"))
    return folder


# -- private by default ---------------------------------------------------------------------------
def test_init_makes_the_state_folder_0700_and_the_database_0600(runner, tmp_path, umask_022):
    ws = tmp_path / "ws"
    result = runner.invoke(cli, ["init", str(ws)])
    assert result.exit_code == 0, result.output
    assert _mode(ws / ".annotate") == 0o700
    assert _mode(ws / ".annotate" / "annotate.db") == 0o600
    assert "Warning" not in result.stderr
    # SQLite gives the -wal and -shm files the database's mode: look while a writer has them open.
    db = ws / ".annotate" / "annotate.db"
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO diagnosis (judge, result, created_at) VALUES ('j', '{}', '2020-01-01')")
        conn.commit()
        side = [db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
        assert all(p.exists() for p in side)
        assert [_mode(p) for p in side] == [0o600, 0o600]


def test_ingest_into_a_new_db_path_makes_it_private(runner, tmp_path, umask_022):
    ws = tmp_path / "ws"
    assert runner.invoke(cli, ["init", str(ws)]).exit_code == 0
    data = write_jsonl(tmp_path / "in.jsonl", [generic_row(i) for i in range(6)])
    db = tmp_path / "elsewhere" / "deeper" / "team.db"
    result = runner.invoke(cli, ["-w", str(ws), "--db", str(db), "ingest", str(data)])
    assert result.exit_code == 0, result.output
    assert _mode(db) == 0o600
    assert _mode(db.parent) == 0o700 and _mode(db.parent.parent) == 0o700


def test_the_first_command_in_a_folder_without_state_makes_it_private(runner, tmp_path, umask_022):
    folder = _ready_folder(tmp_path)
    result = runner.invoke(cli, ["-w", str(folder), "summary", "--json"])
    assert result.exit_code == 0, result.output
    assert _mode(folder / ".annotate") == 0o700
    assert _mode(folder / ".annotate" / "annotate.db") == 0o600
    assert "Warning" not in result.stderr


def test_a_store_others_can_read_gets_one_warning_with_the_chmod_and_keeps_its_mode(runner, tmp_path):
    ws = tmp_path / "ws"
    assert runner.invoke(cli, ["init", str(ws)]).exit_code == 0
    state, db = ws / ".annotate", ws / ".annotate" / "annotate.db"
    os.chmod(state, 0o755)
    os.chmod(db, 0o644)
    result = runner.invoke(cli, ["-w", str(ws), "summary", "--json"])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)  # the warning stays off stdout
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning: ")]
    assert len(warnings) == 1, result.stderr
    assert f"{state} (mode 0755)" in warnings[0] and f"{db} (mode 0644)" in warnings[0]
    assert f"chmod 700 {state} && chmod 600 {db}" in warnings[0]
    assert _mode(state) == 0o755 and _mode(db) == 0o644  # never changed behind the user's back
    # Running the chmod it prints silences it.
    subprocess.run(warnings[0].split("Make it private with: ", 1)[1], shell=True, check=True)
    again = runner.invoke(cli, ["-w", str(ws), "summary", "--json"])
    assert again.exit_code == 0 and "Warning" not in again.stderr


def test_init_on_an_existing_store_others_can_read_warns(runner, tmp_path):
    ws = tmp_path / "ws"
    assert runner.invoke(cli, ["init", str(ws)]).exit_code == 0
    os.chmod(ws / ".annotate" / "annotate.db", 0o640)
    result = runner.invoke(cli, ["init", str(ws)])
    assert result.exit_code == 0
    assert f"chmod 600 {ws / '.annotate' / 'annotate.db'}" in result.stderr
    assert _mode(ws / ".annotate" / "annotate.db") == 0o640


# -- supported databases --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "url",
    ["mysql://ana:s3cret@dbhost/annotate", "oracle://dbhost/annotate", "postgressql://dbhost/annotate"],
    ids=["mysql", "oracle", "typo"],
)
def test_an_unsupported_database_names_the_supported_ones_and_creates_nothing(runner, tmp_path, url):
    ws = tmp_path / "new-ws"
    result = runner.invoke(cli, ["--db", url, "init", str(ws)])
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.stderr.startswith("Error: unsupported database URL")
    assert "SQLite" in result.stderr and "postgresql+psycopg://" in result.stderr and "[postgres]" in result.stderr
    assert "s3cret" not in result.output
    assert not ws.exists()
    folder = _ready_folder(tmp_path)
    other = runner.invoke(cli, ["-w", str(folder), "--db", url, "summary"])
    assert other.exit_code == 2 and other.stderr.startswith("Error: unsupported database URL")
    assert not (folder / ".annotate").exists()


def test_postgresql_without_its_driver_says_how_to_install_it(tmp_path):
    # A real process in which psycopg cannot be imported (as on an install without the extra).
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from annotate.cli import main\n"
        f"sys.argv = ['annotate', '--db', 'postgresql://dbhost/annotate', 'init', {str(tmp_path / 'ws')!r}]\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("Error: PostgreSQL needs the psycopg driver")
    assert "pip install" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "ws").exists()


def test_the_help_and_the_readme_name_the_supported_databases(runner):
    for args in (["--help"], ["init", "--help"], ["summary", "--help"]):
        text = " ".join(runner.invoke(cli, args).output.split())
        assert "postgresql+psycopg://" in text and "no other database is supported" in text, args
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert "any SQLAlchemy URL" not in readme
    assert "postgresql+psycopg://" in readme and "ANNOTATE_BUSY_TIMEOUT" in readme


def test_a_busy_timeout_that_is_not_a_number_is_refused(runner, tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    assert runner.invoke(cli, ["init", str(ws)]).exit_code == 0
    monkeypatch.setenv("ANNOTATE_BUSY_TIMEOUT", "soon")
    result = runner.invoke(cli, ["-w", str(ws), "summary"])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ANNOTATE_BUSY_TIMEOUT must be a number of seconds")


# -- concurrent commands --------------------------------------------------------------------------
def test_ingest_into_a_busy_store_is_one_error_and_changes_nothing(workspace, tmp_path, db_url, runner):
    from annotate.db import open_store

    ws, prefix = workspace
    data = write_jsonl(tmp_path / "in.jsonl", [generic_row(i) for i in range(30)])
    with Holder(HOLD_WRITE, db_url) as holder:
        result = annotate(*prefix, "ingest", str(data), busy_timeout=1, timeout=40)
        holder.release()
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    expected = [WAITING, BUSY] if db_url.startswith("sqlite") else [BUSY]
    assert result.stderr.splitlines() == expected
    with open_store(db_url) as store:  # the store is as it was
        assert store.count_responses() == 0 and store.source_files().empty and store.ingest_runs().empty
    retry = runner.invoke(cli, [*prefix, "ingest", str(data)])
    assert retry.exit_code == 0 and "30 added" in retry.stdout, retry.output


def test_a_command_waits_for_a_short_write_and_says_so(tmp_path):
    ws = tmp_path / "ws"
    assert annotate("init", str(ws)).returncode == 0
    data = write_jsonl(tmp_path / "in.jsonl", [generic_row(i) for i in range(5)])
    url = f"sqlite:///{ws / '.annotate' / 'annotate.db'}"
    with Holder(HOLD_WRITE, url) as holder:
        proc = subprocess.Popen(
            [sys.executable, "-m", "annotate", "-w", str(ws), "ingest", "--json", str(data)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # The command announces its wait on stderr, then goes on once the holder is done.
        assert proc.stderr is not None
        assert proc.stderr.readline().rstrip("\n") == WAITING
        holder.release()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out)[0]["added"] == 5 and err == ""


def test_a_database_error_that_concurrency_explains_never_reaches_the_user_as_a_traceback(runner, tmp_path):
    """The last line of defence: a raw driver error from a path the store did not translate."""
    db = tmp_path / "raw.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.close()

    @click.group(cls=AnnotateGroup)
    def group() -> None:
        pass

    @group.command()
    def write() -> None:
        with sqlite3.connect(db, timeout=0) as conn:
            conn.execute("INSERT INTO t VALUES (1)")

    @group.command()
    def broken() -> None:
        raise ValueError("a bug, not a busy store")

    with Holder(HOLD_SQLITE_FILE, str(db)) as holder:
        result = runner.invoke(group, ["write"])
        holder.release()
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [BUSY]
    bug = runner.invoke(group, ["broken"])
    assert isinstance(bug.exception, ValueError)  # anything else is not hidden
