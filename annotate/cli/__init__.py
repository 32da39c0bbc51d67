"""The `annotate` command line: a thin layer over the pipeline.

Each command (one module per command group here) parses its options, opens a session, calls one
function of ``annotate.pipeline``, and renders the result (a table, or JSON with ``--json``).
Heavy modules (pandas, SQLAlchemy, the Label Studio SDK) are imported inside the command
bodies so that ``annotate --help`` stays fast. Domain errors (``AnnotateError``) are printed as
``Error: ...`` without a traceback, in this one place, and exit with their own status (1, or 2
for bad input). So are the database errors that concurrent commands cause (a busy store, a record
another command wrote at the same moment), should one escape the store's own translation.
"""

from __future__ import annotations

from typing import Any

import click

from annotate import __version__
from annotate.cli import (
    adjudicate,
    agreement,
    annotators,
    demo,
    diagnose,
    export,
    glossary,
    grade,
    import_labels,
    ingest,
    init,
    judges,
    ls,
    plan,
    rounds,
    score,
    summary,
    writeback,
)
from annotate.cli._options import DB_HELP
from annotate.errors import AnnotateError


class AnnotateGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AnnotateError as exc:
            report(ctx, exc)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:
            from annotate.pipeline.session import as_user_error

            error = as_user_error(exc)
            if error is None:
                raise
            report(ctx, error)


def report(ctx: click.Context, exc: AnnotateError) -> None:
    """``Error: ...`` lines on stderr, then exit with the error's status."""
    problems = getattr(exc, "problems", None) or []
    for line in problems:
        click.echo(f"Error: {one_line(line)}", err=True)
    click.echo(f"Error: {one_line(str(exc))}", err=True)
    ctx.exit(exc.exit_code)


def one_line(text: str) -> str:
    """Control characters (which may come from the input file) escaped: one message, one line."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


@click.group(cls=AnnotateGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--workspace", "-w", metavar="DIR", default=None, help="Workspace folder [env ANNOTATE_WORKSPACE].")
@click.option("--db", metavar="URL", default=None, help=f"{DB_HELP} [env ANNOTATE_DB].")
@click.version_option(__version__, prog_name="annotate")
def cli(workspace: str | None, db: str | None) -> None:
    """Human review of ambiguous AI-safety judge verdicts, with audited corrected scores.

    \b
    A review round, end to end:
      annotate init audit && cd audit
      annotate ingest results/*.jsonl          # benchmark output, one rubric
      annotate summary                         # ambiguity per model x benchmark
      annotate annotators add ana@example.org  # A1; more reviewers, and --expert for E1
      annotate ls start                        # a Label Studio of their own for each, and a login
      annotate route --round r1 --annotators A1,A2 --clear-per-cell 25 --seed 7
      annotate pull --round r1                 # while they label; then `status --round r1`
      annotate agreement --round r1
      annotate adjudicate --round r1 --expert E1
      annotate score --round r1
      annotate export audit-r1 --round r1 && annotate verify exports/audit-r1
    """


# In the order of the workflow (click lists them alphabetically in --help).
for command in (
    init.init,
    ingest.ingest,
    summary.summary,
    ls.ls_group,
    annotators.annotators_group,
    rounds.route,
    rounds.pull,
    rounds.status,
    import_labels.import_labels,
    adjudicate.gold,
    agreement.agreement,
    adjudicate.adjudicate,
    score.score,
    plan.plan_cmd,
    grade.grade,
    judges.judges,
    export.export_cmd,
    export.verify,
    writeback.writeback,
    demo.demo,
    diagnose.diagnose,
    glossary.glossary,
):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="annotate")


if __name__ == "__main__":
    main()
