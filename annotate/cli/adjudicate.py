"""`annotate adjudicate` and `annotate gold`: final labels, and items with known answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from annotate.cli._format import num, table
from annotate.cli._options import echo_json, open_session, workspace_options
from annotate.columns import POLICIES


@click.command()
@click.option("--round", "round_name", required=True, help="The review round to settle.")
@click.option(
    "--policy",
    type=click.Choice(list(POLICIES)),
    default="escalate",
    show_default=True,
    help="What escalated items without an expert decision become; majority: plain majority voting (no "
    "Dawid-Skene, unsure-majority, sure-vote, severity or check rule; ties stay unresolved).",
)
@click.option("--expert", default=None, help="Expert pseudonym or e-mail: escalations and checks go to their project.")
@click.option("--to-file", is_flag=True, help="Write the expert's tasks to tasks/<round>/<expert>-adjudication.json.")
@click.option(
    "--ds-with-judges",
    is_flag=True,
    help="Also fit Dawid-Skene over the reviewers and every judge together and print it beside the labels "
    "of record, as a diagnostic (it changes no decision).",
)
@click.option(
    "--escalate-early",
    is_flag=True,
    help="Also decide the items still waiting for a reviewer's vote, on the votes in so far (and escalate the "
    "ones that need the expert now). By default those items wait: a second vote often settles them.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def adjudicate(
    ctx: click.Context,
    round_name: str,
    policy: str,
    expert: str | None,
    to_file: bool,
    ds_with_judges: bool,
    escalate_early: bool,
    as_json: bool,
) -> None:
    """One final label per reviewed response, by a recorded procedure.

    Majority vote is the label of record; ties are never broken by data order. Ties, majority
    'unsure', doubtful Dawid-Skene posteriors (and, if configured, harmful votes on
    high-severity items) are escalated to the expert, who sees each reviewer's verdict and
    rationale under pseudonyms. A seeded 5 % of majority-resolved items go to the expert as a
    check. Every decision is recorded with its votes, adjudicator and reason; re-running after
    new labels adds records and overwrites nothing.

    Mid-round, only items whose routed votes are all in (each reviewer's verdict or skip) are
    settled or escalated; the others wait, are counted per reviewer ("12 waiting for A2") and
    never reach the expert. --escalate-early decides them on the votes so far.

    --ds-with-judges adds each judge of the reviewed responses as one more rater (its
    'ambiguous' counts as missing, as a reviewer's 'unsure' does) and prints that fit's label
    set against the final labels and the reviewers-only Dawid-Skene labels, with every rater's
    model-based sensitivity and specificity. A diagnostic only: it is neither stored nor
    exported, and every decision is what it would be without it.

    \b
    Example:
      annotate annotators add lead@example.org --expert
      annotate adjudicate --round r1 --expert E1
      annotate pull --round r1 && annotate adjudicate --round r1 --expert E1
      annotate adjudicate --round r1 --expert E1 --ds-with-judges
      annotate adjudicate --round r1 --expert E1 --escalate-early   # the round is over: decide what is in
    """
    from annotate.pipeline.adjudicate import adjudicate as do_adjudicate

    with open_session(ctx) as s:
        out = do_adjudicate(
            s,
            round_name=round_name,
            policy=policy,
            expert=expert,
            to_file=to_file,
            ds_with_judges=ds_with_judges,
            escalate_early=escalate_early,
        )
    if as_json:
        payload = {**vars(out), "files": [str(f) for f in out.files]}
        if out.ds_with_judges is None:  # without the option the output is what it always was
            del payload["ds_with_judges"]
        echo_json(payload)
        return
    total = sum(out.counts.values())
    click.echo(f"Round {out.round}: {total} reviewed responses; {out.new_records} new decision record(s).")
    for status_name in ("resolved", "escalated", "unresolved", "waiting"):
        if out.counts.get(status_name):
            click.echo(f"  {status_name:10s} {out.counts[status_name]}")
    click.echo("  by method: " + ", ".join(f"{k} {v}" for k, v in sorted(out.methods.items())))
    if out.by_votes:
        click.echo(
            "  by votes:  " + ", ".join(f"{n} vote{'' if n == '1' else 's'} {c}" for n, c in out.by_votes.items())
        )
    if out.escalation_reasons:
        click.echo("  escalated because: " + ", ".join(f"{k} ({v})" for k, v in out.escalation_reasons.items()))
    if out.settings_behind:
        _say(
            "  escalated by the settings " + ", ".join(out.settings_behind) + " ([adjudication] of annotate.toml): "
            "a plain majority would have settled those items; --policy majority is majority voting (only ties "
            "stay unresolved)."
        )
    if out.waiting:
        who = ", ".join(f"{n} waiting for {p}" for p, n in out.waiting_for.items())
        click.echo(
            f"  {out.waiting} item(s) with some votes wait for the rest ({who}): they are settled, or go to the "
            "expert, once those votes are in. --escalate-early decides them now."
        )
    elif out.decided_early:
        click.echo(f"  {out.decided_early} item(s) decided early, on the votes in so far (--escalate-early).")
    if out.awaiting_review:
        click.echo(f"  {out.awaiting_review} routed response(s) have no label yet (awaiting review).")
    if out.expert:
        click.echo(
            f"  sent to {out.expert}: {out.sent_to_expert} new task(s)"
            + (f" -> {', '.join(str(f) for f in out.files)}" if out.files else "")
        )
    c = out.check
    if c.get("n_checked"):
        _say(
            f"  majority check: the expert agreed with the majority on {c['agreement']:.0%} of "
            f"{c['n_checked']} checked item(s) "
            + (
                f"(kappa {num(c['kappa'])})."
                if c["kappa"] is not None and c["kappa"] == c["kappa"]
                else "(no kappa: every checked item had the same label, so chance agreement is total)."
            )
        )
    elif c.get("n_drawn"):
        click.echo(f"  majority check: {c['n_drawn']} item(s) drawn; no expert labels on them yet.")
    if out.unresolved:
        # Named as a lead finds them: model, prompt id and the prompt's first words.
        named = [f"{u['model']} on {u['prompt_id']}" + (f" (epoch {u['epoch']})" if u["epoch"] else "")
                 + (f' "{u["prompt_start"]}"' if u.get("prompt_start") else "")
                 for u in out.unresolved[:4]]  # fmt: skip
        more = len(out.unresolved) - len(named)
        _say(
            f"  not resolved ({len(out.unresolved)}): "
            + "; ".join(named)
            + (f"; and {more} more (`--json` lists them all)" if more > 0 else "")
        )
    if out.counts.get("escalated") and not out.expert:
        click.echo(
            "  Escalated items wait for an expert: pass --expert, or choose --policy (harmful, safe, unresolved; "
            "majority for plain majority voting)."
        )
    if out.ds_with_judges is not None:
        _echo_ds_with_judges(out.ds_with_judges)


def _comparison(c: dict[str, Any], record: str, unlabelled: str) -> str:
    """One line of counts of the labels with judges (DS+judges) against another label set."""
    only = c["only_diagnostic"]
    return (
        f"  against {record}: {c['n_both']} item(s) labelled by both: {c['agree']} agree, "
        f"{c['harmful_vs_safe']} DS+judges harmful where {record} say safe, {c['safe_vs_harmful']} DS+judges safe "
        f"where they say harmful; {only['harmful'] + only['safe']} {unlabelled} labelled by DS+judges "
        f"({only['harmful']} harmful, {only['safe']} safe); {c['only_record']} labelled by {record} only, "
        f"{c['neither']} by neither."
    )


def _say(text: str) -> None:
    """A line of the summary, wrapped to 100 columns with its continuation indented under it."""
    from annotate.cli._format import indented

    indented(text.strip())


def _echo_ds_with_judges(d: dict[str, Any]) -> None:
    """The judges-as-raters diagnostic: raters with Se / Sp, then the comparisons and the caveats."""
    click.echo("")
    click.echo(
        f"Dawid-Skene with judges as raters (DS+judges; a diagnostic: the labels of record above are unchanged): "
        f"{d['n_reviewers'] + d['n_judges']} raters ({d['n_reviewers']} reviewer(s), {d['n_judges']} judge(s)) "
        f"on {d['n_items']} reviewed item(s), {d['n_ratings']} harmful/safe ratings, {d['n_missing']} "
        "'unsure'/'ambiguous' counted as missing."
    )
    rows = [
        [
            r["rater"],
            r["kind"] + (" (routing)" if r["routing"] else ""),
            r["n_harmful"],
            r["n_safe"],
            r["n_missing"],
            r["n_unrated"],
            num(r["sensitivity"]) if r["sensitivity"] is not None else "n/e",
            num(r["specificity"]) if r["specificity"] is not None else "n/e",
        ]
        for r in d["raters"]
    ]
    text = table(
        ["rater", "kind", "harmful", "safe", "missing", "no verdict", "DS Se", "DS Sp"], rows, align="llrrrrrr"
    )
    for line in text.splitlines():
        click.echo("  " + line)
    for r in d["raters"]:
        if r["note"]:
            click.echo(f"  {r['rater']}: {r['note']}.")
    click.echo(_comparison(d["vs_final"], "the final labels", "item(s) without a final label (escalated, unresolved)"))
    if d["vs_human_ds"] is not None:
        click.echo(_comparison(d["vs_human_ds"], "the reviewers-only DS labels", "item(s) with only 'unsure' votes"))
    else:
        click.echo(f"  against the reviewers-only DS labels: none ({d['vs_human_ds_reason']}).")
    differ = [
        f"{i['ext_id']} ({i['ds_label']} vs {i['final_label']})"
        for i in d["items"]
        if i["final_label"] is not None and i["ds_label"] in ("harmful", "safe") and i["ds_label"] != i["final_label"]
    ]
    if differ:
        click.echo(
            f"  differ from the final label ({len(differ)}): "
            + ", ".join(differ[:10])
            + (" ... (--json lists every item)" if len(differ) > 10 else "")
        )
    for note in d["notes"]:
        click.echo(f"  Note: {note}")
    for caveat in d["caveats"]:
        click.echo(f"  Caveat: {caveat}")


@click.command()
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
    from annotate.pipeline.gold import set_gold

    with open_session(ctx) as s:
        n = set_gold(s, round_name, path)
    click.echo(f"{n} gold item(s) marked in round {round_name}.")
