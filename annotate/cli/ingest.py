"""`annotate ingest`: benchmark output into the store under one rubric."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from annotate.cli._options import echo_json, open_session, workspace_options
from annotate.columns import JUDGE_LABELS

if TYPE_CHECKING:
    from annotate.ingest.run import IngestOutcome


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


@click.command(epilog=_ingest_epilog())
# readable=False: the ingest itself says why a path cannot be read (a FIFO, a loop, permissions).
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, readable=False))
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
    from annotate.pipeline.ingest import ingest as do_ingest

    bars: list[Any] = []

    def on_file(path: Path) -> Callable[[int], None] | None:
        for bar in bars:
            bar.render_finish()
        bars.clear()
        try:
            if not sys.stderr.isatty() or not path.is_file():
                return None
            size = path.stat().st_size
        except OSError:  # the ingest itself says what is wrong with the path
            return None
        bar = click.progressbar(
            length=size, label=_shown(path.name)[:40], file=sys.stderr, show_eta=True, show_percent=True
        )
        bars.append(bar)
        done = [0]

        def tick(nbytes: int) -> None:
            bar.update(nbytes - done[0])
            done[0] = nbytes

        return tick

    try:
        with open_session(ctx) as s:
            outcomes = do_ingest(
                s,
                list(paths),
                on_file=on_file,
                fmt=fmt,
                rubric_path=rubric_path,
                model=model,
                benchmark=benchmark,
                judge=judge,
                skip_invalid=skip_invalid,
                replace=replace,
            )
    finally:
        for bar in bars:
            bar.render_finish()
    if as_json:
        echo_json([o.to_dict() for o in outcomes])
        return
    for o in outcomes:
        click.echo(_describe_outcome(o))


def _shown(text: str) -> str:
    """A file name for the terminal: control characters (an ANSI escape, a carriage return) escaped."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def _describe_outcome(o: IngestOutcome) -> str:
    labels = ", ".join(f"{o.labels.get(k, 0)} {k}" for k in JUDGE_LABELS)
    extra = [f"{n} {r}" for r, n in sorted(o.ambiguous_reasons.items()) if r != "mapped" and n]
    parts = [f"{_shown(o.path.name)} [{o.format}]: {o.rows_read} rows read; {o.added} added"]
    if o.duplicates:
        parts.append(f"{o.duplicates} already present")
    if o.replaced:
        parts.append(f"{o.replaced} replaced (old values kept in history)")
    if o.rejected:
        parts.append(f"{o.rejected} rejected -> {_shown(str(o.rejects_path))}")
    if o.set_aside:
        parts.append(f"{o.set_aside} set aside (nothing to review) -> {_shown(str(o.set_aside_path))}")
    line = "; ".join(parts) + "."
    line += f"\n  labels: {labels}" + (f" (ambiguous because: {', '.join(extra)})" if extra else "")
    if o.added == 0 and o.replaced == 0 and o.duplicates:
        line += "\n  nothing new: every row was already in the store."
    return line
