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

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from annotate.config import Workspace, busy_timeout, loose_permissions, open_workspace
from annotate.db import check_url, open_store, store_error, store_files
from annotate.errors import AnnotateError
from annotate.labelstudio import OWN, START_TIMEOUT, Connect, Gateway, connect, hold_server, own_server

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
    def gateway(self, owner: str | None = None) -> Iterator[Gateway]:
        """The gateway to the workspace's shared Label Studio, or to ``owner``'s own; closed when the block ends."""
        gw = self.connect(self.ws, owner)
        try:
            yield gw
        finally:
            gw.close()

    @contextmanager
    def servers(self) -> Iterator[Servers]:
        """The Label Studio servers of one command, each opened (and its token checked) on first use."""
        opened = Servers(self)
        try:
            yield opened
        finally:
            opened.close()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Servers:
    """The gateways of one command: the shared server's and each person's own, opened once each.

    A gateway is checked (``whoami``: reachable, token accepted) when it is first opened, so a
    command that opens every server it needs before writing fails with the store unchanged.

    A person's embedded server that is stopped (servers start on demand and stop when idle,
    ``annotate.labelstudio.server.frontdoor``) is started when first opened and held in use
    while open (``fleet.hold``: nothing stops it under the command); one this command started is
    stopped again when released, unless someone used it meanwhile. At most
    :data:`MAX_STARTED` servers started here run at once: opening another releases the oldest, so a
    command over twenty people's servers holds the memory of a few.
    """

    #: Servers a command keeps running that it started itself (each about 350 MB).
    MAX_STARTED = 3

    def __init__(self, session: Session) -> None:
        self._session = session
        self._open: dict[str | None, Gateway] = {}
        self._held: dict[str, Any] = {}  # pseudonym -> fleet.Held

    def of(self, owner: str | None) -> Gateway:
        """``owner``'s own server (a pseudonym), or the shared one (None)."""
        if owner not in self._open:
            if owner is not None:
                self._hold(owner)
            try:
                gw = self._session.connect(self._session.ws, owner)
                try:
                    gw.whoami()
                except BaseException:
                    gw.close()
                    raise
            except BaseException:
                if owner is not None:
                    self.release(owner)
                raise
            self._open[owner] = gw
        return self._open[owner]

    def _hold(self, owner: str) -> None:
        """Hold ``owner``'s embedded server (started now if it is stopped); nothing for any other server."""
        server = own_server(self._session.ws, owner)
        if server is None or owner in self._held:
            return
        started = [p for p, h in self._held.items() if h.started_at is not None]
        while len(started) >= self.MAX_STARTED:
            self.release(started.pop(0))
        self._held[owner] = hold_server(server, timeout=START_TIMEOUT, say=self._session.notify)

    def release(self, owner: str | None) -> bool:
        """Close ``owner``'s gateway and let go of its server; True when it was stopped here (started by this
        command and not used by anyone since)."""
        gw = self._open.pop(owner, None)
        if gw is not None:
            gw.close()
        held = self._held.pop(owner, None) if owner is not None else None
        return bool(held is not None and held.release())

    def for_project(self, project: Mapping[str, Any]) -> Gateway:
        """The server a project row (``Store.ls_projects``) lives on."""
        return self.of(project_owner(project))

    def close(self) -> None:
        for owner in [*self._open, *self._held]:
            self.release(owner)


def project_owner(project: Mapping[str, Any]) -> str | None:
    """Whose own server a project lives on (its pseudonym), or None for the shared server."""
    return str(project["pseudonym"]) if project.get("server") == OWN else None


def open_workspace_store(ws: Workspace, *, notify: Notify | None = None) -> Store:
    """The store of a workspace, created private when new.

    An existing store or state folder that other users can open is reported once through
    ``notify`` (``Warning: ...`` with the chmod to run), checked before the store is opened so
    that the files named are the ones that stay; its modes are never changed here.
    """
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
    return store_error(exc)
