"""The row an ingested record becomes: a named ``ResponseRow`` in the store's column order.

``run._response_row`` builds the row positionally (keyword arguments cost about 1 us a row on the
ingest path), so these tests hold each field to the record value it must carry.
"""

from __future__ import annotations

from annotate.columns import RESPONSE_COLUMNS
from annotate.ingest.records import Record
from annotate.ingest.run import ResponseRow, _response_row, content_sha, transcript_json


def test_the_row_has_the_store_columns_in_their_order() -> None:
    assert ResponseRow._fields == RESPONSE_COLUMNS
    assert issubclass(ResponseRow, tuple)  # what the bulk insert binds, unconverted


def test_every_field_carries_its_record_value() -> None:
    turns = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    rec = Record(
        line=3,
        model="model-a",
        benchmark="bench-b",
        prompt_id="p-7",
        prompt="the prompt",
        response="the response",
        judge="judge-j",
        verdict="Unsafe",
        score=0.25,
        epoch=2,
        category="cat-c",
        transcript=turns,
        persona="skilled",
        locale="fr_FR",
    )
    image = "ab" * 32 + ".png"
    row = _response_row(rec, "harmful", "mapped", "quality", '{"k":1}', 41, "2026-01-01 00:00:00", image, "ncr;vcr")
    transcript = transcript_json(turns)
    expected = {
        "benchmark": "bench-b",
        "model": "model-a",
        "prompt_id": "p-7",
        "epoch": 2,
        "judge": "judge-j",
        "category": "cat-c",
        "prompt": "the prompt",
        "response": "the response",
        "judge_verdict": "Unsafe",
        "judge_score": 0.25,
        "judge_label": "harmful",
        "label_reason": "mapped",
        "judge_kind": "quality",
        "meta": '{"k":1}',
        "transcript": transcript,
        "image": image,
        "hazard": "ncr;vcr",
        "persona": "skilled",
        "locale": "fr_FR",
        # the prompt's facets are not the response's content (a later file may add them)
        "content_sha": content_sha(
            "the prompt", "the response", "Unsafe", 0.25, "harmful", transcript, "quality", image
        ),
        "source_id": 41,
        "ingested_at": "2026-01-01 00:00:00",
    }
    assert row._asdict() == expected
    assert tuple(row) == tuple(expected[c] for c in RESPONSE_COLUMNS)


def test_a_single_turn_record_has_no_transcript() -> None:
    rec = Record(line=1, model="m", benchmark="b", prompt_id="p", prompt="x", response="y", judge="j", verdict=None)
    row = _response_row(rec, "ambiguous", "missing", "safety", None, 1, "t")
    assert row.transcript is None and row.judge_verdict is None and row.judge_score is None and row.epoch == 0
    assert row.content_sha == content_sha("x", "y", None, None, "ambiguous")
