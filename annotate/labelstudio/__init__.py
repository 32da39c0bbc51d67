"""The Label Studio room: the only package that talks HTTP, and everything that knows Label Studio.

* :class:`Gateway`: what the pipeline asks of a Label Studio server (a Protocol; the real one is
  ``gateway.LabelStudioGateway``, tests use an in-memory fake);
* :func:`connect`: the gateway for a workspace ($ANNOTATE_LS_URL + $ANNOTATE_LS_TOKEN, else the
  embedded servers started with `annotate ls start`), to the shared server or to one person's own;
* :func:`blinding`: how a round routed now is blinded (``technical``: every person's projects on a
  server of their own; ``instructions only``: one server for everyone);
* ``labelconfig``: parsing the label config, validating pulled results, the expert's config;
* ``tasks``: the task format (blinded payloads, instructions) and reconciling an export with the store;
* ``server``: the supervisor of the embedded server processes (``server.fleet``: one per person);
* ``accounts``: each person's login (an account with a generated password, the access sheet);
* ``http``: the one HTTP client policy (no proxies: they would see the token).

Nothing here imports the SDK or httpx at import time (``annotate --help`` stays fast).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from annotate.columns import BLINDING_INSTRUCTIONS, BLINDING_TECHNICAL
from annotate.errors import LabelStudioError, WorkspaceError

if TYPE_CHECKING:
    from annotate.config import Workspace


class Gateway(Protocol):
    """The Label Studio operations the pipeline uses. Plain dicts and ints in and out.

    Failures raise ``LabelStudioError``; an import whose outcome is unknown (timeout) raises
    ``gateway.ImportOutcomeUnknown`` and must be followed by re-reading the project.
    """

    url: str

    def whoami(self) -> dict[str, Any]: ...

    def validate_config(self, label_config: str) -> None: ...

    def find_user(self, email: str) -> int | None: ...

    def create_user(self, email: str, *, first_name: str | None = None) -> int: ...

    def create_project(
        self, *, title: str, label_config: str, instructions: str, maximum_annotations: int = 1
    ) -> int: ...

    def task_count(self, project_id: int) -> int: ...

    def task_ids_by_ext_id(self, project_id: int) -> dict[str, int]: ...

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> list[int]: ...

    def export_tasks(
        self, project_id: int, ids: list[int] | None = None, *, annotated_only: bool = False
    ) -> list[dict[str, Any]]: ...

    def changed_task_ids(self, project_id: int, since: str) -> list[int]: ...

    def server_time(self) -> str: ...

    def create_annotation(
        self,
        task_id: int,
        result: list[dict[str, Any]],
        *,
        completed_by: int,
        lead_time: float | None = None,
        was_cancelled: bool = False,
        unique_id: str | None = None,
    ) -> int: ...

    def close(self) -> None: ...


#: Where a project lives: on the workspace's one shared server, or on its person's own server.
SHARED = "shared"
OWN = "own"
#: How a round's reviewers were kept apart (design.json ``blinding``; ``annotate.columns``).
TECHNICAL = BLINDING_TECHNICAL
INSTRUCTIONS_ONLY = BLINDING_INSTRUCTIONS


class Connect(Protocol):
    """How the pipeline reaches Label Studio for a workspace (tests pass a factory of fakes).

    ``owner`` None: the workspace's shared server; a pseudonym: that person's own server.
    """

    def __call__(self, ws: Workspace, owner: str | None = None, /) -> Gateway: ...


def blinding(ws: Workspace) -> str:
    """How a round routed now to a server is blinded: ``technical`` when every person gets a
    server of their own (the embedded servers, the default), else ``instructions only``."""
    from annotate.config import label_studio_settings

    return TECHNICAL if label_studio_settings(ws).isolated else INSTRUCTIONS_ONLY


def connect(ws: Workspace, owner: str | None = None, /) -> Gateway:
    """The gateway to this workspace's Label Studio: the shared server, or ``owner``'s own.

    Shared: $ANNOTATE_LS_URL (or ``[labelstudio] url`` in annotate.toml) with $ANNOTATE_LS_TOKEN,
    else the shared embedded server. Own: the embedded server of that person. Either embedded
    server's URL and admin token come from its 0600 secrets file.
    """
    from annotate.config import label_studio_settings
    from annotate.labelstudio.gateway import LabelStudioGateway

    if owner is not None:
        return _own_gateway(ws, owner)
    conf = label_studio_settings(ws)
    if conf.url:
        if not conf.token:
            raise WorkspaceError(
                f"Label Studio is set to {conf.url} but ANNOTATE_LS_TOKEN is not set. "
                "Export the server's API token as ANNOTATE_LS_TOKEN."
            )
        return LabelStudioGateway(conf.url, conf.token)
    from annotate.labelstudio import server

    status = server.server_status(ws.ls_data_dir)
    if not status.running or not status.url:
        raise LabelStudioError(
            "the shared Label Studio is not running for this workspace. Start it with `annotate ls start`, "
            "or point to a server with ANNOTATE_LS_URL and ANNOTATE_LS_TOKEN (air-gapped: route --to-file)."
        )
    creds = server.read_secrets(ws.ls_data_dir / server.SECRETS_NAME)
    return LabelStudioGateway(status.url, creds.token)


def _own_gateway(ws: Workspace, owner: str) -> Gateway:
    from annotate.labelstudio import server
    from annotate.labelstudio.gateway import LabelStudioGateway
    from annotate.labelstudio.server import fleet

    person = fleet.person_server(ws.person_servers_dir, owner)
    if person is None:
        raise LabelStudioError(
            f"{owner} has no Label Studio server of their own yet. Start the servers with `annotate ls start` "
            "(it makes one for every registered reviewer and expert), or, for a round worked in files, add "
            "--to-file to write the tasks to a file instead (`annotate adjudicate --round R --expert E1 --to-file`)."
        )
    status = server.server_status(person.data_dir)
    if not status.running or not status.url:
        raise LabelStudioError(
            f"{owner}'s Label Studio is not running. Start the servers with `annotate ls start`, or add --to-file "
            "to work the round in files."
        )
    creds = server.read_secrets(person.data_dir / server.SECRETS_NAME)
    return LabelStudioGateway(status.url, creds.token)


#: Seconds a command waits for a person's stopped server to start.
START_TIMEOUT = 300.0


def own_server(ws: Workspace, owner: str) -> Any:
    """``owner``'s embedded server (``fleet.PersonServer``) when the workspace runs one per person and it
    has been made; None otherwise (an external or shared server, or a test's fake)."""
    from annotate.config import label_studio_settings
    from annotate.labelstudio.server import fleet

    conf = label_studio_settings(ws)
    if conf.url or not conf.one_server_per_person:
        return None
    return fleet.person_server(ws.person_servers_dir, owner)


def hold_server(server: Any, *, timeout: float, say: Any = None) -> Any:
    """``fleet.hold``: the server held in use by a command, started first when stopped."""
    from annotate.labelstudio.server import fleet

    return fleet.hold(server, timeout=timeout, say=say)


@contextmanager
def session(connect_to: Connect, ws: Workspace, owner: str | None = None) -> Iterator[Gateway]:
    """A gateway that is closed when the block ends."""
    gw = connect_to(ws, owner)
    try:
        yield gw
    finally:
        gw.close()
