"""`annotate ls`: the embedded Label Studio servers (one per reviewer and expert, by default)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from annotate.cli._format import table
from annotate.cli._options import echo_json, open_session, open_ws, workspace_options

if TYPE_CHECKING:
    from annotate.pipeline.ls import LsReport


@click.group("ls")
def ls_group() -> None:
    """Run the embedded Label Studio: a server of their own for every reviewer and expert.

    Label Studio Community has no roles: on one shared server every reviewer could open the
    others' projects. So each person gets their own server (about 360 MB of memory each), bound
    to 127.0.0.1 unless told otherwise, and an account whose password is written once into
    their access sheet (.annotate/access/A1.txt, readable only by you).

    \b
    Example:
      annotate annotators add ana@example.org     # -> A1
      annotate ls start                           # A1's server on http://127.0.0.1:8081, ...
      annotate ls status
      annotate ls stop
    """


@ls_group.command("start")
@click.option(
    "--port",
    default=8080,
    show_default=True,
    help="The shared server's port; people's servers get the ports after it (each kept once chosen).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to bind. Anything but loopback exposes the servers to the network.",
)
@click.option("--timeout", default=300.0, show_default=True, help="Seconds to wait for each server's readiness.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def ls_start(ctx: click.Context, port: int, host: str, timeout: float, as_json: bool) -> None:
    """Start the servers; make each new person's server and account.

    The first start in a workspace migrates Label Studio's database once (about a minute); each
    person's server then starts from a copy in seconds. Signup is closed, telemetry, version
    checks and Sentry are off. A person's password is never printed: it is in their access sheet.

    \b
    Example:
      annotate ls start --port 8080
    """
    from annotate.pipeline import ls

    if host not in ls.LOOPBACK:
        click.echo(
            f"Warning: binding to {host} makes Label Studio reachable from the network. "
            "Signup stays closed, but anyone who can reach the ports sees the login pages.",
            err=True,
        )
    with open_session(ctx) as s:
        report = ls.start(s, host=host, port=port, timeout=timeout, say=lambda m: click.echo(m, err=True))
    for warning in report.warnings:
        click.echo(f"Warning: {warning}", err=True)
    if as_json:
        echo_json(report.to_dict())
        return
    _print_report(report, started=True)


@ls_group.command("stop")
@workspace_options
def ls_stop(ctx: click.Context) -> None:
    """Stop every embedded Label Studio server of this workspace.

    \b
    Example:
      annotate ls stop
    """
    from annotate.pipeline import ls

    stopped = ls.stop(open_ws(ctx))
    if stopped:
        click.echo(f"Stopped {len(stopped)} Label Studio server(s): {', '.join(stopped)}.")
    else:
        click.echo("No Label Studio server was running.")


@ls_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def ls_status(ctx: click.Context, as_json: bool) -> None:
    """Show which servers run, where, and how each reviewer logs in.

    \b
    Example:
      annotate ls status
    """
    from annotate.pipeline import ls

    with open_session(ctx) as s:
        report = ls.status(s)
    if as_json:
        echo_json(report.to_dict())
        return
    _print_report(report, started=False)


def _print_report(report: LsReport, *, started: bool) -> None:
    from annotate.pipeline import ls

    if report.mode == ls.EXTERNAL:
        click.echo(
            f"Using the Label Studio server at {report.external_server} (ANNOTATE_LS_URL); nothing is started here. "
            "Its admin creates each reviewer's login; every reviewer can open the others' projects there "
            "(blinding by instructions only)."
        )
        return
    shared = report.shared
    if shared is not None and (shared.running or report.mode == ls.SHARED_ONLY):
        if shared.running:
            click.echo(
                f"The shared Label Studio runs at {shared.url} (pid {shared.pid}); health "
                f"{'ok' if shared.healthy else 'failing'}, token {'accepted' if shared.authenticated else 'REJECTED'}. "
                f"Admin login: {shared.admin_email}, password in {shared.secrets_file}."
            )
        else:
            click.echo(
                f"The shared Label Studio is not running{': ' + shared.detail if shared.detail else ''}. "
                "Start it with `annotate ls start`."
            )
        if report.mode == ls.SHARED_ONLY:
            click.echo(
                "Every reviewer's project is on this one server (one_server_per_person = false): each can open the "
                "others' projects, so blinding rests on instructions."
            )
            return
    if not report.people:
        click.echo("No reviewers or experts registered yet: add them with `annotate annotators add EMAIL`.")
        return
    rows = [
        [
            p.pseudonym,
            p.role,
            p.url or "-",
            "running" if p.running else "stopped",
            p.sheet or "-",
            p.note or "",
        ]
        for p in report.people
    ]
    click.echo(table(["who", "role", "address", "server", "access sheet", "note"], rows))
    if started:
        click.echo(f"Ready in {report.seconds:.0f} s.")
    click.echo("")
    click.echo(
        "Each person's server holds only their own projects. Give each person their access sheet privately "
        "(it is the only copy of their password); it says, step by step, how to log in and label."
    )
    click.echo(
        "To look at a server yourself, log in as its admin (the e-mail and password in "
        f"{_secrets_hint(report)}); never label as the admin: only the person's own labels count."
    )


def _secrets_hint(report: LsReport) -> str:
    if not report.admin_secrets:
        return "the server's annotate-secrets.json"
    first = next(iter(report.admin_secrets.items()))
    return f"each server's annotate-secrets.json, e.g. {first[1]} for {first[0]}"
