"""`annotate ls`: the embedded Label Studio servers (one per reviewer and expert, by default)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from annotate.cli._format import table
from annotate.cli._options import comma_list, echo_json, open_session, open_ws, workspace_options

if TYPE_CHECKING:
    from annotate.pipeline.ls import LsReport


@click.group("ls")
def ls_group() -> None:
    """Run the embedded Label Studio: a server of their own for every reviewer and expert.

    Label Studio Community has no roles: on one shared server every reviewer could open the
    others' projects. So each person gets their own server (about 360 MB of memory each), bound
    to 127.0.0.1 unless told otherwise, and an account whose password is written once into
    their access sheet (.annotate/access/A1.txt, readable only by you). A front door on one
    port reaches each under a name of its own (http://a1.localhost:8080 is A1's): a server
    starts when its person opens it and sleeps after --idle-minutes without use.

    \b
    Example:
      annotate annotators add ana@example.org     # -> A1
      annotate ls start                           # A1 opens http://a1.localhost:8080
      annotate ls status
      annotate ls stop
    """


@ls_group.command("start")
@click.option(
    "--port",
    default=8080,
    show_default=True,
    help="The front door's port (the shared server's, with one server for everyone); people's servers get the "
    "ports after it (each kept once chosen).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to bind. Anything but loopback exposes the servers to the network.",
)
@click.option("--timeout", default=300.0, show_default=True, help="Seconds to wait for each server's readiness.")
@click.option("--all", "every", is_flag=True, help="Start everyone's server now and keep them up (no stop when idle).")
@click.option("--only", default=None, help="Start these people's servers now, e.g. --only A1,A2 (the others sleep).")
@click.option(
    "--idle-minutes",
    type=float,
    default=20.0,
    show_default=True,
    help="Stop a person's server after this many minutes without use (it starts again when opened); 0: never.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def ls_start(
    ctx: click.Context,
    port: int,
    host: str,
    timeout: float,
    every: bool,
    only: str | None,
    idle_minutes: float,
    as_json: bool,
) -> None:
    """Start the front door; make each new person's server and account.

    Each person opens their own address (http://a1.localhost:8080 for A1: every browser opens
    *.localhost on its own machine, and one login per name means two people's servers never log
    each other out). Their server starts then, in seconds, and sleeps after --idle-minutes
    without use; annotate's commands start the ones they need. The first start in a workspace
    migrates Label Studio's database once (about a minute). Signup is closed, telemetry, version
    checks and Sentry are off. A person's password is never printed: it is in their access sheet.

    \b
    Example:
      annotate ls start --port 8080
      annotate ls start --only A1 --idle-minutes 60
      annotate ls start --all
    """
    from annotate.pipeline import ls

    if host not in ls.LOOPBACK:
        click.echo(
            f"Warning: binding to {host} makes Label Studio reachable from the network. "
            "Signup stays closed, but anyone who can reach the ports sees the login pages.",
            err=True,
        )
    names = None if only is None else comma_list(only)
    with open_session(ctx) as s:
        report = ls.start(
            s,
            host=host,
            port=port,
            timeout=timeout,
            say=lambda m: click.echo(m, err=True),
            every=every,
            only=names,
            idle_minutes=idle_minutes,
        )
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
            "reviewer" if p.role == "annotator" else p.role,
            p.url or "-",
            "running" if p.running else ("asleep" if report.door else "stopped"),
            _short_path(p.sheet, report.access_dir) if p.sheet else "-",
            p.note or "",
        ]
        for p in report.people
    ]
    click.echo(table(["who", "role", "address", "server", "access sheet", "note"], rows))
    if report.access_dir and not Path(report.access_dir).resolve().is_relative_to(Path.cwd().resolve()):
        click.echo(f"Access sheets are in {report.access_dir}.")
    if report.door:
        idle = f"after {report.idle_minutes:g} min without use" if report.idle_minutes else "never (--all)"
        click.echo(f"Front door: {report.door} (each person's own name in front); servers sleep {idle}.")
    if started:
        asleep = [p.pseudonym for p in report.people if not p.running]
        _say(
            f"Ready in {report.seconds:.0f} s"
            + (
                f"; asleep until opened: {', '.join(asleep)} (a server starts, in seconds, when its person opens "
                "their address, or when a command needs it)."
                if asleep and report.door
                else "."
            )
        )
    click.echo("")
    _say(
        "Each person's server holds only their own projects. Give each person their access sheet privately "
        "(it is the only copy of their password); it says, step by step, how to log in and label. A note "
        "'no sheet: --new-password' means: annotate annotators access WHO --new-password writes one."
    )
    _say(
        "To look at a server yourself, log in as its admin (the e-mail and password in "
        f"{_secrets_hint(report)}); never label as the admin: only the person's own labels count."
    )


def _say(text: str) -> None:
    """A paragraph, wrapped to 100 columns (the table above fits them too)."""
    import textwrap

    click.echo(textwrap.fill(text, 100, break_on_hyphens=False, break_long_words=False))


def _short_path(path: str, access_dir: str | None) -> str:
    """A sheet's path as short as it can be said: relative to the current folder when inside it, else to
    the workspace (``.annotate/access/A1.txt``; the lines below the table name the workspace's folder)."""
    from pathlib import Path

    full = Path(path).resolve()
    for base in (Path.cwd().resolve(), *([Path(access_dir).resolve().parent.parent] if access_dir else [])):
        try:
            return str(full.relative_to(base))
        except ValueError:
            continue
    return path


def _secrets_hint(report: LsReport) -> str:
    if not report.admin_secrets:
        return "the server's annotate-secrets.json"
    first = next(iter(report.admin_secrets.items()))
    return f"each server's annotate-secrets.json, e.g. {first[1]} for {first[0]}"
