"""What a file may make ingest hold in memory and add to the store (issue #22, docs/formats.md
"Bounded memory").

* Parquet: a 10 KB dictionary-encoded file whose every response is one 1 MiB dictionary entry took
  4.2 GB of memory and added 4.1 GB to the store; it is now refused before a row is decoded, from
  its footer and its dictionaries (``annotate.ingest.parquet``), and so are its nested, struct,
  compressed and row-count variants.
* Single-document JSON (HarmBench, JailbreakBench, promptfoo) is read whole: files over
  ``MAX_DOCUMENT_BYTES`` are refused before they are read, and the peak memory of reading one is
  measured here against the factor docs/formats.md states.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annotate.cli import cli
from annotate.ingest import parquet
from annotate.ingest.formats import generic
from annotate.ingest.records import MAX_DOCUMENT_BYTES, Problem, ReadContext, Record
from tests.helpers import generic_row

REPO = Path(__file__).resolve().parents[2]


def table(rows: int, **columns) -> pa.Table:
    base = {k: [v] * rows for k, v in generic_row(1).items() if k not in columns}
    base["prompt_id"] = [f"p{i}" for i in range(rows)]
    return pa.table({**base, **columns})


def one_entry(rows: int, value: str) -> pa.DictionaryArray:
    """``rows`` indices into a dictionary of one entry: nothing is expanded to build it."""
    return pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array([value]))


def write(path: Path, data: pa.Table, **options) -> Path:
    pq.write_table(data, path, **options)
    return path


def read(path: Path) -> list:
    return list(generic.read(path, ReadContext()))


def high_water(status: str) -> int:
    """The peak resident set of a process (bytes), from its /proc/PID/status: ``VmHWM`` starts
    afresh at exec, where ``ru_maxrss`` keeps the high-water mark of the forked parent."""
    (line,) = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(line.split()[1]) * 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="measures the resident set through /proc")
def test_the_parquet_dictionary_bomb_is_refused_before_it_is_decoded(tmp_path):
    """The file of issue #22, through `annotate ingest` in a process of its own, with 3 GiB of
    address space: before, it ran out of memory (4.2 GB) or filled the store (4.1 GB)."""
    bomb = write(tmp_path / "bomb.parquet", table(4000, response=one_entry(4000, "A" * 2**20)), compression="zstd")
    assert bomb.stat().st_size < 20_000
    ws = tmp_path / "ws"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "annotate", "init", str(ws)], check=True, capture_output=True, env=env)
    before = (ws / ".annotate" / "annotate.db").stat().st_size
    peak = tmp_path / "peak"
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(peak)!r}, 'w').write(open('/proc/self/status').read()))\n"
        "from annotate.cli import main\n"
        f"sys.argv = ['annotate', '--workspace', {str(ws)!r}, 'ingest', {str(bomb)!r}]\n"
        "main()\n"
    )

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, preexec_fn=limit, timeout=300
    )
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr[-2000:])
    assert f"Error: {bomb}:1: the file is {bomb.stat().st_size:,} bytes and its first 1 row group(s) may decode " in (
        done.stderr
    )
    assert "refused before its rows are decoded" in done.stderr
    assert high_water(peak.read_text()) < 512 * 2**20  # the process's own footprint: nothing was decoded
    assert (ws / ".annotate" / "annotate.db").stat().st_size == before


@pytest.fixture
def small_bounds(monkeypatch):
    """Bounds scaled down so that each bomb is a few KB and decodes to a few MB."""
    monkeypatch.setattr(parquet, "DECODED_FLOOR", 2**20)
    monkeypatch.setattr(parquet, "BATCH_BYTES", 2**16)


def refused(items: list) -> str:
    assert not any(isinstance(i, Record) for i in items), "rows were decoded"
    (problem,) = items
    assert isinstance(problem, Problem) and problem.fatal and problem.line == 1
    return problem.message


def test_a_dictionary_bomb_in_a_nested_column_is_refused(tmp_path, small_bounds):
    big = pa.array(["A" * 2**16])
    listed = pa.ListArray.from_arrays(
        pa.array([0, 64] + [64] * 99, pa.int32()), pa.DictionaryArray.from_arrays(pa.array([0] * 64, pa.int32()), big)
    )
    path = write(tmp_path / "listed.parquet", table(100, response=["r"] * 100, extra=listed))
    assert "may decode to" in refused(read(path))
    struct = pa.StructArray.from_arrays([one_entry(100, "B" * 2**16)], names=["note"])
    path = write(tmp_path / "struct.parquet", table(100, response=["r"] * 100, extra=struct))
    assert "may decode to" in refused(read(path))


def test_a_compression_bomb_is_refused_from_its_footer(tmp_path, small_bounds):
    """Plain pages (no dictionary) compressed a thousandfold: the footer declares what they hold."""
    path = write(
        tmp_path / "zstd.parquet", table(64, response=["C" * 2**16] * 64), compression="zstd", use_dictionary=False
    )
    assert path.stat().st_size < 10_000
    assert "its footer declares 4.0 MiB of data" in refused(read(path))


def test_a_row_count_bomb_is_refused_from_its_footer(tmp_path, small_bounds):
    """A million copies of one row: a few KB, each value counted at its width (8 bytes)."""
    rows = 1_000_000
    constant = pa.table({k: one_entry(rows, v) for k, v in generic_row(1).items()})
    path = write(tmp_path / "rows.parquet", constant, compression="zstd")
    assert path.stat().st_size < 50_000
    assert "its footer declares" in refused(read(path))


def test_real_tables_read_whole_in_bounded_batches(tmp_path, small_bounds, monkeypatch):
    """A table with repeated names and texts (dictionary pages and plain fallback) reads every row
    exactly as pyarrow does, in batches whose dictionary values stay under BATCH_BYTES."""
    rng = random.Random(1)
    words = "the model refused to help with the request and explained the policy".split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 400))) for _ in range(300)]
    rows = [
        generic_row(i, response=texts[i % 300], prompt=texts[(i * 7) % 300], judge_score=None, category=f"c{i % 5}")
        for i in range(3000)
    ]
    path = write(tmp_path / "real.parquet", pa.Table.from_pylist(rows), row_group_size=1000)
    pf = pq.ParquetFile(path)
    with open(path, "rb") as fh:
        reading = parquet.plan(pf, fh, path.stat().st_size)
    assert isinstance(reading, parquet.Plan) and len(reading.batch_rows) == 3
    longest = max(len(t) for t in texts)
    assert all(rows_per_batch * longest * 2 <= 2 * parquet.BATCH_BYTES for rows_per_batch in reading.batch_rows)
    items = read(path)
    assert [(r.prompt_id, r.prompt, r.response, r.category) for r in items] == [
        (r["prompt_id"], r["prompt"], r["response"], r["category"]) for r in rows
    ]


@pytest.mark.parametrize(
    ("fmt", "name", "head"),
    [
        ("harmbench", "model.json", b'{"b": [{"test_case": "t", "generation": "g", "label": 1}, '),
        ("jailbreakbench", "vicuna.json", b'{"parameters": {"method": "PAIR"}, "jailbreaks": [{"prompt": "p", '),
        ("promptfoo", "export.json", b'{"evalId": "e", "results": {"version": 3, "results": [{"promptIdx": 0, '),
    ],
)
def test_a_single_document_file_over_the_bound_is_refused_before_it_is_read(
    workspace, runner, tmp_path, fmt, name, head
):
    """Before: read whole (some 9x its size in memory), whatever its size."""
    _, prefix = workspace
    path = tmp_path / name
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(MAX_DOCUMENT_BYTES + 1)  # sparse: nothing is written past the head
    result = runner.invoke(cli, [*prefix, "ingest", str(path), "--format", fmt])
    assert result.exit_code == 2, (result.output, repr(result.exception))
    assert f"Error: {path}:1: the file is 256 MiB, and a file of this format is one JSON document, read whole " in (
        result.stderr
    )
    assert "annotate reads such files up to 256 MiB" in result.stderr and "JSON Lines" in result.stderr


def harmbench_document(path: Path, astral: bool) -> Path:
    rng = random.Random(0)
    words = "the model said that it would not help with this request because the safety policy forbids".split()
    tail = " \U0001f600" if astral else ""
    doc = {
        f"behaviour_{b}": [
            {"test_case": " ".join(rng.choices(words, k=40)), "generation": " ".join(rng.choices(words, k=300)) + tail}
            | {"label": rng.choice([0, 1])}
            for _ in range(40)
        ]
        for b in range(400)
    }
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


MEASURE = """
import json, sys
from pathlib import Path
from annotate.ingest.formats import harmbench
from annotate.ingest.records import ReadContext

def status(key):  # kB; VmHWM is this process's peak since exec (ru_maxrss would count the forked parent's)
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(key + ":"))

start = status("VmRSS")
n = sum(1 for _ in harmbench.read(Path(sys.argv[1]), ReadContext(model="m")))
print(json.dumps({"items": n, "factor": (status("VmHWM") - start) / Path(sys.argv[1]).stat().st_size}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="measures the resident set through /proc")
@pytest.mark.parametrize(("astral", "bound"), [(False, 3.0), (True, 9.0)])
def test_the_peak_memory_of_a_single_document_file_is_what_the_docs_say(tmp_path, astral, bound):
    """docs/formats.md: about 2x the file's size for ASCII text, up to about 8x when the text holds
    characters outside the Basic Multilingual Plane (Python keeps the whole text at 4 bytes a
    character). Measured here on a 32 MB HarmBench results file, in a process of its own."""
    path = harmbench_document(tmp_path / "model.json", astral)
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    measured = json.loads(done.stdout)
    assert measured["items"] == 16_000
    print(f"{path.stat().st_size / 2**20:.1f} MiB, {'astral' if astral else 'ASCII'}: {measured['factor']:.2f}x")
    assert measured["factor"] <= bound
