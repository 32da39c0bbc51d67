"""Starting, stopping and inspecting the server: the supervisor proper.

``start_server`` refuses (bad host or port, a server already on the data dir, a busy port) before
it writes anything, copies a seed if asked, launches ``label-studio start`` in its own session,
polls until ``whoami`` accepts the stored token, then checks which addresses the process listens
on. ``stop_server`` signals a pid only after checking it is our server. ``server_status`` changes
nothing.
"""

from __future__ import annotations

import ipaddress
import os
import secrets as _secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from annotate.config import ensure_private_dir
from annotate.errors import LabelStudioError, WorkspaceError
from annotate.labelstudio.server.env import SQLITE_NAME, find_label_studio, redact, server_command, server_env
from annotate.labelstudio.server.files import (
    LOCK_NAME,
    LOG_NAME,
    PID_NAME,
    log_tail,
    open_log,
    read_pidfile,
    remove_pidfile,
    running_server,
    start_lock,
    write_pidfile,
)
from annotate.labelstudio.server.procnet import (
    is_server_for,
    listeners,
    pid_alive,
    pid_sockets,
    port_in_use,
    scan_servers_for,
)
from annotate.labelstudio.server.secrets import (
    DEFAULT_ADMIN_EMAIL,
    SECRETS_NAME,
    Secrets,
    create_secrets,
    door_key,
    read_secrets,
    write_private_file,
)

if TYPE_CHECKING:  # pragma: no cover
    import httpx

__all__ = [
    "AlreadyRunningError",
    "PortInUseError",
    "ServerInfo",
    "ServerStatus",
    "server_status",
    "start_server",
    "stop_server",
]

_STOP_TIMEOUT = 15.0

# Processes started by this interpreter, so stop_server() can reap them (a stopped child that is
# never wait()ed stays a zombie, still "alive" for kill(pid, 0), and Popen warns when collected).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


class PortInUseError(LabelStudioError):
    """The requested port is taken; Label Studio was not started (no hop to another port)."""


class AlreadyRunningError(LabelStudioError):
    """A Label Studio server already runs on this data dir; a second one was not started."""


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
            if not pid_alive(pid):
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
    info = read_pidfile(data_dir)
    if info is None:
        return False
    pid = info["pid"]
    if not is_server_for(pid, data_dir):
        # Reap our own dead child, if it is one, so it does not linger as a zombie.
        child = _CHILDREN.pop(pid, None)
        if child is not None:
            child.poll()
        remove_pidfile(data_dir, pid)
        return False
    _terminate(pid, timeout)
    remove_pidfile(data_dir, pid)
    return True


# --------------------------------------------------------------------------------------------
# HTTP checks
# --------------------------------------------------------------------------------------------


def _probe_client(url: str, token: str | None = None) -> httpx.Client:
    """A probe's client: it carries the door's key of ``token`` (a person's server answers nothing
    without it) but not the token itself, which only whoami is sent."""
    # Imported here, not at the top: importing the supervisor must not import httpx.
    from annotate.labelstudio import http

    return http.client(url, timeout=5.0, door=door_key(token) if token else None)


@dataclass(frozen=True)
class _Probe:
    healthy: bool  # GET /health answered 200
    whoami: int | None = None  # status of whoami with the token; None if not asked / no answer
    detail: str = ""  # DRF's "detail" of a 401/403 (never headers: they carry a session cookie)


def _probe(client: httpx.Client, token: str | None) -> _Probe:
    """One readiness probe of the server at ``client``'s base URL. Never raises on transport errors."""
    import httpx

    try:
        if client.get("/health/").status_code != 200:
            return _Probe(False)
        if token is None:
            return _Probe(True)
        r = client.get("/api/current-user/whoami", headers={"Authorization": f"Token {token}"})
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
# Starting: the steps of start_server, in order
# --------------------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class _Plan:
    """The checked and resolved arguments of one ``start_server`` call."""

    data_dir: Path
    secrets_path: Path
    exe: Path
    host: str
    port: int
    url: str
    timeout: float


