"""Memory bounded by what a file parses to, not only by its bytes (issue #32, docs/formats.md
"Bounded memory").

Before: an Inspect ``.eval`` of 134 KB whose sample member honestly declares 128 MiB of
``{},{},...`` passed the byte budget of its member, and ``json.loads`` built 45 million dicts: under
a 2 GiB address-space limit, ``ingest`` ended in a ``MemoryError`` traceback after 11 s. Every JSON
text is now counted before it is parsed (``annotate.json_bound``), CSV records by their delimiters,
and Parquet rows by their Arrow values.

* ``json_values_over`` is checked against what the parser really builds, on random JSON.
* The expansion corpus: for every reader, its worst shapes (many small objects, long arrays of
  numbers, nested arrays, distinct keys, deep nesting) just over its bound, ingested through the
  command in one process of its own under a 2 GiB address-space limit: each is refused with one
  line naming where and the bound, nothing ingested; and the worst shape just under the bound of
  a sample and of a document is read, within the stated memory (VmHWM).
"""

from __future__ import annotations

import json
import os
import random
import resource
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annotate.cli import cli
from annotate.errors import InputError
from annotate.ingest import parquet
from annotate.ingest.csv_reader import MAX_CSV_FIELDS, csv_records
from annotate.ingest.records import ReadContext, json_lines
from annotate.json_bound import MAX_DOCUMENT_VALUES, MAX_SAMPLE_VALUES, VALUE_MEMORY, json_values_over
from annotate.labelstudio.tasks import read_export_file

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "formats"
EVAL = DATA / "inspect_ai" / "log_formats.eval"
ADDRESS_SPACE = 2 << 30
LINUX = Path("/proc/self/status").exists()


# -- the count, against what the parser builds -------------------------------------------------


