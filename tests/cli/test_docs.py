"""docs/commands.md is the command reference generated from the --help texts: it must be current."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import click

from annotate.cli import cli

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "docs" / "generate_commands.py"
REFERENCE = REPO / "docs" / "commands.md"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_commands", GENERATOR)
    assert spec is not None and spec.loader is not None, GENERATOR
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, command in group.commands.items():
        out.append((*prefix, name))
        if isinstance(command, click.Group):
            out += _paths(command, (*prefix, name))
    return out


def test_the_command_reference_is_current() -> None:
    # In a fresh process: click caches each command's help option on the command object, so a test
    # that invoked a subcommand on its own (``--help`` only, not the group's ``-h, --help``) would
    # change what this process renders.
    import subprocess
    import sys

    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('generate_commands', {str(GENERATOR)!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "sys.stdout.write(module.render())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8", check=True)
    want = done.stdout
    have = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else ""
    assert have == want, "docs/commands.md differs from the commands' --help: run python docs/generate_commands.py"


def test_the_command_reference_has_every_command_in_the_order_of_the_cli() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    headings = [
        line.lstrip("#").strip() for line in text.splitlines() if line.startswith(("## annotate", "### annotate"))
    ]
    assert headings == ["annotate", *(f"annotate {' '.join(p)}" for p in _paths(cli))]
    assert list(cli.commands)[:3] == ["init", "ingest", "summary"]  # the workflow's order, not click's alphabet


def test_the_check_mode_agrees(tmp_path: Path, monkeypatch) -> None:
    module = _generator()
    monkeypatch.setattr(module, "OUT", tmp_path / "commands.md")
    assert module.main(["--check"]) == 1  # no file yet
    assert module.main([]) == 0
    assert module.main(["--check"]) == 0


def test_the_guides_glossary_is_current() -> None:
    spec = importlib.util.spec_from_file_location("generate_glossary", REPO / "docs" / "generate_glossary.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    have = module.GUIDE.read_text(encoding="utf-8")
    assert have == module.render(have), "docs/guide.md's Glossary differs: run python docs/generate_glossary.py"


def test_every_image_the_docs_show_is_in_the_repository() -> None:
    import re

    shown = []
    for page in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            shown.append((page, target))
            assert (page.parent / target).is_file(), f"{page.name} shows {target}, which is not in the repository"
    assert any(t.endswith("report-first-screen.png") for _, t in shown)  # the guide's "Reading the report"
