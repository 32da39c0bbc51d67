"""`annotate export` and `annotate verify`: audited score sets."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from annotate.cli._options import echo_json, open_session, workspace_options


@click.command("export")
@click.argument("name")
@click.option("--round", "round_names", multiple=True, help="Round(s) to export (default: the only one).")
@click.option("--draws", default=4000, show_default=True, help="Posterior draws for the scores.")
@click.option("--seed", default=0, show_default=True, help="Seed of the posterior draws and bootstrap.")
@click.option("--min-reviewed", default=10, show_default=True, help="See `annotate score --help`.")
@click.option("--estimand", type=click.Choice(["fixed", "general"]), default="fixed", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def export_cmd(
    ctx: click.Context,
    name: str,
    round_names: tuple[str, ...],
    draws: int,
    seed: int,
    min_reviewed: int,
    estimand: str,
    as_json: bool,
) -> None:
    """Write an immutable, verifiable audited score set to exports/NAME/.

    scores.csv/.json, ranking.csv, flips.csv, p_safer.csv, labels.csv (one row per reviewed
    response, annotators by pseudonym), agreement.json, design.json, report.html and
    manifest.json with the sha256 of every file. An existing NAME is refused; an interrupted
    export leaves nothing behind. No e-mails, tokens or response texts are written.

    \b
    Example:
      annotate export audit-2026q4 --round r1
      annotate verify exports/audit-2026q4
    """
    from annotate.pipeline.export import export

    with open_session(ctx) as s:
        out = export(
            s, name, round_names=round_names, draws=draws, seed=seed, min_reviewed=min_reviewed, estimand=estimand
        )
    if as_json:
        echo_json({"path": str(out.path), "files": out.files, "labels": out.n_labels, "report": str(out.report)})
        return
    click.echo(f"Exported {out.n_labels} reviewed responses to {out.path}/")
    for fname, sha in out.files.items():
        click.echo(f"  {fname:16s} sha256 {sha[:16]}...")
    click.echo(f"Report: {out.report}")
    click.echo(f"Check it any time with: annotate verify {out.path}")


@click.command()
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def verify(path: Path, as_json: bool) -> None:
    """Check an export: every hash, no missing or extra file, and the scores re-derived.

    Recomputes scores.csv from labels.csv and design.json (with the settings in the
    manifest), so a reviewer without the database can confirm the arithmetic. Exits 1 and
    lists what differs when anything does.

    \b
    Example:
      annotate verify exports/audit-2026q4
    """
    from annotate.pipeline.export import verify as do_verify

    out = do_verify(path)
    if as_json:
        echo_json(
            {
                "path": str(out.path),
                "ok": out.ok,
                "problems": out.problems,
                "checked_files": out.checked_files,
                "rederived_rows": out.rederived_rows,
            }
        )
    elif out.ok:
        click.echo(
            f"OK: {out.checked_files} files match the manifest; {out.rederived_rows} score rows re-derived "
            "from labels.csv and design.json match scores.csv."
        )
    else:
        for problem in out.problems:
            click.echo(f"FAIL: {problem}", err=True)
        click.echo(f"Error: {path} does not verify ({len(out.problems)} problem(s)).", err=True)
    if not out.ok:
        sys.exit(1)
