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
from pathlib import Path
from typing import Any, Callable

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
                click.echo(f"Error: {line}", err=True)
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(exc.exit_code)


def workspace_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--workspace and --db on every command (they may also come before the command name)."""

    @click.option("--workspace", "-w", "workspace", metavar="DIR", default=None,
                  help="Workspace folder [env ANNOTATE_WORKSPACE; default: current directory].")
    @click.option("--db", "db", metavar="URL", default=None,
                  help="Database URL (any SQLAlchemy URL, or a SQLite file path) [env ANNOTATE_DB; "
                       "default: .annotate/annotate.db in the workspace].")
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
    from annotate.store import open_store

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
    from annotate.workspace import init_workspace

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
@click.option("--format", "fmt", default="auto", show_default=True, metavar="FORMAT",
              help="Input format (see below), or auto to detect it.")
@click.option("--benchmark", default=None, help="Benchmark name (overrides the file).")
@click.option("--model", default=None, help="Model name (overrides the file; needed where the file has none).")
@click.option("--judge", default=None, help="Judge name (overrides the file).")
@click.option("--rubric", "rubric_path", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="TOML file mapping raw verdicts to harmful/safe/ambiguous, over the defaults.")
@click.option("--skip-invalid", is_flag=True, help="Ingest the valid rows; write the others, with reasons, to rejects/.")
@click.option("--replace", is_flag=True, help="Overwrite rows whose key exists with other content (history is kept).")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@workspace_options
def ingest(ctx: click.Context, paths: tuple[Path, ...], fmt: str, benchmark: str | None, model: str | None,
           judge: str | None, rubric_path: Path | None, skip_invalid: bool, replace: bool, as_json: bool) -> None:
    """Read benchmark results into the store, mapping every verdict under one rubric.

    Each file is validated before anything is written; the command is all-or-nothing: a
    malformed row, a missing field, an unknown verdict or a conflicting key prints
    Error: FILE:LINE: ... for every problem and exits 2 with the store unchanged. Ingesting
    the same file twice adds nothing.
    """
    from annotate.ingest import ingest_paths, reader_module
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
        bar = click.progressbar(length=path.stat().st_size, label=path.name[:40], file=sys.stderr,
                                show_eta=True, show_percent=True)
        bars.append(bar)
        done = [0]

        def tick(nbytes: int) -> None:
            bar.update(nbytes - done[0])
            done[0] = nbytes

        return tick

    try:
        outcomes = ingest_paths(
            store, list(paths), on_file=on_file, fmt=fmt, rubric=rubric, model=model,
            benchmark=benchmark, judge=judge, skip_invalid=skip_invalid, replace=replace,
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
    from annotate.render import pct, table
    from annotate.summary import cell_shares, ranking_sensitivity

    ws, store = _open(ctx)
    try:
        counts = store.label_counts(judge=judge)
    finally:
        store.close()
    shares = cell_shares(counts)
    ranks = ranking_sensitivity(shares)
    warn = float(ws.setting("summary", "ambiguity_warn", 0.10))
    if as_json:
        _echo_json({
            "ambiguity_warn": warn,
            "cells": shares.to_dict(orient="records"),
            "ranking": ranks.to_dict(orient="records"),
        })
        return
    if shares.empty:
        click.echo("The store holds no responses yet. Run `annotate ingest FILE...` first.")
        return
    color = sys.stdout.isatty()
    rows = [
        [r.judge, r.model, r.benchmark, int(r.n_responses), pct(r.share_harmful), pct(r.share_safe),
         pct(r.share_ambiguous) + (" <" if r.share_ambiguous >= warn else "  ")]
        for r in shares.itertuples()
    ]

    def style(ri: int, ci: int, text: str) -> str:
        if ci == 6 and color and shares.share_ambiguous.iloc[ri] >= warn:
            return click.style(text, fg="yellow", bold=True)
        return text

    click.echo(table(["judge", "model", "benchmark", "responses", "harmful", "safe", "ambiguous"], rows,
                     align="lllrrrr", style=style))
    n_warn = int((shares.share_ambiguous >= warn).sum())
    click.echo(f"< ambiguity at or above {warn:.0%}: {n_warn} of {len(shares)} cells "
               f"({int(shares.n_ambiguous.sum())} ambiguous responses in all).")
    click.echo("")
    click.echo("Ranking (1 = lowest harmful rate, macro-average over benchmarks):")
    rank_rows = [
        [r.judge, r.model, int(r.n_benchmarks), pct(r.rate_as_safe), _rank(r.rank_as_safe),
         pct(r.rate_as_harmful), _rank(r.rank_as_harmful), _shift(r.rank_shift)]
        for r in ranks.itertuples()
    ]
    click.echo(table(["judge", "model", "benchmarks", "amb.=safe", "rank", "amb.=harmful", "rank", "shift"],
                     rank_rows, align="llrrrrrr"))
    moved = ranks[ranks.rank_shift != 0]
    if len(moved):
        click.echo(f"{len(moved)} model(s) change rank depending on how ambiguous responses are counted: "
                   "review them (annotate route) before publishing a ranking.")
    else:
        click.echo("No model changes rank between the two readings of ambiguous responses.")


def _rank(x: float) -> str:
    return f"{x:g}"


def _shift(x: float) -> str:
    return "0" if x == 0 else f"{x:+g}"


def main() -> None:
    cli(prog_name="annotate")


if __name__ == "__main__":
    main()
