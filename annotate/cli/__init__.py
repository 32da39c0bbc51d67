"""The `annotate` command line: a thin layer over the core.

Each command parses options, calls the core, and renders the result (a table, or JSON with
``--json``). Heavy modules (pandas, SQLAlchemy, the Label Studio SDK) are imported inside the
command bodies so that ``annotate --help`` stays fast. Domain errors (``AnnotateError``) are
printed as ``Error: ...`` without a traceback and exit with their own status (1, or 2 for bad
input).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from annotate import __version__
from annotate.errors import AnnotateError


class AnnotateGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AnnotateError as exc:
            problems = getattr(exc, "problems", None) or []
            for line in problems:
                click.echo(f"Error: {_one_line(line)}", err=True)
            click.echo(f"Error: {_one_line(str(exc))}", err=True)
            ctx.exit(exc.exit_code)


def _one_line(text: str) -> str:
    """Control characters (which may come from the input file) escaped: one message, one line."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def workspace_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--workspace and --db on every command (they may also come before the command name)."""

    @click.option(
        "--workspace",
        "-w",
        "workspace",
        metavar="DIR",
        default=None,
        help="Workspace folder [env ANNOTATE_WORKSPACE; default: current directory].",
    )
    @click.option(
        "--db",
        "db",
        metavar="URL",
        default=None,
        help="Database URL (any SQLAlchemy URL, or a SQLite file path) [env ANNOTATE_DB; "
        "default: .annotate/annotate.db in the workspace].",
    )
    @click.pass_context
    @functools.wraps(fn)
    def wrapper(ctx: click.Context, *args: Any, workspace: str | None, db: str | None, **kwargs: Any) -> Any:
        parent = ctx.find_root().params
        ctx.ensure_object(dict)
        ctx.obj["workspace"] = workspace or parent.get("workspace")
        ctx.obj["db"] = db or parent.get("db")
        return fn(ctx, *args, **kwargs)

    return wrapper


def _open(ctx: click.Context) -> tuple[Any, Any]:
    """(Workspace, Store) for the command's --workspace / --db."""
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    ws = open_workspace(ctx.obj.get("workspace"), ctx.obj.get("db"))
    return ws, open_store(ws.db_url)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


@click.group(cls=AnnotateGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--workspace", "-w", metavar="DIR", default=None, help="Workspace folder [env ANNOTATE_WORKSPACE].")
@click.option("--db", metavar="URL", default=None, help="Database URL [env ANNOTATE_DB].")
@click.version_option(__version__, prog_name="annotate")
def cli(workspace: str | None, db: str | None) -> None:
    """Human review of ambiguous AI-safety judge verdicts, with audited corrected scores.

    \b
    A review round, end to end:
      annotate init audit && cd audit
      annotate ingest results/*.jsonl          # benchmark output, one rubric
      annotate summary                         # ambiguity per model x benchmark
    """


# -- init ------------------------------------------------------------------------------------
@cli.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--db", "db", metavar="URL", default=None, help="Database URL [env ANNOTATE_DB].")
@click.pass_context
def init(ctx: click.Context, directory: Path | None, db: str | None) -> None:
    """Create a workspace in DIRECTORY (default: the workspace option or the current directory).

    Creates annotate.toml (commented settings), label_config.xml, tasks/, exports/, a
    .gitignore for the database and server data, and the database. Safe to run twice: existing
    files are kept.

    \b
    Example:
      annotate init audit-2026q4
    """
    from annotate.config import resolve_db_url, resolve_root
    from annotate.pipeline.init import init_workspace

    root = resolve_root(directory or ctx.find_root().params.get("workspace"))
    url = resolve_db_url(root, db or ctx.find_root().params.get("db"))
    created, kept = init_workspace(root, url)
    from annotate.config import redact_url

    for path in created:
        click.echo(f"created  {path}")
    for path in kept:
        click.echo(f"kept     {path} (exists)")
    click.echo(f"database {redact_url(url)}")
    click.echo(f"Workspace ready: {root}. Next: annotate -w {root} ingest FILE...")


# -- ingest ----------------------------------------------------------------------------------
def _ingest_epilog() -> str:
    return (
        "\b\nFormats (--format; auto-detected by default):\n"
        "  generic         .jsonl/.csv/.parquet: model, benchmark, prompt_id, prompt, response, judge_label\n"
        "  harmbench       HarmBench results/completions JSON\n"
        "  jailbreakbench  JailbreakBench attack artifacts and evaluation JSON\n"
        "  inspect         Inspect AI logs (.json, .eval)\n"
        "  lm-eval         lm-evaluation-harness samples_*.jsonl\n"
        "  promptfoo       promptfoo eval -o json export\n"
        "  garak           garak report .jsonl\n"
        "  xstest          XSTest completion CSVs\n"
        "\n\b\nExamples:\n"
        "  annotate ingest runs/*.jsonl\n"
        "  annotate ingest results/llama-3-8b.json --format harmbench --model llama-3-8b\n"
        "  annotate ingest judged.csv --rubric rubric.toml --skip-invalid\n"
    )


@cli.command(epilog=_ingest_epilog())
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    metavar="FORMAT",
    help="Input format (see below), or auto to detect it.",
)
@click.option("--benchmark", default=None, help="Benchmark name (overrides the file).")
@click.option("--model", default=None, help="Model name (overrides the file; needed where the file has none).")
@click.option("--judge", default=None, help="Judge name (overrides the file).")
@click.option(
    "--rubric",
    "rubric_path",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="TOML file mapping raw verdicts to harmful/safe/ambiguous, over the defaults.",
)
@click.option(
    "--skip-invalid", is_flag=True, help="Ingest the valid rows; write the others, with reasons, to rejects/."
)
@click.option("--replace", is_flag=True, help="Overwrite rows whose key exists with other content (history is kept).")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@workspace_options
def ingest(
    ctx: click.Context,
    paths: tuple[Path, ...],
    fmt: str,
    benchmark: str | None,
    model: str | None,
    judge: str | None,
    rubric_path: Path | None,
    skip_invalid: bool,
    replace: bool,
    as_json: bool,
) -> None:
    """Read benchmark results into the store, mapping every verdict under one rubric.

    Each file is validated before anything is written; the command is all-or-nothing: a
    malformed row, a missing field, an unknown verdict or a conflicting key prints
    Error: FILE:LINE: ... for every problem and exits 2 with the store unchanged. Ingesting
    the same file twice adds nothing.
    """
    from annotate.ingest.run import ingest_paths, reader_module
    from annotate.ingest.rubric import Rubric

    ws, store = _open(ctx)
    if fmt != "auto":
        reader_module(fmt)  # validates the name before anything else
    rubric_file = rubric_path or ws.setting("rubric", "file")
    if rubric_file and not Path(rubric_file).is_absolute() and rubric_path is None:
        rubric_file = ws.root / rubric_file
    rubric = Rubric.from_file(Path(rubric_file) if rubric_file else None)
    bars: list[Any] = []

    def on_file(path: Path) -> Callable[[int], None] | None:
        for bar in bars:
            bar.render_finish()
        bars.clear()
        if not sys.stderr.isatty() or not path.is_file():
            return None
        bar = click.progressbar(
            length=path.stat().st_size, label=path.name[:40], file=sys.stderr, show_eta=True, show_percent=True
        )
        bars.append(bar)
        done = [0]

        def tick(nbytes: int) -> None:
            bar.update(nbytes - done[0])
            done[0] = nbytes

        return tick

    try:
        outcomes = ingest_paths(
            store,
            list(paths),
            on_file=on_file,
            fmt=fmt,
            rubric=rubric,
            model=model,
            benchmark=benchmark,
            judge=judge,
            skip_invalid=skip_invalid,
            replace=replace,
            rejects_dir=ws.rejects_dir,
        )
    finally:
        for bar in bars:
            bar.render_finish()
        store.close()
    if as_json:
        _echo_json([o.to_dict() for o in outcomes])
        return
    for o in outcomes:
        click.echo(_describe_outcome(o))


