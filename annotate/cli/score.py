"""`annotate score` and `annotate plan`: corrected scores, rankings, and review planning."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from annotate.cli._format import ci_pct, indented, int_or_blank, missing, num, pct_or_ne, say, table
from annotate.cli._options import (
    ESTIMAND_SAID,
    SCORE_ESTIMANDS,
    echo_json,
    estimand_option,
    open_session,
    workspace_options,
)
from annotate.cli.rounds import echo_target, target_json
from annotate.columns import ALL, TREATMENT_PLAIN, TREATMENT_SHORT
from annotate.errors import InputError

#: ``score --by`` values that cut the items by their prompt's fields (``annotate.stats.scoring.domains``).
BY_FACETS = ("hazard", "persona", "locale")

if TYPE_CHECKING:
    from annotate.stats.scoring.tables import PPIOutput, ScoreOutput


@click.command()
@click.option("--round", "round_names", multiple=True, help="Round(s) to score (default: the only one).")
@click.option("--treatments", default=None, help="Comma-separated treatments to show (default: all).")
@estimand_option
@click.option(
    "--by",
    "by",
    type=click.Choice(["model", "benchmark", *BY_FACETS]),
    default="model",
    show_default=True,
    help="model: overall (macro-average over benchmarks); benchmark: one table per benchmark; hazard, persona, "
    "locale: each model's corrected rate within each hazard (a sub-hazard in its parent), persona or locale.",
)
@click.option(
    "--benchmarks",
    "benchmarks",
    default="shared",
    show_default=True,
    metavar="shared|all|B1,B2",
    help="The overall ranking's benchmarks: those every ranked model shares (models without them are listed "
    "with why), each model's own (all: a macro-average over different sets, flagged in every row), or those named.",
)
@click.option(
    "--estimator",
    type=click.Choice(["design", "ppi"]),
    default="design",
    show_default=True,
    help="design: the stratified estimator and every treatment; ppi: prediction-powered rates (stratified PPI++ "
    "with the routing judge's score or the other judges' labels as the prediction) beside the design-based ones.",
)
@click.option("--draws", default=4000, show_default=True, help="Posterior draws.")
@click.option("--seed", default=0, show_default=True, help="Seed of the posterior draws.")
@click.option(
    "--min-reviewed",
    default=10,
    show_default=True,
    help="Clear strata with fewer resolved reviewed items are flagged; 0 disables transport (the fill of clear "
    "strata without any resolved reviewed item from the judge's pooled error rates).",
)
@click.option(
    "--target-halfwidth",
    type=float,
    default=None,
    help="Also say which models' corrected rates are within this half-width (e.g. 0.03) and whether the round is "
    "done (as `annotate status --target-halfwidth`).",
)
@click.option(
    "--wide",
    is_flag=True,
    help="Every treatment and the bounds over unresolved items as columns (wider than a terminal); by default "
    "the table fits 100 columns: the corrected rate, its rank and the judge's own rate, flags as notes below.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def score(
    ctx: click.Context,
    round_names: tuple[str, ...],
    treatments: str | None,
    estimand: str,
    by: str,
    benchmarks: str,
    estimator: str,
    draws: int,
    seed: int,
    min_reviewed: int,
    target_halfwidth: float | None,
    as_json: bool,
    wide: bool = False,
) -> None:
    """Corrected per-model harmful rates with intervals, and how rankings depend on treatment.

    The corrected rate is the stratified estimator over the judge's labels with the design
    weights recorded by `route`; its 95 % interval comes from finite-population draws (never
    Wald), and where items are unresolved it holds whether they are harmful or safe. Below it,
    each treatment of ambiguous responses is compared with the corrected ranking: Kendall's
    tau-b, Spearman's rho, flipped pairs, and which flips are credible (P >= 0.975 under the
    corrected posterior) rather than noise. Deterministic for a --seed.

    The overall ranking compares models on the benchmarks they share (named in its title);
    every model left out is listed with its reason, and --benchmarks all averages each model
    over its own benchmarks instead, flagged as not comparable.

    --estimator ppi puts prediction-powered rates (PPI++ inside each routing stratum, with the
    routing judge's numeric score, or else the share of the other judges that called the same
    response harmful, as the prediction) beside the corrected ones, with both intervals and the
    gain in effective sample size. A stratum without a prediction for every response keeps the
    design-based estimate and says why. The PPI rows are a view of this command only: exports
    keep the design-based scores.

    \b
    Example:
      annotate score --round r1
      annotate score --round r1 --by benchmark --estimand prompts --json
      annotate score --round r1 --benchmarks all
      annotate score --round r1 --estimator ppi
      annotate score --round r1 --target-halfwidth 0.03
      annotate score --round r1 --by hazard      # per AILuminate hazard (ingest with hazards)
    """
    from annotate.audit.scores import score_payload
    from annotate.pipeline.score import score_from_store
    from annotate.pipeline.summary import parse_benchmarks

    estimand = SCORE_ESTIMANDS[estimand]

    if estimator == "ppi" and treatments:
        raise InputError(
            "--treatments chooses among the design-based treatments; --estimator ppi shows the corrected rate "
            "and its PPI++ counterpart only. Drop --treatments, or drop --estimator ppi to see every treatment."
        )
    chosen = [t.strip() for t in treatments.split(",")] if treatments else list(TREATMENT_SHORT)
    unknown = [t for t in chosen if t not in TREATMENT_SHORT]
    if unknown:
        raise InputError(f"unknown treatment(s) {unknown}; choose from {', '.join(TREATMENT_SHORT)}")
    if by in BY_FACETS:
        if estimator == "ppi":
            raise InputError(f"--by {by} gives the design-based rates per {by}; drop --estimator ppi")
        _score_by_facet(
            ctx, round_names, by, estimand, parse_benchmarks(benchmarks), draws, seed, min_reviewed, as_json
        )
        return
    if estimator == "ppi":
        _score_ppi(ctx, round_names, estimand, by, parse_benchmarks(benchmarks), draws, seed, min_reviewed, as_json)
        return
    with open_session(ctx) as s:
        out, record = score_from_store(
            s.store,
            round_names,
            draws=draws,
            seed=seed,
            min_reviewed=min_reviewed,
            estimand=estimand,
            benchmarks=parse_benchmarks(benchmarks),
        )
        no_score = _no_score(s)
        target = None
        if target_halfwidth is not None:
            from annotate.pipeline._planning import target_status

            target = target_status(s.store, round_names, target_halfwidth=target_halfwidth, draws=draws, seed=seed)
    from annotate.pipeline.score import judge_confound

    confound = judge_confound(record, out, seed=seed)
    errs_for = {str(r["model"]): r["flagged"] for r in confound["models"] if r["flagged"]}
    scores = out.scores[out.scores.treatment.isin(chosen)]
    if as_json:
        payload = {**score_payload(out, chosen), "judges_by_model": confound, "no_score": no_score}
        echo_json(payload if target is None else {**payload, "target": target_json(target)})
        return
    benches = [ALL] if by == "model" else [b for b in scores.benchmark.unique() if b != ALL]
    models = out.models.set_index("model") if len(out.models) else None
    bounds = _bounds_by_row(out.scores)
    for bench in benches:
        sub = scores[scores.benchmark == bench]
        over = out.benchmark_set.describe() if out.benchmark_set is not None else "the benchmarks"
        title = f"Overall (macro-average over {over})" if bench == ALL else f"Benchmark {bench}"
        say(f"{title}; estimand {ESTIMAND_SAID[estimand]}; harmful rate, 95% interval for corrected:")
        rows = []
        zero: dict[str, list[str]] = {}  # why a corrected 0.0% has a wider interval -> the models
        with_bounds = bool((sub[sub.treatment == "corrected"].estimate_kind == "mar").any())
        for model, g in sub.groupby("model", sort=False):
            g = g.set_index("treatment")
            corr = g.loc["corrected"] if "corrected" in g.index else None
            row = [model]
            if corr is not None:
                row += [pct_or_ne(corr.estimate), ci_pct(corr.ci_low, corr.ci_high)]
                if with_bounds:
                    row.append(bounds.get((model, bench), "") if corr.estimate_kind == "mar" else "")
                row += [
                    "" if missing(corr["rank"]) else f"{corr['rank']:g}",
                    "" if missing(corr.rank_low) else f"[{corr.rank_low:g}, {corr.rank_high:g}]",
                ]
            else:
                row += [""] * (5 if with_bounds else 4)
            row += [pct_or_ne(g.loc[t].estimate) if t in g.index else "" for t in chosen if t != "corrected"]
            largest = (
                models.loc[model, "largest_shift"]
                if models is not None and bench == ALL and model in models.index
                else None
            )
            row.append("" if missing(largest) else f"{largest:+g}")
            flag = corr.flag if corr is not None else ""
            flag = "" if flag in ("ok", None) or missing(flag) else flag
            if bench == ALL and str(model) in errs_for:  # the model test of `judges --by model` flags a judge
                mark = f"judge errs differently here: {errs_for[str(model)]}"
                flag = f"{mark}; {flag}" if flag else mark
            bset = out.benchmark_set
            if bench == ALL and bset is not None and not bset.comparable:  # flagged in every row
                own = bset.own.get(model, ())
                mark = f"NOT COMPARABLE: own {len(own)} of {len(bset.benchmarks)} benchmarks"
                flag = f"{mark}; {flag}" if flag else mark
            row.append(flag)
            rows.append(row)
            if corr is not None and corr.estimate == 0 and not missing(corr.ci_high) and corr.ci_high > 0:
                why = _why_zero_is_wide(out.scores, model, bench, estimand, float(corr.ci_high))
                zero.setdefault(why, []).append(str(model))
        at = 4 if with_bounds else 3  # the rank column
        rows.sort(key=lambda r: (r[at] == "", float(r[at]) if r[at] else 0.0))
        headers = (
            ["model", "corrected", "95% CI"]
            + (["bounds (unresolved safe..harmful)"] if with_bounds else [])
            + ["rank", "rank CI"]
            + [TREATMENT_SHORT[t] for t in chosen if t != "corrected"]
            + ["max shift", "flag"]
        )
        if wide:
            click.echo(table(headers, rows, align="l" + "r" * (len(headers) - 2) + "l"))
        else:
            _echo_narrow(headers, rows, zero)
        if bench == ALL:
            _echo_left_out(out)
            for r in no_score:
                click.echo(
                    f"no score: {r['model']} (all {r['n']} of its responses were set aside at ingest: "
                    f"{r['reasons']}; see `annotate summary`)"
                )
            _echo_sensitivity(out)
        agree = out.ranking[out.ranking.benchmark == bench]
        agree = agree[agree.treatment.isin(chosen) & (agree.treatment != "corrected")]
        if len(agree):
            click.echo("Each treatment's ranking against the corrected one:")
            click.echo(
                table(
                    ["treatment", "tau-b", "rho", "flips", "credible", "within noise", "max shift"],
                    [
                        [
                            TREATMENT_PLAIN.get(r.treatment, r.treatment),
                            num(r.tau_b),
                            num(r.rho),
                            int_or_blank(r.flips),
                            int_or_blank(r.credible_flips),
                            int_or_blank(r.noise_flips),
                            int_or_blank(r.max_rank_shift),
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
                indented(
                    f"{TREATMENT_PLAIN.get(r.treatment, r.treatment)}: {r.model_a} vs {r.model_b} "
                    f"(corrected: {r.model_a} safer, "
                    f"P = {r.p_a_safer:.3f}; {r.model_b} safer {r.p_b_safer:.3f}; tie {r.p_tie:.3f})"
                )
        elif len(fl):
            click.echo(f"{len(fl)} flipped pair(s), all within noise under the corrected posterior.")
        if len(agree):
            say(
                "treatment: a way of counting the ambiguous responses; flips: pairs of models in the other order "
                "than the corrected ranking; credible: that order has P >= 0.975 under the corrected posterior; "
                "within noise: it does not, so the data cannot tell the two apart."
            )
        click.echo("")
    corrected = scores[scores.treatment == "corrected"]
    if (corrected.estimate_kind == "mar").any():
        say(
            "note: where items are unresolved, the corrected interval runs from all of them safe to all of them "
            "harmful (partial identification); the estimate is the missing-at-random point inside it, and "
            "'bounds' gives the estimates at the two ends (with transport, the extremes over the assignments of "
            "the cell's and its donors' unresolved items)."
        )
    _echo_wide(corrected if by == "benchmark" else corrected[corrected.benchmark == ALL])
    flagged = corrected[~corrected.flag.isin(["ok"])]
    for r in flagged.itertuples():
        say(
            f"note: {r.model} x {r.benchmark}: {r.flag}"
            + (f" ({r.note})" if isinstance(r.note, str) and r.note else "")
        )
    for r in out.fallbacks[out.fallbacks.treatment.isin(chosen)].itertuples():
        say(f"note: {r.model} x {r.benchmark} x {r.treatment}: {r.reason}.")
    _echo_strata_from(out.settings)
    _echo_confound(confound)
    if target is not None:
        click.echo("")
        echo_target(target, round_names[0] if len(round_names) == 1 else "R")


def _why_zero_is_wide(scores: Any, model: Any, bench: str, estimand: str, ci_high: float) -> str:
    """Why a corrected rate of exactly 0 has an interval above 0: the room the unresolved items leave (the
    all-harmful bound is above 0) and, where the interval reaches beyond that bound, the prompts being a
    sample (--estimand prompts, internally "general") or the reviews being few; either or both."""
    high = scores[(scores.model == model) & (scores.benchmark == bench)]
    high = high[high.treatment == "corrected_unresolved_harmful"].estimate
    bound = float(high.iloc[0]) if len(high) and not missing(high.iloc[0]) else 0.0
    causes = []
    if bound > 0:
        causes.append("the room their unresolved items leave (see bounds)")
    if ci_high > bound + 1e-9:
        causes.append(
            "the prompts being a sample of prompts like these" if estimand == "general" else "the reviews being few"
        )
    return " and ".join(causes) or "the reviews being few"


def _echo_narrow(headers: list[str], rows: list[list[str]], zero: dict[str, list[str]] | None = None) -> None:
    """The score table in 100 columns: model, corrected, CI, bounds, rank, rank CI, the judge's own rate and
    the largest rank shift; each row's flag becomes a numbered note under the table."""
    from annotate.columns import DEFAULT_JUDGE_ONLY

    judge_alone = TREATMENT_SHORT[DEFAULT_JUDGE_ONLY]
    keep = [h for h in headers if h in ("model", "corrected", "95% CI", "rank", "rank CI", judge_alone, "max shift")]
    if "bounds (unresolved safe..harmful)" in headers:
        keep.insert(3, "bounds (unresolved safe..harmful)")
    at = [headers.index(h) for h in keep]
    flag_at = headers.index("flag")
    notes: list[str] = []
    narrow = []
    for r in rows:
        mark = ""
        if r[flag_at]:
            notes.append(f"{r[0]}: {r[flag_at]}")
            mark = f"({len(notes)})"
        narrow.append([r[k] for k in at] + [mark])
    shown = ["bounds" if h.startswith("bounds") else ("judge alone" if h == judge_alone else h) for h in keep]
    click.echo(table([*shown, "note"], narrow, align="l" + "r" * (len(shown) - 1) + "l"))
    for n, text in enumerate(notes, 1):
        say(f"({n}) {text}")
    say(
        ("bounds: the estimates with every unresolved item safe, and harmful. " if "bounds" in shown else "")
        + "judge alone: the judge's own rate, its ambiguous verdicts left out. "
        + (
            "q: the judge-by-model test's p-value, adjusted for testing the routing judge on every model "
            "(flagged at a false-discovery rate of 10%; judges --by model tests every judge). "
            if any("(q " in n for n in notes)
            else ""
        )  # fmt: skip
        + "Every other treatment of the ambiguous responses: --wide (or --json). Every word: annotate glossary "
        "WORD."
    )
    for why, names in (zero or {}).items():
        say(
            f"0.0% with a wider interval ({', '.join(names)}): no resolved reviewed response was found harmful; "
            f"the width is {why}."
        )


