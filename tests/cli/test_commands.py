"""Every command: --help with an example, exit codes, and the README's command lines parse.

The README's examples are taken from the README itself, so a renamed option or command that
the README still shows fails here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from annotate.cli import cli

REPO = Path(__file__).resolve().parents[2]


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, command in sorted(group.commands.items()):
        path = (*prefix, name)
        out.append(path)
        if isinstance(command, click.Group):
            out += _commands(command, path)
    return out


COMMANDS = _commands(cli)


def test_the_workflow_commands_are_all_there():
    names = {c[0] for c in COMMANDS}
    assert {
        "init",
        "ingest",
        "summary",
        "ls",
        "annotators",
        "route",
        "pull",
        "status",
        "gold",
        "agreement",
        "adjudicate",
        "score",
        "plan",
        "grade",
        "export",
        "verify",
        "demo",
        "diagnose",
        "writeback",
    } <= names


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_help_exits_0_and_shows_an_example(runner, path):
    result = runner.invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage: " in result.output
    assert "Example" in result.output, f"`annotate {' '.join(path)} --help` shows no example"


@pytest.mark.parametrize(
    "path",
    [c for c in COMMANDS if not isinstance(cli.get_command(None, c[0]), click.Group) or len(c) > 1],
    ids=lambda p: " ".join(p),
)
def test_an_unknown_option_exits_2_with_a_usage_error(runner, path):
    result = runner.invoke(cli, [*path, "--no-such-option"])
    assert result.exit_code == 2
    assert "No such option" in result.output


def test_a_domain_error_is_one_error_line_and_its_exit_code(runner, tmp_path):
    missing = runner.invoke(cli, ["-w", str(tmp_path / "nowhere"), "summary"])
    assert missing.exit_code == 1
    assert missing.stderr.startswith("Error: ") and "annotate init" in missing.stderr
    assert "Traceback" not in missing.output
    ws = tmp_path / "ws"
    assert runner.invoke(cli, ["init", str(ws)]).exit_code == 0
    bad = runner.invoke(cli, ["-w", str(ws), "ingest", str(tmp_path / "no-such-file.jsonl")])
    assert bad.exit_code == 2 and "Error: " in bad.stderr and "no such file" in bad.stderr


def test_the_folder_above_a_workspace_says_where_it_is_rather_than_init(runner, tmp_path):
    """Issue #45: run from the folder above a workspace, the error advised `annotate init <that folder>`,
    which would make a second, empty workspace; it names the workspace below instead."""
    assert runner.invoke(cli, ["init", str(tmp_path / "audit-2026q4")]).exit_code == 0
    above = runner.invoke(cli, ["-w", str(tmp_path), "summary"])
    assert above.exit_code == 1 and "Traceback" not in above.output
    assert "cd audit-2026q4" in above.stderr and "annotate init" not in above.stderr, above.stderr


def test_a_round_worked_in_files_is_told_the_way_out_of_a_missing_server(runner, tmp_path):
    """Issue #45: a file-mode round's `adjudicate --expert E1` said only "start the servers"; it names --to-file."""
    from annotate.config import open_workspace
    from annotate.errors import LabelStudioError
    from annotate.labelstudio import _own_gateway

    assert runner.invoke(cli, ["init", str(tmp_path / "ws")]).exit_code == 0
    ws = open_workspace(str(tmp_path / "ws"), None)
    with pytest.raises(LabelStudioError) as err:
        _own_gateway(ws, "E1")
    assert "--to-file" in str(err.value) and "annotate ls start" in str(err.value)


def test_annotate_help_does_not_import_the_heavy_modules():
    import subprocess
    import sys

    code = (
        "import sys; from annotate.cli import cli\n"
        "heavy = [m for m in ('pandas', 'sqlalchemy', 'httpx', 'label_studio_sdk', 'numpy', 'jinja2') "
        "if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _readme_command_lines() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    lines = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("annotate ") and "..." not in line:
                lines.append(line)
    return lines


README_LINES = _readme_command_lines()


def test_the_readme_shows_commands():
    assert len(README_LINES) >= 20


@pytest.mark.parametrize("line", README_LINES)
def test_every_readme_command_line_parses(line):
    """The command exists and its options and arguments parse (the command is not run)."""
    args = shlex.split(line)[1:]
    args = [a for a in args if a not in ("&&",)]
    ctx = cli.make_context("annotate", list(args), resilient_parsing=False)
    with ctx:
        group: click.Command = cli
        rest = [*ctx._protected_args, *ctx.args]
        while isinstance(group, click.Group) and rest:
            name, command, rest = group.resolve_command(ctx, rest)
            assert command is not None, line
            ctx = command.make_context(name, rest, parent=ctx)
            group = command
            rest = [*ctx._protected_args, *ctx.args] if isinstance(command, click.Group) else []


def test_a_newcomer_runs_the_first_round_steps_of_the_readme_in_a_shell_anywhere(tmp_path):
    """Step 1 and 2 of "A first round", verbatim, in bash, in a folder that is not the checkout.

    The bundled files are found by `annotate demo --data-dir`, so the lines work in a clone of
    any name, from any folder, and after a plain `pip install`.
    """
    import os
    import subprocess
    import sys

    text = (REPO / "README.md").read_text(encoding="utf-8")
    step = text.split("**1. A workspace, and the judge's verdicts in.**", 1)[1]
    first = re.search(r"```\n(.*?)```", step, flags=re.S)
    assert first is not None
    lines = [ln for ln in first.group(1).splitlines() if ln.strip()]
    assert lines[0].startswith("annotate init") and any("annotate ingest" in ln for ln in lines)
    script = " && ".join([*lines, "annotate summary"])
    here = tmp_path / "somewhere else"
    here.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", script], cwd=here, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (script, done.stdout[-2000:], done.stderr[-2000:])
    assert "450 rows read; 450 added." in done.stdout
    assert re.search(r"^gpt4\s+safety\s+mistralinstruct\s+xstest\s+450\s", done.stdout, flags=re.M), done.stdout