def _plan(
    data_dir: Path, *, host: str, port: int, secrets_path: Path | None, executable: Path | None, timeout: float
) -> _Plan:
    """Validate host and port, resolve the paths, find the executable. Writes nothing."""
    host = _normalize_host(host)
    if not 1 <= int(port) <= 65535:
        raise LabelStudioError(f"Invalid port {port}: give a number from 1 to 65535.")
    port = int(port)
    data_dir = Path(data_dir).expanduser().resolve()
    return _Plan(
        data_dir=data_dir,
        secrets_path=Path(secrets_path).expanduser().resolve() if secrets_path else data_dir / SECRETS_NAME,
        exe=Path(executable) if executable else find_label_studio(),
        host=host,
        port=port,
        url=_url_for(host, port),
        timeout=timeout,
    )


def _refuse_if_running(data_dir: Path) -> None:
    """Raise ``AlreadyRunningError`` if a server runs on ``data_dir`` (pid file or /proc scan)."""
    running = running_server(data_dir)
    if running is not None:
        pid, url = running
        raise AlreadyRunningError(
            f"Label Studio is already running on {data_dir} (pid {pid}"
            f"{', ' + url if url else ''}). Stop it first; two servers must "
            f"never share one database."
        )


def _seed_ignore(root: Path) -> Callable[[str, list[str]], list[str]]:
    """copytree filter: skip the seed's run-time files (log, pid file, lock), at top level only."""
    top = os.fspath(root)
    skip = {LOG_NAME, PID_NAME, LOCK_NAME}

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
    if running_server(seed_from) is not None:
        # Copying a live SQLite file can capture a half-written page.
        raise WorkspaceError(f"A Label Studio server is running on the seed {seed_from}; stop it first.")
    seed_secrets = read_secrets(seed_from / SECRETS_NAME)
    external = secrets_path != data_dir / SECRETS_NAME
    if external and secrets_path.exists() and read_secrets(secrets_path).token != seed_secrets.token:
        raise WorkspaceError(f"{secrets_path} already holds a token that does not match the seed {seed_from}.")
    ensure_private_dir(data_dir.parent)
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
        ensure_private_dir(secrets_path.parent)
        write_private_file(secrets_path, (seed_from / SECRETS_NAME).read_bytes(), replace=False)


def _load_or_create_secrets(plan: _Plan, admin_email: str) -> Secrets:
    """The stored admin credentials; new ones only for a data dir without a database yet."""
    if plan.secrets_path.exists():
        return read_secrets(plan.secrets_path)
    if (plan.data_dir / SQLITE_NAME).exists():
        raise WorkspaceError(
            f"{plan.data_dir} holds a Label Studio database but its secrets file {plan.secrets_path} "
            f"is missing, so the admin token is unknown. Restore the file from a backup."
        )
    return create_secrets(plan.secrets_path, admin_email)


def _start_warnings(plan: _Plan) -> list[str]:
    """Warnings known before the start: files others can read, a non-loopback address."""
    out = []
    for p in (plan.secrets_path, plan.data_dir / SQLITE_NAME):
        try:
            mode = p.stat().st_mode & 0o777
        except FileNotFoundError:
            continue
        if mode & 0o077:
            out.append(f"{p} is readable by other users (mode {mode:o}); it holds the admin token. Run: chmod 600 {p}")
    if not ipaddress.ip_address(plan.host).is_loopback:
        out.append(
            f"Label Studio will listen on {plan.host}, not loopback: anyone who can reach "
            f"{plan.host}:{plan.port} can try to log in, over unencrypted HTTP."
        )
    return out


@dataclass(frozen=True)
class _Launch:
    """A server process just spawned, and where this run's lines begin in its log."""

    proc: subprocess.Popen[bytes]
    #: ``time.monotonic()`` just before the spawn.
    started: float
    log_path: Path
    log_offset: int