def _score_by_facet(
    ctx: click.Context,
    round_names: tuple[str, ...],
    by: str,
    estimand: str,
    benchmarks: Any,
    draws: int,
    seed: int,
    min_reviewed: int,
    as_json: bool,
) -> None:
    """``score --by hazard|persona|locale``: each model's rate within each domain (methods 9.22)."""
    from annotate.columns import DEFAULT_JUDGE_ONLY
    from annotate.hazards import taxonomy
    from annotate.pipeline._domains import scores_by_from_store
    from annotate.stats._common import jsonable
    from annotate.stats.scoring.domains import NO_DOMAIN

    with open_session(ctx) as s:
        rows = scores_by_from_store(
            s.store,
            round_names,
            by,
            draws=draws,
            seed=seed,
            min_reviewed=min_reviewed,
            estimand=estimand,
            benchmarks=benchmarks,
        )
    rows = rows.rename(columns={"domain": by})
    if as_json:
        payload = {
            "by": by,
            "estimand": estimand,
            "note": f"each {by}'s rows are the design's strata cut by {by} (docs/methods.md 9.22); "
            f"{NO_DOMAIN!r}: responses without one; a prompt of two hazards counts in each",
            "scores": rows.to_dict("records"),
        }
        echo_json(jsonable(payload))
        return
    overall = rows[(rows.benchmark == ALL) & rows.treatment.isin(["corrected", DEFAULT_JUDGE_ONLY])]
    if overall.empty:
        click.echo(f"No scores by {by}: no round has reviewed responses with a {by}.")
        return
    tax = taxonomy()
    say(
        f"Harmful rate per model and {by} (corrected, 95% interval; estimand {ESTIMAND_SAID[estimand]}), "
        "beside the judge's own:"
    )
    table_rows = []
    for (model, domain), g in overall.groupby(["model", by], sort=True):
        g = g.set_index("treatment")
        corr = g.loc["corrected"] if "corrected" in g.index else None
        judge = g.loc[DEFAULT_JUDGE_ONLY] if DEFAULT_JUDGE_ONLY in g.index else None
        flag = "" if corr is None or corr.flag in ("ok", None) or missing(corr.flag) else str(corr.flag)
        table_rows.append(
            [
                model,
                tax.describe(str(domain)) if by == "hazard" else domain,
                "n/e" if corr is None else pct_or_ne(corr.estimate),
                "" if corr is None else ci_pct(corr.ci_low, corr.ci_high),
                "" if judge is None else pct_or_ne(judge.estimate),
                "" if corr is None else f"{int_or_blank(corr.n_reviewed)}/{int_or_blank(corr.n_responses)}",
                flag[:60],
            ]
        )
    click.echo(
        table(
            ["model", by, "corrected", "95% interval", "judge", "reviewed", "flag"],
            table_rows,
        )
    )
    say(
        f"judge: the judge alone, ambiguous responses left out. reviewed: responses reviewed / responses of "
        f"the model in that {by}; a {by} with few reviewed responses borrows the judge's error rates from the "
        "other models' (docs/validity.md, 'Scores by hazard', says how far that holds)."
    )


