"""`annotate annotators`: reviewers and experts under pseudonyms, and their logins."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from annotate.cli._format import table
from annotate.cli._options import echo_json, open_session, workspace_options

if TYPE_CHECKING:
    from annotate.pipeline._people import PersonLine


@click.group("annotators")
def annotators_group() -> None:
    """Register reviewers under stable pseudonyms (A1, A2, ...) and give them their logins.

    \b
    Example:
      annotate annotators add ana@example.org --name "Ana"
      annotate annotators access A1
      annotate annotators list
    """


@annotators_group.command("add")
@click.argument("email")
@click.option("--name", default=None, help="Display name (stays in the store, like the e-mail).")
@click.option("--expert", is_flag=True, help="Register an adjudication expert (pseudonym E1, E2, ...).")
@click.option("--offline", is_flag=True, help="Register locally only, without Label Studio.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (pseudonym and login; never the password).")
@workspace_options
def annotators_add(
    ctx: click.Context, email: str, name: str | None, expert: bool, offline: bool, as_json: bool
) -> None:
    """Register a person under a pseudonym; make their Label Studio login when the servers run.

    On the embedded servers every person gets a Label Studio of their own and an account with a
    generated password, written into their access sheet (.annotate/access/A1.txt, readable only
    by you), which says step by step how to log in and label: give it to them privately. When
    the servers are not running, `annotate ls start` makes the server and the login later. Every
    output names the person by the pseudonym only; adding the same e-mail twice keeps the first.

    \b
    Example:
      annotate annotators add ana@example.org --name "Ana"
      annotate annotators add eve@example.org --expert
    """
    from annotate.pipeline.annotators import add_annotator

    with open_session(ctx) as s:
        added = add_annotator(s, email, name, role="expert" if expert else "annotator", offline=offline)
    if as_json:
        echo_json(
            {
                "pseudonym": added.pseudonym,
                "created": added.created,
                "access": None if added.access is None else vars(added.access),
                "note": added.note,
            }
        )
        return
    verb = "registered as" if added.created else "already registered as"
    click.echo(f"{email} {verb} {added.pseudonym}.")
    if added.access is not None:
        _print_access(added.access)
    if added.note:
        click.echo(f"Note: {added.note}.")


@annotators_group.command("access")
@click.argument("pseudonym")
@click.option("--new-password", is_flag=True, help="Set a new password (the old one stops working) and a new sheet.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (never the password).")
@workspace_options
def annotators_access(ctx: click.Context, pseudonym: str, new_password: bool, as_json: bool) -> None:
    """Say how a person logs in; with --new-password, give them a new password.

    Makes their account when it is missing. The password is never printed: it is in their access
    sheet (readable only by you), which also says how to start; give it to them privately.

    \b
    Example:
      annotate annotators access A1
      annotate annotators access A1 --new-password
    """
    from annotate.pipeline.annotators import annotator_access

    with open_session(ctx) as s:
        line = annotator_access(s, pseudonym, new_password=new_password)
    if as_json:
        echo_json(vars(line))
        return
    _print_access(line)


def _print_access(line: PersonLine) -> None:
    where = f"{line.url}/user/login/" if line.url else "(no server yet)"
    click.echo(f"{line.pseudonym} logs in at {where}.")
    if line.sheet:
        click.echo(
            f"Their access sheet (address, e-mail, password and how to start; readable only by you): {line.sheet}"
        )
        click.echo("Give it to them privately; it is the only copy of their password.")
    if line.note:
        click.echo(f"Note: {line.note}.")


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
