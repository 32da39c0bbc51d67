"""Property: a corrupted file is either ingested cleanly or refused with exit 2 and the database
left byte-for-byte unchanged (SQLite file, after every connection is closed)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotate.cli import cli
from tests.helpers import generic_row, write_csv, write_jsonl

ROWS = [generic_row(i, epoch=i % 2, judge_score=None if i % 4 else 0.5) for i in range(12)]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _corrupt(data: bytes, ops: list[tuple[str, int, int]]) -> bytes:
    buf = bytearray(data)
    for op, pos, val in ops:
        if not buf:
            break
        pos %= len(buf)
        if op == "flip":
            buf[pos] = val
        elif op == "delete":
            del buf[pos : pos + 1 + val % 40]
        elif op == "insert":
            buf[pos:pos] = bytes([val]) * (1 + val % 3)
        elif op == "truncate":
            del buf[pos:]
        elif op == "dupline":
            lines = bytes(buf).split(b"\n")
            i = pos % len(lines)
            lines.insert(i, lines[i])
            buf = bytearray(b"\n".join(lines))
        elif op == "dropkey":
            lines = bytes(buf).split(b"\n")
            i = pos % len(lines)
            try:
                obj = json.loads(lines[i])
                obj.pop(sorted(obj)[val % len(obj)])
                lines[i] = json.dumps(obj).encode()
            except (ValueError, AttributeError, ZeroDivisionError, IndexError):
                pass
            buf = bytearray(b"\n".join(lines))
    return bytes(buf)


ops = st.lists(
    st.tuples(
        st.sampled_from(["flip", "delete", "insert", "truncate", "dupline", "dropkey"]),
        st.integers(0, 10_000),
        st.integers(0, 255),
    ),
    min_size=1,
    max_size=4,
)


def _check(tmp_path: Path, runner, name: str, payload: bytes) -> None:
    ws = tmp_path / "ws"
    db = ws / ".annotate" / "annotate.db"
    target = tmp_path / name
    target.write_bytes(payload)
    before = _sha(db)
    result = runner.invoke(cli, ["-w", str(ws), "ingest", str(target), "--format", "generic"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 2), (result.exit_code, result.output)
    if result.exit_code == 2:
        assert result.stderr.startswith("Error: ")
        assert all(line.startswith("Error: ") for line in result.stderr.splitlines())
        assert _sha(db) == before, "a refused file changed the database"
        assert not (ws / "rejects").exists() or not any((ws / "rejects").iterdir())
    else:
        assert "rows read" in result.output


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops)
def test_corrupted_jsonl(tmp_path_factory, runner, ops):
    tmp_path = tmp_path_factory.mktemp("prop")
    runner.invoke(cli, ["init", str(tmp_path / "ws")], catch_exceptions=False)
    base = write_jsonl(tmp_path / "base.jsonl", ROWS)
    runner.invoke(cli, ["-w", str(tmp_path / "ws"), "ingest", str(base)], catch_exceptions=False)
    _check(tmp_path, runner, "c.jsonl", _corrupt(base.read_bytes(), ops))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops)
def test_corrupted_csv(tmp_path_factory, runner, ops):
    tmp_path = tmp_path_factory.mktemp("prop")
    runner.invoke(cli, ["init", str(tmp_path / "ws")], catch_exceptions=False)
    base = write_csv(tmp_path / "base.csv", ROWS)
    runner.invoke(cli, ["-w", str(tmp_path / "ws"), "ingest", str(base)], catch_exceptions=False)
    _check(tmp_path, runner, "c.csv", _corrupt(base.read_bytes(), ops))
