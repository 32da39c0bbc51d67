"""``ingest --encoding``: a table saved in another encoding (Excel on a Mac writes MacRoman)."""

from __future__ import annotations

import json

from annotate.cli import cli
from annotate.config import open_workspace
from annotate.db.store import open_store

ROWS = [
    ("m", "b", "p1", "Qu'est-ce que le café ?", "Un café, s'il vous plaît — voilà.", "safe"),
    ("m", "b", "p2", "Déjà vu ?", "Ça va très bien.", "harmful"),
]


def _write(path, encoding):
    header = "model,benchmark,prompt_id,prompt,response,judge_label\n"
    body = "".join(",".join(f'"{c}"' for c in row) + "\n" for row in ROWS)
    path.write_bytes((header + body).encode(encoding))
    return path


def test_a_mac_roman_table_is_refused_with_the_hint_and_read_with_its_encoding(workspace, runner, tmp_path):
    ws, prefix = workspace
    path = _write(tmp_path / "runs.csv", "mac_roman")
    refused = runner.invoke(cli, [*prefix, "ingest", str(path)])
    assert refused.exit_code == 2, refused.output
    assert f"Error: {path}:2: not valid UTF-8 text (line 2)" in refused.stderr, refused.stderr
    assert "pass --encoding (mac_roman for Excel on a Mac" in refused.stderr, refused.stderr
    done = runner.invoke(cli, [*prefix, "ingest", str(path), "--encoding", "mac_roman", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)[0]["added"] == 2
    store = open_store(open_workspace(str(ws), prefix[3]).db_url)
    try:
        got = store.responses(["prompt_id", "prompt", "response"]).sort_values("prompt_id")
        runs = store.ingest_runs()
    finally:
        store.close()
    assert list(got.response) == [r[4] for r in ROWS] and list(got.prompt) == [r[3] for r in ROWS]
    assert json.loads(runs.options.iloc[-1])["encoding"] == "mac_roman"


def test_an_encoding_that_cannot_be_read_line_by_line_is_refused_before_anything(workspace, runner, tmp_path):
    _, prefix = workspace
    path = _write(tmp_path / "runs.csv", "utf-8")
    for name, said in (("utf-16", "not single ASCII bytes"), ("klingon", "no such text encoding")):
        result = runner.invoke(cli, [*prefix, "ingest", str(path), "--encoding", name])
        assert result.exit_code == 2 and said in result.stderr, result.stderr
    same = runner.invoke(cli, [*prefix, "ingest", str(path), "--encoding", "UTF8"])  # UTF-8 by another name
    assert same.exit_code == 0, same.output
