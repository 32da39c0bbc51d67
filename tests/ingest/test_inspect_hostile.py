"""The Inspect reader against hostile logs built in the tests (issue 22, items 2 and 6).

One reading of every sample (the text reviewers see is the text Inspect shows), archives read as
Inspect reads them but refused when a member leads outside the archive, is not compressed as
Inspect compresses, or expands beyond its budget (a decompression bomb: refused at the budget,
never after the bytes are allocated), and the mark of `annotate writeback` on a log.
"""

from __future__ import annotations

import copy
import json
import struct
import time
import tracemalloc
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from annotate.ingest import archive as zip_archive
from annotate.ingest.formats import inspect_ai
from annotate.ingest.records import Problem, ReadContext, Record, SetAside

DATA = Path(__file__).resolve().parents[1] / "data"
EVAL = DATA / "formats" / "inspect_ai" / "log_formats.eval"
JSON_LOG = DATA / "formats" / "inspect_ai" / "log_formats.json"
PROBE = DATA / "inspect_writeback" / "refusal_probe_repeated.json"
GiB = 1 << 30


def read(path: Path, **options: Any) -> list[Any]:
    return list(inspect_ai.read(path, ReadContext(**options)))


def records(items: list[Any]) -> list[Record]:
    return [i for i in items if isinstance(i, Record)]


def problems(items: list[Any]) -> list[Problem]:
    return [i for i in items if isinstance(i, Problem)]


def sample_json() -> dict[str, Any]:
    with zipfile.ZipFile(EVAL) as archive:
        return json.loads(archive.read("samples/1_epoch_1.json"))


def eval_with(tmp_path: Path, extra: list[tuple[str, bytes]], *, name: str = "hostile.eval") -> Path:
    """A copy of the example .eval with ``extra`` members appended (Deflate)."""
    path = tmp_path / name
    path.write_bytes(EVAL.read_bytes())
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as archive:
        for member, data in extra:
            archive.writestr(member, data)
    return path


# -- archives --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "member", ["../evil.json", "/etc/evil.json", "samples/../../evil.json", "C:evil.json", "samples\\..\\evil.json"]
)
def test_a_member_outside_the_archive_root_refuses_the_archive(tmp_path, member):
    sample = sample_json()
    sample["id"] = "smuggled"
    path = eval_with(tmp_path, [(member, json.dumps(sample).encode())])
    with zipfile.ZipFile(path) as archive:
        assert member in archive.namelist()
    found = read(path)
    assert not records(found)
    (problem,) = problems(found)
    assert problem.fatal and "outside the archive root" in problem.message and repr(member) in problem.message


def zstd_rle_bomb(size: int) -> bytes:
    """A Zstandard frame of RLE blocks: 4 bytes for every 128 KiB of zeros (``size`` bytes in all)."""
    block = 128 * 1024
    n, rest = divmod(size, block)
    sizes = [block] * n + ([rest] if rest else [])
    frame = bytearray(struct.pack("<I", 0xFD2FB528))
    frame += bytes([0x00, 0x38])  # no content size, no checksum; window 128 KiB
    for k, length in enumerate(sizes):
        last = 1 if k == len(sizes) - 1 else 0
        header = last | (1 << 1) | (length << 3)  # RLE block
        frame += header.to_bytes(3, "little") + b"\0"
    return bytes(frame)


def with_member(tmp_path: Path, name: str, raw: bytes, *, method: int, declared: int) -> Path:
    """The example .eval with a member whose compressed bytes are ``raw``, its method and declared size patched."""
    path = eval_with(tmp_path, [])
    with zipfile.ZipFile(path, "a", zipfile.ZIP_STORED) as archive:
        archive.writestr(name, raw)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(name)
        central = archive.start_dir  # walk the central directory to this member's entry
    local = info.header_offset
    struct.pack_into("<H", data, local + 8, method)
    struct.pack_into("<I", data, local + 22, declared)
    while True:
        name_len, extra_len, comment_len = struct.unpack_from("<3H", data, central + 28)
        if data[central + 46 : central + 46 + name_len] == name.encode():
            break
        central += 46 + name_len + extra_len + comment_len
    struct.pack_into("<H", data, central + 10, method)
    struct.pack_into("<I", data, central + 24, declared)
    path.write_bytes(bytes(data))
    return path


