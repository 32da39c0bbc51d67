"""`annotate writeback`: adjudicated labels written into copies of the Inspect AI logs they came from."""

from __future__ import annotations

from pathlib import Path

import click

from annotate.cli._options import echo_json, open_session, workspace_options


@click.command("writeback")
@click.option(
    "--round", "round_name", default=None, help="The round whose final labels to write (default: the only one)."
)
@click.option(
    "--to",
    "to",
    required=True,
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the written-back copies (created if missing; never an original's folder, nor inside exports/).",
)
@click.option(
    "--mode",
    type=click.Choice(["edit", "add"]),
    default="edit",
    show_default=True,
    help="edit: a ScoreEdit of the judge's score, in the scorer's own values; add: a score of its own "
    "(1 harmful, 0 safe), for scorers whose values cannot express the label or to see both side by side.",
)
@click.option(
    "--score-name",
    default=None,
    metavar="NAME",
    help="add: the new score's name (default human_review); edit: the score to edit when the round's judge "
    "does not name it.",
)
@click.option(
    "--export",
    "export",
    default=None,
    metavar="NAME",
    help="Record exports/NAME's manifest sha256 in each edit's provenance (the export must hold the labels in force).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def writeback(
    ctx: click.Context,
    round_name: str | None,
    to: Path,
    mode: str,
    score_name: str | None,
    export: str | None,
    as_json: bool,
) -> None:
    """Write a round's final labels into copies of its Inspect AI logs, with provenance.

    For every ingested Inspect log (.eval or .json) holding reviewed samples, a copy goes to
    DIR, edited through Inspect's own API: the judge's score of each decided sample gets a
    ScoreEdit (the judge's verdict stays first in the score's history) and the log's metrics
    are recomputed. Each edit names its author (the expert's pseudonym, or annotate for a
    majority or policy decision), the reason and the round, votes, stratum and inclusion
    probability. The originals are never written; a log whose sha256 is not the one ingested
    is refused, and so is one whose metrics are not Inspect's built-ins (nothing a log names is
    run). Every log is checked and written aside before the first is put in place. Running it
    again writes the same files; a label changed by a later adjudication becomes one more edit.
    Samples without a final label are left as they were and listed. The copies are marked, so
    that `annotate ingest` refuses them (unless --allow-written-back). Needs the `inspect`
    extra: pip install -e '.[inspect]'.

    \b
    Example:
      annotate writeback --round r1 --to logs-reviewed
      annotate writeback --round r1 --to logs-reviewed --mode add --score-name human_review
      inspect view --log-dir logs-reviewed
    """
    from annotate.cli import one_line  # sample ids and reasons come from files: shown escaped
    from annotate.pipeline.writeback import writeback as do_writeback

    with open_session(ctx) as s:
        out = do_writeback(s, round_name=round_name, to=to, mode=mode, score_name=score_name, export=export)
    if as_json:
        echo_json(out.as_dict())
        return
    for name in out.swept:
        click.echo(one_line(f"Removed {name} from {out.to}/: left by an interrupted writeback."))
    for why in out.left:
        click.echo(one_line(f"Left in {out.to}/: {why}."))
    click.echo(f"Round {out.round}: {len(out.logs)} Inspect log(s) written back to {out.to}/ (mode {out.mode}).")
    for log in out.logs:
        state = "written" if log.written else "unchanged (already written back)"
        click.echo(one_line(f"  {log.source} -> {log.target}: {state}"))
        click.echo(
            f"    score {log.score}: {log.edits} edit(s) on {log.samples_edited} of {log.reviewed} reviewed "
            f"sample(s); {len(log.unresolved)} left as they were"
        )
        for name, metrics in log.metrics_after.items():
            before = log.metrics_before.get(name, {})
            shown = ", ".join(
                f"{metric} {before[metric]:.4g} -> {value:.4g}" if metric in before else f"{metric} {value:.4g}"
                for metric, value in metrics.items()
            )
            click.echo(one_line(f"    metrics {name}: {shown}"))
        for note in log.unresolved:
            click.echo(
                one_line(
                    f"    left as it was: sample {note.sample_id} (epoch {note.epoch}), {note.status}: {note.reason}"
                )
            )
    if out.export_manifest_sha256:
        click.echo(f"Provenance names export {out.export} (manifest.json sha256 {out.export_manifest_sha256}).")
    if out.other_formats:
        click.echo(
            f"{out.other_formats} reviewed response(s) came from other formats and have no Inspect log to write."
        )
    click.echo(f"Open them in Inspect: inspect view --log-dir {out.to}")
