"""Start, stop and inspect a local Label Studio server for one workspace.

``annotate`` runs Label Studio Community as a child process (``label-studio start``) bound to
loopback, with a fixed admin account whose legacy API token we generate ourselves. The facts this
module relies on are in ``docs/labelstudio.md`` (sections 1-4); the ones that shape the code:

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

POSIX only (sessions, signals, umask); the ``/proc`` checks are Linux-specific and degrade to
warnings elsewhere. ``httpx`` is imported lazily so that importing this module stays cheap.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import re
import secrets as _secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from annotate.errors import LabelStudioError, WorkspaceError

if TYPE_CHECKING:  # pragma: no cover
    import httpx

__all__ = [
    "DEFAULT_ADMIN_EMAIL",
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

#: Environment variable that overrides where the ``label-studio`` executable is looked up.
ENV_LS_BIN = "ANNOTATE_LS_BIN"
DEFAULT_ADMIN_EMAIL = "admin@annotate.local"
SECRETS_NAME = "annotate-secrets.json"
PID_NAME = "annotate-server.pid"
LOG_NAME = "server.log"
SQLITE_NAME = "label_studio.sqlite3"
_LOCK_NAME = ".annotate-start.lock"
_SECRETS_FORMAT = 1
_TOKEN_RE = re.compile(r"[0-9a-f]{40}")
_LOG_TAIL_LINES = 20
_LOG_ROTATE_BYTES = 10 * 1024 * 1024
_STOP_TIMEOUT = 15.0
_REDACTED = "[REDACTED]"

# Variables of the caller's environment that the server may see. Everything else is dropped: not
# only DEBUG/HOST/DJANGO_DB (read by LS as fallbacks), but also PYTHONPATH/PYTHONHOME (would load
# the caller's packages into LS's interpreter), DJANGO_SETTINGS_MODULE (LS only setdefault()s it),
# proxies and cloud credentials (LS must never talk to the network).
_ENV_ALLOW = frozenset({"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR"})
_ENV_ALLOW_PREFIXES = ("LC_",)

# Processes started by this interpreter, so stop_server() can reap them (a stopped child that is
# never wait()ed stays a zombie, still "alive" for kill(pid, 0), and Popen warns when collected).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


class PortInUseError(LabelStudioError):
    """The requested port is taken; Label Studio was not started (no hop to another port)."""


class AlreadyRunningError(LabelStudioError):
    """A Label Studio server already runs on this data dir; a second one was not started."""


# --------------------------------------------------------------------------------------------
# Data classes
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Secrets:
    """Admin credentials of one data dir. ``repr()`` shows only the e-mail."""

    admin_email: str
    password: str = field(repr=False)
    token: str = field(repr=False)


@dataclass(frozen=True)
class ListenSocket:
    """One listening TCP socket, as parsed from ``/proc/net/tcp`` or ``/proc/net/tcp6``."""

    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    port: int
    inode: int


@dataclass(frozen=True)
class ServerInfo:
    """A server that ``start_server`` started and found ready.

    The token is deliberately not a plain field: call ``token()`` (or ``read_secrets``). ``secrets``
    is excluded from ``repr()``/``str()`` so that logging this object cannot leak it.
    """

    url: str
    pid: int
    host: str
    port: int
    data_dir: Path
    log_path: Path
    secrets_path: Path
    admin_email: str
    #: Seconds from process start to a successful ``whoami``.
    startup_seconds: float
    secrets: Secrets = field(repr=False, compare=False)
    #: True when the data dir was copied from ``seed_from`` by this call.
    seeded: bool = False
    #: Non-fatal problems worth showing to the user (non-loopback bind, loose file modes, ...).
    warnings: tuple[str, ...] = ()

    def token(self) -> str:
        """The admin's legacy API token (``Authorization: Token <token>``)."""
        return self.secrets.token


@dataclass(frozen=True)
class ServerStatus:
    """What ``server_status`` found for one data dir. Holds no secret."""

    data_dir: Path
    running: bool
    pid: int | None = None
    url: str | None = None
    admin_email: str | None = None
    #: ``GET /health`` answered 200.
    healthy: bool = False
    #: ``GET /api/current-user/whoami`` with the stored token answered 200.
    authenticated: bool = False
    log_path: Path | None = None
    #: Why the server is considered not running or not usable, when that is known.
    detail: str | None = None


# --------------------------------------------------------------------------------------------
# Pure helpers (unit-tested without a server)
# --------------------------------------------------------------------------------------------


def is_valid_token(token: object) -> bool:
    """True for exactly 40 lowercase hex characters (the format we generate).

    ``fullmatch`` rather than ``^...$``: ``$`` also matches before a trailing newline, and a token
    with ``\\n`` would end up in an HTTP header.
    """
    return isinstance(token, str) and _TOKEN_RE.fullmatch(token) is not None


