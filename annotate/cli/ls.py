"""`annotate ls`: the embedded Label Studio server."""

from __future__ import annotations

import click

from annotate.cli._options import echo_json, open_ws, workspace_options


@click.group("ls")
def ls_group() -> None:
    """Run the embedded Label Studio server (bound to 127.0.0.1 unless told otherwise).

    \b
    Example:
      annotate ls start            # http://127.0.0.1:8080, data in .annotate/labelstudio/
      annotate ls status
      annotate ls stop
    """


@ls_group.command("start")
@click.option("--port", default=8080, show_default=True, help="Port to listen on (refused, not changed, when taken).")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to bind. Anything but loopback exposes the server to the network.",
)
@click.option("--timeout", default=300.0, show_default=True, help="Seconds to wait for readiness.")
@workspace_options
def ls_start(ctx: click.Context, port: int, host: str, timeout: float) -> None:
    """Start the embedded Label Studio server for this workspace.

    The first start creates the admin account and API token (stored in the workspace, mode
    0600) and migrates Label Studio's database (about a minute). Signup is by invite only;
    telemetry, version checks and Sentry are off.

    \b
    Example:
      annotate ls start --port 8080
    """
    from annotate.pipeline import ls

    ws = open_ws(ctx)
    if host not in ls.LOOPBACK:
        click.echo(
            f"Warning: binding to {host} makes Label Studio reachable from the network. "
            "Signup stays invite-only, but anyone who can reach the port sees the login page.",
            err=True,
        )
    click.echo("Starting Label Studio (the first start migrates its database: about a minute)...", err=True)
    info = ls.start(ws, host=host, port=port, timeout=timeout)
    for warning in info.warnings:
        click.echo(f"Warning: {warning}", err=True)
    click.echo(f"Label Studio is ready at {info.url} (pid {info.pid}, ready in {info.startup_seconds:.0f} s).")
    click.echo(f"Log in as {info.admin_email}; the password is in {info.secrets_path} (readable only by you).")


@ls_group.command("stop")
@workspace_options
def ls_stop(ctx: click.Context) -> None:
    """Stop the embedded Label Studio server.

    \b
    Example:
      annotate ls stop
    """
    from annotate.pipeline import ls

    stopped = ls.stop(open_ws(ctx))
    click.echo("Label Studio stopped." if stopped else "Label Studio was not running.")


@ls_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def ls_status(ctx: click.Context, as_json: bool) -> None:
    """Show whether Label Studio runs, where, and how to log in.

    \b
    Example:
      annotate ls status
    """
    from annotate.pipeline import ls

    st = ls.status(open_ws(ctx))
    data = st.to_dict()
    external = st.external_server
    if as_json:
        echo_json(data)
        return
    if external:
        click.echo(f"Using the Label Studio server at {external} (ANNOTATE_LS_URL); nothing is started here.")
    if st.running:
        click.echo(
            f"Label Studio is running at {st.url} (pid {st.pid}); "
            f"health {'ok' if st.healthy else 'failing'}, token {'accepted' if st.authenticated else 'REJECTED'}."
        )
        click.echo(f"Log in as {st.admin_email}; the password is in {data['secrets_file']}.")
    else:
        click.echo(
            f"The embedded Label Studio is not running{': ' + st.detail if st.detail else ''}. "
            "Start it with `annotate ls start`."
        )