def _describe_outcome(o: Any) -> str:
    labels = ", ".join(f"{o.labels.get(k, 0)} {k}" for k in ("harmful", "safe", "ambiguous"))
    extra = [f"{n} {r}" for r, n in sorted(o.ambiguous_reasons.items()) if r != "mapped" and n]
    parts = [f"{o.path.name} [{o.format}]: {o.rows_read} rows read; {o.added} added"]
    if o.duplicates:
        parts.append(f"{o.duplicates} already present")
    if o.replaced:
        parts.append(f"{o.replaced} replaced (old values kept in history)")
    if o.rejected:
        parts.append(f"{o.rejected} rejected -> {o.rejects_path}")
    if o.set_aside:
        parts.append(f"{o.set_aside} set aside (nothing to review) -> {o.set_aside_path}")
    line = "; ".join(parts) + "."
    line += f"\n  labels: {labels}" + (f" (ambiguous because: {', '.join(extra)})" if extra else "")
    if o.added == 0 and o.replaced == 0 and o.duplicates:
        line += "\n  nothing new: every row was already in the store."
    return line


# -- summary ---------------------------------------------------------------------------------
@cli.command()
@click.option("--judge", default=None, help="Only this judge's labels.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@workspace_options
def summary(ctx: click.Context, judge: str | None, as_json: bool) -> None:
    """Label shares per model x benchmark, and how rankings move with ambiguous responses.

    The first table shows, per judge, model and benchmark, the number of responses and the
    share the judge labelled harmful, safe and ambiguous (high ambiguity is highlighted). The
    second ranks the models (1 = lowest harmful rate, macro-averaged over benchmarks) with
    ambiguous responses counted as safe and as harmful: when the ranks differ, the ranking
    depends on responses no one has reviewed yet.

    \b
    Example:
      annotate summary
      annotate summary --judge gpt4 --json
    """
    from annotate.cli._format import pct, table
    from annotate.stats.shares import cell_shares, ranking_sensitivity

    ws, store = _open(ctx)
    try:
        counts = store.label_counts(judge=judge)
    finally:
        store.close()
    shares = cell_shares(counts)
    ranks = ranking_sensitivity(shares)
    warn = float(ws.setting("summary", "ambiguity_warn", 0.10))
    if as_json:
        _echo_json(
            {
                "ambiguity_warn": warn,
                "cells": shares.to_dict(orient="records"),
                "ranking": ranks.to_dict(orient="records"),
            }
        )
        return
    if shares.empty:
        click.echo("The store holds no responses yet. Run `annotate ingest FILE...` first.")
        return
    color = sys.stdout.isatty()
    rows = [
        [
            r.judge,
            r.model,
            r.benchmark,
            int(r.n_responses),
            pct(r.share_harmful),
            pct(r.share_safe),
            pct(r.share_ambiguous) + (" <" if r.share_ambiguous >= warn else "  "),
        ]
        for r in shares.itertuples()
    ]

    def style(ri: int, ci: int, text: str) -> str:
        if ci == 6 and color and shares.share_ambiguous.iloc[ri] >= warn:
            return click.style(text, fg="yellow", bold=True)
        return text

    click.echo(
        table(
            ["judge", "model", "benchmark", "responses", "harmful", "safe", "ambiguous"],
            rows,
            align="lllrrrr",
            style=style,
        )
    )
    n_warn = int((shares.share_ambiguous >= warn).sum())
    click.echo(
        f"< ambiguity at or above {warn:.0%}: {n_warn} of {len(shares)} cells "
        f"({int(shares.n_ambiguous.sum())} ambiguous responses in all)."
    )
    click.echo("")
    click.echo("Ranking (1 = lowest harmful rate, macro-average over benchmarks):")
    rank_rows = [
        [
            r.judge,
            r.model,
            int(r.n_benchmarks),
            pct(r.rate_as_safe),
            _rank(r.rank_as_safe),
            pct(r.rate_as_harmful),
            _rank(r.rank_as_harmful),
            _shift(r.rank_shift),
        ]
        for r in ranks.itertuples()
    ]
    click.echo(
        table(
            ["judge", "model", "benchmarks", "amb.=safe", "rank", "amb.=harmful", "rank", "shift"],
            rank_rows,
            align="llrrrrrr",
        )
    )
    moved = ranks[ranks.rank_shift != 0]
    if len(moved):
        click.echo(
            f"{len(moved)} model(s) change rank depending on how ambiguous responses are counted: "
            "review them (annotate route) before publishing a ranking."
        )
    else:
        click.echo("No model changes rank between the two readings of ambiguous responses.")


# -- Label Studio server ---------------------------------------------------------------------------
@cli.group("ls")
def ls_group() -> None:
    """Run the embedded Label Studio server (bound to 127.0.0.1 unless told otherwise).

    \b
    Example:
      annotate ls start            # http://127.0.0.1:8080, data in .annotate/labelstudio/
      annotate ls status
      annotate ls stop
    """


@ls_group.command("start")
@click.option("--port", default=8080, show_default=True, help="Port to listen on (refused, not changed, when taken).")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to bind. Anything but loopback exposes the server to the network.",
)
@click.option("--timeout", default=300.0, show_default=True, help="Seconds to wait for readiness.")
@workspace_options
def ls_start(ctx: click.Context, port: int, host: str, timeout: float) -> None:
    """Start the embedded Label Studio server for this workspace.

    The first start creates the admin account and API token (stored in the workspace, mode
    0600) and migrates Label Studio's database (about a minute). Signup is by invite only;
    telemetry, version checks and Sentry are off.

    \b
    Example:
      annotate ls start --port 8080
    """
    from annotate.config import open_workspace
    from annotate.labelstudio import server as ls_server
    from annotate.pipeline.rounds import ls_data_dir

    ws = open_workspace(ctx.obj.get("workspace"), ctx.obj.get("db"))
    if host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(
            f"Warning: binding to {host} makes Label Studio reachable from the network. "
            "Signup stays invite-only, but anyone who can reach the port sees the login page.",
            err=True,
        )
    click.echo("Starting Label Studio (the first start migrates its database: about a minute)...", err=True)
    info = ls_server.start_server(ls_data_dir(ws), host=host, port=port, timeout=timeout)
    for warning in info.warnings:
        click.echo(f"Warning: {warning}", err=True)
    click.echo(f"Label Studio is ready at {info.url} (pid {info.pid}, ready in {info.startup_seconds:.0f} s).")
    click.echo(f"Log in as {info.admin_email}; the password is in {info.secrets_path} (readable only by you).")


