"""`annotate judges`: how far to trust each judge, several judges side by side."""

from __future__ import annotations

from typing import Any

import click

from annotate.cli._format import ci, ci_pct, indented, missing, num, say, table
from annotate.cli._options import echo_json, open_session, workspace_options


@click.command("judges")
@click.option("--round", "round_names", multiple=True, help="Round (repeatable; default: the only one).")
@click.option(
    "--by",
    type=click.Choice(["benchmark", "model"]),
    default="benchmark",
    show_default=True,
    help="Figures per group of this kind, besides the pooled rows (benchmark = model = ALL).",
)
@click.option("--draws", default=4000, show_default=True, help="Posterior draws for the intervals and P(better).")
@click.option("--seed", default=0, show_default=True, help="Seed of the draws.")
@click.option(
    "--fdr",
    type=float,
    default=0.10,
    show_default=True,
    help="With --by model: the false-discovery rate (Benjamini-Hochberg) at which a judge's figure on a model is "
    "flagged as different from the other models'.",
)
@click.option(
    "--estimand",
    type=click.Choice(["responses", "prompts"]),
    default="responses",
    show_default=True,
    help="What the intervals, ranks and P(better) describe: these responses (a census of them is certain), or the "
    "judges on prompts like these (the reviewed responses a sample of them).",
)
@click.option(
    "--wide",
    is_flag=True,
    help="Every column: PPV, NPV, kappa and 'then harmful' in the judges' tables, where each pair disagrees in "
    "the pairs' table, and a table per benchmark even where it repeats the pooled one (default: 100 columns).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON: every record, each interval as <name>_ci.")