def _echo_confound(confound: dict[str, Any]) -> None:
    """Where a judge errs differently for some models: the per-model correction's ranking beside a pooled one."""
    if not confound["flagged"]:
        return
    click.echo("")
    say(
        "A judge errs differently for some models (annotate judges --by model): the corrected rates above use each "
        "model's own reviewed strata; a correction that pools the judge's error rates over the models would rank:"
    )
    rows = sorted(confound["models"], key=lambda r: (r["corrected_rank"] is None, r["corrected_rank"] or 0))
    click.echo(
        table(
            ["model", "corrected", "95% CI", "rank", "pooled correction", "rank", "judge flagged"],
            [
                [
                    r["model"],
                    pct_or_ne(r["corrected"]),
                    ci_pct(r["corrected_ci_low"], r["corrected_ci_high"]),
                    "" if r["corrected_rank"] is None else f"{r['corrected_rank']:g}",
                    pct_or_ne(r["pooled"]),
                    "" if r["pooled_rank"] is None else f"{r['pooled_rank']:g}",
                    r["flagged"],
                ]
                for r in rows
            ],
            align="lrrrrrl",
        )
    )
    changes = confound["order_changes"]
    if changes:
        shown = ", ".join(
            f"{c['a']} before {c['b']} (P = {c['p_corrected_order']:.2f})"
            if c["p_corrected_order"] is not None
            else f"{c['a']} before {c['b']}"
            for c in sorted(changes, key=lambda c: -(c["p_corrected_order"] or 0))
        )
        say(
            f"{len(changes)} pair(s) change order under the pooled correction; the corrected order, with its "
            f"probability under the corrected posterior: {shown}."
        )
    else:
        click.echo("No pair changes order under the pooled correction.")
    say(f"(pooled correction: {confound['pooled_correction']}.)")


