"""A command's session: the workspace, its store, and the way to Label Studio, in one typed object.

Every pipeline command takes a :class:`Session`. The CLI opens one per command with
:func:`open_session`; tests and the demo may pass another ``connect`` (e.g. an in-memory fake
of Label Studio). The gateway is opened only when a command needs the server
(``with session.gateway() as gw``), so file-mode commands never touch the network.

``notify`` is how the lower layers talk to the user while a command runs (that a writer waits for
another command, that the store is open to other users): the CLI passes a function that prints
to stderr, so the lines never mix with JSON on stdout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

from annotate.config import Workspace, busy_timeout, loose_permissions, open_workspace
from annotate.errors import AnnotateError
from annotate.labelstudio import Connect, Gateway, connect

if TYPE_CHECKING:
    from annotate.db import Store

Notify = Callable[[str], None]


@dataclass
class Session:
    ws: Workspace
    store: Store
    connect: Connect = field(default=connect)
    notify: Notify | None = None

    @contextmanager
    def gateway(self) -> Iterator[Gateway]:
        """The Label Studio gateway of this workspace, closed when the block ends."""
        gw = self.connect(self.ws)
        try:
            yield gw
        finally:
            gw.close()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def open_workspace_store(ws: Workspace, *, notify: Notify | None = None) -> Store:
    """The store of a workspace, created private when new.

    An existing store or state folder that other users can open is reported once through
    ``notify`` (``Warning: ...`` with the chmod to run), checked before the store is opened so
    that the files named are the ones that stay; its modes are never changed here.
    """
    from annotate.db import check_url, open_store, store_files

    check_url(ws.db_url)
    warning = loose_permissions([ws.state_dir, *store_files(ws.db_url)])
    store = open_store(ws.db_url, busy_timeout=busy_timeout(ws.settings), notify=notify)
    if warning and notify is not None:
        notify(f"Warning: {warning}")
    return store


def open_session(
    workspace: str | None, db: str | None, *, connect_to: Connect | None = None, notify: Notify | None = None
) -> Session:
    """The session for ``--workspace`` / ``--db`` (and their environment variables)."""
    ws = open_workspace(workspace, db)
    return Session(ws, open_workspace_store(ws, notify=notify), connect_to or connect, notify)


def session_for(ws: Workspace, *, connect_to: Connect | None = None, notify: Notify | None = None) -> Session:
    """A session for a workspace already opened (``annotate init``, the demo)."""
    return Session(ws, open_workspace_store(ws, notify=notify), connect_to or connect, notify)


def as_user_error(exc: BaseException) -> AnnotateError | None:
    """The user's error for an exception from the store that concurrency explains (a busy store, a
    record written by another command at the same moment); None for anything else."""
    # Only the database's own exceptions can be; anything else never loads the database room.
    if type(exc).__module__.split(".")[0] not in ("sqlite3", "sqlalchemy", "psycopg"):
        return None
    from annotate.db import store_error

    return store_error(exc)