@workspace_options
def judges(
    ctx: click.Context,
    round_names: tuple[str, ...],
    by: str,
    draws: int,
    seed: int,
    fdr: float,
    estimand: str,
    wide: bool,
    as_json: bool,
) -> None:
    """How far to trust each judge: its verdicts against the final human label, design-weighted.

    Every judge that labelled the reviewed responses (the same prompt and response text under
    the same benchmark, model, prompt_id and epoch; no new review needed) is audited against
    the final human label: sensitivity and specificity for harmful, PPV, NPV, balanced
    accuracy, Cohen's kappa, how often it said ambiguous (and what humans said then), and the
    table judge papers report (agreement, false-positive and false-negative rates), each with
    a 95 % interval. Population figures: each reviewed, resolved response weighs N_h / r_h
    of its routing stratum, as in the corrected scores. Judges are ranked by balanced accuracy
    with P(A better than B) from the same posterior draws.

    Each pair of judges gets a paired test of equal balanced accuracy on prompts like these,
    weighted by the design (McNemar's exact test too where every response was reviewed or
    within one stratum, where it is the design's test).

    With --by model, each judge's sensitivity and specificity on each model is tested against
    the other models' (does the judge err differently for some target models?), with a p-value
    and a Benjamini-Hochberg q-value over everything tested; the rows flagged at --fdr come
    first. A model with fewer than 5 reviewed responses of the truth is not testable and says
    so; PPV is shown, not tested (it moves with each model's prevalence). The tests use 4,000
    draws of the same seed whatever --draws, so score, judges and export print one q.

    \b
    Example:
      annotate judges --round r1
      annotate judges --round r1 --by model --json
      annotate judges --round r1 --by model --fdr 0.05
      annotate judges --round jbb --estimand prompts   # the judges, not only these responses

    --estimand responses (the default) describes the ingested responses: with every one
    reviewed (a census) the intervals have no width and a ranking is certain, for these
    responses. --estimand prompts describes the judges on prompts like these: the reviewed
    responses of each stratum are a sample (the same draws for every judge, so comparisons are
    paired; labels no reviewed response carries still get some mass).
    """
    from annotate.pipeline.judges import judges as do_judges

    with open_session(ctx) as s:
        report = do_judges(s, round_names=round_names, by=by, draws=draws, seed=seed, fdr=fdr, estimand=estimand)
    if as_json:
        echo_json(report)
        return
    records = report["judges"]
    if not records and not report.get("judge_kinds"):
        # Unjudged responses (ingest --no-judge): the answer is that there is no judge, not an empty table.
        click.echo(
            f"No judge: no judge labelled the reviewed responses of round {', '.join(report['rounds'])} (they were "
            "ingested without verdicts), so there is nothing to audit; `annotate score` gives the human-labelled "
            "rates. To audit a judge, ingest its verdicts on the same responses (annotate ingest FILE)."
        )
        return
    from annotate.report.findings import judge_finding, plain_note

    finding = judge_finding(report["judges"], report["pairs"], percent=not wide)
    if finding:
        say(finding)
    say(
        f"Judges of round {', '.join(report['rounds'])} against the final human label: population figures, each "
        "reviewed response with a final label weighing N_h / r_h of its routing stratum."
    )
    settings = report["settings"]
    said = report["estimand"]
    if said["name"] == "responses":
        say(
            f"Estimand: responses. These figures describe {said['describes']}; --estimand prompts for the judges "
            "on prompts like these."
        )
    else:
        say(f"Estimand: prompts. These figures describe {said['describes']}.")
    if settings["draws"]:
        say(f"{settings['confidence']:.0%} intervals and ranks from {settings['draws']} posterior draws.")
    else:
        say("No posterior draws (--draws 0): no intervals, ranks or P(better).")
    for name, kinds in report.get("judge_kinds", {}).items():
        if "quality" in kinds:
            say(
                f"Note: {name} is a quality judge (its failures are not harm): its 'harmful' is a failed grade, so "
                "its figures against the human harm label say nothing about harm."
            )
        elif kinds == ["refusal"]:
            click.echo(f"Note: {name} is a refusal judge: its 'harmful' means it found no refusal.")
    if "model_test" in report:
        _echo_model_test(report)
    # The clipped names of this output (--wide: whole): one mapping each, no two names alike.
    short = None if wide else _clipped((r["judge"] for r in records), NAME_WIDTH)
    pair_names = [x for p in report["pairs"] for x in (p["judge_a"], p["judge_b"], _group(p))]
    pair_short = None if wide else _clipped(pair_names, PAIR_NAME_WIDTH)
    groups: list[tuple[str, str]] = []
    for r in records:
        if (r["benchmark"], r["model"]) not in groups:
            groups.append((r["benchmark"], r["model"]))
    benchmarks = [b for b, m in groups if m == "ALL" and b != "ALL"]
    for bench, model in groups:
        rows = [r for r in records if (r["benchmark"], r["model"]) == (bench, model)]
        rows.sort(key=lambda r: (r["rank"] is None, r["rank"] or 0, r["judge"]))
        title = (
            "All responses"
            if bench == model == "ALL"
            else (f"benchmark {bench}" if model == "ALL" else f"model {model}")
        )
        click.echo("")
        if not wide and model == "ALL" and bench != "ALL" and benchmarks == [bench]:
            click.echo(f"{title}: the same as all responses (the only benchmark; --wide repeats it).")
            continue
        click.echo(f"{title}:")
        if wide:
            headers = ["judge", "rank", "bal. acc.", "95% CI", "sens.", "95% CI", "spec.", "95% CI", "PPV", "NPV"]
            headers += ["kappa", "ambiguous", "then harmful", "n"]
            click.echo(table(headers, [_row(r) for r in rows], align="l" + "r" * (len(headers) - 1)))
            paper = ["judge", "agreement", "95% CI", "FPR", "95% CI", "FNR", "95% CI", "n"]
            certifier = ["judge", "false safe", "95% CI", "false unsafe", "95% CI", "unsafe among 'safe'", "95% CI"]
            certifier += ["n"]
        else:  # 100 columns: each figure in per cent with its interval in one cell, long names clipped
            headers = ["judge", "rank", "bal. acc. %", "sens. %", "spec. %", "ambiguous", "n"]
            click.echo(
                table(headers, [_narrow_row(r, short or {}) for r in rows], align="l" + "r" * (len(headers) - 1))
            )
            paper = ["judge", "agreement %", "FPR %", "FNR %", "n"]
            certifier = ["judge", "false safe %", "false unsafe %", "unsafe among 'safe' %", "n"]
        click.echo("As judge papers report it (against the final human label, on the judge's clear verdicts):")
        click.echo(table(paper, [_paper_row(r, short) for r in rows], align="l" + "r" * (len(paper) - 1)))
        say(
            "As certifiers report it (MLCommons' evaluator checks; unsafe = harmful): false safe rate = unsafe "
            "responses called safe; false unsafe rate = safe ones called unsafe; unsafe among 'safe' = 1 - NPV:"
        )
        click.echo(table(certifier, [_certifier_row(r, short) for r in rows], align="l" + "r" * (len(certifier) - 1)))
    pairs = report["pairs"]
    if pairs:
        click.echo("")
        say(
            "Side by side: P(A better than B) in balanced accuracy; the difference BA(A) - BA(B) with its test on "
            "prompts like these (design-weighted, paired)"
            + (
                "; where they disagree, the share of the responses both labelled (in brackets the share humans "
                "called harmful there):"
                if wide
                else "; agree: the share of responses both labelled alike (where they disagree: --wide):"
            )
        )
        headers = ["group", "A", "B", "P(A better)", "P(B better)", "BA A - B", "95% CI", "p", "agree"]
        if wide:
            headers += ["A harm./B safe", "A safe/B harm.", "one amb."]
        else:
            headers.remove("P(B better)")
        shown_pairs = [p for p in pairs if wide or not (p["model"] == "ALL" and p["benchmark"] in benchmarks[:1]
                                                           and len(benchmarks) == 1)]  # fmt: skip
        click.echo(table(headers, [_pair(p, pair_short) for p in shown_pairs], align="lll" + "r" * (len(headers) - 3)))
        exact = [p for p in pairs if p.get("mcnemar_p") is not None]
        if exact:
            say(
                "McNemar's exact test (every reviewed response or one stratum: A right and B wrong : the reverse): "
                + "; ".join(
                    f"{_group(p)} {p['judge_a']} vs {p['judge_b']} {p['mcnemar_a_only']}:{p['mcnemar_b_only']}, "
                    f"p {num(p['mcnemar_p'], '{:.3f}')}"
                    for p in exact[:6]
                )
                + ("; ..." if len(exact) > 6 else "")
            )
    for note in report["notes"]:
        say(f"Note: {note}")
    undefined = [r for r in records if r["note"]]
    for r in undefined[:10]:
        indented(f"{r['judge']} ({_group(r)}): {plain_note(r['note'])}")
    if len(undefined) > 10:
        click.echo(f"  ... and {len(undefined) - 10} more rows with notes (--json has them all).")
    say(
        ("Each % figure is followed by its 95% interval in brackets; names longer than a column are cut (--wide "
         "prints them whole). " if not wide else "")
        + "Intervals come from the posterior draws and need not be centred on the estimate: with few reviewed "
        "harmful responses they are wide and lean toward the middle. Every word: annotate glossary WORD."
    )  # fmt: skip