def server_env(
    *,
    data_dir: Path,
    host: str,
    port: int,
    secrets: Secrets,
    base_env: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Build the complete environment of the ``label-studio`` child process.

    ``base_env`` (default ``os.environ``) contributes only allow-listed, harmless variables
    (``PATH``, ``HOME``, locale, ...). Then every setting that matters is pinned under its
    ``LABEL_STUDIO_`` name, which LS reads before ``HEARTEX_X`` and bare ``X``. ``extra`` is applied
    last, for deliberate additions such as ``LABEL_STUDIO_TASK_LOCK_TTL``.

    Secrets travel only here, never in argv (argv is world-readable in ``ps``; the environment is
    readable only by the same user).
    """
    if not is_valid_token(secrets.token):
        raise ValueError("the API token must be 40 lowercase hex characters")
    if base_env is None:
        base_env = os.environ
    env = {k: v for k, v in base_env.items() if k in _ENV_ALLOW or k.startswith(_ENV_ALLOW_PREFIXES)}
    data_dir = Path(data_dir)
    allowed_hosts = ["127.0.0.1", "localhost"]
    if host not in allowed_hosts and host != "0.0.0.0":
        # Django rejects a Host header not in ALLOWED_HOSTS with 400; a deliberately exposed
        # server must at least accept its own address.
        allowed_hosts.append(host)
    env.update(
        {
            "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir),
            "LABEL_STUDIO_DATABASE_NAME": str(data_dir / SQLITE_NAME),
            "LABEL_STUDIO_DJANGO_DB": "sqlite",
            "LABEL_STUDIO_USERNAME": secrets.admin_email,
            "LABEL_STUDIO_PASSWORD": secrets.password,
            "LABEL_STUDIO_USER_TOKEN": secrets.token,
            # Read at organisation creation only; new orgs otherwise refuse legacy tokens (401).
            # LS reads this one through get_bool_env('LABEL_STUDIO_ENABLE_...'), i.e. the bare
            # name is the third candidate; we set it and also pass --enable-legacy-api-token.
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
            "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
            "LABEL_STUDIO_LATEST_VERSION_CHECK": "false",  # else a PyPI call at import
            "LABEL_STUDIO_COLLECT_ANALYTICS": "false",  # else a telemetry thread
            # A Sentry DSN is hard-coded in LS settings; an empty value disables it. Pin both the
            # prefixed name (looked up first) and the bare one.
            "LABEL_STUDIO_SENTRY_DSN": "",
            "SENTRY_DSN": "",
            "LABEL_STUDIO_FRONTEND_SENTRY_DSN": "",
            "FRONTEND_SENTRY_DSN": "",
            "LABEL_STUDIO_ALLOWED_HOSTS": ",".join(allowed_hosts),
            "LABEL_STUDIO_CORS_ALLOW_ALL_ORIGINS": "false",
            "LABEL_STUDIO_DEBUG": "false",
            "LABEL_STUDIO_HOST": "",  # relative URLs; also stops a bare HOST from leaking in
            "LABEL_STUDIO_PORT": str(port),
            "LABEL_STUDIO_CONVERTER_DOWNLOAD_RESOURCES": "false",
            # base.py reads the bare LOG_LEVEL (default DEBUG for some loggers); at DEBUG Django
            # logs SQL with parameters, which would put the token into server.log.
            "LABEL_STUDIO_LOG_LEVEL": "WARNING",
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",  # so server.log is current when we report a crash
        }
    )
    if extra:
        env.update(extra)
    return env


def server_command(exe: Path | str, *, host: str, port: int, data_dir: Path) -> list[str]:
    """The argv of the server. Contains no secret (see ``server_env``)."""
    return [
        str(exe),
        "start",
        "--no-browser",
        "--internal-host",
        host,
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        "--debug",  # only effect: no silent hop to PORT+1 when the port is busy
        "--enable-legacy-api-token",
    ]


_REDACT_PATTERNS = (
    # Authorization headers and "Token <key>" / "Bearer <jwt>" anywhere.
    re.compile(r"(?i)\b((?:token|bearer)\s+)[A-Za-z0-9._~+/=-]{8,}"),
    # key=value pairs in URLs, cookies, env dumps: ?token=..., sessionid=..., PASSWORD=...
    re.compile(
        r"(?i)\b((?:[a-z_]*token|[a-z_]*password|passwd|secret(?:_key)?|sessionid|csrftoken"
        r"|api_key)[\"']?\s*[=:]\s*[\"']?)[^\s&;,\"']+"
    ),
)


def redact(text: str, known: Iterable[str] = ()) -> str:
    """Replace secrets in ``text``: every string in ``known`` and anything shaped like one."""
    for s in known:
        if s:
            text = text.replace(s, _REDACTED)
    for pat in _REDACT_PATTERNS:
        text = pat.sub(lambda m: m.group(1) + _REDACTED, text)
    return text


def _decode_proc_addr(hex_addr: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    # /proc/net/tcp prints addresses as host-endian 32-bit words (little-endian on x86/ARM).
    raw = bytes.fromhex(hex_addr)
    words = [raw[i : i + 4] for i in range(0, len(raw), 4)]
    if sys.byteorder == "little":
        words = [w[::-1] for w in words]
    packed = b"".join(words)
    return ipaddress.ip_address(packed)


def parse_proc_net_tcp(text: str) -> list[ListenSocket]:
    """Listening sockets (state ``0A``) in the content of ``/proc/net/tcp`` or ``tcp6``."""
    out: list[ListenSocket] = []
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) < 10 or parts[3] != "0A":
            continue
        addr_hex, _, port_hex = parts[1].partition(":")
        try:
            out.append(ListenSocket(_decode_proc_addr(addr_hex), int(port_hex, 16), int(parts[9])))
        except ValueError:
            continue
    return out


# --------------------------------------------------------------------------------------------
# Locating the executable
# --------------------------------------------------------------------------------------------


def find_label_studio() -> Path:
    """Path of the ``label-studio`` executable.

    Order: ``$ANNOTATE_LS_BIN``; next to ``sys.executable`` (``pip install 'annotate[server]'``
    puts both into one venv, which need not be on PATH); then ``PATH``.
    """
    override = os.environ.get(ENV_LS_BIN)
    if override:
        p = Path(override).expanduser()
        if p.is_file() and os.access(p, os.X_OK):
            return p
        raise LabelStudioError(
            f"{ENV_LS_BIN} is set to {override}, which is not an executable file. "
            f"Point it at the label-studio executable or unset it."
        )
    # Not resolve(): a venv's python is often a symlink to /usr/bin/python3, and the script we
    # want sits in the venv's bin directory, next to the symlink.
    beside = Path(sys.executable).parent / "label-studio"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("label-studio")
    if found:
        return Path(found)
    raise LabelStudioError(
        "The Label Studio server is not installed. Install it into this environment with "
        "pip install 'annotate[server]', or set "
        f"{ENV_LS_BIN} to the path of a label-studio executable."
    )


def label_studio_version(exe: Path | None = None) -> str | None:
    """Version of the Label Studio installed with ``exe``, or None if it cannot be told.

    Read from the ``label_studio-*.dist-info`` next to the executable. Never runs
    ``label-studio --version``: that command sets Django up, *migrates the default data dir*
    (``~/.local/share/label-studio``) and takes minutes.
    """
    exe = exe or find_label_studio()
    for bindir in {exe.parent, exe.resolve().parent}:
        for dist in sorted(bindir.parent.glob("lib/python*/site-packages/label_studio-*.dist-info")):
            version = dist.name[len("label_studio-") : -len(".dist-info")]
            if version:
                return version
    # Fallback: ask the interpreter named in the script's shebang (fast, no Django).
    try:
        first = exe.read_bytes()[:256].split(b"\n", 1)[0].decode()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    interp = first[2:].strip().split()
    try:
        res = subprocess.run(
            [*interp, "-c", "import importlib.metadata as m; print(m.version('label-studio'))"],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
            env={k: v for k, v in os.environ.items() if k in _ENV_ALLOW},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if res.returncode != 0:
        return None
    return res.stdout.strip() or None


# --------------------------------------------------------------------------------------------
# Secrets file
# --------------------------------------------------------------------------------------------


def _write_private_file(path: Path, data: bytes, *, replace: bool) -> None:
    """Write ``data`` to ``path`` with mode 0600, atomically.

    The file is created with ``O_CREAT|O_EXCL`` and mode 0600 (a temp name first), so it is never
    readable by others, whatever the umask, not even for an instant. ``replace=False`` publishes
    it with ``link()``, which fails if ``path`` already exists (no clobbering, race-free).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{_secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def create_secrets(path: Path, admin_email: str = DEFAULT_ADMIN_EMAIL) -> Secrets:
    """Generate admin credentials and store them in a new 0600 file at ``path``.

    Raises ``WorkspaceError`` if the file already exists: a token is applied only at the first
    start of a data dir, so silently replacing it would lock us out (401).
    """
    s = Secrets(
        admin_email=admin_email,
        password=_secrets.token_urlsafe(24),
        token=_secrets.token_hex(20),  # 40 hex chars; DRF's key column holds at most 40
    )
    payload = {
        "format": _SECRETS_FORMAT,
        "admin_email": s.admin_email,
        "admin_password": s.password,
        "token": s.token,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    try:
        _write_private_file(path, (json.dumps(payload, indent=2) + "\n").encode(), replace=False)
    except FileExistsError:
        raise WorkspaceError(
            f"{path} already exists; refusing to overwrite it (its token is the only one the "
            f"Label Studio database accepts)."
        ) from None
    return s


def read_secrets(path: Path) -> Secrets:
    """Load and check the admin credentials stored at ``path``."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorkspaceError(f"The Label Studio secrets file {path} does not exist.") from None
    except (OSError, ValueError) as e:
        raise WorkspaceError(
            f"The Label Studio secrets file {path} cannot be read ({type(e).__name__}). "
            f"Restore it from a backup of the workspace."
        ) from None
    if not isinstance(raw, dict) or not all(
        isinstance(raw.get(k), str) and raw.get(k) for k in ("admin_email", "admin_password")
    ):
        raise WorkspaceError(f"The Label Studio secrets file {path} is incomplete.")
    if not is_valid_token(raw.get("token")):
        raise WorkspaceError(
            f"The Label Studio secrets file {path} holds a malformed token (expected 40 lowercase hex characters)."
        )
    return Secrets(raw["admin_email"], raw["admin_password"], raw["token"])


# --------------------------------------------------------------------------------------------
# Processes, ports, sockets
# --------------------------------------------------------------------------------------------


def _proc_cmdline(pid: int) -> list[str] | None:
    """argv of ``pid``; None if it does not exist (or is a zombie, whose cmdline is empty)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return None
        # No procfs (macOS): ps prints the command line space-joined, good enough for our checks.
        try:
            res = subprocess.run(
                ["ps", "-o", "command=", "-p", str(pid)],
                check=False,
                capture_output=True,
                text=True,
                timeout=5,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return res.stdout.split() or None
    except OSError:
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a] or None


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # Field 3, after the parenthesised command name (which may itself contain spaces/parens).
    return stat[stat.rfind(")") + 2 :].startswith("Z")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return not _is_zombie(pid)


def _is_server_for(pid: int, data_dir: Path) -> bool:
    """True if ``pid`` is a live ``label-studio start`` serving ``data_dir``.

    Checked before any signal: a stale pid file may name a recycled pid that now belongs to an
    unrelated process.
    """
    args = _proc_cmdline(pid)
    if not args or not _pid_alive(pid):
        return False
    # argv is "[python] /path/label-studio start ..." (the script runs through its shebang).
    if not any(Path(a).name == "label-studio" for a in args[:3]) or "start" not in args:
        return False
    try:
        given = args[args.index("--data-dir") + 1]
    except (ValueError, IndexError):
        return False
    return Path(given).resolve() == data_dir.resolve()


def _scan_servers_for(data_dir: Path) -> list[int]:
    """Pids of label-studio servers using ``data_dir``, found by scanning /proc (Linux only).

    Catches a server that was started by hand or whose pid file was deleted.
    """
    proc = Path("/proc")
    if not (proc / "self").exists():
        return []
    target = str(data_dir.resolve())
    pids = []
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            raw = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if b"label-studio" in raw and target.encode() in raw and _is_server_for(int(d.name), data_dir):
            pids.append(int(d.name))
    return pids


def _pid_sockets(pid: int) -> set[int] | None:
    """Socket inodes held by ``pid``; None when /proc/PID/fd is not readable."""
    fd_dir = Path(f"/proc/{pid}/fd")
    inodes = set()
    try:
        entries = list(fd_dir.iterdir())
    except OSError:
        return None
    for fd in entries:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _listeners(port: int) -> list[ListenSocket] | None:
    """Listening TCP sockets on ``port`` (IPv4 and IPv6); None without /proc/net/tcp."""
    found: list[ListenSocket] = []
    seen_any = False
    for name in ("tcp", "tcp6"):
        try:
            text = Path(f"/proc/net/{name}").read_text()
        except OSError:
            continue
        seen_any = True
        found.extend(s for s in parse_proc_net_tcp(text) if s.port == port)
    return found if seen_any else None


def port_in_use(host: str, port: int) -> bool:
    """True if a TCP server could not be started on ``host:port`` right now.

    Two probes, because each misses cases: ``bind`` (with ``SO_REUSEADDR``, as Django's server
    uses, so a TIME_WAIT leftover does not count as busy) catches any socket bound there,
    listening or not; ``connect`` catches a listener this bind would not collide with (e.g. on
    another address family).
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return True
            if e.errno == errno.EADDRNOTAVAIL:
                raise LabelStudioError(
                    f"{host} is not an address of this machine; cannot serve Label Studio on it."
                ) from None
            if e.errno == errno.EACCES:
                raise LabelStudioError(
                    f"Not allowed to listen on port {port} (ports below 1024 need privileges). "
                    f"Choose a port of 1024 or more."
                ) from None
            raise
    probe_host = "127.0.0.1" if host == "0.0.0.0" else host
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex((probe_host, port)) == 0


def _normalize_host(host: str) -> str:
    # Only IPv4 literals: LS passes "host:port" to runserver, which mangles IPv6 literals, and a
    # host name would bind to whatever DNS says at that moment.
    if host == "localhost":
        return "127.0.0.1"
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        raise LabelStudioError(f"Invalid host {host!r}: give an IPv4 address such as 127.0.0.1.") from None
    if addr.version != 4:
        raise LabelStudioError(f"Invalid host {host!r}: only IPv4 addresses are supported.")
    return str(addr)


def _url_for(host: str, port: int) -> str:
    return f"http://{'127.0.0.1' if host == '0.0.0.0' else host}:{port}"


# --------------------------------------------------------------------------------------------
# Pid file, lock, log
# --------------------------------------------------------------------------------------------


def _read_pidfile(data_dir: Path) -> dict | None:
    try:
        raw = json.loads((data_dir / PID_NAME).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("pid"), int):
        return None
    return raw


def _remove_pidfile(data_dir: Path, pid: int | None = None) -> None:
    info = _read_pidfile(data_dir)
    if pid is not None and info is not None and info.get("pid") != pid:
        return  # another server's pid file; not ours to remove
    try:
        (data_dir / PID_NAME).unlink()
    except FileNotFoundError:
        pass


def _running_server(data_dir: Path) -> tuple[int, str | None] | None:
    """(pid, url) of a live server on ``data_dir``, from the pid file or a /proc scan."""
    info = _read_pidfile(data_dir)
    if info is not None and _is_server_for(info["pid"], data_dir):
        return info["pid"], info.get("url")
    pids = _scan_servers_for(data_dir)
    if pids:
        return pids[0], None
    return None


@contextmanager
def _start_lock(data_dir: Path) -> Iterator[None]:
    """Serialise concurrent ``start_server`` calls on one data dir (two CLI invocations)."""
    import fcntl

    fd = os.open(data_dir / _LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LabelStudioError(
                f"Another process is starting Label Studio on {data_dir} right now. "
                f"Wait for it, then check with the status command."
            ) from None
        yield
    finally:
        os.close(fd)  # releases the lock


def _open_log(log_path: Path) -> tuple[int, int]:
    """Open ``server.log`` for appending (0600); return (fd, offset where this run starts)."""
    try:
        if log_path.stat().st_size > _LOG_ROTATE_BYTES:
            os.replace(log_path, log_path.with_name(log_path.name + ".1"))
    except FileNotFoundError:
        pass
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    offset = os.fstat(fd).st_size
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    os.write(fd, f"--- annotate: starting Label Studio at {stamp} ---\n".encode())
    return fd, offset


def _log_tail(log_path: Path, offset: int, known: Iterable[str]) -> str:
    """The last lines this run wrote to the log, redacted, indented for an error message."""
    try:
        with open(log_path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(offset, size - 64 * 1024))
            text = f.read().decode(errors="replace")
    except OSError:
        return "    (the server log could not be read)"
    lines = [ln for ln in text.splitlines() if ln.strip()][-_LOG_TAIL_LINES:]
    if not lines:
        return "    (the server wrote nothing)"
    return "\n".join("    " + ln for ln in redact("\n".join(lines), known).splitlines())


# --------------------------------------------------------------------------------------------
# Stopping
# --------------------------------------------------------------------------------------------


def _signal(pid: int, sig: int) -> None:
    # We start the server as a session (and group) leader; signalling the group also reaches any
    # helper it may fork. A pid that does not lead its group gets the signal alone.
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _wait_exit(pid: int, timeout: float) -> bool:
    """Wait until ``pid`` is gone (reaping it if it is our child). True if it exited."""
    deadline = time.monotonic() + timeout
    while True:
        child = _CHILDREN.get(pid)
        if child is not None:
            if child.poll() is not None:
                _CHILDREN.pop(pid, None)
                return True
        else:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    return True
            except ChildProcessError:
                pass  # not our child: its parent (or init) reaps it
            if not _pid_alive(pid):
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def _terminate(pid: int, timeout: float = _STOP_TIMEOUT) -> None:
    """SIGTERM, wait, then SIGKILL. Caller must have checked that ``pid`` is our server."""
    _signal(pid, signal.SIGTERM)
    if not _wait_exit(pid, timeout):
        # Killing mid-write is safe enough: SQLite rolls the journal back on the next open, and
        # interrupted migrations resume (docs/labelstudio.md section 3).
        _signal(pid, signal.SIGKILL)
        _wait_exit(pid, 5.0)


def stop_server(data_dir: Path, *, timeout: float = _STOP_TIMEOUT) -> bool:
    """Stop the server recorded in ``data_dir``'s pid file.

    Sends SIGTERM (SIGKILL after ``timeout`` seconds) only after checking that the pid is a
    ``label-studio start`` for this data dir. Returns False if nothing was running; a stale pid
    file is removed either way.
    """
    data_dir = Path(data_dir).resolve()
    info = _read_pidfile(data_dir)
    if info is None:
        return False
    pid = info["pid"]
    if not _is_server_for(pid, data_dir):
        # Reap our own dead child, if it is one, so it does not linger as a zombie.
        child = _CHILDREN.pop(pid, None)
        if child is not None:
            child.poll()
        _remove_pidfile(data_dir, pid)
        return False
    _terminate(pid, timeout)
    _remove_pidfile(data_dir, pid)
    return True


# --------------------------------------------------------------------------------------------
# HTTP checks
# --------------------------------------------------------------------------------------------


def _http_client(timeout: float = 5.0) -> httpx.Client:
    import httpx

    # trust_env=False: with HTTP_PROXY set and 127.0.0.1 missing from NO_PROXY, httpx would send
    # our Authorization header to the proxy.
    return httpx.Client(timeout=timeout, trust_env=False, follow_redirects=False)


@dataclass(frozen=True)
class _Probe:
    healthy: bool  # GET /health answered 200
    whoami: int | None = None  # status of whoami with the token; None if not asked / no answer
    detail: str = ""  # DRF's "detail" of a 401/403 (never headers: they carry a session cookie)


def _probe(client: httpx.Client, url: str, token: str | None) -> _Probe:
    """One readiness probe. Never raises on transport errors."""
    import httpx

    try:
        if client.get(f"{url}/health/").status_code != 200:
            return _Probe(False)
        if token is None:
            return _Probe(True)
        r = client.get(f"{url}/api/current-user/whoami", headers={"Authorization": f"Token {token}"})
    except httpx.HTTPError:
        return _Probe(False)
    detail = ""
    if r.status_code in (401, 403):
        try:
            detail = str(r.json().get("detail", ""))[:200]
        except (ValueError, AttributeError):
            pass
    return _Probe(True, r.status_code, detail)


# --------------------------------------------------------------------------------------------
# Starting
# --------------------------------------------------------------------------------------------


def _seed_ignore(root: Path) -> Callable[[str, list[str]], list[str]]:
    """copytree filter: skip the seed's run-time files (log, pid file, lock), at top level only."""
    top = os.fspath(root)
    skip = {LOG_NAME, PID_NAME, _LOCK_NAME}

    def ignore(directory: str, names: list[str]) -> list[str]:
        if directory != top:
            return []
        return [n for n in names if n in skip or n.startswith(LOG_NAME + ".")]

    return ignore


def _copy_seed(seed_from: Path, data_dir: Path, secrets_path: Path) -> None:
    """Copy a migrated data dir (``cp -a`` semantics) into the not-yet-existing ``data_dir``."""
    seed_from = Path(seed_from).resolve()
    if not (seed_from / SQLITE_NAME).is_file() or not (seed_from / SECRETS_NAME).is_file():
        raise WorkspaceError(f"{seed_from} is not a usable seed: it needs {SQLITE_NAME} and {SECRETS_NAME}.")
    if _running_server(seed_from) is not None:
        # Copying a live SQLite file can capture a half-written page.
        raise WorkspaceError(f"A Label Studio server is running on the seed {seed_from}; stop it first.")
    seed_secrets = read_secrets(seed_from / SECRETS_NAME)
    external = secrets_path != data_dir / SECRETS_NAME
    if external and secrets_path.exists() and read_secrets(secrets_path).token != seed_secrets.token:
        raise WorkspaceError(f"{secrets_path} already holds a token that does not match the seed {seed_from}.")
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    # Copy beside the target, then rename: a crash mid-copy leaves no half data dir that a later
    # start would take for a real one.
    tmp = data_dir.with_name(f".{data_dir.name}.seed-{os.getpid()}-{_secrets.token_hex(4)}")
    try:
        shutil.copytree(
            seed_from,
            tmp,
            symlinks=True,  # copy2 + copystat: file and directory modes are preserved
            ignore=_seed_ignore(seed_from),
        )
        os.chmod(tmp, 0o700)
        try:
            os.rename(tmp, data_dir)
        except OSError:
            if not data_dir.exists():
                raise
            # Someone else seeded it concurrently; use theirs.
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if external and not secrets_path.exists():
        secrets_path.parent.mkdir(parents=True, exist_ok=True)
        _write_private_file(secrets_path, (seed_from / SECRETS_NAME).read_bytes(), replace=False)


def _mode_warnings(data_dir: Path, secrets_path: Path) -> list[str]:
    out = []
    for p in (secrets_path, data_dir / SQLITE_NAME):
        try:
            mode = p.stat().st_mode & 0o777
        except FileNotFoundError:
            continue
        if mode & 0o077:
            out.append(f"{p} is readable by other users (mode {mode:o}); it holds the admin token. Run: chmod 600 {p}")
    return out


def _verify_binding(pid: int, host: str, port: int) -> list[str]:
    """Check which addresses the server listens on; return warnings, raise if it is not ours."""
    listeners = _listeners(port)
    if listeners is None:
        return ["Could not verify the address Label Studio listens on (no /proc/net/tcp)."]
    inodes = _pid_sockets(pid)
    mine = [s for s in listeners if inodes is None or s.inode in inodes]
    if not mine:
        raise LabelStudioError(
            f"Port {port} answers, but not from the Label Studio process we started (pid {pid}); "
            f"another program took the port."
        )
    wanted = ipaddress.ip_address(host)
    warnings = []
    if wanted.is_loopback:
        exposed = sorted({str(s.address) for s in mine if not s.address.is_loopback})
        if exposed:
            warnings.append(
                f"Label Studio listens on {', '.join(exposed)}:{port}, not only on loopback; "
                f"other machines may reach it."
            )
    return warnings


def start_server(
    data_dir: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    timeout: float = 180.0,
    log: IO[str] | None = None,
    seed_from: Path | None = None,
    secrets_path: Path | None = None,
    admin_email: str = DEFAULT_ADMIN_EMAIL,
    executable: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> ServerInfo:
    """Start Label Studio on ``data_dir`` in the background and wait until it is usable.

    * First start (no secrets file): generates an admin e-mail/password and a 40-hex token, stores
      them (0600) and lets LS create the admin with them; Django migrations run now (~40-100 s).
    * Later starts reuse the stored secrets; the token must never change.
    * ``seed_from``: if ``data_dir`` does not exist yet, it is first copied from this already
      migrated data dir (secrets included), which makes startup take seconds. Note that copies
      share LS's ``SECRET_KEY`` (session signing) and admin credentials: fine for tests.
    * ``secrets_path`` defaults to ``data_dir / SECRETS_NAME``.
    * ``log``: a text stream for progress lines (e.g. ``sys.stderr``); None for silence.

    The server runs in its own session so it survives the calling process; stop it with
    ``stop_server``.

    Raises:
        PortInUseError: the port is busy (checked before anything is written; no hop).
        AlreadyRunningError: a server already runs on ``data_dir``.
        LabelStudioError: invalid host/port, no executable, the process died during startup
            (message ends with the redacted log tail), it was not ready within ``timeout``
            seconds, or it rejected the token; in the last two cases the process is stopped.
        WorkspaceError: the secrets file is unreadable or missing next to an existing database,
            or ``seed_from`` is unusable.
    """

    def say(msg: str) -> None:
        if log is not None:
            print(msg, file=log, flush=True)

    host = _normalize_host(host)
    if not 1 <= int(port) <= 65535:
        raise LabelStudioError(f"Invalid port {port}: give a number from 1 to 65535.")
    port = int(port)
    data_dir = Path(data_dir).expanduser().resolve()
    secrets_path = Path(secrets_path).expanduser().resolve() if secrets_path else data_dir / SECRETS_NAME
    exe = Path(executable) if executable else find_label_studio()
    url = _url_for(host, port)

    # Refusals first, before anything is written.
    if data_dir.exists():
        running = _running_server(data_dir)
        if running is not None:
            pid, running_url = running
            raise AlreadyRunningError(
                f"Label Studio is already running on {data_dir} (pid {pid}"
                f"{', ' + running_url if running_url else ''}). Stop it first; two servers must "
                f"never share one database."
            )
    if port_in_use(host, port):
        raise PortInUseError(
            f"Port {port} on {host} is already in use. Stop the program using it or choose another port."
        )

    seeded = False
    if seed_from is not None and not data_dir.exists():
        say(f"Copying the pre-migrated Label Studio data dir {seed_from} ...")
        _copy_seed(Path(seed_from), data_dir, secrets_path)
        seeded = True

    # LS would create it 0700 too; we need it now for the lock and the secrets.
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with _start_lock(data_dir):
        # Again, under the lock: a concurrent start may have won the race.
        running = _running_server(data_dir)
        if running is not None:
            raise AlreadyRunningError(
                f"Label Studio is already running on {data_dir} (pid {running[0]}). Stop it first."
            )
        if secrets_path.exists():
            creds = read_secrets(secrets_path)
        elif (data_dir / SQLITE_NAME).exists():
            raise WorkspaceError(
                f"{data_dir} holds a Label Studio database but its secrets file {secrets_path} "
                f"is missing, so the admin token is unknown. Restore the file from a backup."
            )
        else:
            creds = create_secrets(secrets_path, admin_email)
        known = (creds.token, creds.password)

        warnings = _mode_warnings(data_dir, secrets_path)
        if not ipaddress.ip_address(host).is_loopback:
            warnings.append(
                f"Label Studio will listen on {host}, not loopback: anyone who can reach "
                f"{host}:{port} can try to log in, over unencrypted HTTP."
            )

        env = server_env(data_dir=data_dir, host=host, port=port, secrets=creds, extra=extra_env)
        argv = server_command(exe, host=host, port=port, data_dir=data_dir)
        log_path = data_dir / LOG_NAME
        log_fd, log_offset = _open_log(log_path)
        first = not (data_dir / SQLITE_NAME).exists()
        say(
            "Starting Label Studio"
            + (" (first start: creating the database, this takes a minute or two)" if first else "")
            + f"; log: {log_path}"
        )
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                env=env,
                cwd=data_dir,
                stdin=subprocess.DEVNULL,  # LS prompts for a user when none is configured
                stdout=log_fd,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # survives the CLI; no SIGINT from the terminal
                umask=0o077,  # else label_studio.sqlite3 and uploads are created 0644
                close_fds=True,
            )
        except OSError as e:
            raise LabelStudioError(f"Could not run {exe}: {e.strerror or e}.") from None
        finally:
            os.close(log_fd)
        _CHILDREN[proc.pid] = proc

        def fail(message: str) -> LabelStudioError:
            _terminate(proc.pid)
            _remove_pidfile(data_dir, proc.pid)
            return LabelStudioError(message)

        try:
            # Inside the try: if even this fails, the process must not run on unrecorded.
            _write_private_file(
                data_dir / PID_NAME,
                json.dumps({"pid": proc.pid, "host": host, "port": port, "url": url, "exe": str(exe)}).encode(),
                replace=True,
            )
            warnings += _wait_ready(proc, url, creds, started + timeout, say)
            warnings += _verify_binding(proc.pid, host, port)
        except _ProcessDied as e:
            _CHILDREN.pop(proc.pid, None)
            _remove_pidfile(data_dir, proc.pid)
            raise LabelStudioError(
                f"Label Studio exited with code {e.returncode} during startup. "
                f"Last lines of {log_path}:\n{_log_tail(log_path, log_offset, known)}"
            ) from None
        except _TokenRejected as e:
            said = f' ("{redact(e.detail, known)}")' if e.detail else ""
            raise fail(
                f"Label Studio rejected the token stored in {secrets_path}{said}, so the server "
                f"was stopped. The database in {data_dir} was created with another token, or "
                f"without legacy API tokens enabled; restore the matching secrets file."
            ) from None
        except _NotReady:
            raise fail(
                f"Label Studio was not ready after {timeout:.0f} s and was stopped. Last lines of "
                f"{log_path}:\n{_log_tail(log_path, log_offset, known)}"
            ) from None
        except LabelStudioError as e:
            raise fail(str(e)) from None
        except BaseException:
            # KeyboardInterrupt and friends: do not leave a half-started server behind.
            _terminate(proc.pid)
            _remove_pidfile(data_dir, proc.pid)
            raise

    elapsed = time.monotonic() - started
    for w in warnings:
        say(f"Warning: {w}")
    say(f"Label Studio is ready at {url} ({elapsed:.1f} s).")
    return ServerInfo(
        url=url,
        pid=proc.pid,
        host=host,
        port=port,
        data_dir=data_dir,
        log_path=log_path,
        secrets_path=secrets_path,
        admin_email=creds.admin_email,
        startup_seconds=elapsed,
        seeded=seeded,
        warnings=tuple(warnings),
        secrets=creds,
    )


class _ProcessDied(Exception):
    def __init__(self, returncode: int) -> None:
        self.returncode = returncode


class _TokenRejected(Exception):
    def __init__(self, detail: str) -> None:
        self.detail = detail


class _NotReady(Exception):
    pass


def _wait_ready(
    proc: subprocess.Popen[bytes],
    url: str,
    creds: Secrets,
    deadline: float,
    say: Callable[[str], None],
) -> list[str]:
    """Poll until ``whoami`` answers 200; raise _ProcessDied / _TokenRejected / _NotReady."""
    delay = 0.25
    announced_health = False
    with _http_client(timeout=5.0) as client:
        while True:
            rc = proc.poll()
            if rc is not None:
                raise _ProcessDied(rc)
            probe = _probe(client, url, creds.token)
            if probe.healthy and not announced_health:
                announced_health = True
                say("Label Studio answers /health; checking the API token ...")
            if probe.whoami == 200:
                return []
            if probe.whoami in (401, 403):
                raise _TokenRejected(probe.detail)
            # Anything else (not listening yet, 5xx while the DB warms up): keep polling.
            if time.monotonic() + delay > deadline:
                raise _NotReady()
            time.sleep(delay)
            delay = min(delay * 1.5, 1.0)


# --------------------------------------------------------------------------------------------
# Status
# --------------------------------------------------------------------------------------------


def server_status(data_dir: Path, *, secrets_path: Path | None = None) -> ServerStatus:
    """Report whether a server runs on ``data_dir`` and whether it answers. Changes nothing."""
    data_dir = Path(data_dir).expanduser().resolve()
    secrets_path = Path(secrets_path).resolve() if secrets_path else data_dir / SECRETS_NAME
    log_path = data_dir / LOG_NAME if (data_dir / LOG_NAME).exists() else None
    creds: Secrets | None = None
    try:
        creds = read_secrets(secrets_path)
    except WorkspaceError:
        pass
    email = creds.admin_email if creds else None
    if not data_dir.exists():
        return ServerStatus(data_dir, False, detail="the data dir does not exist")

    info = _read_pidfile(data_dir)
    if info is None or not _is_server_for(info["pid"], data_dir):
        others = _scan_servers_for(data_dir)
        detail = "no server is running"
        if info is not None:
            detail = f"stale pid file (pid {info['pid']} is not a Label Studio server)"
        if others:
            detail = f"a server not started by annotate runs on this data dir (pid {others[0]})"
            return ServerStatus(data_dir, True, pid=others[0], admin_email=email, log_path=log_path, detail=detail)
        return ServerStatus(data_dir, False, admin_email=email, log_path=log_path, detail=detail)

    url = info.get("url") or _url_for(info.get("host", "127.0.0.1"), int(info.get("port", 8080)))
    with _http_client(timeout=5.0) as client:
        probe = _probe(client, url, creds.token if creds else None)
    healthy, who = probe.healthy, probe.whoami
    problem: str | None = None
    if not healthy:
        problem = "the process runs but /health does not answer (still starting?)"
    elif creds is None:
        problem = f"the secrets file {secrets_path} is missing or unreadable"
    elif who != 200:
        problem = f"whoami with the stored token answered {who} {probe.detail}".rstrip()
    return ServerStatus(
        data_dir,
        True,
        pid=info["pid"],
        url=url,
        admin_email=email,
        healthy=healthy,
        authenticated=who == 200,
        log_path=log_path,
        detail=problem,
    )