@ls_group.command("stop")
@workspace_options
def ls_stop(ctx: click.Context) -> None:
    """Stop the embedded Label Studio server.

    \b
    Example:
      annotate ls stop
    """
    from annotate.config import open_workspace
    from annotate.labelstudio import server as ls_server
    from annotate.pipeline.rounds import ls_data_dir

    ws = open_workspace(ctx.obj.get("workspace"), ctx.obj.get("db"))
    stopped = ls_server.stop_server(ls_data_dir(ws))
    click.echo("Label Studio stopped." if stopped else "Label Studio was not running.")


@ls_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def ls_status(ctx: click.Context, as_json: bool) -> None:
    """Show whether Label Studio runs, where, and how to log in.

    \b
    Example:
      annotate ls status
    """
    import os

    from annotate.config import open_workspace
    from annotate.labelstudio import server as ls_server
    from annotate.pipeline.rounds import ls_data_dir

    ws = open_workspace(ctx.obj.get("workspace"), ctx.obj.get("db"))
    external = os.environ.get("ANNOTATE_LS_URL") or ws.setting("labelstudio", "url")
    st = ls_server.server_status(ls_data_dir(ws))
    data = {
        "running": st.running,
        "url": st.url,
        "pid": st.pid,
        "healthy": st.healthy,
        "authenticated": st.authenticated,
        "admin_email": st.admin_email,
        "secrets_file": str(ls_data_dir(ws) / ls_server.SECRETS_NAME),
        "external_server": external,
        "detail": st.detail,
    }
    if as_json:
        _echo_json(data)
        return
    if external:
        click.echo(f"Using the Label Studio server at {external} (ANNOTATE_LS_URL); nothing is started here.")
    if st.running:
        click.echo(
            f"Label Studio is running at {st.url} (pid {st.pid}); "
            f"health {'ok' if st.healthy else 'failing'}, token {'accepted' if st.authenticated else 'REJECTED'}."
        )
        click.echo(f"Log in as {st.admin_email}; the password is in {data['secrets_file']}.")
    else:
        click.echo(
            f"The embedded Label Studio is not running{': ' + st.detail if st.detail else ''}. "
            "Start it with `annotate ls start`."
        )


# -- annotators -----------------------------------------------------------------------------------
@cli.group("annotators")
def annotators_group() -> None:
    """Register reviewers under stable pseudonyms (A1, A2, ...).

    \b
    Example:
      annotate annotators add ana@example.org --name "Ana"
      annotate annotators list
    """


@annotators_group.command("add")
@click.argument("email")
@click.option("--name", default=None, help="Display name (stays in the store, like the e-mail).")
@click.option("--expert", is_flag=True, help="Register an adjudication expert (pseudonym E1, E2, ...).")
@click.option("--offline", is_flag=True, help="Register locally only, without Label Studio.")
@workspace_options
def annotators_add(ctx: click.Context, email: str, name: str | None, expert: bool, offline: bool) -> None:
    """Create the Label Studio user and an invite link; register a pseudonym.

    Every output of the tool names the annotator by the pseudonym only. Adding the same e-mail
    twice keeps the first pseudonym.

    \b
    Example:
      annotate annotators add ana@example.org --name "Ana"
    """
    from annotate.pipeline.rounds import add_annotator

    ws, store = _open(ctx)
    try:
        added = add_annotator(ws, store, email, name, role="expert" if expert else "annotator", offline=offline)
    finally:
        store.close()
    verb = "registered as" if added.created else "already registered as"
    click.echo(f"{email} {verb} {added.pseudonym}.")
    if added.invite_url:
        click.echo(f"Send this invite link to {added.pseudonym} to set a password: {added.invite_url}")
    if added.note:
        click.echo(f"Note: {added.note}.")


@annotators_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (pseudonyms only).")
@click.option("--show-emails", is_flag=True, help="Also show e-mail addresses (for the coordinator only).")
@workspace_options
def annotators_list(ctx: click.Context, as_json: bool, show_emails: bool) -> None:
    """List annotators by pseudonym.

    \b
    Example:
      annotate annotators list
    """
    from annotate.cli._format import table

    ws, store = _open(ctx)
    try:
        df = store.annotators()
    finally:
        store.close()
    cols = ["pseudonym", "role", "ls_user_id"] + (["email", "name"] if show_emails else [])
    records = df[cols].to_dict("records") if len(df) else []
    if as_json:
        _echo_json(records)
    elif not records:
        click.echo("No annotators yet. Add one with `annotate annotators add EMAIL`.")
    else:
        click.echo(table(cols, [[r[c] for c in cols] for r in records]))