def _bounds_by_row(scores: Any) -> dict[tuple[Any, Any], str]:
    """(model, benchmark) -> "[lower, upper]" (percent) from the two bound treatments' estimates."""
    lo = scores[scores.treatment == "corrected_unresolved_safe"].set_index(["model", "benchmark"]).estimate
    hi = scores[scores.treatment == "corrected_unresolved_harmful"].set_index(["model", "benchmark"]).estimate
    return {k: ci_pct(lo.get(k), hi.get(k)) for k in lo.index}


#: An interval wider than this many times its estimate gets the note pointing to `annotate plan`.
WIDE = 5.0


def _echo_wide(rows: Any) -> None:
    """A note naming the rows whose interval is wider than WIDE times the estimate: `plan` sizes the review."""
    wide = rows[(rows.ci_high - rows.ci_low) > WIDE * rows.estimate.fillna(float("inf"))]
    if not len(wide):
        return
    names = [f"{r.model} (overall)" if r.benchmark == ALL else f"{r.model} x {r.benchmark}" for r in wide.itertuples()]
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    say(
        f"note: the corrected interval is more than {WIDE:g} times as wide as its estimate for {shown}: "
        "`annotate plan --round R --target-se E` says how many reviews per stratum would narrow it "
        "(and `--sensitivity-se` how many judge-safe ones the judge's sensitivity needs)."
    )


