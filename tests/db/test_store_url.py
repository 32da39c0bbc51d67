"""Where the store is: a relative path in annotate.toml is the workspace's, on the command line the caller's."""

from __future__ import annotations

import os

from annotate.config import resolve_db_url


def test_a_relative_path_in_the_settings_is_relative_to_the_workspace(tmp_path):
    root = tmp_path / "ws"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = os.getcwd()
    os.chdir(elsewhere)
    try:
        settings = {"store": {"url": ".annotate/other.db"}}
        assert resolve_db_url(root, None, settings) == f"sqlite:///{root.resolve() / '.annotate' / 'other.db'}"
        settings = {"store": {"url": "sqlite:///data/x.db"}}
        assert resolve_db_url(root, None, settings) == f"sqlite:///{root.resolve() / 'data' / 'x.db'}"
        # from the command line (or ANNOTATE_DB) a relative path is where the user stands
        assert resolve_db_url(root, "mine.db", settings) == f"sqlite:///{elsewhere.resolve() / 'mine.db'}"
        # absolute paths and other databases are taken as they are
        assert resolve_db_url(root, None, {"store": {"url": "sqlite:////abs/x.db"}}) == "sqlite:////abs/x.db"
        url = "postgresql+psycopg://u@h/db"
        assert resolve_db_url(root, None, {"store": {"url": url}}) == url
    finally:
        os.chdir(before)
