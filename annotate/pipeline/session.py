"""A command's session: the workspace, its store, and the way to Label Studio, in one typed object.

Every pipeline command takes a :class:`Session`. The CLI opens one per command with
:func:`open_session`; tests and the demo may pass another ``connect`` (e.g. an in-memory fake
of Label Studio). The gateway is opened only when a command needs the server
(``with session.gateway() as gw``), so file-mode commands never touch the network.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

from annotate.config import Workspace, open_workspace
from annotate.labelstudio import Connect, Gateway, connect

if TYPE_CHECKING:
    from annotate.db import Store


@dataclass
class Session:
    ws: Workspace
    store: Store
    connect: Connect = field(default=connect)

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


def open_session(workspace: str | None, db: str | None, *, connect_to: Connect | None = None) -> Session:
    """The session for ``--workspace`` / ``--db`` (and their environment variables)."""
    from annotate.db import open_store

    ws = open_workspace(workspace, db)
    return Session(ws, open_store(ws.db_url), connect_to or connect)


def session_for(ws: Workspace, *, connect_to: Connect | None = None) -> Session:
    """A session for a workspace already opened (``annotate init``, the demo)."""
    from annotate.db import open_store

    return Session(ws, open_store(ws.db_url), connect_to or connect)