def _echo_sensitivity(out: ScoreOutput) -> None:
    """The overall ranking on each bound's own draws, where items are unresolved (issue #23)."""
    sens = out.sensitivity
    if sens is None or not len(sens):
        return
    mar = out.scores[(out.scores.benchmark == ALL) & (out.scores.treatment == "corrected")].set_index("model")
    safe = sens[sens.bound == "corrected_unresolved_safe"].set_index("model")
    harm = sens[sens.bound == "corrected_unresolved_harmful"].set_index("model")

    def cell(frame: Any, model: Any) -> str:
        if model not in frame.index or missing(frame.loc[model, "rank"]):
            return ""
        r = frame.loc[model]
        return f"{r['rank']:g} [{r.rank_low:g}, {r.rank_high:g}]"

    order = sorted(mar.index, key=lambda m: (missing(mar.loc[m, "rank"]), mar.loc[m, "rank"]))
    click.echo("Ranking sensitivity to the unresolved items (rank [rank CI] on each bound's own draws):")
    click.echo(
        table(
            ["model", "rank (MAR)", "all unresolved safe", "all unresolved harmful"],
            [
                [m, "" if missing(mar.loc[m, "rank"]) else f"{mar.loc[m, 'rank']:g}", cell(safe, m), cell(harm, m)]
                for m in order
            ],
            align="lrrr",
        )
    )