def _launch(
    plan: _Plan,
    creds: Secrets,
    extra_env: Mapping[str, str] | None,
    say: Callable[[str], None],
    host_names: Sequence[str] = (),
) -> _Launch:
    """Spawn ``label-studio start`` in its own session, appending its output to the data dir's log."""
    env = server_env(
        data_dir=plan.data_dir, host=plan.host, port=plan.port, secrets=creds, extra=extra_env, host_names=host_names
    )
    argv = server_command(plan.exe, host=plan.host, port=plan.port, data_dir=plan.data_dir)
    log_path = plan.data_dir / LOG_NAME
    log_fd, log_offset = open_log(log_path)
    first = not (plan.data_dir / SQLITE_NAME).exists()
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
            cwd=plan.data_dir,
            stdin=subprocess.DEVNULL,  # LS prompts for a user when none is configured
            stdout=log_fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # survives the CLI; no SIGINT from the terminal
            umask=0o077,  # else label_studio.sqlite3 and uploads are created 0644
            close_fds=True,
        )
    except OSError as e:
        raise LabelStudioError(f"Could not run {plan.exe}: {e.strerror or e}.") from None
    finally:
        os.close(log_fd)
    _CHILDREN[proc.pid] = proc
    return _Launch(proc, started, log_path, log_offset)


#: Where a door-only server's settings module is copied (inside its data dir, owner-only).
GATE_DIR = "door_gate"
_GATE_ASSET = "annotate_door_gate.py"


def _door_only_env(data_dir: Path, creds: Secrets) -> dict[str, str]:
    """Install the door's gate in ``data_dir`` and the environment that makes Label Studio load it.

    The gate (``assets/annotate_door_gate.py``) is copied as the folder's ``sitecustomize.py`` each
    start (an upgrade replaces it); ``PYTHONPATH`` holds that folder alone (the caller's own
    ``PYTHONPATH`` is never passed, ``env.server_env``), so Python runs it before Label Studio.
    """
    from importlib import resources

    folder = data_dir / GATE_DIR
    ensure_private_dir(folder)
    source = resources.files("annotate.labelstudio").joinpath("assets", _GATE_ASSET).read_bytes()
    write_private_file(folder / "sitecustomize.py", source, replace=True)
    return {
        "PYTHONPATH": str(folder),
        "ANNOTATE_DOOR_KEY": door_key(creds.token),
    }


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
    with _probe_client(url, creds.token) as client:
        while True:
            rc = proc.poll()
            if rc is not None:
                raise _ProcessDied(rc)
            probe = _probe(client, creds.token)
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


def _verify_binding(pid: int, host: str, port: int) -> list[str]:
    """Check which addresses the server listens on; return warnings, raise if it is not ours."""
    found = listeners(port)
    if found is None:
        return ["Could not verify the address Label Studio listens on (no /proc/net/tcp)."]
    inodes = pid_sockets(pid)
    mine = [s for s in found if inodes is None or s.inode in inodes]
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


