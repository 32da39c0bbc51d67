"""`annotate init`: create a workspace."""

from __future__ import annotations

from pathlib import Path

import click

from annotate.cli._options import DB_HELP, notify


@click.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--db", "db", metavar="URL", default=None, help=f"{DB_HELP} [env ANNOTATE_DB].")
@click.pass_context
def init(ctx: click.Context, directory: Path | None, db: str | None) -> None:
    """Create a workspace in DIRECTORY (default: the workspace option or the current directory).

    Creates annotate.toml (commented settings), label_config.xml, tasks/, exports/, a
    .gitignore for the database and server data, and the database. Safe to run twice: existing
    files are kept.

    \b
    Example:
      annotate init audit-2026q4
    """
    from annotate.config import resolve_db_url, resolve_root
    from annotate.pipeline.init import init_workspace

    root = resolve_root(directory or ctx.find_root().params.get("workspace"))
    url = resolve_db_url(root, db or ctx.find_root().params.get("db"))
    created, kept = init_workspace(root, url, notify=notify)
    from annotate.config import redact_url

    for path in created:
        click.echo(f"created  {path}")
    for path in kept:
        click.echo(f"kept     {path} (exists)")
    click.echo(f"database {redact_url(url)}")
    click.echo(f"Workspace ready: {root}. Next: annotate -w {root} ingest FILE...")
