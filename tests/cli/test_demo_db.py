"""`annotate --db URL demo` uses that database (issue #22: it used to be ignored), and refuses one that
already holds a store."""

from __future__ import annotations

from annotate.cli import cli


def test_the_demo_honours_db_and_refuses_a_store(runner, tmp_path):
    db = tmp_path / "elsewhere" / "demo.db"
    db.parent.mkdir()
    done = runner.invoke(cli, ["--db", f"sqlite:///{db}", "demo", "--offline", "--dir", str(tmp_path / "ws")])
    assert done.exit_code == 0, done.output
    assert db.stat().st_size > 0 and not (tmp_path / "ws" / ".annotate" / "annotate.db").exists()
    again = runner.invoke(cli, ["--db", f"sqlite:///{db}", "demo", "--offline", "--dir", str(tmp_path / "ws2")])
    assert again.exit_code == 1 and "already holds an annotate store" in again.stderr
    assert not (tmp_path / "ws2").exists() or not (tmp_path / "ws2" / "annotate.toml").exists()