def _echo_model_test(report: dict[str, Any]) -> None:
    """The flagged rows of the model test first: the judge's figure on the model against the other models'."""
    test = report["model_test"]
    flagged = [
        (r, f, t) for r in report["judges"] if r.get("model_test") for f, t in r["model_test"].items() if t["flagged"]
    ]
    flagged.sort(key=lambda x: (x[2]["q_value"], x[0]["judge"], x[0]["model"]))
    level = f"{test['fdr']:.0%}" if test["fdr"] is not None else "-"
    click.echo("")
    from annotate.report.findings import untested_rows

    flat = [
        {"judge": r["judge"], "model": r["model"], "figure": f, **t}
        for r in report["judges"]
        if r.get("model_test")
        for f, t in r["model_test"].items()
    ]
    untested = f"; {untested_rows(flat)}" if untested_rows(flat) else ""
    tested = [f for f in test["tested_figures"] if any(t["figure"] == f and t["p_value"] is not None for t in flat)]
    if not flagged:
        say(
            f"Does a judge err differently by model? No judge's {' or '.join(tested) or 'figure'} on any model "
            f"differs from the other models' at a false-discovery rate of {level} ({test['tested']} tests{untested}; "
            "PPV is shown, not tested: it moves with each model's prevalence)."
        )
        return
    say(
        f"A judge that errs differently for some models ({len(flagged)} of {test['tested']} tests flagged at a "
        f"false-discovery rate of {level}{untested}; the model's figure against the centre of the other models'):"
    )
    rows = [
        [
            r["judge"],
            r["model"],
            f,
            num(t["estimate"]),
            num(t["rest"]),
            num(t["difference"], "{:+.3f}"),
            ci(*t["difference_ci"]),
            num(t["p_value"], "{:.3f}"),
            num(t["q_value"], "{:.3f}"),
        ]
        for r, f, t in flagged
    ]
    click.echo(
        table(
            ["judge", "model", "figure", "on model", "others", "diff.", "95% CI", "p", "q"],
            rows,
            align="lllrrrrrr",
        )
    )
    say(
        "A flagged judge flatters or harms that model's raw score; the corrected scores use the model's own "
        "reviewed strata (annotate score shows both corrections)."
    )


