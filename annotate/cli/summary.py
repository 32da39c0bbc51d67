"""`annotate summary`: label shares per cell and the ranking flip that motivates review."""

from __future__ import annotations

import sys

import click

from annotate.cli._format import pct, rank, shift, table
from annotate.cli._options import echo_json, open_session, workspace_options


@click.command()
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
    from annotate.pipeline.summary import summary as do_summary

    with open_session(ctx) as s:
        out = do_summary(s, judge=judge)
    shares, ranks, warn = out.cells, out.ranking, out.ambiguity_warn
    if as_json:
        echo_json(
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
            rank(r.rank_as_safe),
            pct(r.rate_as_harmful),
            rank(r.rank_as_harmful),
            shift(r.rank_shift),
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
