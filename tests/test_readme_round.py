"""The README's "A first round" prints what the README shows (issue #45, item 4 and the Done-when).

tests/readme_round.py runs the section's command blocks in bash in a fresh folder, as a newcomer
types them (the installed `annotate`, file mode, XSTest's own human labels as the reviewers' and the
expert's Label Studio exports); every line an output block shows must be printed by its commands, in
order (``...`` for lines left out, ``.../`` for the reader's own folder). A number changed in the code
and not in the README fails here, and so does a command that no longer runs.
"""

from __future__ import annotations

import pytest

from tests.readme_round import missing_lines, round_blocks, run_round


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    folder = tmp_path_factory.mktemp("readme-round")
    blocks = run_round(folder)
    for b in blocks:  # the reader's own folder stands where this test's temporary one is printed
        b.printed = b.printed.replace(str(folder), "~")
    return blocks


def _pasted(line: str) -> bool:
    """A rubric line to paste into a TOML file (``"verdict" = ""``): wrapping it would break the paste."""
    return line.rstrip().endswith('= ""') and line.lstrip().startswith('"')


def test_no_line_the_round_prints_is_wider_than_a_terminal(ran):
    wide = [
        (b.commands[-1], line) for b in ran for line in b.printed.split("\n") if len(line) > 100 and not _pasted(line)
    ]
    assert not wide, "\n".join(f"{len(line)}: {cmd}: {line}" for cmd, line in wide)


def test_every_command_block_of_the_round_shows_its_output():
    blocks = round_blocks()
    assert len(blocks) >= 9
    assert all(b.shown for b in blocks), [b.commands for b in blocks if not b.shown]


def test_each_shown_output_is_what_its_commands_print(ran):
    for block in ran:
        gone = missing_lines(block.shown or [], block.printed)
        assert gone is None, (
            f"README shows a line {block.commands} do not print (or not in this order):\n{gone}\n\n"
            f"they printed:\n{block.printed}"
        )


def test_the_guides_copies_of_the_rounds_outputs_are_what_it_prints(ran):
    """docs/guide.md repeats some of the round's outputs under ``<!-- output-of-round: COMMAND -->``."""
    import re
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text(encoding="utf-8")
    copies = re.findall(r"<!-- output-of-round: (.+?) -->\n```\n(.*?)```", guide, re.S)
    assert copies, "docs/guide.md repeats none of the round's outputs"
    for command, body in copies:
        block = next((b for b in ran if command in b.commands), None)
        assert block is not None, f"docs/guide.md copies the output of {command!r}, which the README's round never runs"
        gone = missing_lines(body.rstrip("\n").split("\n"), block.printed)
        assert gone is None, f"docs/guide.md shows a line {command!r} does not print:\n{gone}"


def test_the_round_ends_in_a_verified_export(ran):
    assert "OK (annotate-export/" in ran[-1].printed and ", final)" in ran[-1].printed


#: Headers a lead reads without help (plain words, counts); every other header needs a glossary entry.
PLAIN_HEADERS = {
    "annotator", "benchmark", "benchmarks", "deleted", "done", "done %", "group", "judge", "kind", "labels",
    "left", "model", "new", "note", "quarantined", "rated", "remaining", "responses", "restored", "reviewer",
    "round", "selected", "skipped", "skips", "tasks", "tasks seen", "unchanged", "updated", "harmful", "safe",
    "ambiguous", "a", "b", "n", "agreement", "reviews", "status",
}  # fmt: skip


def _headers(printed: str) -> list[str]:
    """The column headers of every table in ``printed``: a line above a rule of dash runs, cut where they are."""
    import re

    lines = printed.split("\n")
    found: list[str] = []
    for above, rule in zip(lines, lines[1:], strict=False):
        if not re.fullmatch(r"-+(  -+)+", rule):
            continue
        for m in re.finditer(r"-+", rule):
            found.append(above[m.start() : m.end()].strip())
    return found


def test_every_table_header_the_round_prints_is_plain_or_in_the_glossary(ran):
    """Issue #45, item 2: no header a lead cannot look up (``annotate glossary HEADER``, docs/guide.md#glossary)."""
    from annotate.glossary import lookup

    headers = {h for b in ran for h in _headers(b.printed)}
    assert len(headers) > 40, sorted(headers)  # the rule finds the round's tables
    unknown = sorted(h for h in headers if h.lower() not in PLAIN_HEADERS and lookup(h) is None)
    assert not unknown, f"headers with no glossary entry (annotate/glossary.py): {unknown}"
