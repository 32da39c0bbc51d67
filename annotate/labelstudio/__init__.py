"""The Label Studio room: the only package that talks HTTP, and everything that knows Label Studio.

* :class:`Gateway`: what the pipeline asks of a Label Studio server (a Protocol; the real one is
  ``gateway.LabelStudioGateway``, tests use an in-memory fake);
* :func:`connect`: the gateway for a workspace ($ANNOTATE_LS_URL + $ANNOTATE_LS_TOKEN, else the
  embedded server started with `annotate ls start`);
* ``labelconfig``: parsing the label config, validating pulled results, the expert's config;
* ``tasks``: the task format (blinded payloads, instructions) and reconciling an export with the store;
* ``server``: the supervisor of the embedded server process;
* ``http``: the one HTTP client policy (no proxies: they would see the token).

Nothing here imports the SDK or httpx at import time (``annotate --help`` stays fast).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

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

    def create_user(self, email: str, *, first_name: str | None = None) -> int: ...

    def invite_link(self) -> str: ...

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


#: How the pipeline reaches Label Studio for a workspace (tests pass a factory of fakes).
Connect = Callable[["Workspace"], Gateway]


def connect(ws: Workspace) -> Gateway:
    """The gateway to this workspace's Label Studio.

    $ANNOTATE_LS_URL (or ``[labelstudio] url`` in annotate.toml) with $ANNOTATE_LS_TOKEN, else the
    embedded server of the workspace (its URL and token from its 0600 secrets file).
    """
    from annotate.config import label_studio_settings
    from annotate.labelstudio.gateway import LabelStudioGateway

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
            "Label Studio is not running for this workspace. Start it with `annotate ls start`, "
            "or point to a server with ANNOTATE_LS_URL and ANNOTATE_LS_TOKEN (air-gapped: route --to-file)."
        )
    creds = server.read_secrets(ws.ls_data_dir / server.SECRETS_NAME)
    return LabelStudioGateway(status.url, creds.token)


@contextmanager
def session(connect_to: Connect, ws: Workspace) -> Iterator[Gateway]:
    """A gateway that is closed when the block ends."""
    gw = connect_to(ws)
    try:
        yield gw
    finally:
        gw.close()