# -- route / pull / status -----------------------------------------------------------------------
@cli.command()
@click.option("--round", "round_name", required=True, help="Round name (new, or one to extend/resume).")
@click.option("--annotators", required=True, help="Comma-separated pseudonyms (or e-mails), e.g. A1,A2,A3.")
@click.option(
    "--clear-per-cell",
    default=25,
    show_default=True,
    help="Responses sampled from each clear stratum (judge harmful, judge safe) per model x benchmark.",
)
@click.option("--seed", default=0, show_default=True, help="Seed of the sample and of each annotator's task order.")
@click.option(
    "--judge", default=None, help="Whose labels define the strata (needed when the store has several judges)."
)
@click.option("--dry-run", is_flag=True, help="Show what would be sent, per cell and stratum; send nothing.")
@click.option(
    "--to-file", is_flag=True, help="Write tasks/<round>/<annotator>.json (Label Studio import format) instead."
)
@click.option(
    "--prioritize",
    is_flag=True,
    help="Order each annotator's tasks by predicted probability of ambiguity (see `annotate diagnose`); "
    "the selection is unchanged.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def route(
    ctx: click.Context,
    round_name: str,
    annotators: str,
    clear_per_cell: int,
    seed: int,
    judge: str | None,
    dry_run: bool,
    to_file: bool,
    prioritize: bool,
    as_json: bool,
) -> None:
    """Send every ambiguous response and a seeded sample of clear ones to independent reviewers.

    Each annotator gets a Label Studio project of their own holding the same tasks, in their own
    seeded order, showing only the prompt and the response. The selection, strata and inclusion
    probabilities are recorded for the corrected scores. Safe to re-run: only what is missing is
    imported; responses ingested since are added as a new wave.

    \b
    Example:
      annotate route --round r1 --annotators A1,A2,A3 --clear-per-cell 25 --seed 7 --dry-run
      annotate route --round r1 --annotators A1,A2,A3 --clear-per-cell 25 --seed 7
    """
    from annotate.cli._format import table
    from annotate.pipeline.rounds import route as do_route

    ws, store = _open(ctx)
    names = [a.strip() for a in annotators.split(",") if a.strip()]
    bar: list[Any] = []

    def progress(n: int, total: int) -> None:
        if not sys.stderr.isatty():
            return
        if not bar:
            bar.append(click.progressbar(length=total, label="importing", file=sys.stderr))
        bar[0].update(n)

    try:
        out = do_route(
            ws,
            store,
            round_name=round_name,
            annotator_names=names,
            clear_per_cell=clear_per_cell,
            seed=seed,
            judge=judge,
            dry_run=dry_run,
            to_file=to_file,
            progress=progress,
            prioritize=prioritize,
        )
    finally:
        if bar:
            bar[0].render_finish()
        store.close()
    strata = out.strata
    if as_json:
        _echo_json(
            {
                "round": out.round,
                "judge": out.judge,
                "wave": out.new_wave,
                "dry_run": out.dry_run,
                "prioritized": out.prioritized,
                "selected": out.selected,
                "strata": strata.to_dict("records"),
                "annotators": out.per_annotator,
                "files": [str(f) for f in out.files],
            }
        )
        return
    if len(strata):
        rows = [
            [s.model, s.benchmark, s.stratum, int(s.population), int(s.sample), f"{s.sample / s.population:.3f}"]
            for s in strata.itertuples()
        ]
        click.echo(
            table(["model", "benchmark", "stratum", "population", "selected", "incl. prob"], rows, align="lllrrr")
        )
    head = "Would select" if dry_run else "Selected"
    if out.new_wave is None:
        click.echo(f"Round {out.round}: no new responses since the last routing (judge {out.judge}).")
    else:
        click.echo(f"{head} {out.selected} responses (wave {out.new_wave}, judge {out.judge}).")
    for who, c in out.per_annotator.items():
        if to_file:
            click.echo(f"  {who}: {c['tasks']} tasks written")
        else:
            click.echo(f"  {who}: {c['tasks']} tasks; {c['imported']} imported now, {c['already']} already there")
    for f in out.files:
        click.echo(f"  wrote {f}")
    if dry_run:
        click.echo("Dry run: nothing was sent or recorded.")


@cli.command()
@click.option("--round", "round_name", default=None, help="Round to pull (default: the only one).")
@click.option(
    "--from-file",
    "from_files",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A Label Studio JSON export file instead of the server (repeatable).",
)
@click.option("--annotator", default=None, help="With --from-file: whose project the file was exported from.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def pull(
    ctx: click.Context, round_name: str | None, from_files: tuple[Path, ...], annotator: str | None, as_json: bool
) -> None:
    """Read annotations back from Label Studio into the store.

    Every result is validated against the label config: results without a verdict, with an
    unknown choice, or for an unknown task are quarantined, never counted. Edits keep the
    previous value in history; deletions are marked, not forgotten; skips are not labels.
    Pulling twice changes nothing.

    \b
    Example:
      annotate pull --round r1
      annotate pull --round r1 --from-file export-A1.json --annotator A1
    """
    from annotate.cli._format import table
    from annotate.pipeline.rounds import pull as do_pull

    ws, store = _open(ctx)
    try:
        out = do_pull(ws, store, round_name=round_name, from_files=list(from_files), annotator=annotator)
    finally:
        store.close()
    fields = ["tasks_seen", "new", "updated", "deleted", "restored", "skips", "quarantined", "unchanged"]
    if as_json:
        _echo_json({"round": out.round, "annotators": {k: vars(v) for k, v in out.per_annotator.items()}})
        return
    rows = [[who, *[getattr(c, f) for f in fields]] for who, c in out.per_annotator.items()]
    click.echo(
        table(
            ["annotator", "tasks seen", "new", "updated", "deleted", "restored", "skips", "quarantined", "unchanged"],
            rows,
        )
    )
    q = sum(c.quarantined for c in out.per_annotator.values())
    if q:
        click.echo(f"{q} result(s) quarantined (not counted): see `annotate status --round {out.round} --quarantine`.")