def _group(r: dict[str, Any]) -> str:
    if r["benchmark"] == r["model"] == "ALL":
        return "ALL"
    return r["benchmark"] if r["model"] == "ALL" else r["model"]


def _rank(r: dict[str, Any]) -> str:
    if r["rank"] is None:
        return "-"
    low, high = r["rank_ci"]
    shown = f"{r['rank']:g}"
    return shown if low is None or low == high == r["rank"] else f"{shown} [{low:g}-{high:g}]"


def _row(r: dict[str, Any]) -> list[Any]:
    return [
        r["judge"],
        _rank(r),
        num(r["balanced_accuracy"]),
        ci(*r["balanced_accuracy_ci"]),
        num(r["sensitivity"]),
        ci(*r["sensitivity_ci"]),
        num(r["specificity"]),
        ci(*r["specificity_ci"]),
        num(r["ppv"]),
        num(r["npv"]),
        num(r["kappa"]),
        num(r["ambiguous_share"], "{:.1%}"),
        num(r["ambiguous_harmful"], "{:.0%}"),
        r["n_resolved"],
    ]


#: Widest name a narrow table prints (a judge, a model or a benchmark); --wide prints names whole.
NAME_WIDTH = 16
PAIR_NAME_WIDTH = 12


def _clip(name: Any, width: int = NAME_WIDTH) -> str:
    """``name`` in at most ``width`` columns, cut in the middle where names tend to differ at both ends
    (``meta-llama/Llama-Guard-3-8B`` -> ``meta-ll…ard-3-8B``); whole while it fits.

    >>> _clip("meta-llama/Llama-Guard-3-8B"), _clip("gpt4")
    ('meta-ll…ard-3-8B', 'gpt4')
    """
    text = str(name)
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def _clipped(names: Any, width: int) -> dict[str, str]:
    """Each name's clipped form, or every name whole when two clipped forms would be the same."""
    names = sorted({str(n) for n in names})
    short = {n: _clip(n, width) for n in names}
    return short if len(set(short.values())) == len(short) else {n: n for n in names}


