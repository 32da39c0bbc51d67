"""The README's "A first round", run as a newcomer runs it: each command block in bash, in order.

The section's fenced blocks come in pairs: a block of commands, then (marked ``<!-- output-of-round -->``)
what they print, abridged where a line reads ``...``. :func:`run_round` runs every command block in
one temporary folder with the installed ``annotate`` first on the PATH (bash: ``cd``, ``$(...)`` and
globs as a terminal has them) and returns each block's printed text. The one step a person does, a
reviewer labelling their task file in Label Studio and exporting it, is played before the
``pull --from-file FILE --annotator WHO`` that reads it: FILE is written as Label Studio exports it,
with XSTest's own human labels (its two annotators as A1 and A2, its final label as the expert E1;
``annotate.pipeline.demo.write_label_file``), the demo's data.

Run ``python -m tests.readme_round`` to print every block's full output (to write the README's blocks
from; tests/test_readme_round.py checks the README against them).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
OUTPUT_MARK = "<!-- output-of-round -->"
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```\n", re.S | re.M)
#: Whose labels a reviewer's export file carries (XSTest's columns, as the demo replays them).
LABELS_OF = {"A1": "annotation_1", "A2": "annotation_2", "E1": "final_label"}


@dataclass
class Block:
    commands: list[str]
    shown: list[str] | None  # the README's output block, None when the commands have none
    printed: str = ""


def round_blocks(readme: Path = README) -> list[Block]:
    """The command blocks of "## A first round", each with the output block after it (if marked)."""
    text = readme.read_text(encoding="utf-8")
    start = text.index("\n## A first round")
    end = text.index("\n## ", start + 5)
    section = text[start:end]
    blocks: list[Block] = []
    for m in _FENCE.finditer(section):
        body = m.group(1).rstrip("\n").split("\n")
        marked = section[: m.start()].rstrip().endswith(OUTPUT_MARK)
        if marked:
            assert blocks and blocks[-1].shown is None, f"an output block without its commands: {body[:1]}"
            blocks[-1].shown = body
        else:
            blocks.append(Block([line for line in body if line.strip()], None))
    return blocks


def _label_files(cwd: Path, commands: list[str]) -> None:
    """Write the export file each ``pull --from-file FILE --annotator WHO`` of ``commands`` reads."""
    from annotate.config import open_workspace
    from annotate.pipeline._resolve import resolve_round
    from annotate.pipeline.demo import write_label_file, xstest_items
    from annotate.pipeline.session import session_for

    for line in commands:
        args = shlex.split(line)
        if args[:2] != ["annotate", "pull"] or "--from-file" not in args:
            continue
        path = cwd / args[args.index("--from-file") + 1]
        who = args[args.index("--annotator") + 1]
        round_name = args[args.index("--round") + 1]
        if path.exists():
            continue
        ws = open_workspace(str(cwd), None)
        s = session_for(ws)
        try:
            row = resolve_round(s.store, round_name)
            items = xstest_items(s.store, row)
            expert = who.startswith("E")
            write_label_file(s, row, items, who, LABELS_OF[who], path, rank=list(LABELS_OF).index(who) + 1,
                             only_expert_tasks=expert)  # fmt: skip
        finally:
            s.store.close()


def run_round(folder: Path, blocks: list[Block] | None = None) -> list[Block]:
    """Run every command block of the round in ``folder`` (empty); each block's ``printed`` filled."""
    blocks = round_blocks() if blocks is None else blocks
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("ANNOTATE_WORKSPACE", None)
    env.pop("ANNOTATE_DB", None)
    env["COLUMNS"] = "100"
    cwd = folder
    for block in blocks:
        _label_files(cwd, block.commands)
        script = "set -e\n" + "\n".join(block.commands) + f'\npwd > "{folder}/.cwd"\n'
        done = subprocess.run(
            ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
        )
        block.printed = done.stdout + done.stderr
        if done.returncode != 0:
            raise AssertionError(f"README block failed (exit {done.returncode}):\n{script}\n{block.printed}")
        cwd = Path((folder / ".cwd").read_text().strip())
    return blocks


def missing_lines(shown: list[str], printed: str) -> str | None:
    """The first shown line that is not printed in that order (``...`` skips any lines); None if all are."""
    lines = [line.rstrip() for line in printed.split("\n")]
    at = 0
    for line in shown:
        if line.strip() == "...":
            continue
        while at < len(lines) and lines[at] != _expand(line.rstrip(), lines[at]):
            at += 1
        if at >= len(lines):
            return line
        at += 1
    return None


def _expand(shown: str, printed: str) -> str:
    """A shown line may abbreviate a path as ``.../NAME``: it then matches a printed line equal to it
    with any path before NAME (a temporary folder here, the reader's own there)."""
    if ".../" not in shown:
        return shown
    pattern = re.escape(shown).replace(re.escape(".../"), r"\S*/")
    return printed if re.fullmatch(pattern, printed) else shown


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for b in run_round(Path(tmp)):
            print("$ " + "\n$ ".join(b.commands))
            print(b.printed)
