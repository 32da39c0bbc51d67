"""`annotate plan`: how many reviews a round needs for a target (the corrected rate's SE, a judge's
sensitivity, a half-width per model, a ranking), or to detect a judge that errs differently by model."""

from __future__ import annotations

from typing import Any

import click

from annotate.cli._format import num, say, table
from annotate.cli._options import echo_json, open_session, workspace_options
from annotate.errors import InputError


def _detect_plan(
    detect: str,
    power: float,
    prevalence: float,
    specificity: float,
    ambiguous: float,
    responses: int,
    models: int,
    judges: int,
    fdr: float,
    as_json: bool,
) -> None:
    """``plan --detect-se``: reviews per judge-harmful and judge-safe stratum for the model test, or a census."""
    from annotate.stats.judge_models import TESTED
    from annotate.stats.judge_planning import reviews_to_detect

    try:
        se_model, se_rest = (float(x) for x in detect.split(":"))
        if not (0 < se_model < 1 and 0 < se_rest < 1):
            raise ValueError
    except ValueError:
        raise InputError(
            f"--detect-se {detect!r}: give the two sensitivities as MODEL:OTHERS, each between 0 and 1 "
            "(e.g. 0.60:0.90)."
        ) from None
    if judges < 1:
        raise InputError("--judges: at least 1.")
    tests = judges * models * len(TESTED)
    alpha = fdr / tests
    try:
        out = reviews_to_detect(
            se_model,
            se_rest,
            prevalence=prevalence,
            specificity=specificity,
            ambiguous=ambiguous,
            responses=responses,
            models=models,
            power=power,
            alpha=alpha,
        )
    except ValueError as exc:
        raise InputError(f"--detect-se: {exc}.") from None
    census = not out["reachable"]
    # `annotate route` samples one number from both clear strata of a cell: the larger, or all of them.
    clear_per_cell = responses if census else max(out["reviews_judge_harmful"], out["reviews_judge_safe"])
    out = {
        **out,
        "se_model": se_model,
        "se_others": se_rest,
        "judges": judges,
        "models": models,
        "responses": responses,
        "tests": tests,
        "fdr": fdr,
        "clear_per_cell": clear_per_cell,
    }
    if as_json:
        echo_json(out)
        return

    finds = (
        f"`judges --by model` to flag a judge whose sensitivity is {se_model:.2f} on one model and {se_rest:.2f} "
        f"on the other {models - 1}"
    )
    strata = (
        f"a model's clear strata hold about {out['judge_harmful_stratum']:.0f} judge-harmful and "
        f"{out['judge_safe_stratum']:.0f} judge-safe responses"
    )
    if census:
        say(
            f"By this plan no number of reviews reaches {power:.0%} power: with every clear response of every model "
            f"reviewed (a census of both clear strata; {strata}) the power for {finds} is {out['power_reachable']:.0%} "
            "(the plan errs low: docs/methods.md 9.16)."
        )
        say(
            f"Route a census: `annotate route ... --clear-per-cell {clear_per_cell}`. More power needs more "
            "responses per model (--responses) or a larger difference."
        )
    else:
        capped = [
            name
            for name, flag in (("judge-harmful", out["capped_judge_harmful"]), ("judge-safe", out["capped_judge_safe"]))
            if flag
        ]
        say(
            f"Review {out['reviews_judge_harmful']} responses of each judge-harmful stratum and "
            f"{out['reviews_judge_safe']} of each judge-safe stratum, in every model "
            f"({out['reviews_per_model']:.0f} reviews per model, {out['reviews_total']:.0f} in all), for {finds} "
            f"with power {out['power_promised']:.0%}"
            + (f" (wanted: {power:.0%})." if f"{out['power_promised']:.0%}" != f"{power:.0%}" else ".")
            + (f" That is all of the {' and '.join(capped)} stratum ({strata})." if capped else "")
        )
        say(
            f"Route: `annotate route ... --clear-per-cell {clear_per_cell}` samples that many from both clear "
            "strata (more judge-harmful reviews than planned only add power)."
            if out["reviews_judge_harmful"] != out["reviews_judge_safe"]
            else f"Route: `annotate route ... --clear-per-cell {clear_per_cell}`."
        )
    say(
        f"The level: {tests} tests ({judges} judge{'s' if judges > 1 else ''} x {models} models x "
        f"{len(TESTED)} figures) at a false-discovery rate of {fdr:.0%}, so a first discovery needs "
        f"p <= {alpha:.4f}; the difference's standard error is then {out['se_difference']:.3f}. Assumed: "
        f"{prevalence:.0%} harmful, judge specificity {specificity:.2f}, {ambiguous:.0%} ambiguous, {responses} "
        f"responses per model, {out['test_draws']:,} test draws; the ambiguous strata as the round samples them "
        "(they do not inform the sensitivity)."
    )


