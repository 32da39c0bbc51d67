"""The README's printed outputs are what the commands print (issue #45, item 4).

A block of the README under ``<!-- output-of: COMMAND -->`` is the output of COMMAND, run here in a
fresh temporary workspace: each shown line must appear in what the command prints, in order (a line
``...`` stands for lines left out). A number changed in the code and not in the README fails here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from annotate.cli import cli

README = Path(__file__).resolve().parents[1] / "README.md"
MARK = re.compile(r"<!-- output-of: (.+?) -->\n```\n(.*?)```", re.S)


def _blocks() -> list[tuple[str, list[str]]]:
    return [(m.group(1), m.group(2).rstrip("\n").split("\n")) for m in MARK.finditer(README.read_text())]


def test_the_readme_marks_its_outputs():
    assert _blocks(), "no <!-- output-of: ... --> block in README.md"


@pytest.mark.parametrize(("command", "shown"), _blocks(), ids=[c for c, _ in _blocks()])
def test_a_shown_output_is_what_the_command_prints(command, shown, tmp_path):
    args = shlex.split(command)
    assert args[0] == "annotate"
    if args[1:2] == ["demo"]:
        args += ["--dir", str(tmp_path / "ws")]
    result = CliRunner().invoke(cli, args[1:], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    printed = result.output.split("\n")
    at = 0
    for line in shown:
        if line.strip() == "...":
            continue
        while at < len(printed) and printed[at].rstrip() != line.rstrip():
            at += 1
        assert at < len(printed), f"README shows a line `{command}` does not print (or not in this order):\n{line}"
        at += 1