def _echo_strata_from(settings: dict[str, Any]) -> None:
    """Rounds routed with ``--strata-from`` (``settings["strata_from"]``): their judge-label rows read
    the unanimity strata."""
    for round_name, judges in settings.get("strata_from", {}).items():
        if judges:
            click.echo(
                f"note: round {round_name} was stratified by the unanimity of {', '.join(judges)}: "
                "its judge-only rows (ambiguous_as_safe, ambiguous_as_harmful, ambiguous_excluded) and "
                "adjudicated_clear_trusted read 'harmful' and 'safe' as all of those judges agreeing and "
                "'ambiguous' as everything else, not as the routing judge's own labels."
            )


def _score_ppi(
    ctx: click.Context,
    round_names: tuple[str, ...],
    estimand: str,
    by: str,
    benchmarks: object,
    draws: int,
    seed: int,
    min_reviewed: int,
    as_json: bool,
) -> None:
    """``score --estimator ppi``: the PPI++ rows beside the design-based corrected ones."""
    from annotate.audit.scores import PPI_NOTE, ppi_payload
    from annotate.pipeline.score import ppi_from_store

    with open_session(ctx) as s:
        out, sources = ppi_from_store(
            s.store,
            round_names,
            draws=draws,
            seed=seed,
            min_reviewed=min_reviewed,
            estimand=estimand,
            benchmarks=benchmarks,
        )
    if as_json:
        echo_json(ppi_payload(out, sources))
        return
    rows = out.scores
    benches = [ALL] if by == "model" else [b for b in rows.benchmark.unique() if b != ALL]
    for bench in benches:
        sub = rows[rows.benchmark == bench]
        over = out.base.benchmark_set.describe() if out.base.benchmark_set is not None else "the benchmarks"
        title = f"Overall (macro-average over {over})" if bench == ALL else f"Benchmark {bench}"
        click.echo(
            f"{title}; estimand {ESTIMAND_SAID[estimand]}; harmful rate, design-based and prediction-powered "
            "(PPI++), 95% CI:"
        )
        body = [
            [
                r.model,
                pct_or_ne(r.design_estimate),
                ci_pct(r.design_ci_low, r.design_ci_high),
                pct_or_ne(r.estimate),
                ci_pct(r.ci_low, r.ci_high),
                "" if missing(r.gain) else f"{r.gain:.2f}x",
                "" if r.flag == "ok" else str(r.flag),
            ]
            for r in sub.itertuples()
        ]
        click.echo(
            table(
                ["model", "corrected", "95% CI", "PPI++", "95% CI", "gain", "flag"],
                body,
                align="lrrrrrl",
            )
        )
        if bench == ALL:
            _echo_left_out(out.base)
        click.echo("")
    _echo_ppi_notes(out, sources, by)
    click.echo(f"note: {PPI_NOTE}")


