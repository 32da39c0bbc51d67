"""`annotate annotators`: reviewers and experts under pseudonyms."""

from __future__ import annotations

import click

from annotate.cli._format import table
from annotate.cli._options import echo_json, open_session, workspace_options


@click.group("annotators")
def annotators_group() -> None:
    """Register reviewers under stable pseudonyms (A1, A2, ...).

    \b
    Example:
      annotate annotators add ana@example.org --name "Ana"
      annotate annotators list
    """


@annotators_group.command("add")
@click.argument("email")
@click.option("--name", default=None, help="Display name (stays in the store, like the e-mail).")
@click.option("--expert", is_flag=True, help="Register an adjudication expert (pseudonym E1, E2, ...).")
@click.option("--offline", is_flag=True, help="Register locally only, without Label Studio.")
@workspace_options
def annotators_add(ctx: click.Context, email: str, name: str | None, expert: bool, offline: bool) -> None:
    """Create the Label Studio user and an invite link; register a pseudonym.

    Every output of the tool names the annotator by the pseudonym only. Adding the same e-mail
    twice keeps the first pseudonym.

    \b
    Example:
      annotate annotators add ana@example.org --name "Ana"
    """
    from annotate.pipeline.annotators import add_annotator

    with open_session(ctx) as s:
        added = add_annotator(s, email, name, role="expert" if expert else "annotator", offline=offline)
    verb = "registered as" if added.created else "already registered as"
    click.echo(f"{email} {verb} {added.pseudonym}.")
    if added.invite_url:
        click.echo(f"Send this invite link to {added.pseudonym} to set a password: {added.invite_url}")
    if added.note:
        click.echo(f"Note: {added.note}.")


@annotators_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (pseudonyms only).")
@click.option("--show-emails", is_flag=True, help="Also show e-mail addresses (for the coordinator only).")
@workspace_options
def annotators_list(ctx: click.Context, as_json: bool, show_emails: bool) -> None:
    """List annotators by pseudonym.

    \b
    Example:
      annotate annotators list
    """
    from annotate.pipeline.annotators import list_annotators

    with open_session(ctx) as s:
        df = list_annotators(s, show_emails=show_emails)
    cols = list(df.columns)
    records = df.to_dict("records") if len(df) else []
    if as_json:
        echo_json(records)
    elif not records:
        click.echo("No annotators yet. Add one with `annotate annotators add EMAIL`.")
    else:
        click.echo(table(cols, [[r[c] for c in cols] for r in records]))
