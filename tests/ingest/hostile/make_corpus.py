"""Writes the hostile-input corpus beside this script (README.md says what each file is).

    python tests/ingest/hostile/make_corpus.py

The files are checked in; run this only to change the corpus, and update README.md and
``CORPUS`` in tests/ingest/test_hostile_corpus.py with it.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BOM = b"\xef\xbb\xbf"


def row(i: int, **over: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": "model-h",
        "benchmark": "hostile",
        "prompt_id": f"p{i}",
        "prompt": f"prompt {i}",
        "response": f"response {i}",
        "judge_label": ("harmful", "safe", "ambiguous")[i % 3],
        "judge": "judge-h",
    }
    out.update(over)
    return out


def jsonl(*rows: dict[str, Any]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def csv_bytes(rows: list[dict[str, Any]]) -> bytes:
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().encode()


def harmbench(text: str) -> bytes:
    return text.encode()


FORMULAS = dict(
    model='=HYPERLINK("http://example.invalid/x","click")',
    benchmark="@SUM(1)",
    prompt_id="+1-1",
    judge="-2+3",
    category="=cmd|' /C calc'!A0",
)


def corpus() -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    files["formula_names.jsonl"] = jsonl(row(1, **FORMULAS), row(2, prompt="=1+1", response="@SUM(A1:A9)"))
    files["formula_names.csv"] = csv_bytes([row(1, **FORMULAS), row(2, prompt="=1+1", response="@SUM(A1:A9)")])
    files["path_names.jsonl"] = jsonl(
        row(1, model="../../x", benchmark="/etc/passwd", prompt_id="..\\..\\boot.ini"), row(2, model="a/b/../../c")
    )
    files["ansi_model.jsonl"] = jsonl(row(1), row(2, model="\x1b[31mred\x1b[0m"), row(3))
    files["carriage_return_benchmark.jsonl"] = jsonl(row(1), row(2, benchmark="bench\rOVERWRITTEN"), row(3))
    files["bidi_override_judge.jsonl"] = jsonl(row(1, judge="judge\u202eevil"), row(2))
    files["whitespace_names.jsonl"] = jsonl(
        row(1, model="   "), row(2, benchmark="\t"), row(3, prompt_id=" "), row(4), row(5, judge="  ")
    )
    files["control_chars_in_text.jsonl"] = jsonl(
        row(1, prompt="\x1b[2J\x1b[Hcleared", response="line one\rOVERWRITE\x07\x08"), row(2, response="tab\there")
    )
    files["nul_escaped.jsonl"] = jsonl(row(1), row(2, response="before\x00after"), row(3, model="m\x00"))
    files["nul_byte_raw.jsonl"] = jsonl(row(1)) + b'{"model": "m\x00", "benchmark": "b"}\n' + jsonl(row(3))
    files["nul_byte.csv"] = csv_bytes([row(1), row(2, response="nul\x00here"), row(3)])
    files["unpaired_surrogate.jsonl"] = (
        jsonl(row(1)) + b'{"model": "model-h", "benchmark": "hostile", "prompt_id": "p2", "prompt": "x", '
        b'"response": "half \\ud800 a pair", "judge_label": "safe"}\n'
    )
    files["overlong_first_line.jsonl"] = jsonl(row(1, response="y" * 100_000), row(2))
    files["bom.jsonl"] = BOM + jsonl(row(1), row(2))
    files["bom.csv"] = BOM + csv_bytes([row(1), row(2)])
    files["bom_in_second_line.jsonl"] = jsonl(row(1)) + BOM + jsonl(row(2))
    files["utf16.jsonl"] = ("\ufeff" + jsonl(row(1)).decode()).encode("utf-16-le")
    files["duplicate_keys.jsonl"] = jsonl(row(1)) + (
        b'{"model": "model-h", "benchmark": "hostile", "prompt_id": "p2", "prompt": "x", "response": "y", '
        b'"judge_label": "safe", "judge_label": "harmful"}\n'
    )
    files["duplicate_keys_nested.jsonl"] = jsonl(row(1)) + (
        b'{"model": "model-h", "benchmark": "hostile", "prompt_id": "p2", "prompt": "x", "response": "y", '
        b'"judge_label": "safe", "extra": {"a": 1, "a": 2}}\n'
    )
    files["duplicate_keys_harmbench.json"] = harmbench(
        '{\n  "behavior_a": [\n    {"test_case": "t", "generation": "g", "label": 0,\n     "label": 1}\n  ]\n}\n'
    )
    files["duplicate_header.csv"] = b"model,benchmark,prompt_id,prompt,response,judge_label,response\r\n" + (
        b"m,b,p1,x,first,safe,second\r\n"
    )
    deep = "[" * 5000 + "]" * 5000
    files["deep_nesting.jsonl"] = jsonl(row(1)) + (json.dumps(row(2))[:-1] + f', "extra": {deep}}}\n').encode()
    files["deep_nesting_harmbench.json"] = harmbench(
        '{"behavior_a": [{"test_case": "t", "generation": "g", "label": ' + deep + "}]}"
    )
    files["huge_numbers.jsonl"] = (
        jsonl(row(1, prompt_id=10**40), row(2))
        + (json.dumps(row(3))[:-1] + f', "epoch": {10**30}}}\n').encode()
        + (json.dumps(row(4, judge_label=None))[:-1] + ', "judge_score": 1e999}\n').encode()
        + (json.dumps(row(5))[:-1] + f', "extra": {"9" * 5000}}}\n').encode()
        + (json.dumps(row(6))[:-1] + ', "epoch": -1}\n').encode()
    )
    files["nan_infinity.jsonl"] = (
        jsonl(row(1))
        + (json.dumps(row(2, judge_label=None))[:-1] + ', "judge_score": NaN}\n').encode()
        + (json.dumps(row(3))[:-1] + ', "extra": Infinity}\n').encode()
        + (json.dumps(row(4))[:-1] + ', "extra": -Infinity}\n').encode()
    )
    files["nan_harmbench.json"] = harmbench('{"behavior_a": [{"test_case": "t", "generation": "g", "label": NaN}]}')
    files["invalid_utf8.jsonl"] = jsonl(row(1)) + b'{"model": "m\xff\xfe", "benchmark": "b"}\n' + jsonl(row(3))
    files["invalid_utf8.csv"] = csv_bytes([row(1), row(2, response="RESPONSE"), row(3)]).replace(
        b"RESPONSE", b"bad \xc3\x28 byte"
    )
    files["not_objects.jsonl"] = jsonl(row(1)) + b'[1, 2]\nnull\n"text"\n' + jsonl(row(5))
    lines = csv_bytes([row(i) for i in range(1, 41)]).split(b"\r\n")
    lines[5] = lines[5].replace(b"prompt 5", b'"prompt 5 never closed', 1)
    files["unclosed_quote.csv"] = b"\r\n".join(lines)
    lines = csv_bytes([row(i) for i in range(1, 41)]).split(b"\r\n")
    lines[5] = lines[5].replace(b"prompt 5", b'"prompt 5 opened', 1)
    lines[20] = lines[20].replace(b"prompt 20", b'closed here" prompt 20', 1)
    files["quote_closed_rows_later.csv"] = b"\r\n".join(lines)
    big = "start " + "z" * 200_000 + '\nmodel-h,fake,p999,"not a row",x,harmful,judge-h\n end'
    files["field_200k.csv"] = csv_bytes([row(1), row(2, response=big), row(3)])
    files["wrong_field_count.csv"] = csv_bytes([row(1), row(2), row(3)]).replace(b"prompt 2,", b"prompt 2,extra,", 1)
    files["empty.jsonl"] = b""
    files["blank_lines.jsonl"] = b"\n   \n\t\n"
    files["crlf_and_lf_in_cells.csv"] = csv_bytes([row(1, response="a\nb"), row(2, prompt="c\r\nd")])
    files["not_json.json"] = b"{ this is not json"
    # Issue #22: line ends, JSON shapes, reserved names and a Parquet bomb.
    files["bare_cr.csv"] = csv_bytes([row(1), row(2, response="two\rlines"), row(3)]).replace(b"\r\n", b"\r")
    files["bare_cr_mixed.csv"] = (
        csv_bytes([row(1), row(2), row(3)]).replace(b"\r\n", b"\r").replace(b"prompt 2", b"prompt\n2", 1)
    )
    files["json_array.jsonl"] = json.dumps([row(1), row(2)]).encode() + b"\n"
    files["json_array_pretty.jsonl"] = json.dumps([row(1), row(2)], indent=2).encode() + b"\n"
    files["truncated_only_line.jsonl"] = json.dumps(row(1)).encode()[:-20]
    files["truncated_last_line.jsonl"] = jsonl(row(1), row(2)) + json.dumps(row(3)).encode()[:-20]
    files["reserved_benchmark.jsonl"] = jsonl(row(1), row(2, benchmark="ALL"), row(3))
    files["reserved_names.csv"] = csv_bytes(
        [
            row(1, category="c"),
            row(2, model="all", category="c"),
            row(3, judge=" All ", category="c"),
            row(4, category="(none)"),
            row(5, category="alles"),
        ]
    )
    files["dictionary_bomb.parquet"] = dictionary_bomb(rows=512, value_bytes=2**20)
    return files


def dictionary_bomb(rows: int, value_bytes: int) -> bytes:
    """A Parquet file of a few KB whose every response is one dictionary entry of ``value_bytes``:
    ``rows`` x ``value_bytes`` once decoded (512 MiB here; issue #22 found 20 KB taking 4.2 GB)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    response = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["A" * value_bytes]))
    columns: dict[str, Any] = {k: [v] * rows for k, v in row(1).items() if k != "response"}
    columns["prompt_id"] = [f"p{i}" for i in range(rows)]
    table = pa.table({**columns, "response": response})
    out = io.BytesIO()
    pq.write_table(table, out, compression="zstd")
    return out.getvalue()


def main() -> None:
    for name, data in corpus().items():
        (HERE / name).write_bytes(data)


if __name__ == "__main__":
    main()