@cli.command()
@click.option("--round", "round_name", default=None, help="Only this round.")
@click.option("--quarantine", "show_quarantine", is_flag=True, help="List quarantined results too.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def status(ctx: click.Context, round_name: str | None, show_quarantine: bool, as_json: bool) -> None:
    """Progress per round, annotator and stratum, with an estimate of time to finish.

    \b
    Example:
      annotate status --round r1
    """
    from annotate.cli._format import table
    from annotate.pipeline.rounds import status_table

    ws, store = _open(ctx)
    try:
        df = status_table(store, round_name)
        quarantine = store.quarantined() if show_quarantine or as_json else None
    finally:
        store.close()
    if as_json:
        _echo_json(
            {
                "progress": df.to_dict("records"),
                "quarantine": []
                if quarantine is None
                else quarantine[["ls_annotation_id", "task_id", "ext_id", "reason"]].to_dict("records"),
            }
        )
        return
    if df.empty:
        click.echo("No rounds routed yet. Start one with `annotate route --round NAME --annotators A1,A2`.")
        return
    rows = [
        [
            r["round"],
            r["annotator"],
            r["stratum"],
            r["tasks"],
            r["done"],
            r["skipped"],
            r["remaining"],
            "" if _missing(r["median_lead_time_s"]) else f"{r['median_lead_time_s']:.0f} s",
            _eta(r["eta_s"]),
        ]
        for r in df.to_dict("records")
    ]
    click.echo(
        table(
            ["round", "annotator", "stratum", "tasks", "done", "skipped", "remaining", "median time", "ETA"],
            rows,
            align="lllrrrrrr",
        )
    )
    if quarantine is not None and len(quarantine):
        click.echo("")
        click.echo(
            table(
                ["annotation", "task", "ext_id", "reason"],
                [[_int(q.ls_annotation_id), _int(q.task_id), q.ext_id, q.reason] for q in quarantine.itertuples()],
            )
        )


# -- agreement / adjudicate ---------------------------------------------------------------------
def _ci(lo: Any, hi: Any) -> str:
    return "" if _missing(lo) or _missing(hi) else f"[{lo:.3f}, {hi:.3f}]"


def _num(x: Any, fmt: str = "{:.3f}") -> str:
    return "-" if _missing(x) else fmt.format(x)


@cli.command()
@click.option("--round", "round_name", default=None, help="Round (default: the only one).")
@click.option(
    "--by",
    "by",
    type=click.Choice(["stratum", "benchmark", "model", "category"]),
    default="stratum",
    show_default=True,
    help="Report per group of this kind (and pooled).",
)
@click.option(
    "--labels",
    "label_set",
    type=click.Choice(["binary", "3-way", "both"]),
    default="both",
    show_default=True,
    help="binary: harmful/safe with unsure as missing; 3-way: harmful/safe/unsure.",
)
@click.option("--boot", default=2000, show_default=True, help="Bootstrap replicates for the intervals.")
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (everything, both label sets).")
@workspace_options
def agreement(
    ctx: click.Context, round_name: str | None, by: str, label_set: str, boot: int, seed: int, as_json: bool
) -> None:
    """How far the reviewers agree: alpha with its interval, AC1, kappa, per-annotator flags.

    Per group and pooled (a mixture of strata: ambiguous items are hard by construction, so
    read the per-stratum rows). The verdict applies Krippendorff's thresholds to the lower end
    of alpha's 95 % interval: reliable >= .800, tentative >= .667, else unreliable.

    \b
    Example:
      annotate agreement --round r1
      annotate agreement --round r1 --by benchmark --json
    """
    from annotate.cli._format import table
    from annotate.pipeline.agreement import agreement_report
    from annotate.stats.agreement.votes import Thresholds

    ws, store = _open(ctx)
    cfg = ws.settings.get("agreement", {})
    th = Thresholds(
        reliable=float(cfg.get("reliable", 0.8)),
        tentative=float(cfg.get("tentative", 0.667)),
        kappa_consensus=float(cfg.get("kappa_consensus", 0.6)),
        alpha_gain=float(cfg.get("alpha_gain", 0.05)),
    )
    try:
        report = agreement_report(store, round_name=round_name, by=by, n_boot=boot, seed=seed, thresholds=th)
    finally:
        store.close()
    if as_json:
        _echo_json(report)
        return
    groups = [g for g in report["groups"] if label_set == "both" or g["labels"] == label_set]
    click.echo(
        f"Round {report['round']}: {report['n_labels']} labels by {', '.join(report['annotators'])}; "
        f"{report['n_boot']} bootstrap replicates."
    )
    rows = [
        [
            g["group"],
            g["labels"],
            g["n_units"],
            _num(g["alpha"]),
            _ci(*g["alpha_ci"]),
            _num(g["q_below_0667"], "{:.2f}"),
            _num(g["ac1"]),
            _num(g["fleiss_kappa"]),
            _num(g["percent_agreement"]),
            g["verdict"] + (" !" if g["prevalence_warning"] else ""),
        ]
        for g in groups
    ]
    click.echo(
        table(
            ["group", "labels", "units", "alpha", "95% CI", "P(a<.667)", "AC1", "Fleiss", "% agree", "verdict"],
            rows,
            align="llrrrrrrrl",
        )
    )
    warned = [g for g in groups if g["prevalence_warning"]]
    if warned:
        click.echo("! " + warned[0]["prevalence_warning"] + " Read AC1 beside alpha there (kappa paradox).")
    undefined = [g for g in groups if g["alpha_undefined_reason"]]
    for g in undefined[:5]:
        click.echo(f"  {g['group']} ({g['labels']}): alpha undefined: {g['alpha_undefined_reason']}")
    pooled = next((g for g in report["groups"] if g["pooled"] and g["labels"] == "binary"), None)
    if pooled and pooled["annotators"]:
        click.echo("")
        click.echo("Per annotator (pooled, binary labels):")
        arows = [
            [
                a["annotator"],
                a["n_rated"],
                _num(a["agreement_with_consensus"]),
                _num(a["kappa_with_consensus"]),
                _num(a["alpha_if_removed"]),
                _num(a["alpha_delta"], "{:+.3f}"),
                _num(a["ds_sensitivity_harmful"]),
                _num(a["ds_specificity_harmful"]),
                _num(a["gold_accuracy"]) if a["gold_n"] else "-",
                "; ".join(a["flags"]) or "ok",
            ]
            for a in pooled["annotators"]
        ]
        click.echo(
            table(
                [
                    "annotator",
                    "rated",
                    "agree w/ others",
                    "kappa w/ others",
                    "alpha w/o",
                    "delta",
                    "DS sens.",
                    "DS spec.",
                    "gold acc.",
                    "flags",
                ],
                arows,
                align="lrrrrrrrrl",
            )
        )


@cli.command()
@click.option("--round", "round_name", required=True, help="The review round to settle.")
@click.option(
    "--policy",
    type=click.Choice(["escalate", "harmful", "safe", "unresolved"]),
    default="escalate",
    show_default=True,
    help="What escalated items without an expert decision become.",
)
@click.option("--expert", default=None, help="Expert pseudonym or e-mail: escalations and checks go to their project.")
@click.option("--to-file", is_flag=True, help="Write the expert's tasks to tasks/<round>/<expert>-adjudication.json.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def adjudicate(
    ctx: click.Context, round_name: str, policy: str, expert: str | None, to_file: bool, as_json: bool
) -> None:
    """One final label per reviewed response, by a recorded procedure.

    Majority vote is the label of record; ties are never broken by data order. Ties, majority
    'unsure', doubtful Dawid-Skene posteriors (and, if configured, harmful votes on
    high-severity items) are escalated to the expert, who sees each reviewer's verdict and
    rationale under pseudonyms. A seeded 5 % of majority-resolved items go to the expert as a
    check. Every decision is recorded with its votes, adjudicator and reason; re-running after
    new labels adds records and overwrites nothing.

    \b
    Example:
      annotate annotators add lead@example.org --expert
      annotate adjudicate --round r1 --expert E1
      annotate pull --round r1 && annotate adjudicate --round r1 --expert E1
    """
    from annotate.pipeline.adjudicate import adjudicate as do_adjudicate

    ws, store = _open(ctx)
    try:
        out = do_adjudicate(ws, store, round_name=round_name, policy=policy, expert=expert, to_file=to_file)
    finally:
        store.close()
    if as_json:
        _echo_json({**vars(out), "files": [str(f) for f in out.files]})
        return
    total = sum(out.counts.values())
    click.echo(f"Round {out.round}: {total} reviewed responses; {out.new_records} new decision record(s).")
    for status_name in ("resolved", "escalated", "unresolved"):
        if out.counts.get(status_name):
            click.echo(f"  {status_name:10s} {out.counts[status_name]}")
    click.echo("  by method: " + ", ".join(f"{k} {v}" for k, v in sorted(out.methods.items())))
    if out.escalation_reasons:
        click.echo("  escalated because: " + ", ".join(f"{k} ({v})" for k, v in out.escalation_reasons.items()))
    if out.awaiting_review:
        click.echo(f"  {out.awaiting_review} routed response(s) have no label yet (awaiting review).")
    if out.expert:
        click.echo(
            f"  sent to {out.expert}: {out.sent_to_expert} new task(s)"
            + (f" -> {', '.join(str(f) for f in out.files)}" if out.files else "")
        )
    c = out.check
    if c.get("n_checked"):
        click.echo(
            f"  majority check: the expert agreed with the majority on {c['agreement']:.0%} of "
            f"{c['n_checked']} checked item(s) (kappa {_num(c['kappa'])})."
        )
    elif c.get("n_drawn"):
        click.echo(f"  majority check: {c['n_drawn']} item(s) drawn; no expert labels on them yet.")
    if out.unresolved:
        click.echo(
            f"  not resolved ({len(out.unresolved)}): "
            + ", ".join(u["ext_id"] for u in out.unresolved[:10])
            + (" ..." if len(out.unresolved) > 10 else "")
        )
    if out.counts.get("escalated") and not out.expert:
        click.echo("  Escalated items wait for an expert: pass --expert, or choose --policy.")


@cli.command()
@click.option("--round", "round_name", required=True, help="The round whose items get known answers.")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@workspace_options
def gold(ctx: click.Context, round_name: str, path: Path) -> None:
    """Mark gold items of a round: responses whose correct verdict is known.

    PATH is a CSV with columns model, benchmark, prompt_id, gold_label (harmful / safe /
    unsure) and optionally epoch. `annotate agreement` then reports each annotator's accuracy
    on them. All rows must match the round's items, or nothing is written.

    \b
    Example:
      annotate gold --round r1 gold.csv
    """
    from annotate.pipeline.rounds import set_gold

    ws, store = _open(ctx)
    try:
        n = set_gold(store, round_name, path)
    finally:
        store.close()
    click.echo(f"{n} gold item(s) marked in round {round_name}.")


# -- score / plan ------------------------------------------------------------------------------
TREATMENT_SHORT = {
    "ambiguous_as_safe": "amb=safe",
    "ambiguous_as_harmful": "amb=harm",
    "ambiguous_excluded": "amb excl",
    "adjudicated_clear_trusted": "clear trusted",
    "corrected": "corrected",
    "corrected_unresolved_safe": "unres=safe",
    "corrected_unresolved_harmful": "unres=harm",
    "corrected_dawid_skene": "DS labels",
}


def _pct(x: Any) -> str:
    return "n/e" if _missing(x) else f"{100 * x:.1f}%"


@cli.command()
@click.option("--round", "round_names", multiple=True, help="Round(s) to score (default: the only one).")
@click.option("--treatments", default=None, help="Comma-separated treatments to show (default: all).")
@click.option(
    "--estimand",
    type=click.Choice(["fixed", "general"]),
    default="fixed",
    show_default=True,
    help="fixed: these prompts (leaderboards); general: the prompt distribution.",
)
@click.option(
    "--by",
    "by",
    type=click.Choice(["model", "benchmark"]),
    default="model",
    show_default=True,
    help="model: overall (macro-average over benchmarks); benchmark: one table per benchmark.",
)
@click.option("--draws", default=4000, show_default=True, help="Posterior draws.")
@click.option("--seed", default=0, show_default=True, help="Seed of the posterior draws.")
@click.option(
    "--min-reviewed",
    default=10,
    show_default=True,
    help="Clear strata with fewer resolved reviewed items borrow the judge's pooled error rates (flagged).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def score(
    ctx: click.Context,
    round_names: tuple[str, ...],
    treatments: str | None,
    estimand: str,
    by: str,
    draws: int,
    seed: int,
    min_reviewed: int,
    as_json: bool,
) -> None:
    """Corrected per-model harmful rates with intervals, and how rankings depend on treatment.

    The corrected rate is the stratified estimator over the judge's labels with the design
    weights recorded by `route`; its 95 % interval comes from the finite-population posterior
    (never Wald). Below it, each treatment of ambiguous responses is compared with the corrected
    ranking: Kendall's tau-b, Spearman's rho, flipped pairs, and which flips are credible
    (P >= 0.975 under the corrected posterior) rather than noise. Deterministic for a --seed.

    \b
    Example:
      annotate score --round r1
      annotate score --round r1 --by benchmark --estimand general --json
    """
    from annotate.cli._format import table
    from annotate.pipeline.score import score_from_store

    ws, store = _open(ctx)
    try:
        out, labels, _doc = score_from_store(
            store, round_names, draws=draws, seed=seed, min_reviewed=min_reviewed, estimand=estimand
        )
    except ValueError as exc:
        from annotate.errors import InputError

        raise InputError(str(exc)) from None
    finally:
        store.close()
    chosen = [t.strip() for t in treatments.split(",")] if treatments else list(TREATMENT_SHORT)
    unknown = [t for t in chosen if t not in TREATMENT_SHORT]
    if unknown:
        from annotate.errors import InputError

        raise InputError(f"unknown treatment(s) {unknown}; choose from {', '.join(TREATMENT_SHORT)}")
    scores = out.scores[out.scores.treatment.isin(chosen)]
    if as_json:
        _echo_json(
            {
                "settings": out.settings,
                "scores": scores.to_dict("records"),
                "ranking": out.ranking.to_dict("records"),
                "flips": out.flips.to_dict("records"),
                "models": out.models.to_dict("records"),
                "p_safer": {"models": list(out.p_safer.index), "matrix": out.p_safer.to_numpy().tolist()},
                "transport": out.transport.to_dict("records"),
            }
        )
        return
    benches = ["ALL"] if by == "model" else [b for b in scores.benchmark.unique() if b != "ALL"]
    models = out.models.set_index("model") if len(out.models) else None
    for bench in benches:
        sub = scores[scores.benchmark == bench]
        title = "Overall (macro-average over benchmarks)" if bench == "ALL" else f"Benchmark {bench}"
        click.echo(f"{title}; estimand {estimand}; harmful rate, 95% interval for corrected:")
        rows = []
        for model, g in sub.groupby("model", sort=False):
            g = g.set_index("treatment")
            corr = g.loc["corrected"] if "corrected" in g.index else None
            row = [model]
            if corr is not None:
                row += [
                    _pct(corr.estimate),
                    _ci_pct(corr.ci_low, corr.ci_high),
                    "" if _missing(corr["rank"]) else f"{corr['rank']:g}",
                    "" if _missing(corr.rank_low) else f"[{corr.rank_low:g}, {corr.rank_high:g}]",
                ]
            else:
                row += ["", "", "", ""]
            row += [_pct(g.loc[t].estimate) if t in g.index else "" for t in chosen if t != "corrected"]
            shift = (
                models.loc[model, "largest_shift"]
                if models is not None and bench == "ALL" and model in models.index
                else None
            )
            row.append("" if _missing(shift) else f"{shift:+g}")
            flag = corr.flag if corr is not None else ""
            row.append("" if flag in ("ok", None) or _missing(flag) else flag)
            rows.append(row)
        rows.sort(key=lambda r: (r[3] == "", float(r[3]) if r[3] else 0.0))
        headers = (
            ["model", "corrected", "95% CI", "rank", "rank CI"]
            + [TREATMENT_SHORT[t] for t in chosen if t != "corrected"]
            + ["max shift", "flag"]
        )
        click.echo(table(headers, rows, align="l" + "r" * (len(headers) - 2) + "l"))
        agree = out.ranking[out.ranking.benchmark == bench]
        agree = agree[agree.treatment.isin(chosen) & (agree.treatment != "corrected")]
        if len(agree):
            click.echo("Each treatment's ranking against the corrected one:")
            click.echo(
                table(
                    ["treatment", "tau-b", "rho", "flips", "credible", "within noise", "max shift"],
                    [
                        [
                            r.treatment,
                            _num(r.tau_b),
                            _num(r.rho),
                            _int(r.flips),
                            _int(r.credible_flips),
                            _int(r.noise_flips),
                            _int(r.max_rank_shift),
                        ]
                        for r in agree.itertuples()
                    ],
                    align="lrrrrrr",
                )
            )
        fl = out.flips[(out.flips.benchmark == bench) & out.flips.treatment.isin(chosen)]
        credible = fl[fl.credible.astype(bool)]
        if len(credible):
            click.echo("Credible flips (the corrected posterior is decisive, P >= 0.975):")
            for r in credible.itertuples():
                click.echo(
                    f"  {r.treatment}: {r.model_a} vs {r.model_b} (corrected: {r.model_a} safer, P = {r.p_a_safer:.3f})"
                )
        elif len(fl):
            click.echo(f"{len(fl)} flipped pair(s), all within noise under the corrected posterior.")
        click.echo("")
    flagged = scores[(scores.treatment == "corrected") & ~scores.flag.isin(["ok"])]
    for r in flagged.itertuples():
        click.echo(
            f"note: {r.model} x {r.benchmark}: {r.flag}"
            + (f" ({r.note})" if isinstance(r.note, str) and r.note else "")
        )


def _ci_pct(lo: Any, hi: Any) -> str:
    return "" if _missing(lo) or _missing(hi) else f"[{100 * lo:.1f}, {100 * hi:.1f}]"


@cli.command("plan")
@click.option("--target-se", type=float, required=True, help="Target standard error of each cell's corrected rate.")
@click.option(
    "--round", "round_names", multiple=True, help="Use this round's design and labels (guessed rates from data)."
)
@click.option(
    "--min-per-stratum", default=10, show_default=True, help="At least this many per non-empty clear stratum."
)
@click.option("--judge", default=None, help="Judge whose labels define the strata (before any round).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def plan_cmd(
    ctx: click.Context,
    target_se: float,
    round_names: tuple[str, ...],
    min_per_stratum: int,
    judge: str | None,
    as_json: bool,
) -> None:
    """How many clear items per cell to review for a target standard error (Neyman allocation).

    Ambiguous responses are reviewed in full; the clear strata (judge harmful, judge safe) get
    n_h in proportion to W_h S_h, at least --min-per-stratum each. Feed the largest per-cell
    figure to `route --clear-per-cell`.

    \b
    Example:
      annotate plan --target-se 0.02
    """
    from annotate.cli._format import table
    from annotate.pipeline.score import plan

    if target_se <= 0:
        from annotate.errors import InputError

        raise InputError("--target-se must be positive, e.g. 0.02")
    ws, store = _open(ctx)
    try:
        df = plan(store, round_names, target_se, min_per_stratum=min_per_stratum, judge=judge)
    finally:
        store.close()
    if as_json:
        _echo_json(df.to_dict("records"))
        return
    click.echo(
        table(
            ["model", "benchmark", "stratum", "population", "guessed rate", "n", "expected SE"],
            [
                [
                    r.model,
                    r.benchmark,
                    r.judge_label,
                    int(r.population),
                    _num(r.rate_guess, "{:.2f}"),
                    int(r.n),
                    _num(r.expected_se, "{:.4f}"),
                ]
                for r in df.itertuples()
            ],
            align="lllrrrr",
        )
    )
    if len(df):
        click.echo(
            f"Largest clear stratum sample: {int(df.n.max())}: "
            f"route --clear-per-cell {int(df.n.max())} meets the target in every cell."
        )


# -- export / verify -----------------------------------------------------------------------------
@cli.command("export")
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

    ws, store = _open(ctx)
    try:
        out = export(
            ws,
            store,
            name,
            round_names=round_names,
            draws=draws,
            seed=seed,
            min_reviewed=min_reviewed,
            estimand=estimand,
        )
    finally:
        store.close()
    if as_json:
        _echo_json({"path": str(out.path), "files": out.files, "labels": out.n_labels, "report": str(out.report)})
        return
    click.echo(f"Exported {out.n_labels} reviewed responses to {out.path}/")
    for fname, sha in out.files.items():
        click.echo(f"  {fname:16s} sha256 {sha[:16]}...")
    click.echo(f"Report: {out.report}")
    click.echo(f"Check it any time with: annotate verify {out.path}")


@cli.command()
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
        _echo_json(
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


# -- demo --------------------------------------------------------------------------------------
@cli.command()
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
def demo(directory: Path | None, offline: bool, keep_server: bool, port: int | None) -> None:
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
    """
    from annotate.pipeline.demo import run_demo

    result = run_demo(directory, offline=offline, keep_server=keep_server, port=port, echo=click.echo)
    click.echo("")
    click.echo(f"Done in {result.seconds:.0f} s.")
    click.echo(f"  workspace: {result.workspace}")
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
            f"  Label Studio: {result.url} (log in as {result.admin_email}; password in {result.secrets_file}). "
            f"Stop it with: annotate -w {result.workspace} ls stop"
        )
    if not (ok and result.verified and result.final_matches == result.final_total):
        sys.exit(1)


# -- diagnose ------------------------------------------------------------------------------------
@cli.command()
@click.option("--judge", default=None, help="Whose ambiguity to explain (needed when the store has several judges).")
@click.option("--by", "by", type=click.Choice(["benchmark"]), default=None, help="Also fit per benchmark.")
@click.option(
    "--null-band",
    default="0.9,1.1",
    show_default=True,
    help="Odds ratios per SD inside this band are negligible, whatever their p-value.",
)
@click.option("--seed", default=0, show_default=True, help="Seed of the cross-validation folds.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def diagnose(ctx: click.Context, judge: str | None, by: str | None, null_band: str, seed: int, as_json: bool) -> None:
    """Does the judge's "ambiguous" track style rather than safety here? The study's six correlates.

    Logistic regression of "judge said ambiguous" on standardised text features (length,
    lexical density, sophistication, perplexity, self-coherence, reply-prompt similarity) with
    model and benchmark fixed effects and prompt-clustered standard errors: odds ratio per SD
    with 95 % interval, Holm-adjusted p, VIF, and cross-validated AUC of the features alone
    against the fixed effects alone. Where human labels exist, the same features against
    human-harmful among judge-ambiguous responses. Features are computed once and stored (needs
    the `diagnostics` extra). Exports made afterwards carry a diagnostics section.

    \b
    Example:
      annotate diagnose
      annotate diagnose --by benchmark --json
    """
    from annotate.cli._format import table
    from annotate.errors import InputError
    from annotate.pipeline.diagnose import diagnose as do_diagnose

    try:
        lo, hi = (float(x) for x in null_band.split(","))
    except ValueError:
        raise InputError("--null-band must be two numbers, e.g. 0.9,1.1") from None
    ws, store = _open(ctx)
    try:
        result = do_diagnose(store, judge=judge, by=by, null_band=(lo, hi), seed=seed)
    except ImportError as exc:
        raise InputError(f"{exc}. Install the diagnostics extra: pip install 'annotate[diagnostics]'") from None
    finally:
        store.close()
    if as_json:
        _echo_json(result)
        return

    def show(res: dict[str, Any], title: str) -> None:
        click.echo(
            f"{title}: n = {res['n_responses']}, events = {res['n_events']}; "
            f"AUC features {_num(res['auc_features'])} vs fixed effects {_num(res['auc_fixed_effects'])}"
        )
        click.echo(
            table(
                ["correlate", "feature", "OR/SD", "95% CI", "Holm p", "VIF", "reading"],
                [[r.get("correlate") or "", r["feature"], *(_estimable(r)), r["verdict"]] for r in res["table"]],
                align="llrrrrl",
            )
        )

    show(result, f"Judge {result['judge']}: said ambiguous")
    click.echo("The study's correlates here:")
    for r in result["study"]:
        click.echo(f"  {r['correlate']:16s} ({r['feature']}) expected to {r['expected']}: {r['holds']}")
    for b in result.get("by_benchmark", []):
        if "error" in b:
            click.echo(f"{b['benchmark']}: {b['error']}")
        else:
            show(b, f"Benchmark {b['benchmark']}")
    human = result.get("human")
    if human and "error" not in human:
        show(human, "Human-adjudicated harmful among judge-ambiguous responses")
    elif human:
        click.echo(f"Human labels: {human['error']}")


def _estimable(r: dict[str, Any]) -> list[str]:
    """OR, CI, Holm p and VIF, or dashes when the fit could not estimate them."""
    if str(r.get("verdict", "")).endswith("not estimable"):
        return ["-", "", "-", "-"]
    return [
        _num(r["odds_ratio"]),
        _ci(r["ci_low"], r["ci_high"]),
        _num(r["p_holm"], "{:.3g}"),
        _num(r["vif"], "{:.1f}"),
    ]


def _missing(x: Any) -> bool:
    return x is None or x != x  # None or NaN


def _int(x: Any) -> str:
    return "" if _missing(x) else str(int(x))


def _eta(seconds: float | None) -> str:
    if _missing(seconds):
        return ""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _rank(x: float) -> str:
    return f"{x:g}"


def _shift(x: float) -> str:
    return "0" if x == 0 else f"{x:+g}"


def main() -> None:
    cli(prog_name="annotate")


if __name__ == "__main__":
    main()