@click.command("plan")
@click.option(
    "--target-halfwidth",
    type=float,
    default=None,
    help="Plan the next wave: the target half-width of every model's corrected rate (0.03 = +-3 points, 95 %).",
)
@click.option(
    "--budget", type=float, default=None, help="Plan the next wave for this many reviews (the best common half-width)."
)
@click.option("--ranking", is_flag=True, help="Plan the next wave so every pair of models is separated or tied.")
@click.option(
    "--tie-margin", type=float, default=0.01, show_default=True, help="With --ranking: closer models are tied."
)
@click.option("--reviewers", type=int, default=None, help="Reviewers per item (default: the round's).")
@click.option("--expert-share", type=float, default=0.0, show_default=True, help="Expected share sent to an expert.")
@click.option("--unresolved", type=float, default=0.0, show_default=True, help="Expected share left unresolved.")
@click.option("--target-se", type=float, default=None, help="Target standard error of each cell's corrected rate.")
@click.option(
    "--sensitivity-se",
    type=float,
    default=None,
    help="Instead: target standard error of the routing judge's sensitivity over the cells; sizes the judge-safe "
    "strata, where the harm the judge missed hides.",
)
@click.option(
    "--round", "round_names", multiple=True, help="Use this round's design and labels (guessed rates from data)."
)
@click.option(
    "--min-per-stratum", default=10, show_default=True, help="At least this many per non-empty clear stratum."
)
@click.option("--judge", default=None, help="Judge whose labels define the strata (before any round).")
@click.option(
    "--detect-se",
    default=None,
    metavar="MODEL:OTHERS",
    help="Instead: the reviews of each judge-harmful and each judge-safe stratum (sized apart) with which "
    "`judges --by model` flags a judge whose sensitivity is MODEL on one model and OTHERS on the rest (e.g. "
    "0.60:0.90) with --power; where no number reaches it, the power of a census. Assumptions: --prevalence, "
    "--specificity, --ambiguous-share, --responses, --models, --judges, --fdr.",
)
@click.option("--power", type=float, default=0.8, show_default=True, help="With --detect-se: the power wanted.")
@click.option("--prevalence", type=float, default=0.3, show_default=True, help="With --detect-se: the harmful share.")
@click.option("--specificity", type=float, default=0.95, show_default=True, help="With --detect-se: the judge's Sp.")
@click.option(
    "--ambiguous-share",
    type=float,
    default=0.15,
    show_default=True,
    help="With --detect-se: the judge's ambiguous share.",
)
@click.option("--responses", type=int, default=400, show_default=True, help="With --detect-se: responses per model.")
@click.option("--models", type=int, default=8, show_default=True, help="With --detect-se: models in the round.")
@click.option(
    "--judges",
    "n_judges",
    type=int,
    default=1,
    show_default=True,
    help="With --detect-se: judges audited (the test counts judges x models x 2 figures).",
)
@click.option(
    "--fdr", type=float, default=0.10, show_default=True, help="With --detect-se: the test's false-discovery rate."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def plan_cmd(
    ctx: click.Context,
    target_halfwidth: float | None,
    budget: float | None,
    ranking: bool,
    tie_margin: float,
    reviewers: int | None,
    expert_share: float,
    unresolved: float,
    target_se: float | None,
    sensitivity_se: float | None,
    round_names: tuple[str, ...],
    min_per_stratum: int,
    judge: str | None,
    detect_se: str | None,
    power: float,
    prevalence: float,
    specificity: float,
    ambiguous_share: float,
    responses: int,
    models: int,
    n_judges: int,
    fdr: float,
    as_json: bool,
) -> None:
    """How many reviews a round needs: per stratum for a target half-width per model, or per cell.

    --target-halfwidth H (or --budget N reviews, or --ranking) plans the next wave
    (docs/methods.md 4.10): per stratum how many more to draw from what is not yet sampled, so
    that every model's corrected rate reaches +-H with the fewest reviews; a table per model
    with the expected half-width, and the total reviews. `route --next-wave` routes it.

    --target-se E: the clear strata (judge harmful, judge safe) get n_h in proportion to W_h
    S_h, at least --min-per-stratum each (the ambiguous strata as route's --ambiguous says).
    Feed the largest per-cell figure to `route --clear-per-cell`. --sensitivity-se sizes the
    judge-safe strata instead, for a target standard error of the routing judge's sensitivity
    (rare harm needs many).

    \b
    Example:
      annotate plan --round r1 --target-halfwidth 0.03
      annotate plan --round r1 --budget 5000
      annotate plan --target-se 0.02
      annotate plan --round r1 --sensitivity-se 0.05
      annotate plan --detect-se 0.60:0.90 --power 0.8 --models 8 --responses 400 --judges 2

    --detect-se MODEL:OTHERS sizes a round for the model test of `judges --by model`: the reviews
    of each judge-harmful and of each judge-safe stratum (sized apart, the fewest in all) that give
    --power to flag a judge whose sensitivity is MODEL on one model and OTHERS on the rest, at the
    level a first Benjamini-Hochberg discovery needs among judges x models x 2 figures (--fdr /
    tests). Where no number of reviews reaches --power, it says so and gives the power of a census
    of the clear strata (docs/methods.md 9.16).
    """
    if detect_se is not None:
        _detect_plan(detect_se, power, prevalence, specificity, ambiguous_share, responses, models, n_judges, fdr,
                     as_json)  # fmt: skip
        return
    from annotate.pipeline._planning import plan_target
    from annotate.pipeline.score import plan

    if target_halfwidth is not None or budget is not None or ranking:
        with open_session(ctx) as s:
            rp = plan_target(
                s.store,
                round_names,
                target_halfwidth=target_halfwidth,
                budget=budget,
                ranking=ranking,
                tie_margin=tie_margin,
                reviewers=reviewers,
                expert_share=expert_share,
                unresolved=unresolved,
                judge=judge,
            )
        if as_json:
            echo_json(
                {"reviews": rp.reviews, "models": rp.models.to_dict("records"), "strata": rp.strata.to_dict("records")}
            )
            return
        _echo_wave_plan(rp)
        return

    with open_session(ctx) as s:
        df = plan(
            s.store,
            round_names,
            target_se,
            min_per_stratum=min_per_stratum,
            judge=judge,
            sensitivity_se=sensitivity_se,
        )
    if as_json:
        echo_json(df.to_dict("records"))
        return
    if sensitivity_se is not None:
        _echo_sensitivity_plan(df, sensitivity_se)
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
                    num(r.rate_guess, "{:.2f}"),
                    int(r.n),
                    num(r.expected_se, "{:.4f}"),
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


def _echo_sensitivity_plan(df: Any, target: float) -> None:
    """``plan --sensitivity-se``: judge-safe reviews per cell and the expected SE of the sensitivity."""
    click.echo(
        table(
            ["model", "benchmark", "judge-safe", "guessed rate", "n", "expected harmful", "note"],
            [
                [
                    r.model,
                    r.benchmark,
                    int(r.population),
                    num(r.rate_guess, "{:.3f}"),
                    int(r.n),
                    num(r.expected_harmful, "{:.1f}"),
                    r.note,
                ]
                for r in df.itertuples()
            ],
            align="llrrrrl",
        )
    )
    if len(df):
        se = float(df.expected_se.iloc[0])
        reach = "meets" if bool(df.reachable.iloc[0]) else "cannot meet"
        click.echo(
            f"Reviewing {int(df.n.max())} judge-safe responses per cell {reach} the target: expected SE of the "
            f"judge's sensitivity {se:.4f} (target {target:g}); route --clear-per-cell {int(df.n.max())}."
        )


def _short_status(note: Any) -> str:
    """A model's status in a few words (the table fits 100 columns; the full note is in --json)."""
    from annotate.stats.planning import UNREACHABLE

    if not note or note != note:
        return "planned"
    return "not reachable" if note == UNREACHABLE or str(note).startswith("not reachable") else str(note)


def _echo_wave_plan(rp: Any) -> None:
    """``plan --target-halfwidth``: per model, the half-width now and after the planned wave."""
    from annotate.stats.planning import UNREACHABLE

    click.echo(
        table(
            ["model", "target", "now +-", "after +-", "items", "reviews", "status"],
            [
                [
                    r.model,
                    num(r.target, "{:.3f}"),
                    num(r.halfwidth_now, "{:.3f}") if r.halfwidth_now < 1 else "none yet",
                    num(r.expected_halfwidth, "{:.3f}"),
                    int(r.items),
                    int(round(r.reviews)),
                    "at target" if r.at_target else _short_status(r.note),
                ]
                for r in rp.models.itertuples()
            ],
            align="lrrrrrl",
        )
    )
    unreachable = [r for r in rp.models.itertuples() if not r.at_target and _short_status(r.note) == "not reachable"]
    reasons = sorted({str(r.note) for r in unreachable})
    for reason in reasons:
        names = ", ".join(str(r.model) for r in unreachable if str(r.note) == reason)
        if reason == UNREACHABLE:
            reason = (
                "not reachable: even with every remaining response of the model reviewed, its interval stays "
                "wider than the target (after +- is the best it can get)"
            )
        say(f"{reason} ({names}).")
    at = int(rp.models.at_target.sum()) if len(rp.models) else 0
    click.echo(
        f"Next wave: {int(rp.strata.n.sum())} items, {round(rp.reviews)} reviews; {at} of {len(rp.models)} "
        "models already at target."
    )
