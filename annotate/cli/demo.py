"""`annotate demo`: the whole workflow on real data in one command."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Workspace folder for the demo (default: a new temporary folder).",
)
@click.option("--offline", is_flag=True, help="No server: tasks and labels go through Label Studio files.")
@click.option("--keep-server", is_flag=True, help="Leave Label Studio running to look at the projects.")
@click.option("--port", type=int, default=None, help="Port for the demo's Label Studio (default: a free one).")
@click.option(
    "--data-dir",
    "data_dir",
    is_flag=True,
    help="Print the folder of the bundled XSTest files (to ingest them yourself) and exit.",
)
@click.pass_context
def demo(
    ctx: click.Context, directory: Path | None, offline: bool, keep_server: bool, port: int | None, data_dir: bool
) -> None:
    """The whole workflow on real data (XSTest v2: 5 models x 450 prompts) in one command.

    Ingests GPT-4's judge labels, routes a round to two annotators, replays the two real
    human annotations of every routed response as those annotators, pulls, checks agreement
    against the value computed straight from the CSV, adjudicates with XSTest's final label as
    the expert, scores under every treatment, exports with the report, and verifies it.

    \b
    Example:
      annotate demo
      annotate demo --offline --dir demo-ws
      annotate demo --keep-server
      annotate ingest --format xstest "$(annotate demo --data-dir)"/*_gpteval.csv
    """
    if data_dir:  # cheap: no pipeline import
        from importlib import resources

        click.echo(str(resources.files("annotate").joinpath("data", "xstest")))
        return
    from annotate.pipeline.demo import run_demo

    # `annotate --workspace DIR --db URL demo`: the options before the command are the demo's too.
    root = ctx.find_root().params
    if root.get("workspace") and directory is not None and Path(root["workspace"]) != directory:
        raise click.UsageError("give the demo's folder once: --dir DIR, or --workspace DIR before `demo`.")
    directory = directory or (Path(root["workspace"]) if root.get("workspace") else None)
    result = run_demo(
        directory, offline=offline, keep_server=keep_server, port=port, echo=_step_echo, db=root.get("db")
    )
    click.echo("")
    click.echo(f"Done in {result.seconds:.0f} s.")
    if result.answers:
        click.echo("Corrected harmful rate per model after review (95% interval), beside the judge's own rate:")
        for a in result.answers:
            click.echo(
                f"  {a['model']}: {100 * a['estimate']:.1f}% harmful "
                f"[{100 * a['ci_low']:.1f}, {100 * a['ci_high']:.1f}], rank {a['rank']:g}; "
                f"the judge alone said {100 * a['judge_alone']:.1f}%"
            )
        from annotate.cli._format import say

        note = (
            "(An interval holds whether the items left unresolved after adjudication are harmful or safe, so it is "
            "wide where they are many; the judge alone leaves its ambiguous verdicts out.)"
        )
        say(note, indent="   ", first="  ")
    click.echo(f"  workspace: {result.workspace}")
    if directory is None:  # a temporary folder the demo made: it stays, and says how it goes
        click.echo(f"             (a new temporary folder; it stays after the demo: `rm -rf {result.workspace}`)")
    click.echo(f"  export:    {result.export}")
    click.echo(f"  report:    {result.report}")
    ok = (
        result.alpha_pipeline is not None
        and result.alpha_direct is not None
        and abs(result.alpha_pipeline - result.alpha_direct) < 1e-9
    )
    click.echo(
        f"  agreement check: {'equal' if ok else 'DIFFERENT'} "
        f"({result.alpha_pipeline:.6f} pulled vs {result.alpha_direct:.6f} direct)"
    )
    click.echo(f"  final labels equal to XSTest's final label: {result.final_matches} of {result.final_total}")
    if result.url:
        click.echo(
            "  Label Studio, a server of their own for each person (stop them with "
            f"`annotate -w {result.workspace} ls stop`):"
        )
        for p in result.servers:
            click.echo(f"    {p['pseudonym']}: {p['url']}/user/login/ - their login is in {p['sheet']}")
        click.echo(
            "    To look as the lead, log in as a server's admin (e-mail and password in its annotate-secrets.json, "
            f"e.g. {next(iter(result.admin_secrets.values()), '')})."
        )
    if not (ok and result.verified and result.final_matches == result.final_total):
        sys.exit(1)


def _step_echo(line: str) -> None:
    """A step's line ("[4/11] routed ...") wrapped to 100 columns under its text; other lines as they are."""
    from annotate.cli._format import wrapped

    if line.startswith("[") and "] " in line and len(line) > 100:
        indent = " " * (line.index("] ") + 2)
        line = "\n".join(wrapped(line, indent=indent))
    click.echo(line)