def _pct_ci(x: Any, bounds: Any) -> str:
    """A rate in per cent with its interval in one cell: ``96.4 [68.7, 97.7]``; ``-`` without the rate."""
    low, high = bounds
    if missing(x):
        return "-"
    return f"{100 * x:.1f}" + ("" if missing(low) or missing(high) else f" [{100 * low:.1f}, {100 * high:.1f}]")


def _narrow_row(r: dict[str, Any], short: dict[str, str]) -> list[Any]:
    return [
        short.get(str(r["judge"]), str(r["judge"])),
        _rank(r),
        _pct_ci(r["balanced_accuracy"], r["balanced_accuracy_ci"]),
        _pct_ci(r["sensitivity"], r["sensitivity_ci"]),
        _pct_ci(r["specificity"], r["specificity_ci"]),
        num(r["ambiguous_share"], "{:.1%}"),
        r["n_resolved"],
    ]


def _share(share: Any, harmful: Any) -> str:
    if share is None:
        return "-"
    return f"{share:.1%}" + ("" if harmful is None else f" ({harmful:.0%})")


def _pair(p: dict[str, Any], short: dict[str, str] | None = None) -> list[Any]:
    """A pair's row: narrow with ``short`` (clipped names), every column without (--wide)."""
    wide = short is None

    def name(x: Any) -> str:
        return str(x) if short is None else short.get(str(x), str(x))

    row = [
        name(_group(p)),
        name(p["judge_a"]),
        name(p["judge_b"]),
        num(p["p_a_better"], "{:.2f}"),
        *([num(p["p_b_better"], "{:.2f}")] if wide else []),
        num(p.get("difference"), "{:+.3f}"),
        ci(p.get("difference_ci_low"), p.get("difference_ci_high")),
        num(p.get("p_value"), "{:.3f}"),
        num(p["agree_share"], "{:.1%}"),
    ]
    if wide:
        row += [
            _share(p["a_harmful_b_safe"], p["a_harmful_b_safe_human_harmful"]),
            _share(p["a_safe_b_harmful"], p["a_safe_b_harmful_human_harmful"]),
            _share(p["one_ambiguous"], p["one_ambiguous_human_harmful"]),
        ]
    return row


def _certifier_row(r: dict[str, Any], short: dict[str, str] | None = None) -> list[Any]:
    if short is not None:  # narrow: a figure and its interval in one cell
        return [
            short.get(str(r["judge"]), str(r["judge"])),
            _pct_ci(r["false_safe_rate"], r["false_safe_rate_ci"]),
            _pct_ci(r["false_unsafe_rate"], r["false_unsafe_rate_ci"]),
            _pct_ci(r["unsafe_among_safe"], r["unsafe_among_safe_ci"]),
            r["n_resolved"],
        ]
    return [
        r["judge"],
        num(r["false_safe_rate"], "{:.1%}"),
        ci_pct(*r["false_safe_rate_ci"]),
        num(r["false_unsafe_rate"], "{:.1%}"),
        ci_pct(*r["false_unsafe_rate_ci"]),
        num(r["unsafe_among_safe"], "{:.1%}"),
        ci_pct(*r["unsafe_among_safe_ci"]),
        r["n_resolved"],
    ]


def _paper_row(r: dict[str, Any], short: dict[str, str] | None = None) -> list[Any]:
    if short is not None:  # narrow: a figure and its interval in one cell
        return [
            short.get(str(r["judge"]), str(r["judge"])),
            _pct_ci(r["agreement"], r["agreement_ci"]),
            _pct_ci(r["fpr"], r["fpr_ci"]),
            _pct_ci(r["fnr"], r["fnr_ci"]),
            r["n_resolved"],
        ]
    return [
        r["judge"],
        num(r["agreement"], "{:.1%}"),
        ci_pct(*r["agreement_ci"]),
        num(r["fpr"], "{:.1%}"),
        ci_pct(*r["fpr_ci"]),
        num(r["fnr"], "{:.1%}"),
        ci_pct(*r["fnr_ci"]),
        r["n_resolved"],
    ]
