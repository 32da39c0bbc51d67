"""What every command shares: the workspace options, opening a session, JSON output."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from annotate.pipeline.session import Session

DB_HELP = (
    "Database: a SQLite file path, sqlite:///PATH, or postgresql+psycopg://USER@HOST/DB "
    "(with the postgres extra); no other database is supported"
)


#: ``--estimand`` of score and export: what the figures describe, by the names `annotate judges` uses
#: (responses: these prompts' responses, finite; prompts: the models on prompts like these), and the
#: names they had before (fixed, general), which keep working. Value: the name the computation takes.
SCORE_ESTIMANDS = {"responses": "fixed", "prompts": "general", "fixed": "fixed", "general": "general"}
SCORE_ESTIMAND_HELP = (
    "responses (or fixed): these prompts' responses, the leaderboard's question; prompts (or general): the models "
    "on prompts like these, adding the variance of sampling prompts."
)
#: ``--estimand`` of score and export (one option, one help text).
estimand_option = click.option(
    "--estimand",
    type=click.Choice(list(SCORE_ESTIMANDS)),
    default="responses",
    show_default=True,
    help=SCORE_ESTIMAND_HELP,
)
#: How each estimand is named in the output.
ESTIMAND_SAID = {
    "fixed": "responses (these prompts' responses; --estimand prompts for prompts like these)",
    "general": "prompts (the models on prompts like these)",
}


def notify(message: str) -> None:
    """A line for the user while a command runs, on stderr (stdout may be --json)."""
    click.echo(message, err=True)


def workspace_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--workspace and --db on every command (they may also come before the command name)."""

    @click.option(
        "--workspace",
        "-w",
        "workspace",
        metavar="DIR",
        default=None,
        help="Workspace folder [env ANNOTATE_WORKSPACE; default: current directory].",
    )
    @click.option(
        "--db",
        "db",
        metavar="URL",
        default=None,
        help=f"{DB_HELP} [env ANNOTATE_DB; default: .annotate/annotate.db in the workspace].",
    )
    @click.pass_context
    @functools.wraps(fn)
    def wrapper(ctx: click.Context, *args: Any, workspace: str | None, db: str | None, **kwargs: Any) -> Any:
        parent = ctx.find_root().params
        ctx.ensure_object(dict)
        ctx.obj["workspace"] = workspace or parent.get("workspace")
        ctx.obj["db"] = db or parent.get("db")
        return fn(ctx, *args, **kwargs)

    return wrapper


def open_session(ctx: click.Context) -> Session:
    """The session of the command's --workspace / --db; use it as a context manager.

    ``ctx.obj["connect"]`` (set by tests) replaces the way Label Studio is reached.
    """
    from annotate.pipeline.session import open_session as open_

    obj = ctx.ensure_object(dict)
    return open_(obj.get("workspace"), obj.get("db"), connect_to=obj.get("connect"), notify=notify)


def open_ws(ctx: click.Context) -> Any:
    """The workspace alone (commands that need no store)."""
    from annotate.config import open_workspace

    obj = ctx.ensure_object(dict)
    return open_workspace(obj.get("workspace"), obj.get("db"))


def comma_list(text: str) -> list[str]:
    """An option's comma-separated names (``A1,A2``), each stripped, empty ones left out."""
    return [name.strip() for name in text.split(",") if name.strip()]


def echo_json(data: Any) -> None:
    """Strict JSON on stdout (NaN and infinities become null)."""
    from annotate.stats._common import jsonable

    click.echo(json.dumps(jsonable(data), indent=2, sort_keys=False, default=str, allow_nan=False))
