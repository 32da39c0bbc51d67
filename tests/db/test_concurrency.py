"""Concurrent commands on one store: real processes against a real SQLite file and PostgreSQL.

A writer that meets another's write lock waits (saying so, on SQLite) up to the busy timeout,
then gets one error and leaves nothing behind; readers never wait; a named lock keeps a second
process out; a record another command created at the same moment is an error, not a traceback.
"""

from __future__ import annotations

import threading
import time

import pandas as pd
import pytest

from annotate.db.store import open_store, utcnow
from annotate.errors import StateError, StoreError
from tests.db.processes import HOLD_LOCK, HOLD_WRITE, Holder

BUSY_MESSAGE = "the store is busy (another annotate command is writing); try again"
WAITING_MESSAGE = "waiting for another annotate command to finish writing..."


def _ingest_one(store, prompt_id: str = "p1") -> None:
    """One response through the ingest transaction (the path of `annotate ingest`)."""
    from annotate.ingest.run import content_sha

    with store.ingest_transaction() as tx:
        tx.use_source(sha256=prompt_id.ljust(64, "0"), path="x.jsonl", fmt="generic", size_bytes=1)
        row = (
            "b",
            "m",
            prompt_id,
            0,
            "j",
            None,
            "prompt",
            "r",
            "safe",
            None,
            "safe",
            "mapped",
            "safety",
            None,  # meta
            None,  # transcript
            None,  # image
            None,  # hazard
            None,  # persona
            None,  # locale
        )
        row += (content_sha("prompt", "r", "safe", None, "safe"), tx.source_id, tx.timestamp(utcnow()))
        tx.insert_batch([row])


def test_a_writer_past_the_busy_timeout_gets_one_error_and_writes_nothing(db_url):
    open_store(db_url).close()
    lines: list[str] = []
    with Holder(HOLD_WRITE, db_url) as holder:
        store = open_store(db_url, busy_timeout=1, notify=lines.append)
        started = time.monotonic()
        with pytest.raises(StoreError) as caught:
            _ingest_one(store)
        assert str(caught.value) == BUSY_MESSAGE
        assert time.monotonic() - started < 15
        if store.dialect == "sqlite":
            assert lines == [WAITING_MESSAGE]  # PostgreSQL's wait happens inside the server
        holder.release()
    assert store.count_responses() == 0 and store.source_files().empty and store.ingest_runs().empty
    _ingest_one(store)  # the lock is gone: the same write goes in
    assert store.count_responses() == 1
    store.close()


def test_a_waiting_writer_says_so_once_then_writes(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    open_store(url).close()
    lines: list[str] = []
    with Holder(HOLD_WRITE, url) as holder:
        store = open_store(url, busy_timeout=60, notify=lines.append)
        timer = threading.Timer(1.5, holder.release)
        timer.start()
        started = time.monotonic()
        assert store.add_annotator("ana@example.org", "Ana") == ("A1", True)
        assert time.monotonic() - started >= 1.0  # it did wait for the holder
        timer.join()
    store.add_annotator("ben@example.org", None)
    assert lines == [WAITING_MESSAGE]
    store.close()


def test_readers_do_not_wait_for_a_writer(db_url):
    store = open_store(db_url)
    _ingest_one(store)
    store.close()
    lines: list[str] = []
    with Holder(HOLD_WRITE, db_url) as holder:
        store = open_store(db_url, busy_timeout=30, notify=lines.append)
        started = time.monotonic()
        assert store.count_responses() == 1
        assert len(store.label_counts()) == 1 and store.annotators().empty and store.rounds().empty
        assert time.monotonic() - started < 5 and lines == []
        holder.release()
    store.close()


def test_the_named_lock_keeps_another_process_out(db_url):
    store = open_store(db_url)
    message = "another pull of A1 (round r1) is running"
    with Holder(HOLD_LOCK, db_url, "pull:r1:A1") as holder:
        with pytest.raises(StateError) as caught:
            with store.exclusive("pull:r1:A1", message=message):
                pytest.fail("the lock was held by the other process")
        assert str(caught.value) == message
        with store.exclusive("pull:r1:A2"):  # another name is another lock
            pass
        holder.release()
    with store.exclusive("pull:r1:A1", message=message):
        pass
    store.close()


def test_the_named_lock_waits_for_its_holder(db_url):
    lines: list[str] = []
    store = open_store(db_url, notify=lines.append)
    with Holder(HOLD_LOCK, db_url, "route:r1") as holder:
        timer = threading.Timer(1.0, holder.release)
        timer.start()
        started = time.monotonic()
        with store.exclusive("route:r1", wait=60, message="another route of round r1 is running"):
            assert time.monotonic() - started >= 0.5
        timer.join()
    assert lines == ["another route of round r1 is running; waiting up to 60 s..."]
    store.close()


def test_the_named_lock_dies_with_its_holder(db_url):
    store = open_store(db_url)
    with Holder(HOLD_LOCK, db_url, "pull:r1:A1") as holder:
        holder.proc.kill()
        holder.proc.wait()
        with store.exclusive("pull:r1:A1", wait=10):  # the server (or the kernel) released it
            pass
    store.close()


def test_two_stores_in_one_process_exclude_each_other(db_url):
    first, second = open_store(db_url), open_store(db_url)
    with first.exclusive("ingest"):
        with pytest.raises(StateError, match="another annotate command holds the lock 'ingest'"):
            with second.exclusive("ingest"):
                pass
    with second.exclusive("ingest"):
        pass
    first.close()
    second.close()


def test_a_sqlite_lock_file_is_private_and_beside_the_database(tmp_path):
    db = tmp_path / "state" / "store.db"
    store = open_store(f"sqlite:///{db}")
    with store.exclusive("pull:r1/../../A1 x"):  # any text names a lock; none leaves the folder
        locks = tmp_path / "state" / "store.db.locks"
        files = sorted(locks.iterdir())
        assert files and all(f.parent == locks for f in files)
        assert (locks.stat().st_mode & 0o777) == 0o700
        assert {f.stat().st_mode & 0o777 for f in files} == {0o600}
    store.close()


def _new_round(name: str) -> dict:
    return {
        "name": name,
        "kind": "review",
        "judge": "j",
        "seed": 7,
        "clear_per_cell": 1,
        "annotators": '["A1"]',
        "label_config_sha": "0" * 64,
        "label_config": "<View/>",
    }


def test_a_round_another_command_created_at_the_same_moment_is_an_error(db_url):
    # Two routes of one new round: both planned it as new (get_round was None for both).
    first, second = open_store(db_url), open_store(db_url)
    empty = pd.DataFrame()
    args = {"round_row": None, "wave": 1, "max_response_id": 0, "items": empty, "strata": empty}
    assert first.get_round("r1") is None and second.get_round("r1") is None
    first.create_round_wave(new_round=_new_round("r1"), **args)
    with pytest.raises(StateError) as caught:
        second.create_round_wave(new_round=_new_round("r1"), **args)
    assert "another annotate command wrote the same round at the same time" in str(caught.value)
    assert "run the command again" in str(caught.value)
    assert len(second.rounds()) == 1 and len(second.round_waves(int(second.rounds().id[0]))) == 1
    first.close()
    second.close()
