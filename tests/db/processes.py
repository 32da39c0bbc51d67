"""Real other processes for the concurrency tests: one that holds a lock, and `annotate` itself."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from types import TracebackType

# Holds a write transaction on the store (argv[1]) until a line arrives on stdin, then rolls back.
# SQLite has one write lock: any write takes it. PostgreSQL writers only meet on the same rows or
# tables: EXCLUSIVE mode keeps every other writer off `response` and lets readers through.
HOLD_WRITE = """
import sys
from annotate.db import open_store
store = open_store(sys.argv[1])
conn = store.engine.connect()
trans = conn.begin()
if store.dialect == "sqlite":
    conn.exec_driver_sql(
        "INSERT INTO diagnosis (judge, result, created_at) VALUES ('holder', '{}', '2020-01-01 00:00:00')"
    )
else:
    conn.exec_driver_sql("LOCK TABLE response IN EXCLUSIVE MODE")
print("holding", flush=True)
sys.stdin.readline()
trans.rollback()
conn.close()
store.close()
"""

# Holds SQLite's write lock on the file argv[1] with the bare driver (no annotate involved).
HOLD_SQLITE_FILE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""

# Holds the named lock argv[2] of the store argv[1] until a line arrives on stdin.
HOLD_LOCK = """
import sys
from annotate.db import open_store
store = open_store(sys.argv[1])
with store.exclusive(sys.argv[2]):
    print("holding", flush=True)
    sys.stdin.readline()
store.close()
"""


class Holder:
    """A process running one of the scripts above; ``with Holder(...)`` ends it in any case."""

    def __init__(self, script: str, *args: str, start_timeout: float = 120) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], start_timeout)
        line = self.proc.stdout.readline() if ready else ""
        if line.strip() != "holding":
            self.proc.kill()
            _, err = self.proc.communicate()
            raise AssertionError(f"the holding process did not start: {line!r} {err}")

    def release(self) -> int:
        """Let it finish its transaction (or lock) and exit; its exit status."""
        assert self.proc.stdin is not None
        if self.proc.poll() is None:
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
        _, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, err
        return self.proc.returncode

    def __enter__(self) -> Holder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def annotate(*args: str, busy_timeout: float | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`annotate ARGS` in a process of its own (``ANNOTATE_BUSY_TIMEOUT`` when given)."""
    env = dict(os.environ)
    env.pop("ANNOTATE_BUSY_TIMEOUT", None)
    if busy_timeout is not None:
        env["ANNOTATE_BUSY_TIMEOUT"] = str(busy_timeout)
    return subprocess.run(
        [sys.executable, "-m", "annotate", *args], capture_output=True, text=True, env=env, timeout=timeout
    )
