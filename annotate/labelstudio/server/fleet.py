"""One Label Studio server per person: technical blinding on Label Studio Community.

Label Studio Community has no roles: every member of a server can open every project on it,
through the projects page, the Data Manager and the API, with their session or their own token,
and sees the other members' verdicts, rationales and e-mails there. A separate organisation on
the same server does not isolate either (``/api/tasks/?project=<id>`` still answers across
organisations; measured on 1.23.2). What isolates is a server that holds nothing else: so every
reviewer and every expert gets a Label Studio of their own, with its own data dir, port, SQLite
database, ``SECRET_KEY`` (sessions and JWTs of one server are worthless on another), admin
account and token. The only projects on it are that person's, the only users that person and
annotate's admin.

Layout (under the workspace's state folder)::

    reviewer-servers/                 mode 0700
        .template/                    a migrated Label Studio database with no user, no
                                      organisation and no SECRET_KEY, copied for each new person
        A1/                           A1's server: a data dir as ``server/__init__`` describes,
            annotate-person.json      plus this file: pseudonym, host, port (0600)
        E1/ ...

Building the template runs Label Studio's migrations once per workspace (``label-studio
version`` on the template's data dir migrates it and starts no server); a person's server then
starts from a copy in seconds. Ports are chosen when a person's server is made and kept, so a
reviewer's address does not change between starts; a port that another program took meanwhile
is replaced by a free one and said so (never silently, unlike Label Studio's own hop).

Nothing here knows the store: the pipeline says which people there are.
"""

from __future__ import annotations

import json
import os
import secrets as _secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from annotate.config import ensure_private_dir
from annotate.errors import LabelStudioError, WorkspaceError
from annotate.labelstudio.server.env import SQLITE_NAME, find_label_studio, redact, server_env
from annotate.labelstudio.server.files import LOCK_NAME, LOG_NAME, PID_NAME, running_server
from annotate.labelstudio.server.lifecycle import (
    ServerInfo,
    ServerStatus,
    server_status,
    start_server,
    stop_server,
)
from annotate.labelstudio.server.procnet import port_in_use
from annotate.labelstudio.server.secrets import SECRETS_NAME, Secrets, create_secrets, write_private_file
from annotate.names import check_name

__all__ = [
    "Held",
    "PERSON_NAME",
    "TEMPLATE_NAME",
    "PersonServer",
    "db_signature",
    "ensure_template",
    "hold",
    "person_dir",
    "person_server",
    "person_servers",
    "people_lock",
    "person_host",
    "pulled_unchanged",
    "provision",
    "record_pulled",
    "start_person",
    "stop_if_idle",
    "stop_person",
    "touch_activity",
]

PERSON_NAME = "annotate-person.json"
TEMPLATE_NAME = ".template"
_FORMAT = 1
#: The Label Studio files that belong to one server's identity and never go into the template:
#: ``.env`` holds its SECRET_KEY (generated on a server's first start when absent).
_NOT_TEMPLATE = (".env", SECRETS_NAME, PID_NAME, LOCK_NAME, LOG_NAME, PERSON_NAME)
_TEMPLATE_TIMEOUT = 900.0


@dataclass(frozen=True)
class PersonServer:
    """One person's server as recorded in its data dir (no secret)."""

    pseudonym: str
    data_dir: Path
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def host_name(self) -> str:
        """The person's own host name (``a1.localhost``): one browser login per server."""
        return person_host(self.pseudonym)


def person_host(pseudonym: str) -> str:
    """The host name a person's server is reached under: ``<pseudonym>.localhost``.

    Browsers keep cookies per host name, not per port, so two servers on 127.0.0.1 share one
    login and log each other out; under names of their own they never do. Every browser resolves
    ``*.localhost`` to loopback (RFC 6761), without DNS.

    >>> person_host("A1")
    'a1.localhost'
    """
    check_name(pseudonym, "pseudonym")
    return f"{pseudonym.lower()}.localhost"


def person_dir(root: Path, pseudonym: str) -> Path:
    """The data dir of ``pseudonym``'s server under ``root`` (``.annotate/reviewer-servers``)."""
    check_name(pseudonym, "pseudonym")
    return root / pseudonym