def peak(fn) -> tuple[Any, int, float]:
    """(result, the peak of memory Python allocated while it ran, seconds)."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1], time.perf_counter() - started
    finally:
        tracemalloc.stop()


def test_a_zstandard_bomb_that_lies_about_its_size_is_refused_at_its_budget(tmp_path):
    pytest.importorskip("zstandard")
    bomb = zstd_rle_bomb(4 * GiB)
    assert len(bomb) < 200_000  # some 130 KB expanding to 4 GiB
    path = with_member(tmp_path, "samples/2_epoch_1.json", bomb, method=zip_archive.ZIP_ZSTANDARD, declared=2_000)
    found, most, seconds = peak(lambda: read(path))
    assert most < 16 * 2**20, f"{most / 2**20:.0f} MiB allocated to refuse a 2,000-byte member"
    assert seconds < 10
    (problem,) = problems(found)
    assert "samples/2_epoch_1.json" in problem.message and "expands beyond the 2,000 bytes" in problem.message
    assert len(records(found)) == 1  # the real sample is read as before


def test_a_zstandard_bomb_that_declares_its_size_is_refused_before_decompressing(tmp_path):
    pytest.importorskip("zstandard")
    path = with_member(
        tmp_path, "samples/2_epoch_1.json", zstd_rle_bomb(4 * GiB), method=zip_archive.ZIP_ZSTANDARD, declared=3 * GiB
    )
    found, most, _ = peak(lambda: read(path))
    (problem,) = problems(found)
    assert "larger than 512 MiB uncompressed" in problem.message and "3,221,225,472" in problem.message
    assert most < 16 * 2**20


def test_a_deflate_bomb_that_lies_about_its_size_is_refused(tmp_path):
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(1 << 20)
    raw = b"".join(squeeze.compress(zeros) for _ in range(256)) + squeeze.flush()  # 256 MiB in ~250 KB
    path = with_member(tmp_path, "samples/2_epoch_1.json", raw, method=zipfile.ZIP_DEFLATED, declared=2_000)
    found, most, _ = peak(lambda: read(path))
    assert most < 16 * 2**20, f"{most / 2**20:.0f} MiB allocated to refuse a 2,000-byte member"
    (problem,) = problems(found)
    assert "samples/2_epoch_1.json" in problem.message and "unreadable" in problem.message


def test_writebacks_check_of_a_copy_refuses_the_bomb_the_same_way(tmp_path):
    pytest.importorskip("zstandard")
    from annotate.pipeline._inspect import vet_archive

    path = with_member(
        tmp_path, "samples/2_epoch_1.json", zstd_rle_bomb(4 * GiB), method=zip_archive.ZIP_ZSTANDARD, declared=2_000
    )
    refused, most, _ = peak(lambda: vet_archive(path, "the copy"))
    assert refused is not None and "expands beyond the 2,000 bytes" in refused and most < 16 * 2**20
    assert vet_archive(EVAL, "the example") is None


def test_a_member_compressed_otherwise_than_inspect_compresses_is_refused(tmp_path):
    path = tmp_path / "bzip2.eval"
    with zipfile.ZipFile(EVAL) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            method = zipfile.ZIP_BZIP2 if info.filename.startswith("samples/") else zipfile.ZIP_DEFLATED
            dst.writestr(info.filename, src.read(info), compress_type=method)
    found = read(path)
    (problem,) = problems(found)
    assert "ZIP method 12" in problem.message and "Inspect never writes" in problem.message
    assert not records(found)


def test_a_relogged_member_is_read_as_inspect_reads_it(tmp_path):
    """Inspect appends a second member under the same name: ingest and Inspect both read the last one."""
    inspect_log = pytest.importorskip("inspect_ai.log")
    sample = sample_json()
    sample["scores"]["match"]["value"] = "C"
    with pytest.warns(UserWarning, match="Duplicate name"):
        path = eval_with(tmp_path, [("samples/1_epoch_1.json", json.dumps(sample).encode())])
    (rec,) = records(read(path))
    (shown,) = inspect_log.read_eval_log(str(path)).samples
    assert rec.verdict == shown.scores["match"].value == "C"
    assert rec.response == shown.output.completion


def test_two_members_holding_one_sample_are_a_problem(tmp_path):
    path = eval_with(tmp_path, [("samples/1_epoch_1_again.json", json.dumps(sample_json()).encode())])
    found = read(path)
    (problem,) = problems(found)
    assert "is also samples/1_epoch_1.json" in problem.message and "Inspect would show both" in problem.message


# -- one text per sample ---------------------------------------------------------------------------


def json_log(tmp_path: Path, edit) -> Path:
    log = json.loads(JSON_LOG.read_text(encoding="utf-8"))
    edit(log["samples"][0])
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


def test_a_completion_that_is_not_the_first_choice_is_set_aside(tmp_path):
    def edit(sample):
        sample["output"]["completion"] = "Yes"  # what Inspect shows; choices[0] (and the last turn) say "No"

    (item,) = read(json_log(tmp_path, edit))
    assert isinstance(item, SetAside) and "output.completion" in item.reason and "read two ways" in item.reason
    assert item.data == {"sample_id": 1, "epoch": 1}


def test_a_last_assistant_turn_that_is_not_the_first_choice_is_set_aside(tmp_path):
    def edit(sample):
        sample["messages"][-1]["content"] = "Yes"

    (item,) = read(json_log(tmp_path, edit))
    assert isinstance(item, SetAside) and "last assistant turn" in item.reason


def test_one_text_in_three_places_is_read_as_before(tmp_path):
    def edit(sample):
        parts = [{"type": "reasoning", "reasoning": "hmm"}, {"type": "text", "text": "No"}]
        sample["output"]["choices"][0]["message"]["content"] = sample["messages"][-1]["content"] = parts
        sample["output"]["completion"] = ""  # Inspect fills an empty completion from the first choice

    (rec,) = records(read(json_log(tmp_path, edit)))
    assert rec.response == "No"


# -- the mark of annotate writeback ----------------------------------------------------------------


def annotate_edit(label: str | None, value: Any, *, decision: int = 1) -> dict[str, Any]:
    return {
        "value": value,
        "provenance": {
            "timestamp": "2026-01-11T09:00:00Z",
            "author": "E1",
            "reason": "expert: escalated",
            "metadata": {
                "tool": "annotate",
                "round": "r1",
                "decision": decision,
                "label": label,
                "judge": "refusal_judge",
            },
        },
    }


def written_back(tmp_path: Path, *, header: bool, history: dict[tuple[str, int], list[dict[str, Any]]]) -> Path:
    log = json.loads(PROBE.read_text(encoding="utf-8"))
    if header:
        log["eval"]["metadata"] = {"annotate_writeback": {"tool": "annotate", "round": "r1"}}
    for sample in log["samples"]:
        entries = history.get((sample["id"], sample["epoch"]))
        if entries:
            score = sample["scores"]["refusal_judge"]
            score["history"] = [{"value": score["value"]}, *copy.deepcopy(entries)]
            score["value"] = entries[-1]["value"]
    path = tmp_path / "written_back.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


def test_a_written_back_log_is_refused_by_its_header_mark(tmp_path):
    found = read(written_back(tmp_path, header=True, history={}))
    (problem,) = problems(found)
    assert problem.fatal and "written by `annotate writeback`" in problem.message
    assert "--allow-written-back" in problem.message and not records(found)
    assert len(records(read(written_back(tmp_path, header=True, history={}), allow_written_back=True))) == 24


def test_a_written_back_log_is_refused_by_its_edits_provenance_alone(tmp_path):
    path = written_back(tmp_path, header=False, history={("r3", 1): [annotate_edit("harmful", "I")]})
    found = read(path)
    assert [p.fatal for p in problems(found)] == [True] and "scores['refusal_judge']" in problems(found)[0].message


def test_allowed_a_written_back_log_reads_its_human_labels_as_human_review(tmp_path):
    edited_again = {"value": "C", "provenance": {"author": "someone", "metadata": {}}}
    path = written_back(
        tmp_path,
        header=True,
        history={
            ("r3", 1): [annotate_edit("harmful", "I")],
            ("r5", 1): [annotate_edit("harmful", "I"), annotate_edit(None, "P", decision=2)],  # withdrawn
            ("r1", 2): [annotate_edit("safe", "C"), edited_again],
        },
    )
    found = read(path, allow_written_back=True)
    human = [r for r in records(found) if r.judge.startswith("human-review:")]
    assert [(r.judge, r.prompt_id, r.epoch, r.verdict) for r in human] == [("human-review:refusal_judge", "r3", 1, "I")]
    assert human[0].meta["human_review"]["author"] == "E1" and human[0].meta["human_review"]["round"] == "r1"
    aside = {(a.data["sample_id"], a.data["epoch"]): a.reason for a in found if isinstance(a, SetAside)}
    assert "withdrawn" in aside[("r5", 1)] and "edited again" in aside[("r1", 2)]
    judges = [r for r in records(found) if r.judge == "refusal_judge"]
    assert len(judges) == 9 and not any((r.prompt_id, r.epoch) == ("r3", 1) for r in judges)
