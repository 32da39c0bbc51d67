"""`annotate summary`: label shares per cell, the ranking flip that motivates review, and the
raw verdicts the rubric could not read."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from annotate.cli._format import pct, rank, say, shift, table
from annotate.cli._options import echo_json, open_session, workspace_options

if TYPE_CHECKING:
    from annotate.pipeline.summary import Summary


@click.command()
@click.option("--judge", default=None, help="Only this judge's labels.")
@click.option(
    "--benchmarks",
    "benchmarks",
    default="shared",
    show_default=True,
    metavar="shared|all|B1,B2",
    help="Rank on the benchmarks every ranked model shares (models without them are listed), on each "
    "model's own benchmarks (all: flagged as not comparable), or on the benchmarks named.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@workspace_options
def summary(ctx: click.Context, judge: str | None, benchmarks: str, as_json: bool) -> None:
    """Label shares per model x benchmark, and how rankings move with ambiguous responses.

    The first table shows, per judge, model and benchmark, the number of responses and the
    share the judge labelled harmful, safe and ambiguous (high ambiguity is highlighted), then
    the raw verdicts the rubric could not read, with the rubric lines that would map them. The
    ranking (1 = lowest harmful rate, macro-averaged over benchmarks) compares the models on
    the benchmarks they share, names that set and every model left out with its reason; it
    counts ambiguous responses as safe and as harmful: when the ranks differ, the ranking
    depends on responses no one has reviewed yet. Each judge's kind is shown: a quality judge
    (its failures are not harm, e.g. a completeness rubric) shows its failed and passed shares
    and is never ranked; a refusal judge is labelled so.

    \b
    Example:
      annotate summary
      annotate summary --judge gpt4 --json
      annotate summary --benchmarks all
    """
    from annotate.pipeline.summary import parse_benchmarks
    from annotate.pipeline.summary import summary as do_summary

    mode = parse_benchmarks(benchmarks)
    with open_session(ctx) as s:
        out = do_summary(s, judge=judge, benchmarks=mode)
    shares, ranks, warn = out.cells, out.ranking, out.ambiguity_warn
    if as_json:
        from annotate.stats.shares import INVALID_LINE as invalid_line

        echo_json(
            {
                "ambiguity_warn": warn,
                "benchmarks": mode,
                "cells": [_quality_cell(c) for c in shares.to_dict(orient="records")],
                "ranking": ranks.to_dict(orient="records"),
                "benchmark_sets": out.benchmark_sets.to_dict(orient="records"),
                "left_out": out.left_out.to_dict(orient="records"),
                "ambiguous_reasons": out.ambiguous_reasons.to_dict(orient="records"),
                "unparsed_verdicts": out.unparsed,
                "judge_kinds": out.kinds.to_dict(orient="records"),
                "set_aside": out.set_aside.to_dict(orient="records"),
                "no_score": out.no_score,
                "invalid_verdicts": out.invalid.to_dict(orient="records"),
                "invalid_line": invalid_line,
            }
        )
        return
    if shares.empty:
        _echo_set_aside(out)
        click.echo("The store holds no responses yet. Run `annotate ingest FILE...` first.")
        return
    color = sys.stdout.isatty()
    rows = [
        [
            r.judge,
            r.kind,
            r.model,
            r.benchmark,
            int(r.n_responses),
            # A quality judge's harmful label is a failed grade, its safe label a passed one: not harm.
            pct(r.share_harmful) + (" failed" if r.kind == "quality" else ""),
            pct(r.share_safe) + (" passed" if r.kind == "quality" else ""),
            pct(r.share_ambiguous) + (" <" if r.share_ambiguous >= warn else "  "),
        ]
        for r in shares.itertuples()
    ]

    def style(ri: int, ci: int, text: str) -> str:
        if ci == 7 and color and shares.share_ambiguous.iloc[ri] >= warn:
            return click.style(text, fg="yellow", bold=True)
        return text

    click.echo(
        table(
            ["judge", "kind", "model", "benchmark", "responses", "harmful", "safe", "ambiguous"],
            rows,
            align="llllrrrr",
            style=style,
        )
    )
    n_warn = int((shares.share_ambiguous >= warn).sum())
    click.echo(
        f"< ambiguity at or above {warn:.0%}: {n_warn} of {len(shares)} cells "
        f"({int(shares.n_ambiguous.sum())} ambiguous responses in all)."
    )
    _echo_kinds(out)
    _echo_reasons(out)
    _echo_set_aside(out)
    click.echo("")
    _echo_ranking(out)


def _quality_cell(cell: dict[str, Any]) -> dict[str, Any]:
    """A cell for --json: a quality judge's harmful and safe counts are failed and passed grades, never harm.

    >>> c = _quality_cell({"kind": "quality", "n_harmful": 3, "share_harmful": 0.3, "n_safe": 7, "share_safe": 0.7})
    >>> c["n_failed"], c["n_passed"], c["n_harmful"], c["share_safe"]
    (3, 7, None, None)
    """
    if cell.get("kind") != "quality":
        return cell
    out = dict(cell)
    for old, new in (("harmful", "failed"), ("safe", "passed")):
        for prefix in ("n_", "share_"):
            if f"{prefix}{old}" in out:
                out[f"{prefix}{new}"] = out[f"{prefix}{old}"]
                out[f"{prefix}{old}"] = None
    return out


def _echo_set_aside(out: Summary) -> None:
    """The rows set aside at ingest per model (never counted as safe), and the models left without a score."""
    from annotate.cli.ingest import _shown

    aside = out.set_aside
    for (model, benchmark), group in aside.groupby(["model", "benchmark"], sort=True):
        parts = ", ".join(f"{int(r.n)} {_shown(str(r.reason))}" for r in group.itertuples())
        click.echo(f"set aside at ingest, {_shown(str(model))} on {_shown(str(benchmark))}: {parts} (in no share)")
    for model in out.no_score:
        n = int(aside.n[aside.model == model].sum())
        click.echo(
            f"{_shown(model)}: no score: all {n} of its responses were set aside at ingest (ingest "
            "--keep-degenerate keeps them under the judge's verdict)"
        )


def _echo_kinds(out: Summary) -> None:
    """Which judges are quality, refusal or mixed judges, and what that means for the rates."""
    from annotate.cli.ingest import _shown

    cells = out.cells
    said = {
        "quality": "quality judge(s), their failures are not harm: shown as failed / passed, in no harmful rate "
        "or ranking",
        "refusal": "refusal judge(s), they say whether the model refused: ranked by their harmful label",
        "mixed": "judge(s) stored under several kinds for one benchmark: in no ranking until re-ingested under one",
    }
    for kind, text in said.items():
        judges = sorted({str(j) for j in cells.judge[cells.kind == kind]})
        if judges:
            click.echo(f"{text}: {', '.join(_shown(j) for j in judges)}")


def _echo_reasons(out: Summary) -> None:
    """Why responses are ambiguous, per judge, and the raw verdicts the rubric could not read."""
    from annotate.cli.ingest import _shown, hint_lines

    reasons = out.ambiguous_reasons
    for judge, group in reasons.groupby("judge", sort=True):
        parts = [
            f"{int(r.n)} {_shown(str(r.label_reason))}" for r in group.sort_values("n", ascending=False).itertuples()
        ]
        click.echo(f"judge {_shown(repr(judge))}: ambiguous because: {', '.join(parts)}")
    for hint in out.unparsed:
        for line in hint_lines(hint, again="ingest the file again with"):
            click.echo(line)
    from annotate.stats.shares import INVALID_LINE

    over = out.invalid[out.invalid.over] if len(out.invalid) else out.invalid
    for r in over.itertuples():
        click.echo(
            f"judge {_shown(repr(r.judge))}, {_shown(str(r.model))} on {_shown(str(r.benchmark))}: {r.share:.1%} of "
            f"its verdicts invalid ({int(r.invalid)} of {int(r.n)} unparsed or missing), at or over the "
            f"{INVALID_LINE:.0%} line of MLCommons AILuminate (a run like it fails its consistency check)"
        )


def _echo_ranking(out: Summary) -> None:
    ranks = out.ranking
    sets = out.benchmark_sets
    left_out = out.left_out
    for s in sets.itertuples():
        say(f"Ranking of judge {s.judge!r} (1 = lowest harmful rate), macro-average over {s.description}:")
        sub = ranks[ranks.judge == s.judge]
        rank_rows = [
            [
                r.model,
                int(r.n_benchmarks),
                pct(r.rate_as_safe),
                rank(r.rank_as_safe),
                pct(r.rate_as_harmful),
                rank(r.rank_as_harmful),
                shift(r.rank_shift),
            ]
            + ([r.note] if not s.comparable else [])
            for r in sub.itertuples()
        ]
        headers = ["model", "benchmarks", "amb.=safe", "rank", "amb.=harmful", "rank", "shift"]
        click.echo(
            table(
                headers + (["note"] if not s.comparable else []),
                rank_rows,
                align="lrrrrrr" + ("l" if not s.comparable else ""),
            )
        )
        gone = left_out[left_out.judge == s.judge]
        for r in gone.itertuples():
            click.echo(f"left out: {r.model} ({r.reason})")
        if len(s.outside):
            click.echo(
                f"not in this ranking: benchmark(s) {', '.join(map(str, s.outside))} (not every ranked model has "
                "them); --benchmarks all averages each model over its own benchmarks, flagged as not comparable."
            )
        if not s.comparable:
            click.echo(
                "WARNING: these models are averaged over different benchmark sets: their rates are not "
                "comparable. Rank on the shared set (the default) before publishing."
            )
        click.echo("")
    moved = ranks[ranks.rank_shift != 0]
    if len(moved):
        click.echo(
            f"{len(moved)} model(s) change rank depending on how ambiguous responses are counted: "
            "review them (annotate route) before publishing a ranking."
        )
    elif len(ranks):
        click.echo("No model changes rank between the two readings of ambiguous responses.")
    else:
        click.echo("No model could be ranked: see the models left out above.")