def _await_usable(plan: _Plan, launch: _Launch, creds: Secrets, say: Callable[[str], None]) -> list[str]:
    """Record the pid, wait until the token works, check the binding; return warnings.

    Every failure leaves no server behind (a dead one is reaped, a live one stopped), removes the
    pid file and is raised as ``LabelStudioError``, with the redacted log tail where it helps.
    """
    proc = launch.proc
    known = (creds.token, creds.password)

    def fail(message: str) -> LabelStudioError:
        _terminate(proc.pid)
        remove_pidfile(plan.data_dir, proc.pid)
        return LabelStudioError(message)

    try:
        # Inside the try: if even this fails, the process must not run on unrecorded.
        write_pidfile(plan.data_dir, pid=proc.pid, host=plan.host, port=plan.port, url=plan.url, exe=plan.exe)
        warnings = _wait_ready(proc, plan.url, creds, launch.started + plan.timeout, say)
        return warnings + _verify_binding(proc.pid, plan.host, plan.port)
    except _ProcessDied as e:
        _CHILDREN.pop(proc.pid, None)
        remove_pidfile(plan.data_dir, proc.pid)
        raise LabelStudioError(
            f"Label Studio exited with code {e.returncode} during startup. "
            f"Last lines of {launch.log_path}:\n{log_tail(launch.log_path, launch.log_offset, known)}"
        ) from None
    except _TokenRejected as e:
        said = f' ("{redact(e.detail, known)}")' if e.detail else ""
        raise fail(
            f"Label Studio rejected the token stored in {plan.secrets_path}{said}, so the server "
            f"was stopped. The database in {plan.data_dir} was created with another token, or "
            f"without legacy API tokens enabled; restore the matching secrets file."
        ) from None
    except _NotReady:
        raise fail(
            f"Label Studio was not ready after {plan.timeout:.0f} s and was stopped. Last lines of "
            f"{launch.log_path}:\n{log_tail(launch.log_path, launch.log_offset, known)}"
        ) from None
    except LabelStudioError as e:
        raise fail(str(e)) from None
    except BaseException:
        # KeyboardInterrupt and friends: do not leave a half-started server behind.
        _terminate(proc.pid)
        remove_pidfile(plan.data_dir, proc.pid)
        raise


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
    host_names: Sequence[str] = (),
    door_only: bool = False,
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
    * ``host_names``: more names the server answers to besides its address (``a1.localhost``).
    * ``door_only``: the server answers only requests that carry the front door's key (a person's
      server; ``assets/annotate_door_settings.py``); the key reaches it through its environment.

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

    plan = _plan(data_dir, host=host, port=port, secrets_path=secrets_path, executable=executable, timeout=timeout)

    # Refusals first, before anything is written.
    if plan.data_dir.exists():
        _refuse_if_running(plan.data_dir)
    if port_in_use(plan.host, plan.port):
        raise PortInUseError(
            f"Port {plan.port} on {plan.host} is already in use. Stop the program using it or choose another port."
        )

    seeded = False
    if seed_from is not None and not plan.data_dir.exists():
        say(f"Copying the pre-migrated Label Studio data dir {seed_from} ...")
        _copy_seed(Path(seed_from), plan.data_dir, plan.secrets_path)
        seeded = True

    # LS would create it 0700 too; we need it now for the lock and the secrets.
    ensure_private_dir(plan.data_dir)
    with start_lock(plan.data_dir):
        # Again, under the lock: a concurrent start may have won the race.
        _refuse_if_running(plan.data_dir)
        creds = _load_or_create_secrets(plan, admin_email)
        warnings = _start_warnings(plan)
        if door_only:
            extra_env = {**(extra_env or {}), **_door_only_env(plan.data_dir, creds)}
        launch = _launch(plan, creds, extra_env, say, host_names)
        warnings += _await_usable(plan, launch, creds, say)

    elapsed = time.monotonic() - launch.started
    for w in warnings:
        say(f"Warning: {w}")
    say(f"Label Studio is ready at {plan.url} ({elapsed:.1f} s).")
    return ServerInfo(
        url=plan.url,
        pid=launch.proc.pid,
        host=plan.host,
        port=plan.port,
        data_dir=plan.data_dir,
        log_path=launch.log_path,
        secrets_path=plan.secrets_path,
        admin_email=creds.admin_email,
        startup_seconds=elapsed,
        seeded=seeded,
        warnings=tuple(warnings),
        secrets=creds,
    )


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

    info = read_pidfile(data_dir)
    if info is None or not is_server_for(info["pid"], data_dir):
        others = scan_servers_for(data_dir)
        detail = "no server is running"
        if info is not None:
            detail = f"stale pid file (pid {info['pid']} is not a Label Studio server)"
        if others:
            detail = f"a server not started by annotate runs on this data dir (pid {others[0]})"
            return ServerStatus(data_dir, True, pid=others[0], admin_email=email, log_path=log_path, detail=detail)
        return ServerStatus(data_dir, False, admin_email=email, log_path=log_path, detail=detail)

    url = info.get("url") or _url_for(info.get("host", "127.0.0.1"), int(info.get("port", 8080)))
    with _probe_client(url, creds.token if creds else None) as client:
        probe = _probe(client, creds.token if creds else None)
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
