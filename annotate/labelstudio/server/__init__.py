"""Start, stop and inspect a local Label Studio server for one workspace.

``annotate`` runs Label Studio Community as a child process (``label-studio start``) bound to
loopback, with a fixed admin account whose legacy API token we generate ourselves. The facts this
package relies on are in ``docs/labelstudio.md`` (sections 1-4); the ones that shape the code:

* ``--host`` is only a URL prefix; the socket binds to ``--internal-host`` (default ``0.0.0.0``),
  so we always pass ``--internal-host``.
* Without ``--debug`` a busy port makes LS silently start on PORT+1..PORT+1000. We pass
  ``--debug`` (its only effect is to skip that hop; Django ``DEBUG`` stays off) and check the port
  ourselves, so a busy port is an error instead of a server somewhere else.
* ``LABEL_STUDIO_USER_TOKEN`` is applied only when the admin is first created, so the token we
  generate at first start must be stored and reused forever; a different one gets 401.
* LS reads every setting as ``LABEL_STUDIO_X``, then ``HEARTEX_X``, then bare ``X``. A ``DEBUG``,
  ``HOST`` or ``DJANGO_DB`` in the caller's shell would leak in, so the child gets an environment
  built from an allow-list plus pinned ``LABEL_STUDIO_*`` values (``server_env``).
* Readiness is ``GET /health`` (no auth, no DB) followed by ``whoami`` with the token, which proves
  the DB, the token and the legacy-token setting together.

Layout of a data dir (LS's own files plus the four ``annotate`` adds)::

    DATA_DIR/                     mode 0700
        label_studio.sqlite3      LS database (0600 thanks to umask 077)
        .env                      LS SECRET_KEY (LS creates it, 0600)
        media/ export/ ...        LS uploads and export snapshots
        annotate-secrets.json     admin e-mail, password, token (0600) -- see SECRETS_NAME
        annotate-server.pid       JSON: pid, host, port, url of the running server (0600)
        .annotate-start.lock      flock() held while a start is in progress
        server.log                stdout+stderr of the server (0600; rotated once at 10 MB)

The secrets file lives *inside* the data dir on purpose: the SQLite file already holds the token in
clear (DRF stores it unhashed), so it adds no exposure, and a copy of the directory (backup, or a
"golden" pre-migrated dir used by tests, see ``seed_from``) carries the token that matches its
database.

Modules, each depending only on those above it:

* ``secrets``: the 0600 secrets file, token format, private atomic writes;
* ``env``: the child's environment allow-list, argv and executable, ``redact``;
* ``procnet``: ``/proc`` process and socket checks, ``port_in_use``;
* ``files``: pid file, start lock, server log;
* ``lifecycle``: ``start_server``, ``stop_server``, ``server_status``.

This package re-exports their public names (``__all__``).

POSIX only (sessions, signals, umask); the ``/proc`` checks are Linux-specific and degrade to
warnings elsewhere. The HTTP probes use the client policy of ``annotate.labelstudio.http``,
imported lazily so that importing this package does not import httpx.
"""

from __future__ import annotations

from annotate.labelstudio.server.env import (
    ENV_LS_BIN,
    SQLITE_NAME,
    find_label_studio,
    label_studio_version,
    redact,
    server_command,
    server_env,
)
from annotate.labelstudio.server.files import LOG_NAME, PID_NAME
from annotate.labelstudio.server.lifecycle import (
    AlreadyRunningError,
    PortInUseError,
    ServerInfo,
    ServerStatus,
    server_status,
    start_server,
    stop_server,
)
from annotate.labelstudio.server.procnet import ListenSocket, parse_proc_net_tcp, port_in_use
from annotate.labelstudio.server.secrets import (
    DEFAULT_ADMIN_EMAIL,
    DOOR_HEADER,
    SECRETS_NAME,
    Secrets,
    create_secrets,
    door_key,
    is_valid_token,
    read_secrets,
)

__all__ = [
    "DEFAULT_ADMIN_EMAIL",
    "DOOR_HEADER",
    "ENV_LS_BIN",
    "LOG_NAME",
    "PID_NAME",
    "SECRETS_NAME",
    "SQLITE_NAME",
    "AlreadyRunningError",
    "ListenSocket",
    "PortInUseError",
    "Secrets",
    "ServerInfo",
    "ServerStatus",
    "create_secrets",
    "door_key",
    "find_label_studio",
    "is_valid_token",
    "label_studio_version",
    "parse_proc_net_tcp",
    "port_in_use",
    "read_secrets",
    "redact",
    "server_command",
    "server_env",
    "server_status",
    "start_server",
    "stop_server",
]
