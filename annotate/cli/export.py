"""`annotate export` and `annotate verify`: audited score sets."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from annotate.cli._format import say, wrapped
from annotate.cli._options import (
    SCORE_ESTIMANDS,
    comma_list,
    echo_json,
    estimand_option,
    open_session,
    workspace_options,
)
from annotate.columns import DEFAULT_JUDGE_ONLY, JUDGE_ONLY_TREATMENTS

INTERRUPTED = 130  # the shell's status for Ctrl-C; SIGTERM is handled the same way


@click.command("export")
@click.argument("name")
@click.option("--round", "round_names", multiple=True, help="Round(s) to export (default: the only one).")
@click.option("--draws", default=4000, show_default=True, help="Posterior draws for the scores.")
@click.option("--seed", default=0, show_default=True, help="Seed of the posterior draws and bootstrap.")
@click.option("--min-reviewed", default=10, show_default=True, help="See `annotate score --help`.")
@estimand_option
@click.option(
    "--sign",
    "sign_key",
    metavar="KEYFILE",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Sign manifest.json with this Ed25519 private key (PEM or OpenSSH; not encrypted; readable by you "
    "only); writes manifest.json.sig. Needs the `sign` extra.",
)
@click.option(
    "--raw-key",
    is_flag=True,
    help="--sign's file is a raw 32-byte private key (refused otherwise: a raw public key would sign too).",
)
@click.option(
    "--grade-reference",
    "grade_reference",
    metavar="MODEL[,MODEL...]",
    default=None,
    help="Also grade every model against these reference models (grades.csv and the report's Grades section; "
    "see `annotate grade --help`).",
)
@click.option(
    "--grade-scheme",
    default="ailuminate-v1",
    show_default=True,
    metavar="NAME|FILE.toml",
    help="With --grade-reference: the grading scheme, recorded whole in the manifest.",
)
@click.option(
    "--grade-judge-only",
    type=click.Choice(JUDGE_ONLY_TREATMENTS),
    default=DEFAULT_JUDGE_ONLY,
    show_default=True,
    help="With --grade-reference: what the judge-alone grade counts the judge's ambiguous verdicts as.",
)
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
    sign_key: Path | None,
    raw_key: bool,
    grade_reference: str | None,
    grade_scheme: str,
    grade_judge_only: str,
    as_json: bool,
) -> None:
    """Write an immutable, verifiable audited score set to exports/NAME/.

    The audit record (labels.csv: one row per reviewed response, annotators by pseudonym, the
    final label and the expert's answer; judge_labels.csv; design.json), everything derived from
    it (scores.csv/.json, ranking.csv, flips.csv, p_safer.csv, p_tie.csv, judges.csv,
    judge_pairs.csv, agreement.json, report.html) and manifest.json with the sha256 of every
    file; `annotate verify` re-derives every derived file and every final label. CSV text cells
    that a spreadsheet would run as a formula carry a leading apostrophe. An existing NAME is
    refused; an interrupted export (Ctrl-C, SIGTERM) leaves nothing behind, and temporary
    folders of killed exports are swept by the next one. No e-mails, tokens or response texts
    are written.

    \b
    Example:
      annotate export audit-2026q4 --round r1
      annotate export audit-2026q4-signed --round r1 --sign signing-key.pem
      annotate export audit-2026q4-graded --round r1 --grade-reference gemma-2-9b-it,llama-3.1-8b-instruct
      annotate verify exports/audit-2026q4
    """
    from annotate.pipeline.export import export
    from annotate.pipeline.grade import grading_of

    grading = None
    if grade_reference is not None:
        grading = grading_of(grade_scheme, comma_list(grade_reference), grade_judge_only)

    try:
        with open_session(ctx) as s:
            out = export(
                s,
                name,
                round_names=round_names,
                draws=draws,
                seed=seed,
                min_reviewed=min_reviewed,
                estimand=SCORE_ESTIMANDS[estimand],
                sign_key=sign_key,
                raw_key=raw_key,
                grading=grading,
            )
    except KeyboardInterrupt:
        click.echo(f"Error: export {name} interrupted; nothing was written. Run the same command again.", err=True)
        sys.exit(INTERRUPTED)
    if as_json:
        echo_json(
            {
                "path": str(out.path),
                "files": out.files,
                "labels": out.n_labels,
                "report": str(out.report),
                "manifest_sha256": out.manifest_sha256,
                "signed_by": out.signed_by,
                "swept": out.swept,
                "left": out.left,
                "status": out.status,
                "rounds_state": out.states,
            }
        )
        return
    for folder in out.swept:
        click.echo(f"Removed {folder}, the temporary folder of an export that was killed.")
    for folder in out.left:
        click.echo(f"Left {folder} in place: it may not be ours. Remove it by hand if it is an old export's.")
    from annotate.audit.state import describe

    if out.status == "interim":
        click.echo(
            "INTERIM export: " + "; ".join(describe(st) for st in out.states if st["status"] != "final") + ". "
            "Responses without a final label count as unresolved, under the bounds the scores give "
            "(corrected_unresolved_safe / _harmful); the manifest and the report say it is interim."
        )
    click.echo(f"Exported {out.n_labels} reviewed responses to {out.path}/")
    for fname, sha in out.files.items():
        click.echo(f"  {fname:16s} sha256 {sha[:16]}...")
    click.echo(f"manifest.json sha256 {out.manifest_sha256}")
    click.echo("  (publish it: it pins every file of this export)")
    if out.signed_by:
        click.echo(f"Signed: manifest.json.sig (Ed25519, public key sha256 {out.signed_by})")
    click.echo(f"Report: {out.report}")
    key = " --key PUBFILE" if out.signed_by else ""
    click.echo(f"Check it any time with: annotate verify {out.path}{key}")


@click.command()
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--key",
    metavar="PUBFILE",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Check manifest.json.sig against this Ed25519 public key (PEM, ssh-ed25519 line or 32 raw bytes); "
    "a missing or wrong signature then fails. Needs the `sign` extra.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def verify(path: Path, key: Path | None, as_json: bool) -> None:
    """Check an export: every file and hash, every final label and derived file re-derived, the signature.

    The files must be exactly those of the schema the manifest names (no downgrade). Re-derives
    every final label of labels.csv from the votes, the expert's answers and the recorded rules, and
    scores.csv, scores.json, ranking.csv, flips.csv, p_safer.csv, p_tie.csv, judges.csv,
    judge_pairs.csv, agreement.json and report.html from the audit record (labels.csv,
    judge_labels.csv, design.json) with the manifest's settings, and compares them; never follows a
    symbolic link; any missing, extra or non-regular file fails. A signed export names its key by
    fingerprint; without --key the signature is reported as not checked. Prints, per file, what was
    proved ("re-derived and equal", "hash matches", "checked only for hash" and why) and the
    manifest's own sha256, to publish. Exits 1 and lists what differs when anything does.

    \b
    Example:
      annotate verify exports/audit-2026q4
      annotate verify exports/audit-2026q4 --key signing-key.pub.pem --json
    """
    from annotate.cli import one_line  # control characters from a hostile file are shown escaped
    from annotate.pipeline.export import verify as do_verify

    out = do_verify(path, key=key)
    if as_json:
        echo_json(out.as_dict())
    else:
        if out.ok and out.rederived_files:
            state = f", {out.export_status}" if out.export_status else ""
            say(
                f"OK ({out.schema}{state}): {out.checked_files} files match the manifest; {out.rederived_files} "
                f"re-derived from the audit record (labels.csv, design.json) and equal ({out.rederived_rows} score "
                "rows)."
            )
            if out.export_status == "interim":
                from annotate.audit.state import describe

                click.echo(
                    "This is an INTERIM export (re-derived from labels.csv): "
                    + "; ".join(describe(st) for st in out.states if st["status"] != "final")
                    + "."
                )
        elif out.ok:
            click.echo(
                f"OK ({out.schema}): {out.checked_files} files match the manifest, but none was re-derived: this "
                "version cannot "
                f"reproduce the figures of an {out.schema} export (each file below says why). Hashes prove only "
                "that the files are the ones the manifest lists."
            )
        for check in out.ordered_files():
            detail = f"  ({check.detail})" if check.detail else ""
            # The status on the file's line; what it means wraps under it, to 100 columns.
            click.echo("\n".join(wrapped(one_line(f"  {check.file:18s} {check.status}{detail}"), " " * 23)))
        click.echo(f"signature: {out.signature}")
        if out.manifest_sha256:
            click.echo(f"manifest.json sha256 {out.manifest_sha256}")
            click.echo("  (compare it with the published one)")
        for problem in out.problems:
            click.echo(f"FAIL: {one_line(problem)}", err=True)
        if not out.ok:
            click.echo(f"Error: {path} does not verify ({len(out.problems)} problem(s)).", err=True)
    if not out.ok:
        sys.exit(1)
