"""`annotate agreement`: how far the reviewers agree."""

from __future__ import annotations

from typing import Any

import click

from annotate.cli._format import ci, indented, num, say, table
from annotate.cli._options import echo_json, open_session, workspace_options


@click.command()
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
@click.option("--wide", is_flag=True, help="Every column (P(alpha < .667), Fleiss' kappa); default: 100 columns.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (everything, both label sets).")
@workspace_options
def agreement(
    ctx: click.Context,
    round_name: str | None,
    by: str,
    label_set: str,
    boot: int,
    seed: int,
    as_json: bool,
    wide: bool = False,
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
    from annotate.pipeline.agreement import agreement as do_agreement

    with open_session(ctx) as s:
        report = do_agreement(s, round_name=round_name, by=by, n_boot=boot, seed=seed)
    if as_json:
        echo_json(report)
        return
    groups = [g for g in report["groups"] if label_set == "both" or g["labels"] == label_set]
    click.echo(
        f"Round {report['round']}: {report['n_labels']} labels by {', '.join(report['annotators'])}; "
        f"{report['n_boot']} bootstrap replicates."
    )
    rows = []
    for g in groups:
        row = [g["group"], g["labels"], g["n_units"], num(g["alpha"]), ci(*g["alpha_ci"])]
        if wide:
            row.append(num(g["q_below_0667"], "{:.2f}"))
        row += [num(g["ac1"])] + ([num(g["fleiss_kappa"])] if wide else [])
        row += [
            num(g["percent_agreement"]),
            _unsure_dropped(g),
            _verdict(g) + (" !" if g["prevalence_warning"] else ""),
        ]
        rows.append(row)
    headers = ["group", "labels", "units", "alpha", "95% CI", *(["P(a<.667)"] if wide else []), "AC1"]
    headers += [*(["Fleiss"] if wide else []), "agree", "unsure out", "verdict"]
    click.echo(table(headers, rows, align="ll" + "r" * (len(headers) - 3) + "l"))
    say(
        "units: items two reviewers labelled; verdict: Krippendorff's thresholds on the interval's lower end. "
        "3-way: harmful, safe and unsure as labelled; binary: unsure votes left out ('unsure out': how many, "
        "what share), so binary alpha is agreement on the items reviewers were sure about. AC1: Gwet's, "
        "steadier than alpha when one label dominates (!). Every word: annotate glossary WORD."
    )
    warned = [g for g in groups if g["prevalence_warning"]]
    if warned:
        say("! " + warned[0]["prevalence_warning"] + " Read AC1 beside alpha there (kappa paradox).")
    undefined = [g for g in groups if g["alpha_undefined_reason"]]
    for g in undefined[:5]:
        indented(f"{g['group']} ({g['labels']}): alpha undefined: {g['alpha_undefined_reason']}")
    if len(undefined) > 5:
        indented(f"... and {len(undefined) - 5} more undefined (--json has every reason)")
    from annotate.stats.agreement.votes import TOO_FEW_UNITS

    withheld = [g for g in groups if _verdict(g) == NO_INTERVAL]
    for g in withheld[:5]:
        why = _why_no_interval(g["alpha_interval_note"], TOO_FEW_UNITS)
        indented(f"{g['group']} ({g['labels']}): alpha {num(g['alpha'])} has no interval: {why}")
    if len(withheld) > 5:
        indented(f"... and {len(withheld) - 5} more without an interval (--json has every reason)")
    pooled = next((g for g in report["groups"] if g["pooled"] and g["labels"] == "binary"), None)
    if pooled and pooled["annotators"]:
        click.echo("")
        click.echo("Per annotator (pooled, binary labels):")
        arows = [
            [
                a["annotator"],
                a["n_rated"],
                num(a["agreement_with_consensus"]),
                num(a["kappa_with_consensus"]),
                num(a["alpha_if_removed"]),
                num(a["alpha_delta"], "{:+.3f}"),
                num(a["ds_sensitivity_harmful"]),
                num(a["ds_specificity_harmful"]),
                num(a["gold_accuracy"]) if a["gold_n"] else "-",
                "; ".join(_flag_words(f) for f in a["flags"]) or "ok",
            ]
            for a in pooled["annotators"]
        ]
        click.echo(
            table(
                [
                    "annotator",
                    "rated",
                    "agree",
                    "kappa",
                    "alpha w/o",
                    "delta",
                    "DS sens.",
                    "DS spec.",
                    "gold",
                    "flags",
                ],
                arows,
                align="lrrrrrrrrl",
            )
        )
        say(
            "agree, kappa: with the other reviewers' consensus; alpha w/o: the pooled alpha without this reviewer "
            "(delta: the change); DS sens./spec.: Dawid-Skene's estimate of how often they call harmful items "
            "harmful and safe ones safe; gold: accuracy on items with a known answer. Flags: 'low kappa' "
            "(kappa below the threshold, 0.6 by default), 'alpha w/o up' (alpha rises by more than 0.05 "
            "without them)."
        )
        for line in [*_consensus_notes(pooled["annotators"]), *_ds_notes(pooled["annotators"])]:
            say(line)
    if report.get("hazards"):
        _echo_hazards(report["hazards"])


def _echo_hazards(h: dict[str, Any]) -> None:
    """The hazard questions' agreement (a round routed with --ask-hazards): one row per category, then severity."""
    from annotate.cli._format import say
    from annotate.hazards import taxonomy

    click.echo("")
    if not h["n_answers"]:
        say("Hazard categories: the round asks for them; no answer has been pulled yet.")
        return
    say(
        f"Hazard categories ({h['n_answers']} answers on {h['n_items']} items; per category, chosen or not, "
        "nominal alpha on the items two or more reviewers answered):"
    )
    tax = taxonomy()
    chosen = [r for r in h["hazards"] if r["chosen"]]
    rows = [
        [_clip(tax.describe(r["hazard"])), r["chosen"], r["n_units"], num(r["alpha"]), ci(*r["alpha_ci"]), _verdict(r)]
        for r in chosen
    ]
    sev = h["severity"]
    rows.append(
        [
            "severity (ordinal)",
            sev["n_answers"],
            sev["n_units"],
            num(sev["alpha"]),
            ci(*sev["alpha_ci"]),
            _verdict(sev),
        ]
    )
    click.echo(table(["category", "chosen", "items", "alpha", "95% CI", "verdict"], rows, align="lrrrrl"))
    say(f"severity: {' < '.join(sev['levels'])}, on the items two or more reviewers rated.")
    never = [r["hazard"] for r in h["hazards"] if not r["chosen"]]
    if never:
        say(f"Chosen by nobody (no agreement to measure): {', '.join(never)}.")
    for r in [*chosen, sev]:
        if r.get("interval_note") and r["alpha"] is not None:
            from annotate.stats.agreement.votes import TOO_FEW_UNITS

            say(f"{r.get('hazard', 'severity')}: no interval: {_why_no_interval(r['interval_note'], TOO_FEW_UNITS)}")
    undefined = [r for r in [*chosen, sev] if r["alpha_undefined_reason"]]
    for r in undefined:
        say(f"{r.get('hazard', 'severity')}: alpha undefined: {r['alpha_undefined_reason']}")
    b = h["benchmark_hazard"]
    say(
        f"Reviewed categories: {h['settled']} items settled by the reviewers' majority (the expert on a tie where "
        f"the item went to them); {h['tied_unsettled']} (item, category) tie(s) left unsettled. "
        + (
            f"The benchmark's own hazard is among the reviewed categories on {b['held_by_reviewers']} of "
            f"{b['items']} items that have one."
            if b["items"]
            else ""
        )
    )


def _clip(name: str, width: int = 36) -> str:
    """A category's name cut to ``width`` characters (a team's code may be long)."""
    return name if len(name) <= width else name[: width - 1] + "…"


#: The verdict column of a defined alpha whose interval is withheld (its reason printed under the table).
NO_INTERVAL = "no interval"


def _verdict(row: dict[str, Any]) -> str:
    """A row's verdict; "no interval" for a defined alpha whose interval is withheld. A group's note is
    ``alpha_interval_note`` (agreement.json's verdict says "undefined" there: its bytes are fixed by the
    schema), a hazard row's ``interval_note``."""
    withheld = row.get("alpha_interval_note") or row.get("interval_note")
    return NO_INTERVAL if row.get("alpha") is not None and withheld else str(row["verdict"])


def _why_no_interval(note: str, too_few: str) -> str:
    """The statistics' interval note as the reason after "has no interval: " (no repeated lead-in or tail).

    >>> _why_no_interval("no interval: the bootstrap replicates do not vary (a zero-width interval is no "
    ...                  "interval; too few units for an interval)", "too few units for an interval")
    'the bootstrap replicates do not vary (an interval of zero width promises nothing)'
    >>> _why_no_interval("too few units for an interval: 40 pairable values", "too few units for an interval")
    'too few units: 40 pairable values'
    """
    why = note.removeprefix("no interval: ")
    if why.startswith(f"{too_few}: "):
        why = "too few units: " + why.removeprefix(f"{too_few}: ")
    why = why.replace(
        " (a zero-width interval is no interval; too few units for an interval)",
        " (an interval of zero width promises nothing)",
    )
    return why.replace(" (a majority: too few units for an interval)", " (a majority)")


def _flag_words(flag: str) -> str:
    """A reviewer's flag in the table's words (the statistics' own text stays in --json).

    >>> _flag_words("kappa_with_consensus 0.400 < 0.6"), _flag_words("alpha_if_deleted - alpha = 0.075 > 0.05")
    ('low kappa', 'alpha w/o up')
    """
    if flag.startswith("kappa_with_consensus"):
        return "low kappa"
    if flag.startswith("alpha_if_deleted"):
        return "alpha w/o up"
    return flag


def _consensus_notes(annotators: list[dict[str, Any]]) -> list[str]:
    """Why agree, kappa and alpha w/o are "-": they compare a reviewer with the others' majority, or
    leave them out of the others, so each needs two other reviewers (leave-one-out)."""
    if len(annotators) == 2:
        return [
            "agree, kappa, alpha w/o: - with two reviewers: each compares a reviewer with the majority of at "
            "least two others, or leaves them out of them; status's kappa (each reviewer against the other) "
            "is the figure for two."
        ]
    blank = [str(a["annotator"]) for a in annotators if a["agreement_with_consensus"] is None]
    if not blank:
        return []
    return [
        f"agree, kappa - for {', '.join(blank)}: no item they labelled has a strict majority among two or "
        "more other reviewers to compare with."
    ]


def _ds_notes(annotators: list[dict[str, Any]]) -> list[str]:
    """Why DS sens./spec. are "-": one footnote per reason (no item shared with another rater, or
    with one other at a time only), naming the annotators it applies to. The rates are figures
    only for an annotator who shares items with two others at once (docs/methods.md 2.5)."""
    by_reason: dict[str, list[str]] = {}
    for a in annotators:
        if a.get("ds_undefined_reason"):
            by_reason.setdefault(a["ds_undefined_reason"], []).append(str(a["annotator"]))
    return [f"DS sens./spec. - for {', '.join(names)}: {reason}." for reason, names in by_reason.items()]


def _unsure_dropped(g: dict[str, Any]) -> str:
    """The binary set's dropped unsure votes as "n (share)"; "-" for the 3-way set."""
    if g["labels"] != "binary":
        return "-"
    return f"{g['n_unsure_dropped']} ({num(g['unsure_dropped_share'], '{:.0%}')})"
