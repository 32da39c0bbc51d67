"""`annotate adjudicate` and `annotate gold`: final labels, and items with known answers."""

from __future__ import annotations

from pathlib import Path

import click

from annotate.cli._format import num
from annotate.cli._options import echo_json, open_session, workspace_options
from annotate.columns import POLICIES


@click.command()
@click.option("--round", "round_name", required=True, help="The review round to settle.")
@click.option(
    "--policy",
    type=click.Choice(list(POLICIES)),
    default="escalate",
    show_default=True,
    help="What escalated items without an expert decision become.",
)
@click.option("--expert", default=None, help="Expert pseudonym or e-mail: escalations and checks go to their project.")
@click.option("--to-file", is_flag=True, help="Write the expert's tasks to tasks/<round>/<expert>-adjudication.json.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def adjudicate(
    ctx: click.Context, round_name: str, policy: str, expert: str | None, to_file: bool, as_json: bool
) -> None:
    """One final label per reviewed response, by a recorded procedure.

    Majority vote is the label of record; ties are never broken by data order. Ties, majority
    'unsure', doubtful Dawid-Skene posteriors (and, if configured, harmful votes on
    high-severity items) are escalated to the expert, who sees each reviewer's verdict and
    rationale under pseudonyms. A seeded 5 % of majority-resolved items go to the expert as a
    check. Every decision is recorded with its votes, adjudicator and reason; re-running after
    new labels adds records and overwrites nothing.

    \b
    Example:
      annotate annotators add lead@example.org --expert
      annotate adjudicate --round r1 --expert E1
      annotate pull --round r1 && annotate adjudicate --round r1 --expert E1
    """
    from annotate.pipeline.adjudicate import adjudicate as do_adjudicate

    with open_session(ctx) as s:
        out = do_adjudicate(s, round_name=round_name, policy=policy, expert=expert, to_file=to_file)
    if as_json:
        echo_json({**vars(out), "files": [str(f) for f in out.files]})
        return
    total = sum(out.counts.values())
    click.echo(f"Round {out.round}: {total} reviewed responses; {out.new_records} new decision record(s).")
    for status_name in ("resolved", "escalated", "unresolved"):
        if out.counts.get(status_name):
            click.echo(f"  {status_name:10s} {out.counts[status_name]}")
    click.echo("  by method: " + ", ".join(f"{k} {v}" for k, v in sorted(out.methods.items())))
    if out.escalation_reasons:
        click.echo("  escalated because: " + ", ".join(f"{k} ({v})" for k, v in out.escalation_reasons.items()))
    if out.awaiting_review:
        click.echo(f"  {out.awaiting_review} routed response(s) have no label yet (awaiting review).")
    if out.expert:
        click.echo(
            f"  sent to {out.expert}: {out.sent_to_expert} new task(s)"
            + (f" -> {', '.join(str(f) for f in out.files)}" if out.files else "")
        )
    c = out.check
    if c.get("n_checked"):
        click.echo(
            f"  majority check: the expert agreed with the majority on {c['agreement']:.0%} of "
            f"{c['n_checked']} checked item(s) (kappa {num(c['kappa'])})."
        )
    elif c.get("n_drawn"):
        click.echo(f"  majority check: {c['n_drawn']} item(s) drawn; no expert labels on them yet.")
    if out.unresolved:
        click.echo(
            f"  not resolved ({len(out.unresolved)}): "
            + ", ".join(u["ext_id"] for u in out.unresolved[:10])
            + (" ..." if len(out.unresolved) > 10 else "")
        )
    if out.counts.get("escalated") and not out.expert:
        click.echo("  Escalated items wait for an expert: pass --expert, or choose --policy.")


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