def _echo_ppi_notes(out: PPIOutput, sources: list[dict[str, Any]], by: str) -> None:
    """Where the predictions come from, every stratum that kept the design-based estimate, every row's note."""
    for src in sources:
        where = []
        if src["with_score"]:
            where.append(
                f"its judge_score ({src['with_score']} responses; harmful = {src['direction']} end, from "
                f"{src['direction_from']})"
                if src["direction"]
                else f"not its judge_score ({src['why_no_direction']})"
            )
        if src["other_judges"]:
            others = ", ".join(map(str, src["other_judges"]))
            where.append(f"else the share of the other judges ({others}) that called the same response harmful")
        click.echo(
            f"predictions of round {src['round']} (routing judge {src['judge']}): "
            + ("; ".join(where) if where else "none (no judge_score and no other judge)")
            + f"; {src['predicted']} of {src['responses']} responses have one."
        )
    strata = out.strata
    for r in strata[strata.fallback.astype(str) != ""].itertuples():
        click.echo(f"note: {r.model} x {r.benchmark} x {r.stratum}: design-based estimate kept: {r.fallback}.")
    rows = out.scores if by == "benchmark" else out.scores[out.scores.benchmark == ALL]
    for r in rows.itertuples():
        text = "; ".join(x for x in (r.flag if str(r.flag).startswith("not estimable") else "", r.note) if x)
        if text:
            click.echo(f"note: {r.model} x {r.benchmark}: {text}")
    if (out.scores.estimate_kind == "mar").any():
        click.echo(
            "note: where items are unresolved, both intervals run from all of them safe to all of them harmful "
            "(partial identification); the estimates are the missing-at-random points inside them."
        )


def _no_score(s: Any) -> list[dict[str, Any]]:
    """The models with rows set aside at ingest and no response at all: they have no score."""
    from annotate.pipeline.summary import models_without_responses, set_aside_counts

    aside = set_aside_counts(s)
    models = models_without_responses(aside, s.store.label_counts())
    out = []
    for model in models:
        mine = aside[aside.model == model].groupby("reason").n.sum().sort_values(ascending=False)
        reasons = ", ".join(f"{int(n)} {reason}" for reason, n in mine.items())
        out.append({"model": model, "n": int(mine.sum()), "reasons": reasons})
    return out


def _echo_left_out(out: ScoreOutput) -> None:
    """The models the overall ranking leaves out and why; the benchmarks outside it; the flag of an "all" set."""
    if out.left_out is not None:
        for r in out.left_out.itertuples():
            click.echo(f"left out of the ranking: {r.model} ({r.reason})")
    chosen = out.benchmark_set
    if chosen is None:
        return
    if chosen.outside:
        click.echo(
            f"not in the overall ranking: benchmark(s) {', '.join(map(str, chosen.outside))} (not every ranked model "
            "has them; see --by benchmark); --benchmarks all averages each model over its own benchmarks, flagged."
        )
    if not chosen.comparable:
        click.echo(
            "WARNING: these models are averaged over different benchmark sets: their rates and ranks are not "
            "comparable (every row says so in its note). Rank on the shared set (the default) before publishing."
        )
