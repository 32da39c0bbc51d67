"""How each label arrived (issue #42, annotate-export/13): the pure checks verify runs on labels.csv's
``channels`` and design.json's round ``channels``."""

from __future__ import annotations

from annotate.audit.channels import channel_problems, channel_summary
from annotate.columns import BLINDING_NOTES, CHANNEL_BLINDING


def test_a_server_round_filled_from_files_counts_each_channel_with_its_own_blinding():
    cells = ["A1=server;A2=file;E1=server", "A1=server;A2=server", "A2=file", ""]
    summary = channel_summary(cells, "technical", {"file": ["b" * 64, "a" * 64, "a" * 64]})
    assert list(summary) == ["server", "file"]
    assert summary["server"] == {
        "answers": 4, "by": {"A1": 2, "A2": 1, "E1": 1}, "blinding": "technical: " + BLINDING_NOTES["technical"]
    }  # fmt: skip
    assert summary["file"] == {
        "answers": 2, "by": {"A2": 2}, "blinding": CHANNEL_BLINDING["file"], "sha256": ["a" * 64, "b" * 64]
    }  # fmt: skip


def test_verify_refuses_cells_that_name_other_people_and_counts_or_statements_that_differ():
    cells = ["A1=server;A2=file", "A1=server"]
    answers = [["A1", "A2"], ["A1"]]
    recorded = channel_summary(cells, "technical", {"file": ["a" * 64]})
    assert channel_problems("r1", recorded, cells, answers, [2, 3], "technical") == []
    # a cell that leaves out an answer, or names someone who did not answer
    wrong = channel_problems("r1", recorded, ["A1=server", "A1=server"], answers, [2, 3], "technical")
    assert wrong and "labels.csv:2" in wrong[0] and "A1, A2" in wrong[0]
    # a count moved from one channel to another
    moved = {**recorded, "file": {**recorded["file"], "answers": 0, "by": {}}}
    assert "labels.csv's channels give" in channel_problems("r1", moved, cells, answers, [2, 3], "technical")[0]
    # a blinding statement that is not the round's
    claimed = {**recorded, "file": {**recorded["file"], "blinding": "technical: every reviewer on their own"}}
    assert channel_problems("r1", claimed, cells, answers, [2, 3], "technical")
    # an imported round's answers all came from its table
    imported = channel_problems("r1", None, ["A1=server"], [["A1"]], [2], None, imported=True)
    assert imported and "whose labels were imported" in imported[0]
    # an unknown channel is named
    assert "not one of" in channel_problems("r1", recorded, ["A1=post"], [["A1"]], [2], "technical")[0]