def built(value) -> int:
    """The values (keys included) a parsed JSON value is made of: counted independently, on the objects."""
    if isinstance(value, dict):
        return 1 + sum(1 + built(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(built(v) for v in value)
    return 1


def random_json(rng: random.Random, depth: int = 0):
    kind = rng.choice(["dict", "list", "str", "num", "const"] if depth < 5 else ["str", "num", "const"])
    if kind == "dict":
        return {
            rng.choice(["a", "b,", "c:d", '"q"', "[x", "{y}", "\\", f"k{i}"]) + str(i): random_json(rng, depth + 1)
            for i in range(rng.randint(0, 4))
        }
    if kind == "list":
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind == "str":
        return "".join(rng.choice('ab,:[]{}"\\\n é😀') for _ in range(rng.randint(0, 8)))
    if kind == "num":
        return rng.choice([0, -1.5, 10**20, 3e-7])
    return rng.choice([None, True, False])


@pytest.mark.parametrize("seed", range(5))
def test_the_count_is_exactly_what_the_parser_builds_for_compact_json_and_bounds_it_otherwise(seed):
    rng = random.Random(seed)
    for _ in range(400):
        value = random_json(rng)
        for text, exact in (
            (json.dumps(value, separators=(",", ":")), True),
            (json.dumps(value, ensure_ascii=False), False),
            (json.dumps(value, indent=2), False),
        ):
            truth = built(json.loads(text))
            for form in (text, text.encode("utf-8")):
                counted = json_values_over(form, 0)
                assert counted is not None
                assert counted == truth if exact else counted >= truth, (text, counted, truth)
                assert json_values_over(form, counted) is None  # at the bound: not over it
                assert json_values_over(form, counted - 1) == counted


def test_commas_inside_strings_are_not_counted_when_the_fast_bound_is_exceeded():
    text = json.dumps({"response": "a, b: [c], {d}" * 10_000})
    assert json_values_over(text, 5) is None  # 3 values, though the raw text holds 60,000 commas
    assert json_values_over(text.encode(), 2) == 3


def test_a_short_text_is_not_scanned():
    # A text of at most `limit` characters cannot hold more values: no count is made (nor needed).
    assert json_values_over("[" + "[]," * 10 + "[]]", 100) is None


# -- CSV and Parquet: counted before they are built ----------------------------------------------


def csv_items(path: Path) -> list:
    return list(csv_records(path, ReadContext()))


def test_a_csv_record_of_many_fields_is_refused_before_it_is_split(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("a,b\n1,2\n" + ",".join(["ab"] * (MAX_CSV_FIELDS + 1)) + "\n3,4\n")
    *kept, last = csv_items(path)
    assert [k[2] for k in kept] == [["a", "b"], ["1", "2"]]
    assert last.fatal and last.line == 3
    assert f"has more than {MAX_CSV_FIELDS:,} fields" in last.message and "delimiter" in last.message


def test_delimiters_inside_quotes_do_not_count_as_fields(tmp_path):
    path = tmp_path / "quoted.csv"
    cell = '"' + "x," * (MAX_CSV_FIELDS + 10) + '\n""still quoted"",' * 3 + '"'
    path.write_text(f"a,b\n{cell},2\n")
    header, row = csv_items(path)
    assert row[2][1] == "2" and row[2][0].count(",") == MAX_CSV_FIELDS + 13


def test_a_wide_header_is_refused(tmp_path):
    path = tmp_path / "wide_header.csv"
    path.write_text(",".join(f"c{i}" for i in range(MAX_CSV_FIELDS + 1)) + "\n")
    (problem,) = csv_items(path)
    assert problem.fatal and "the CSV header is not read" in problem.message


def test_a_csv_record_longer_than_64_mib_over_many_lines_is_refused(tmp_path):
    path = tmp_path / "long_record.csv"
    line = "y" * (2**20 - 1) + "\n"
    with open(path, "w") as fh:
        fh.write('a,b\n"')
        for _ in range(40):
            fh.write(line)
        fh.write('","')
        for _ in range(30):
            fh.write(line)
        fh.write('"\n')
    header, problem = csv_items(path)
    assert problem.fatal and "is longer than 64 MiB, the longest record read" in problem.message


def test_a_parquet_row_holding_a_long_list_is_not_built(tmp_path):
    n = MAX_SAMPLE_VALUES + 5
    table = pa.table({"id": [1, 2, 3], "values": [[1, 2], list(range(n)), [3]]})
    batch = table.to_batches()[0]
    assert parquet.arrow_values(batch.column(1)) == 3 + 3 + n
    rows = list(parquet.python_rows(batch, MAX_SAMPLE_VALUES))
    assert rows[0] == {"id": 1, "values": [1, 2]} and rows[2] == {"id": 3, "values": [3]}
    assert isinstance(rows[1], str) and f"the row holds {n + 2:,} values" in rows[1]


def test_parquet_values_of_structs_maps_and_slices_are_counted_on_their_own_slice():
    struct = pa.array([{"role": "user", "content": "x"}, {"role": "a", "content": None}])
    assert parquet.arrow_values(struct) == sum(built(v) for v in struct.to_pylist()) == 10
    nested = pa.array([[{"k": [1, 2]}], [], None, [{"k": []}, {"k": [3]}]])
    assert parquet.arrow_values(nested) == sum(built(v) for v in nested.to_pylist())
    assert parquet.arrow_values(nested.slice(3, 1)) == built(nested.to_pylist()[3])
    mapping = pa.array(
        [[("a", [1]), ("b", [])], [("c", [3])], [("d", [4]), ("e", [5, 6])]],
        type=pa.map_(pa.string(), pa.list_(pa.int64())),
    )
    # to_pylist: a list of (key, value) tuples per row; a tuple is one object, as a list is
    rows = [[list(entry) for entry in row] for row in mapping.to_pylist()]
    assert parquet.arrow_values(mapping) == sum(built(r) for r in rows)
    assert parquet.arrow_values(mapping.slice(1, 1)) == built(rows[1])


def test_a_json_lines_line_over_the_bound_is_a_problem_of_its_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    row = {"a": 1}
    path.write_bytes(
        (json.dumps(row) + "\n").encode() + b'{"a": [' + b"0," * MAX_SAMPLE_VALUES + b"0]}\n" + b'{"a": 2}\n'
    )
    items = list(json_lines(path, ReadContext()))
    assert items[0] == (1, row) and items[2] == (3, {"a": 2})
    assert not items[1].fatal and f"more than the {MAX_SAMPLE_VALUES:,} annotate parses" in items[1].message
    # --max-values raises the bound: the line is read.
    assert len(list(json_lines(path, ReadContext(max_values=2 * MAX_SAMPLE_VALUES)))[1][1]["a"]) == 1 + (
        MAX_SAMPLE_VALUES
    )


def test_a_label_studio_export_over_the_bound_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "export.json"
    path.write_bytes(b"[" + b"{}," * MAX_DOCUMENT_VALUES + b"{}]")
    with pytest.raises(InputError) as caught:
        read_export_file(path)
    assert str(caught.value).startswith(f"{path}: the export holds up to {MAX_DOCUMENT_VALUES + 2:,} JSON values")
    assert "Export the project in parts" in str(caught.value)


# -- the expansion corpus, through the command under an address-space limit ----------------------


def bomb(shape: str, n: int) -> bytes:
    """A JSON value of one of the worst shapes, holding about ``n`` values."""
    if shape == "small objects":
        return b"[" + b"{}," * (n - 1) + b"{}]"
    if shape == "numbers":
        return b"[" + b"0.5," * (n - 1) + b"0.5]"
    if shape == "nested arrays":
        return b"[" + b"[[]]," * (n // 2 - 1) + b"[[]]]"
    if shape == "distinct keys":
        return b"{" + b",".join(b'"k%d":0' % i for i in range(n // 2)) + b"}"
    if shape == "deep nesting":
        return b"[" * 100_000 + b"]" * 100_000
    raise ValueError(shape)


def with_padding(doc: dict, padding: bytes) -> bytes:
    """``doc`` as JSON with a field ``padding`` holding ``padding`` (raw JSON)."""
    return json.dumps({**doc, "padding": "@PAD@"}).encode().replace(b'"@PAD@"', padding)


GENERIC = {"model": "m", "benchmark": "b", "prompt_id": "p1", "prompt": "q", "response": "r", "judge_label": "safe"}
SAMPLE_SHAPES = ("small objects", "numbers", "nested arrays", "distinct keys", "deep nesting")
DOCUMENT_SHAPES = ("small objects", "numbers", "deep nesting")
OVER_SAMPLE = MAX_SAMPLE_VALUES + MAX_SAMPLE_VALUES // 10
OVER_DOCUMENT = MAX_DOCUMENT_VALUES + MAX_DOCUMENT_VALUES // 20


def eval_with_sample(path: Path, padding: bytes) -> Path:
    with zipfile.ZipFile(EVAL) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "samples/1_epoch_1.json":
                data = with_padding(json.loads(data), padding)
            dst.writestr(info.filename, data)
    return path


def sample_cases(root: Path) -> list[tuple[str, Path, list[str], str]]:
    """(name, file, extra ingest options, what the one Error line must say) per reader and shape."""
    cases = []
    garak_lines = (DATA / "garak" / "report_test.report.jsonl").read_bytes().splitlines(keepends=True)
    lm_line = json.loads((DATA / "lm_eval_harness").glob("samples_*.jsonl").__next__().read_text().splitlines()[0])
    for shape in SAMPLE_SHAPES:
        tag = shape.replace(" ", "_")
        said = "nested too deeply" if shape == "deep nesting" else "the line holds up to"
        pad = bomb(shape, OVER_SAMPLE)
        generic = root / f"generic_{tag}.jsonl"
        generic.write_bytes(with_padding(GENERIC, pad) + b"\n")
        cases.append((f"generic jsonl, {shape}", generic, ["--format", "generic"], said))
        garak = root / f"garak_{tag}.report.jsonl"
        garak.write_bytes(
            b"".join(garak_lines[:3]) + with_padding({"entry_type": "attempt"}, pad) + b"\n" + b"".join(garak_lines[3:])
        )
        cases.append((f"garak, {shape}", garak, ["--format", "garak"], said))
        lm = root / f"samples_{tag}_2025-01-01T00-00-00.jsonl"
        lm.write_bytes(with_padding(lm_line, pad) + b"\n")
        cases.append((f"lm-eval, {shape}", lm, ["--format", "lm-eval", "--model", "m"], said))
        sr = root / f"strongreject_{tag}.jsonl"
        sr.write_bytes(with_padding({"forbidden_prompt": "q", "response": "r", "score": 0.0}, pad) + b"\n")
        cases.append((f"strongreject jsonl, {shape}", sr, ["--format", "strongreject", "--model", "m"], said))
        ev = eval_with_sample(root / f"inspect_{tag}.eval", pad)
        member = "nested too deeply" if shape == "deep nesting" else "samples/1_epoch_1.json: the member holds up to"
        cases.append((f"inspect .eval, {shape}", ev, [], member))
    # The issue's own archive: 128 MiB of {},{},... in one sample, 134 KB on disk.
    issue = eval_with_sample(root / "expanding.eval", bomb("small objects", 128 * 2**20 // 3))
    assert issue.stat().st_size < 150_000
    cases.append(("inspect .eval of the issue", issue, [], "samples/1_epoch_1.json: the member holds up to 44,7"))
    # CSV: a record of many small fields; a cell holding JSON messages.
    header = ",".join(GENERIC) + ",messages\n"
    wide = root / "generic_wide.csv"
    wide.write_text(header + ",".join(["ab"] * (MAX_CSV_FIELDS + 10)) + "\n")
    cases.append(("generic csv, many fields", wide, [], f"has more than {MAX_CSV_FIELDS:,} fields"))
    cell = root / "generic_messages.csv"
    messages = '"[' + '{""role"":""user"",""content"":""x""},' * (OVER_SAMPLE // 5) + '{}]"'
    cell.write_text(header + ",".join(GENERIC.values()) + "," + messages + "\n")
    cases.append(("generic csv, messages cell", cell, [], "field 'messages' holds up to"))
    xs = root / "xstest_wide.csv"
    xs.write_text((DATA / "xstest_v1").glob("*.csv").__next__().read_text().splitlines()[0] + "\n")
    with open(xs, "a") as fh:
        fh.write(",".join(["ab"] * (MAX_CSV_FIELDS + 10)) + "\n")
    cases.append(("xstest csv, many fields", xs, ["--format", "xstest", "--model", "m"], "fields"))
    # Parquet: one row holding a long list (tiny on disk: run-length encoded).
    pq_path = root / "generic_list.parquet"
    pq.write_table(
        pa.table({**{k: [v] for k, v in GENERIC.items()}, "tags": [[0] * OVER_SAMPLE]}), pq_path, compression="zstd"
    )
    cases.append(("generic parquet, long list", pq_path, [], "the row holds"))
    return cases


def document_cases(root: Path) -> list[tuple[str, Path, list[str], str]]:
    cases = []
    docs = {
        "harmbench": (json.loads((DATA / "harmbench" / "results_example.derived.json").read_text()), ["--model", "m"]),
        "jailbreakbench": (
            json.loads(next((DATA / "jailbreakbench").rglob("*.json")).read_text()),
            ["--model", "m"],
        ),
        "promptfoo": (json.loads(next((DATA / "promptfoo").glob("*.json")).read_text()), []),
        "inspect": (json.loads((DATA / "inspect_ai" / "log_formats.json").read_text()), []),
    }
    for fmt, (doc, options) in docs.items():
        for shape in DOCUMENT_SHAPES:
            path = root / f"{fmt}_{shape.replace(' ', '_')}.json"
            path.write_bytes(with_padding(doc, bomb(shape, OVER_DOCUMENT)))
            said = "nested too deeply" if shape == "deep nesting" else "the document holds up to"
            cases.append((f"{fmt}, {shape}", path, ["--format", fmt, *options], said))
    return cases


RUN = """
import json, sys
from click.testing import CliRunner
from annotate.cli import cli

def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(key + ":"))

cases = json.loads(sys.argv[1])
out = []
for name, path, options, ws in cases:
    result = CliRunner().invoke(cli, ["--workspace", ws, "ingest", path, *options])
    out.append({"name": name, "code": result.exit_code, "stderr": result.stderr, "stdout": result.stdout,
                "exception": None if result.exception is None or isinstance(result.exception, SystemExit)
                else repr(result.exception), "peak": status("VmHWM")})
print(json.dumps(out))
"""


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_limited(cases: list[tuple[str, Path, list[str], Path]]) -> list[dict]:
    payload = json.dumps([(name, str(path), options, str(ws)) for name, path, options, ws in cases])
    done = subprocess.run(
        [sys.executable, "-c", RUN, payload],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=limited,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def new_workspace(path: Path) -> Path:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "annotate", "init", str(path)], check=True, capture_output=True, env=env)
    return path


def stored(ws: Path) -> tuple[int, int]:
    with sqlite3.connect(ws / ".annotate" / "annotate.db") as db:
        return db.execute("select count(*) from response").fetchone()[0], db.execute(
            "select count(*) from ingest_run"
        ).fetchone()[0]


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="runs under RLIMIT_AS and reads /proc")
def test_every_readers_worst_expansion_is_refused_with_one_line_under_2_gib(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    cases = sample_cases(corpus) + document_cases(corpus)
    results = run_limited([(name, path, options, ws) for name, path, options, _ in cases])
    for (name, path, _, said), result in zip(cases, results, strict=True):
        errors = [line for line in result["stderr"].splitlines() if line.startswith("Error: ")]
        assert result["exception"] is None, (name, result["exception"])
        assert result["code"] == 2, (name, result)
        assert "Traceback" not in result["stderr"] and "MemoryError" not in result["stderr"], name
        # One line for the file (and the command's summary line), naming where and the bound.
        about = [line for line in errors if line.startswith(f"Error: {path}:")]
        assert len(about) == 1, (name, "\n".join(errors))
        assert said in about[0], (name, about[0])
        if "holds up to" in said:
            bound = MAX_DOCUMENT_VALUES if "document" in said else MAX_SAMPLE_VALUES
            assert f"more than the {bound:,} annotate parses in one JSON text" in about[0], name
            assert "--max-values" in about[0], name
        print(f"{name}: {path.stat().st_size / 2**20:.1f} MiB refused; peak {result['peak'] / 2**20:.0f} MiB")
    assert stored(ws) == (0, 0)
    # Nothing was parsed into memory: the process stayed near its own footprint throughout.
    assert max(r["peak"] for r in results) < 1 << 30


@pytest.mark.slow
@pytest.mark.skipif(not LINUX, reason="runs under RLIMIT_AS and reads /proc")
@pytest.mark.parametrize(
    ("what", "bound"),
    [("sample", MAX_SAMPLE_VALUES), ("document", MAX_DOCUMENT_VALUES)],
)
def test_the_worst_shape_just_under_the_bound_is_read_within_the_stated_memory(tmp_path, what, bound):
    """docs/formats.md: a JSON text of n values takes at most VALUE_MEMORY bytes a value besides its
    text; the worst shape (an object of distinct keys) at the bound, read through the command under
    a 2 GiB address-space limit, stays within the process's footprint plus that."""
    ws = new_workspace(tmp_path / "ws")
    base = run_limited([("footprint", REPO / "tests/data/formats/custom/conversations.derived.jsonl", [], ws)])[0]
    assert base["code"] == 0, base
    n = bound - bound // 50
    path = tmp_path / ("rows.jsonl" if what == "sample" else "results.json")
    if what == "sample":
        path.write_bytes(with_padding({**GENERIC, "prompt_id": "p-under"}, bomb("distinct keys", n)) + b"\n")
        options = ["--format", "generic"]
    else:
        doc = json.loads((DATA / "harmbench" / "results_example.derived.json").read_text())
        behaviour, records = next(iter(doc.items()))
        padded = {behaviour: [{**records[0], "padding": "@PAD@"}]}
        path.write_bytes(json.dumps(padded).encode().replace(b'"@PAD@"', bomb("distinct keys", n)))
        options = ["--format", "harmbench", "--model", "m"]
    assert json_values_over(path.read_bytes(), bound) is None
    (result,) = run_limited([("under", path, options, ws)])
    assert result["code"] == 0, result
    stated = n * VALUE_MEMORY + 8 * path.stat().st_size
    grew = result["peak"] - base["peak"]
    print(
        f"{what}: {n:,} values, {path.stat().st_size / 2**20:.0f} MiB: grew {grew / 2**20:.0f} MiB "
        f"(stated bound {stated / 2**20:.0f} MiB)"
    )
    assert grew <= stated


def runs(prefix) -> list[dict]:
    from tests.ingest.test_mapped_tables import runs as recorded

    return recorded(prefix)


def test_max_values_sets_the_bound_for_the_command_and_is_recorded(workspace, runner, tmp_path):
    ws, prefix = workspace
    path = tmp_path / "rows.jsonl"
    row = {**GENERIC, "meta": {"tags": list(range(40))}}
    path.write_text(json.dumps(row) + "\n")
    refused = runner.invoke(cli, [*prefix, "ingest", str(path), "--max-values", "20"])
    assert refused.exit_code == 2, refused.output
    (line,) = [x for x in refused.stderr.splitlines() if x.startswith(f"Error: {path}:")]
    assert line.startswith(f"Error: {path}:1: the line holds up to {built(row)} JSON values"), line
    assert "more than the 20 annotate parses" in line and f"--max-values {built(row)} " in line
    assert runs(prefix) == []
    done = runner.invoke(cli, [*prefix, "ingest", str(path), "--max-values", "60", "--json"])
    assert done.exit_code == 0, done.output
    assert [r.get("max_values") for r in runs(prefix)] == [60]
    again = runner.invoke(cli, [*prefix, "ingest", str(path), "--json"])  # the default bound reads it too
    assert again.exit_code == 0 and json.loads(again.stdout)[0]["duplicates"] == 1
    bad = runner.invoke(cli, [*prefix, "ingest", str(path), "--max-values", "0"])
    assert bad.exit_code == 2 and "--max-values" in bad.stderr


QUADRATIC = """
import json, sys
from pathlib import Path
from click.testing import CliRunner
from annotate.cli import cli
from annotate.errors import InputError
from annotate.labelstudio.tasks import read_export_file

line, export, ws = sys.argv[1:4]
result = CliRunner().invoke(cli, ["--workspace", ws, "ingest", line, "--format", "generic"])
try:
    read_export_file(Path(export))
    said = None
except InputError as exc:
    said = str(exc)
failed = None if isinstance(result.exception, (SystemExit, type(None))) else repr(result.exception)
print(json.dumps({"code": result.exit_code, "stderr": result.stderr, "export": said, "exception": failed}))
"""


@pytest.mark.skipif(not LINUX, reason="runs under RLIMIT_AS")
def test_an_unterminated_string_of_escaped_quotes_is_counted_in_one_pass(tmp_path):
    """Issue #43: one opening quote, then escaped quotes and commas (``["\\",\\",...``). The counter's
    exact recount scanned from every quote to the end (8,000 repeats: 2.35 s, 3.6 times more per
    doubling; a 33 MB Label Studio export ended in a MemoryError traceback under 2 GiB). Read once
    now, each file is refused with one line as the invalid JSON it is (the subprocess's timeout
    only guards against a hang: the quadratic form would take hours)."""
    ws = new_workspace(tmp_path / "ws")
    line = tmp_path / "one_line.jsonl"
    line.write_bytes(b'["' + b'\\",' * 1_100_000 + b"\n")  # 3.3 MB, over the line's bound by the fast count
    export = tmp_path / "export.json"
    export.write_bytes(b'["' + b'\\",' * 11_000_000)  # 33 MB, over the document's bound by the fast count
    done = subprocess.run(
        [sys.executable, "-c", QUADRATIC, str(line), str(export), str(ws)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=limited,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["exception"] is None and result["code"] == 2, result
    about = [ln for ln in result["stderr"].splitlines() if ln.startswith(f"Error: {line}:")]
    assert len(about) == 1 and "Traceback" not in result["stderr"], result["stderr"][-2000:]
    assert result["export"] and "not a Label Studio JSON export" in result["export"], result["export"]
    assert stored(ws) == (0, 0)
