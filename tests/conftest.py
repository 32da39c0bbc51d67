from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.ls_fixture import ls_server  # noqa: F401  (fixture)
from tests.pg_fixture import pg_server_url, pg_url  # noqa: F401  (fixtures)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    """Each store test runs on a real SQLite file and on a real PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def workspace(tmp_path, runner, db_url):
    """An initialised workspace whose store is `db_url`; returns (path, cli args prefix)."""
    from annotate.cli import cli

    ws = tmp_path / "ws"
    result = runner.invoke(cli, ["init", str(ws), "--db", db_url], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return ws, ["--workspace", str(ws), "--db", db_url]
