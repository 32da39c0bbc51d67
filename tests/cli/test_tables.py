"""Terminal tables: names from the data cannot break a table or drive the terminal."""

from __future__ import annotations

from annotate.cli._format import table


def test_control_characters_in_cells_are_escaped_and_the_table_keeps_its_shape():
    hostile = "gpt4\nstrmatch  0.999\x1b[2J\r"
    out = table(["judge", "bal. acc."], [[hostile, 0.5], ["plain", 0.75]])
    lines = out.splitlines()
    assert len(lines) == 4  # header, rule, two rows: the newline in the name made no row of its own
    assert "\x1b" not in out and "\r" not in out
    assert "gpt4\\nstrmatch  0.999\\x1b[2J\\r" in lines[2]
    assert lines[3].startswith("plain") and lines[3].endswith("0.750")


def test_printable_text_is_unchanged():
    out = table(["model"], [["Llama-3 8B (instruct) é ü 模型"]])
    assert out.splitlines()[2] == "Llama-3 8B (instruct) é ü 模型"
