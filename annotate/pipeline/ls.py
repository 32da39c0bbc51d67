"""`annotate ls`: the workspace's embedded Label Studio server (start, stop, status).

The server binds 127.0.0.1 unless told otherwise; its admin password and API token live in a
0600 secrets file under ``.annotate/labelstudio/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotate.config import label_studio_settings

if TYPE_CHECKING:
    from annotate.config import Workspace
    from annotate.labelstudio.server import ServerInfo

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def start(ws: Workspace, *, host: str, port: int, timeout: float) -> ServerInfo:
    from annotate.labelstudio import server

    return server.start_server(ws.ls_data_dir, host=host, port=port, timeout=timeout)


def stop(ws: Workspace) -> bool:
    """True when a running server was stopped."""
    from annotate.labelstudio import server

    return bool(server.stop_server(ws.ls_data_dir))


@dataclass
class LsStatus:
    running: bool
    url: str | None
    pid: int | None
    healthy: bool
    authenticated: bool
    admin_email: str | None
    secrets_file: str
    external_server: str | None  # $ANNOTATE_LS_URL / [labelstudio] url: then nothing is started here
    detail: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def status(ws: Workspace) -> LsStatus:
    from annotate.labelstudio import server

    st = server.server_status(ws.ls_data_dir)
    return LsStatus(
        running=st.running,
        url=st.url,
        pid=st.pid,
        healthy=st.healthy,
        authenticated=st.authenticated,
        admin_email=st.admin_email,
        secrets_file=str(ws.ls_data_dir / server.SECRETS_NAME),
        external_server=label_studio_settings(ws).url,
        detail=st.detail,
    )