def _read_person(data_dir: Path) -> PersonServer | None:
    try:
        raw = json.loads((data_dir / PERSON_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("port"), int) or not isinstance(raw.get("pseudonym"), str):
        return None
    return PersonServer(raw["pseudonym"], data_dir, str(raw.get("host") or "127.0.0.1"), int(raw["port"]))


def _write_person(server: PersonServer) -> None:
    body = {"format": _FORMAT, "pseudonym": server.pseudonym, "host": server.host, "port": server.port}
    write_private_file(server.data_dir / PERSON_NAME, (json.dumps(body, indent=2) + "\n").encode(), replace=True)


def person_server(root: Path, pseudonym: str) -> PersonServer | None:
    """``pseudonym``'s server if it has been made (its data dir and record exist)."""
    return _read_person(person_dir(root, pseudonym))


def person_servers(root: Path) -> list[PersonServer]:
    """Every person's server made under ``root``, by pseudonym."""
    if not root.is_dir():
        return []
    found = [_read_person(d) for d in sorted(root.iterdir()) if d.is_dir() and not d.name.startswith(".")]
    return [p for p in found if p is not None]


# -- the template ------------------------------------------------------------------------------


def _template_usable(template: Path) -> bool:
    return (template / SQLITE_NAME).is_file() and not (template / ".env").exists()


def ensure_template(
    root: Path,
    *,
    seed_from: Path | None = None,
    executable: Path | None = None,
    say: Callable[[str], None] = lambda _m: None,
) -> Path:
    """The migrated template under ``root``, built once (about a minute: Label Studio's migrations).

    ``seed_from``: an already migrated template to copy instead (tests). Built beside its final
    name and renamed into place under a lock, so an interrupted build leaves nothing usable-looking
    and two commands never migrate twice.
    """
    import fcntl

    template = root / TEMPLATE_NAME
    if _template_usable(template):
        return template
    ensure_private_dir(root)
    fd = os.open(root / ".template.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _template_usable(template):  # another command built it while we waited
            return template
        tmp = root / f".template-{os.getpid()}-{_secrets.token_hex(4)}"
        try:
            if seed_from is not None:
                if not _template_usable(Path(seed_from)):
                    raise WorkspaceError(f"{seed_from} is not a migrated template (no {SQLITE_NAME}, or a .env).")
                shutil.copytree(seed_from, tmp, symlinks=True, ignore=shutil.ignore_patterns(*_NOT_TEMPLATE))
            else:
                say("Preparing Label Studio's database once for this workspace (migrations: about a minute) ...")
                build_template(tmp, executable=executable)
            os.chmod(tmp, 0o700)
            shutil.rmtree(template, ignore_errors=True)  # an unusable leftover
            os.rename(tmp, template)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        os.close(fd)
    return template


def build_template(data_dir: Path, *, executable: Path | None = None, timeout: float = _TEMPLATE_TIMEOUT) -> None:
    """Migrate a new, empty Label Studio data dir at ``data_dir``: no user, no organisation, no SECRET_KEY.

    ``label-studio version`` sets Django up on the data dir it is given, applies the migrations
    and exits without starting a server or creating a user (label_studio/server.py ``main``).
    The environment is the server's own (an allow-list, every setting pinned) without any
    account, so nothing of a server's identity ends up in the template.
    """
    exe = Path(executable) if executable else find_label_studio()
    ensure_private_dir(data_dir)
    placeholder = Secrets("nobody@annotate.invalid", "-", "0" * 40)
    env = server_env(data_dir=data_dir, host="127.0.0.1", port=1, secrets=placeholder)
    for key in ("LABEL_STUDIO_USERNAME", "LABEL_STUDIO_PASSWORD", "LABEL_STUDIO_USER_TOKEN"):
        env.pop(key, None)
    started = time.monotonic()
    try:
        done = subprocess.run(
            [str(exe), "version"],
            env=env,
            cwd=data_dir,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            umask=0o077,
        )
    except subprocess.TimeoutExpired:
        raise LabelStudioError(
            f"Label Studio's migrations did not finish in {timeout:.0f} s ({data_dir}); try again."
        ) from None
    except OSError as exc:
        raise LabelStudioError(f"Could not run {exe}: {exc.strerror or exc}.") from None
    if done.returncode != 0 or not (data_dir / SQLITE_NAME).is_file():
        tail = "\n".join(("    " + ln) for ln in redact(done.stderr or done.stdout or "").splitlines()[-15:])
        raise LabelStudioError(
            f"Label Studio's migrations failed (exit {done.returncode}, {time.monotonic() - started:.0f} s):\n{tail}"
        )
    # The SECRET_KEY generated while migrating is nobody's: each server makes its own.
    (data_dir / ".env").unlink(missing_ok=True)


# -- one person's server -----------------------------------------------------------------------


def _next_port(root: Path, host: str, first: int, taken: set[int]) -> int:
    used = {p.port for p in person_servers(root)} | taken
    port = max(first, 1024)
    while port in used or port_in_use(host, port):
        port += 1
        if port > 65535:
            raise LabelStudioError(f"no free port from {first} up for a reviewer's Label Studio.")
    return port


@contextmanager
def people_lock(root: Path) -> Iterator[None]:
    """Serialise changes to the people's servers of one workspace (making a server, an account).

    Short sections only; two ``ls start`` at once then make each server and account once.
    """
    import fcntl

    ensure_private_dir(root)
    fd = os.open(root / ".people.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def provision(
    root: Path,
    pseudonym: str,
    *,
    host: str,
    first_port: int,
    template: Path,
    taken: set[int] | None = None,
) -> tuple[PersonServer, bool]:
    """``pseudonym``'s server record and data dir, made from the template if new; (server, made now).

    A new server gets its own admin secrets (e-mail, password, token: 0600) and the first port
    from ``first_port`` up that no other person's server records and nothing listens on. Made in
    a temporary folder and renamed into place under :func:`people_lock`.
    """
    data_dir = person_dir(root, pseudonym)
    with people_lock(root):
        known = _read_person(data_dir)
        if known is not None:
            return known, False
        if data_dir.exists():
            if (data_dir / SQLITE_NAME).exists():
                raise WorkspaceError(
                    f"{data_dir} holds a Label Studio database without annotate's record ({PERSON_NAME}); "
                    "restore the file from a backup, or move the folder away to start that person's server afresh."
                )
            shutil.rmtree(data_dir)  # an empty leftover
        tmp = root / f".{pseudonym}.new-{os.getpid()}-{_secrets.token_hex(4)}"
        try:
            shutil.copytree(template, tmp, symlinks=True, ignore=shutil.ignore_patterns(*_NOT_TEMPLATE, "*.lock"))
            os.chmod(tmp, 0o700)
            create_secrets(tmp / SECRETS_NAME)
            port = _next_port(root, host, first_port, taken or set())
            _write_person(PersonServer(pseudonym, tmp, host, port))
            os.rename(tmp, data_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return PersonServer(pseudonym, data_dir, host, port), True


@dataclass(frozen=True)
class Started:
    """A person's server after ``start_person``: running (just started or already), and what to say."""

    server: PersonServer
    info: ServerInfo | None  # None: it was already running
    moved_from: int | None = None  # the recorded port was taken by another program


def start_person(
    server: PersonServer, *, timeout: float, executable: Path | None = None, log: Callable[[str], None] | None = None
) -> Started:
    """Start ``server`` unless it runs; a recorded port that another program holds is replaced.

    Held in use while it starts (an idle stop never takes a server that is starting), and used
    when ready: the idle clock runs from then.
    """
    import fcntl

    fd = os.open(server.data_dir / IN_USE_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        started = _start_person(server, timeout=timeout, executable=executable, log=log)
        if started.info is not None:
            touch_activity(started.server)
        return started
    finally:
        os.close(fd)


def _start_person(
    server: PersonServer, *, timeout: float, executable: Path | None, log: Callable[[str], None] | None
) -> Started:
    st = server_status(server.data_dir)
    if st.running and st.pid is not None:
        return Started(server, None)
    moved_from = None
    if port_in_use(server.host, server.port):
        moved_from = server.port
        server = PersonServer(
            server.pseudonym,
            server.data_dir,
            server.host,
            _next_port(server.data_dir.parent, server.host, server.port + 1, set()),
        )
        _write_person(server)
    stream = _LineLog(log) if log is not None else None
    info = start_server(
        server.data_dir,
        host=server.host,
        port=server.port,
        timeout=timeout,
        executable=executable,
        log=stream,  # type: ignore[arg-type]
        host_names=(server.host_name,),
        door_only=True,  # reviewers reach it through the front door alone
    )
    return Started(server, info, moved_from)


class _LineLog:
    """A write()-able stream that forwards whole lines to a callback (start_server prints progress)."""

    def __init__(self, callback: Callable[[str], None]) -> None:
        self._callback = callback

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                self._callback(line)
        return len(text)

    def flush(self) -> None:
        pass


def stop_person(server: PersonServer) -> bool:
    return bool(stop_server(server.data_dir))


def person_status(server: PersonServer) -> ServerStatus:
    return server_status(server.data_dir)


def is_running(server: PersonServer) -> bool:
    return running_server(server.data_dir) is not None


# -- in use, idle, and unchanged since the last pull -----------------------------------------------

#: Held (shared) by every command that talks to a person's server (``hold``); taken (exclusive,
#: without waiting) by whoever stops it, so a server is never stopped under a command.
IN_USE_NAME = "annotate-in-use.lock"
#: Touched on every request through the front door and when a command lets go of the server: the
#: server's last use, which the idle stop reads.
ACTIVITY_NAME = "annotate-activity"
#: The database's state after the last stop that followed a complete pull (``pulled_unchanged``).
PULLED_NAME = "annotate-pulled.json"


def touch_activity(server: PersonServer) -> None:
    path = server.data_dir / ACTIVITY_NAME
    try:
        path.touch(mode=0o600)
        os.utime(path)
    except OSError:
        pass


def last_activity(server: PersonServer) -> float:
    """When the server was last used or started (wall clock): the newest of its activity file and pid file."""
    times = []
    for name in (ACTIVITY_NAME, PID_NAME):
        try:
            times.append((server.data_dir / name).stat().st_mtime)
        except OSError:
            continue
    return max(times, default=0.0)


def stop_if_idle(server: PersonServer, idle_seconds: float, *, now: float | None = None) -> bool:
    """Stop ``server`` when it runs, nobody holds it in use and it was last used ``idle_seconds`` ago.

    Its data stays: a stopped server starts again from its own database. True when stopped here.
    """
    import fcntl

    if not is_running(server) or (now or time.time()) - last_activity(server) < idle_seconds:
        return False
    fd = os.open(server.data_dir / IN_USE_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a command is using it
        if (now or time.time()) - last_activity(server) < idle_seconds:
            return False
        return stop_person(server)
    finally:
        os.close(fd)


def db_signature(server: PersonServer) -> list[int] | None:
    """The size and modification time (ns) of the server's database file; None without one.

    Label Studio keeps SQLite in rollback-journal mode and writes its database on every start, every
    login and every label, never on a SIGTERM stop (measured on 1.23.2, docs/labelstudio.md 10): a
    stopped server whose signature is the one recorded after the stop that followed a complete
    pull holds nothing new.
    """
    try:
        st = (server.data_dir / SQLITE_NAME).stat()
    except OSError:
        return None
    return [int(st.st_size), int(st.st_mtime_ns)]


def record_pulled(server: PersonServer, project_ids: list[int], signature: list[int] | None) -> None:
    """Record that ``project_ids`` were pulled completely from ``server``, whose database had ``signature``
    (:func:`db_signature`, taken right after the stop that followed the pull's export)."""
    body = {"format": 1, "signature": signature, "projects": sorted(int(p) for p in project_ids)}
    write_private_file(server.data_dir / PULLED_NAME, (json.dumps(body) + "\n").encode(), replace=True)


def pulled_unchanged(server: PersonServer, project_id: int) -> bool:
    """True when the server is stopped and nothing was written to it since the last complete pull of the project."""
    if is_running(server):
        return False
    try:
        raw = json.loads((server.data_dir / PULLED_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(raw, dict) or int(project_id) not in (raw.get("projects") or []):
        return False
    signature = db_signature(server)
    return signature is not None and raw.get("signature") == signature


class Held:
    """A person's server held in use by one command (``hold``); started by it if it was stopped."""

    def __init__(self, server: PersonServer, fd: int, started_at: float | None, started: Started | None = None) -> None:
        self.server = server
        self._fd: int | None = fd
        #: When this command started the server (wall clock); None: it was running already.
        self.started_at = started_at
        #: What starting it said (a port moved, the start's warnings); None: it was running already.
        self.started = started

    def release(self, *, stop_if_started: bool = True) -> bool:
        """Let go of the server; stop it when this command started it and nobody used it since.

        True when it was stopped here. A server someone used meanwhile (a request through the
        front door) is left running: the front door stops it when it is idle.
        """
        import fcntl

        if self._fd is None:
            return False
        fd, self._fd = self._fd, None
        try:
            used = last_activity_file(self.server) > (self.started_at or 0.0)
            if self.started_at is None or not stop_if_started or used:
                touch_activity(self.server)
                return False
            fcntl.flock(fd, fcntl.LOCK_UN)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False  # another command holds it now
            if last_activity_file(self.server) > self.started_at:
                return False
            return stop_person(self.server)
        finally:
            os.close(fd)


def last_activity_file(server: PersonServer) -> float:
    """When the front door or a command last touched the server's activity file (0: never)."""
    try:
        return (server.data_dir / ACTIVITY_NAME).stat().st_mtime
    except OSError:
        return 0.0


def hold(server: PersonServer, *, timeout: float, say: Callable[[str], None] | None = None) -> Held:
    """Hold ``server`` in use for a command, starting it first when it is stopped (a few seconds)."""
    import fcntl

    fd = os.open(server.data_dir / IN_USE_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        started_at, started = None, None
        if not is_running(server):
            if say is not None:
                say(f"Starting {server.pseudonym}'s Label Studio (it was asleep; a few seconds) ...")
            started = start_person(server, timeout=timeout)
            server = started.server
            # Strictly after the activity file's last touch (the start's own), so only later use counts.
            started_at = max(time.time(), last_activity_file(server))
        return Held(server, fd, started_at, started)
    except BaseException:
        os.close(fd)
        raise
