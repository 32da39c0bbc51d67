"""The front door: one address on loopback for every person's server, started when needed, stopped when idle.

A round of twenty reviewers with a Label Studio each holds about 7 GB if every server runs all the
time (350 MB each, measured), though most people label a few tasks a day. The front door is a
small HTTP proxy (stdlib only) that the lead starts once (``annotate ls start``):

* **One address per person.** ``http://a1.localhost:8080/`` reaches A1's server,
  ``http://a2.localhost:8080/`` A2's: the request's host name says whose (``fleet.person_host``).
  Browsers keep one login per host name, so two people's servers in one browser never log each
  other out (on 127.0.0.1 they did: cookies ignore ports), and every browser resolves
  ``*.localhost`` to loopback. One port to forward over ssh for everyone.
* **On demand.** A request for a server that is not running starts it (a few seconds from its own
  data dir; nothing is lost: a stopped server is its database). A page load meanwhile gets a
  "starting" page that reloads itself; other requests wait for it.
* **Idle stop.** A server nobody has used for ``idle_seconds`` is stopped (SIGTERM; Label Studio
  writes nothing on stop). Use is what a person does: a page load, a saved answer (a write that
  succeeded), an annotate command holding it (``fleet.in_use``); not the labelling page's own
  background polls (``/api/dm/project?interaction=timer`` every 20 s), so a tab left open lets its
  server sleep. Asleep, a server wakes for a page load or a logged-in page's write (a submit after a
  long read waits for the wake), never for an anonymous call.
* **The reviewer's page.** Every HTML page gets two small files of annotate's
  (``/__annotate/reviewer.css``, ``/__annotate/keys.js``): the first hides what Label Studio
  Community offers every member and a reviewer must not use (Create Project, Invite Members, the
  Organization page), the second keeps the keyboard flow in the rationale box (Ctrl+Enter submits
  from inside it, Escape leaves it, choosing *unsure* with its key puts the cursor there).
* **An allow-list** (``door_rules``): each request is read once (one Host, one plain
  Content-Length or none, no Transfer-Encoding; the path percent-decoded as Django routes it) and
  only the routes the labelling page uses pass; everything else is refused (403) however it is
  spelled: creating or changing projects (their label config), importing or deleting tasks,
  invitations, signup, every Data Manager action but ``next_task``. The door sets the forwarded
  request's Content-Length itself. annotate's own calls go to a server's port directly, with its
  admin token, not through the door.
* **Bounds.** At most ``MAX_CONNECTIONS`` connections at once and ``MAX_BUFFERED`` bytes of request
  bodies over all of them (beyond: 503, closed), ``CONNECTION_TIMEOUT`` seconds of silence per
  connection, one log line per failed connection, the log rotated past ``MAX_LOG_BYTES``.

Measured on Label Studio 1.23.2 (docs/labelstudio.md section 10): HTML is never compressed and its
Content-Security-Policy is report-only and allows ``'self'`` scripts and styles; Django's CSRF check
passes with the Host header forwarded unchanged once ``a1.localhost`` is an allowed host (which
``fleet.start_person`` sets); with ``LABEL_STUDIO_HOST`` empty every link is relative, so nothing
points past the door.

Run by ``annotate ls start`` as ``python -m annotate.labelstudio.server.frontdoor --root DIR
--port PORT``; its state is ``frontdoor.json`` (pid, address, idle limit) and its log
``frontdoor.log`` in the people's servers folder.
"""

from __future__ import annotations

import argparse
import html
import http.client
import http.server
import json
import os
import re
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from annotate.errors import LabelStudioError, WorkspaceError
from annotate.labelstudio.server import fleet
from annotate.labelstudio.server.door_rules import MAX_BODY, Route, framing_problem, refusal, route_of
from annotate.labelstudio.server.procnet import pid_alive, port_in_use
from annotate.labelstudio.server.secrets import (
    DOOR_HEADER,
    SECRETS_NAME,
    door_key,
    read_secrets,
    write_private_file,
)

__all__ = [
    "DOOR_NAME",
    "DoorStatus",
    "door_status",
    "person_address",
    "start_door",
    "stop_door",
]

DOOR_NAME = "frontdoor.json"
DOOR_LOG = "frontdoor.log"
#: The door's port when ``ls start`` is not told another (people's addresses before it first ran).
DEFAULT_PORT = 8080
#: Stop a person's server after this long without use (``ls start --idle-minutes``).
DEFAULT_IDLE_SECONDS = 20 * 60
_CHECK_EVERY = 15.0
_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}
_INJECT = b'<link rel="stylesheet" href="/__annotate/reviewer.css"><script src="/__annotate/keys.js"></script>'
_ASSETS = {"reviewer.css": "text/css; charset=utf-8", "keys.js": "text/javascript; charset=utf-8"}
_HOST_RE = re.compile(r"^([a-z][a-z0-9]{0,15})\.localhost$")
#: The most connections served at once (each a thread), and the most request-body bytes held at once
#: over all of them: beyond either, a connection is answered 503 and closed, never queued.
MAX_CONNECTIONS = 64
MAX_BUFFERED = 4 * MAX_BODY
#: Seconds a connection may stay silent (a request line, its headers, its body, or the next request).
CONNECTION_TIMEOUT = 30.0
#: The log is rotated past this size (one previous file kept: frontdoor.log.1).
MAX_LOG_BYTES = 1024 * 1024


def person_address(pseudonym: str, port: int) -> str:
    """The front door's address of a person's server.

    >>> person_address("A1", 8080)
    'http://a1.localhost:8080'
    """
    return f"http://{fleet.person_host(pseudonym)}:{int(port)}"


_STARTING_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>Starting your Label Studio</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:560px;margin:12vh auto;color:#1f2328}}</style></head>
<body><h1>Starting your Label Studio&hellip;</h1>
<p>{detail}</p>
<p>This page reloads itself every two seconds; your work is kept while the server sleeps.</p></body></html>
"""
_UNKNOWN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>annotate</title></head>
<body style="font:16px/1.5 system-ui,sans-serif;max-width:560px;margin:12vh auto">
<h1>No Label Studio at this address</h1><p>Open the address on your access sheet (it looks like
<code>http://a1.localhost:{port}/</code>, with your own pseudonym).</p></body></html>
"""


class _Person:
    """One person's server as the door sees it: one start at a time, its last request."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ready = threading.Event()
        self.starting = False
        self.error: str | None = None
        self.last_touch = 0.0
        self.key: str | None = None  # the server's door key, read once from its secrets file


class Door(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the kernel's accept queue: beyond the cap a connection is answered, not left pending

    def __init__(
        self,
        address: tuple[str, int],
        root: Path,
        *,
        idle_seconds: float,
        start_timeout: float,
        executable: Path | None = None,
    ) -> None:
        super().__init__(address, _Handler)
        self.root = Path(root)
        self.idle_seconds = idle_seconds
        self.start_timeout = start_timeout
        self.executable = executable
        self.people: dict[str, _Person] = {}
        self._people_lock = threading.Lock()
        self.stopping = threading.Event()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._buffered = 0
        self._buffer_lock = threading.Lock()
        self._log_lock = threading.Lock()

    # -- bounds: connections, buffered bytes -------------------------------------------------
    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):  # too many at once: answered and closed, never queued
            try:
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            self.log(f"a connection from {client_address[0]} refused: {MAX_CONNECTIONS} already open")
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def reserve(self, nbytes: int) -> bool:
        """Hold ``nbytes`` of the bodies' budget (False: over ``MAX_BUFFERED`` with the others)."""
        with self._buffer_lock:
            if self._buffered + nbytes > MAX_BUFFERED:
                return False
            self._buffered += nbytes
            return True

    def release(self, nbytes: int) -> None:
        with self._buffer_lock:
            self._buffered -= nbytes

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line per failed connection (a client that went away, a timeout), never a traceback."""
        exc = sys.exc_info()[1]
        self.log(f"a connection from {client_address[0]} failed: {type(exc).__name__}: {str(exc)[:120]}")

    def person(self, pseudonym: str) -> _Person:
        with self._people_lock:
            return self.people.setdefault(pseudonym, _Person())

    def log(self, message: str) -> None:
        """A line of ``frontdoor.log`` (rotated past ``MAX_LOG_BYTES``: one previous file kept)."""
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}\n"
        path = self.root / DOOR_LOG
        with self._log_lock:
            try:
                if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
                    os.replace(path, path.with_name(DOOR_LOG + ".1"))
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                with os.fdopen(fd, "a", encoding="utf-8") as fh:
                    fh.write(line)
            except OSError:
                pass

    # -- on demand ---------------------------------------------------------------------------
    def ensure_started(self, server: fleet.PersonServer) -> _Person:
        """Start ``server`` in the background unless it runs or is starting; its door state."""
        state = self.person(server.pseudonym)
        with state.lock:
            if fleet.is_running(server):
                return state
            if state.starting:
                return state
            state.starting, state.error = True, None
            state.ready.clear()
        threading.Thread(target=self._start, args=(server, state), daemon=True).start()
        return state

    def _start(self, server: fleet.PersonServer, state: _Person) -> None:
        started = time.monotonic()
        try:
            fleet.start_person(server, timeout=self.start_timeout, executable=self.executable)
            fleet.touch_activity(server)
            self.log(f"{server.pseudonym}: started on demand ({time.monotonic() - started:.1f} s)")
        except LabelStudioError as exc:
            state.error = str(exc).splitlines()[0]
            self.log(f"{server.pseudonym}: could not start: {exc}")
        finally:
            with state.lock:
                state.starting = False
            state.ready.set()

    def key(self, server: fleet.PersonServer) -> str | None:
        """The key ``server`` requires of every request (``secrets.door_key``); None before its first start."""
        state = self.person(server.pseudonym)
        if state.key is None:
            try:
                state.key = door_key(read_secrets(server.data_dir / SECRETS_NAME).token)
            except WorkspaceError:
                return None
        return state.key

    def touch(self, server: fleet.PersonServer, *, force: bool = False) -> None:
        """Count a request as the server's use (the file at most once every few seconds)."""
        state = self.person(server.pseudonym)
        now = time.monotonic()
        every = min(5.0, self.idle_seconds / 4) if self.idle_seconds > 0 else 5.0
        if force or now - state.last_touch > every:
            state.last_touch = now
            fleet.touch_activity(server)

    # -- idle stop ---------------------------------------------------------------------------
    def watch_idle(self) -> None:
        # Every 15 s, or more often for a short limit (a test's), so a server sleeps on time.
        every = max(0.5, min(_CHECK_EVERY, self.idle_seconds / 3)) if self.idle_seconds > 0 else _CHECK_EVERY
        while not self.stopping.wait(every):
            if self.idle_seconds <= 0:
                continue
            for server in fleet.person_servers(self.root):
                try:
                    if fleet.stop_if_idle(server, self.idle_seconds):
                        self.log(f"{server.pseudonym}: stopped after {self.idle_seconds / 60:.0f} min without use")
                except OSError as exc:  # a server removed meanwhile
                    self.log(f"{server.pseudonym}: idle check failed: {exc}")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Door
    timeout = CONNECTION_TIMEOUT  # per connection: a silent client is dropped
    # TCP_NODELAY: the headers and the body go out as two writes; on a kept-alive connection Nagle held
    # the body until the browser's delayed ACK, 40 ms on every request (bench/door.py measured it).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # no request log: paths can hold task ids
        pass

    def log_error(self, format: str, *args: Any) -> None:
        """A request http.server could not read (a timeout, a malformed request line): one line, no path."""
        self.server.log(f"a connection from {self.client_address[0]} failed: {(format % args)[:120]}")

    def _send(self, status: int, body: bytes, ctype: str, headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _whose(self) -> fleet.PersonServer | None:
        name = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip().lower()
        match = _HOST_RE.match(name)
        if match is None:
            return None
        pseudonym = match.group(1).upper()
        try:
            return fleet.person_server(self.server.root, pseudonym)
        except Exception:  # a name that is no pseudonym
            return None

    def _handle(self) -> None:
        # One reading of the request, before anything else: its framing, then its route (door_rules).
        framing = framing_problem(
            self.headers.get_all("Host") or [],
            self.headers.get_all("Content-Length") or [],
            self.headers.get_all("Transfer-Encoding") or [],
        )
        if framing is not None:
            return self._refuse(framing[0], framing[1])
        route = route_of(self.path)
        if isinstance(route, str):
            return self._refuse(400, route)
        self._trace(route)
        server = self._whose()
        if server is None:
            page = _UNKNOWN_PAGE.format(port=self.server.server_address[1]).encode()
            self.close_connection = True
            return self._send(404, page, "text/html; charset=utf-8", (("Connection", "close"),))
        if route.path.startswith("/__annotate/"):
            self.close_connection = True  # no body read: a request with one does not keep the connection
            return self._asset(route.path.rsplit("/", 1)[-1])
        why = refusal(self.command, route)
        if why is not None:
            return self._refuse(403, f"{why}: annotate's servers refuse it")
        length = int(self.headers.get("Content-Length") or 0)
        if not self.server.reserve(length):
            return self._refuse(503, "the door holds as many request bodies as it may; try again")
        try:
            body = self.rfile.read(length) if length else None
            if body is not None and len(body) < length:
                self.close_connection = True
                return None  # the client went away mid-body
            self._serve(server, route, body)
        finally:
            self.server.release(length)

    def _serve(self, server: fleet.PersonServer, route: Route, body: bytes | None) -> None:
        navigation = self._navigation()
        if navigation:
            self.server.touch(server)  # a page load is use; Label Studio's polls are not
        if not fleet.is_running(server) or self.server.person(server.pseudonym).starting:
            # Asleep: a page load wakes it, and so does a write of a logged-in page (a submit after a
            # long read); an anonymous call never does.
            if not navigation and not (self._writes() and self._logged_in()):
                return self._refuse(503, "this server is asleep: open your address in the browser to wake it")
            state = self.server.ensure_started(server)
            if navigation:
                detail = state.error or "It was asleep to save memory; it takes a few seconds to wake up."
                page = _STARTING_PAGE.format(detail=html.escape(detail)).encode()
                return self._send(503, page, "text/html; charset=utf-8", (("Retry-After", "2"),))
            state.ready.wait(self.server.start_timeout)
        self._proxy(server, body)

    def _refuse(self, status: int, reason: str) -> None:
        """Answer with ``reason`` and close: no body is read, so the connection cannot carry another request."""
        self.close_connection = True
        body = json.dumps({"detail": reason}).encode()
        self._send(status, body, "application/json", (("Connection", "close"),))

    def _trace(self, route: Route) -> None:
        """The route's shape (no ids, no query values but an action's) to ``ANNOTATE_DOOR_TRACE``: how
        the allow-list of door_rules was measured."""
        trace = os.environ.get("ANNOTATE_DOOR_TRACE")
        if not trace:
            return
        keys = sorted(k + ("=" + ",".join(v) if k == "id" else "") for k, v in route.query.items())
        shape = re.sub(r"\d+", "N", route.path) + ("?" + "&".join(keys) if keys else "")
        with open(trace, "a", encoding="utf-8") as fh:
            fh.write(f"{self.command} {shape} {'nav' if self._navigation() else ''}\n")

    def _navigation(self) -> bool:
        return self.command == "GET" and "text/html" in (self.headers.get("Accept") or "")

    def _writes(self) -> bool:
        return self.command not in ("GET", "HEAD", "OPTIONS")

    def _logged_in(self) -> bool:
        return "sessionid=" in (self.headers.get("Cookie") or "")

    def _asset(self, name: str) -> None:
        if name not in _ASSETS:
            return self._send(404, b"", "text/plain")
        data = resources.files("annotate.labelstudio").joinpath("assets", name).read_bytes()
        self._send(200, data, _ASSETS[name], (("X-Content-Type-Options", "nosniff"),))

    def _proxy(self, server: fleet.PersonServer, body: bytes | None) -> None:
        # The door's own framing: every hop-by-hop header, the client's Content-Length and any method
        # override dropped; http.client sets Content-Length from the body the door read.
        dropped = {*_HOP, "accept-encoding", "content-length", "x-http-method-override", "x-method-override"}
        dropped.add(DOOR_HEADER.lower())  # only the door says it is the door
        headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
        headers["X-Forwarded-For"] = self.client_address[0]
        key = self.server.key(server)
        if key is not None:
            headers[DOOR_HEADER] = key
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=900)
        try:
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except (ConnectionError, OSError, http.client.HTTPException):
                # Starting, or stopped between the check and the request: wake it, say so.
                state = self.server.ensure_started(server)
                if self._navigation():
                    page = _STARTING_PAGE.format(detail="It is waking up.").encode()
                    return self._send(503, page, "text/html; charset=utf-8", (("Retry-After", "2"),))
                state.ready.wait(self.server.start_timeout)
                if self._writes():  # it may have been stored before the server went: never say "try again"
                    said = (
                        "the server stopped while this was being saved: it may have been saved; reload the task "
                        "and look before answering again"
                    )
                    return self._send(503, json.dumps({"detail": said}).encode(), "application/json")
                return self._send(503, b'{"detail": "the server is starting; try again"}', "application/json")
        finally:
            conn.close()
        if self._writes() and 200 <= resp.status < 300:
            self.server.touch(server, force=True)  # a saved answer is use
        ctype = resp.getheader("Content-Type", "")
        if ctype.startswith("text/html") and not resp.getheader("Content-Encoding") and b"</head>" in data:
            data = data.replace(b"</head>", _INJECT + b"</head>", 1)
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() in _HOP or k.lower() == "content-length":
                continue
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


# -- the door as a process ---------------------------------------------------------------------


@dataclass(frozen=True)
class DoorStatus:
    """The front door of a workspace, as its state file and the process say."""

    running: bool
    pid: int | None = None
    host: str | None = None
    port: int | None = None
    idle_seconds: float | None = None

    def address(self, pseudonym: str) -> str | None:
        return person_address(pseudonym, self.port) if self.running and self.port else None


def _is_door(pid: int, root: Path) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"annotate.labelstudio.server.frontdoor" in argv and os.fsencode(str(root)) in argv


def door_status(root: Path) -> DoorStatus:
    """Whether the front door of the people's servers under ``root`` runs, and where. Changes nothing."""
    try:
        raw = json.loads((Path(root) / DOOR_NAME).read_text(encoding="utf-8"))
        port = raw.get("port") if isinstance(raw.get("port"), int) else None
        pid = int(raw.get("pid", 0))
    except (OSError, ValueError, AttributeError, TypeError):
        return DoorStatus(False)
    if not pid or not pid_alive(pid) or not _is_door(pid, Path(root).resolve()):
        return DoorStatus(False, port=port)
    return DoorStatus(True, pid, str(raw.get("host")), int(raw["port"]), float(raw.get("idle_seconds", 0)))


def start_door(
    root: Path,
    *,
    host: str,
    port: int,
    idle_seconds: float = DEFAULT_IDLE_SECONDS,
    start_timeout: float = 300.0,
    timeout: float = 20.0,
) -> DoorStatus:
    """Start the front door for ``root`` in its own session (or return the one running there).

    A door running with another port or idle limit is restarted with these. Refuses a busy port.
    """
    root = Path(root).resolve()
    current = door_status(root)
    if current.running and current.port == port and current.host == host and current.idle_seconds == idle_seconds:
        return current
    if current.running:
        stop_door(root)
    if port_in_use(host, port):
        raise LabelStudioError(
            f"port {port} on {host} is taken by another program; choose the front door's port with `annotate ls "
            f"start --port N`."
        )
    log = open(root / DOOR_LOG, "ab")  # noqa: SIM115 (handed to the child)
    try:
        os.chmod(root / DOOR_LOG, 0o600)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "annotate.labelstudio.server.frontdoor",
                "--root",
                str(root),
                "--host",
                host,
                "--port",
                str(port),
                "--idle-seconds",
                str(idle_seconds),
                "--start-timeout",
                str(start_timeout),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd=root,
        )
    finally:
        log.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LabelStudioError(
                f"annotate's front door exited at once (exit {proc.returncode}); see {root / DOOR_LOG}."
            )
        try:
            with socket.create_connection((host, port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.1)
    else:
        proc.terminate()
        raise LabelStudioError(f"annotate's front door did not listen on {host}:{port} within {timeout:.0f} s.")
    body = {"pid": proc.pid, "host": host, "port": port, "idle_seconds": idle_seconds}
    write_private_file(root / DOOR_NAME, (json.dumps(body) + "\n").encode(), replace=True)
    return DoorStatus(True, proc.pid, host, port, idle_seconds)


def stop_door(root: Path) -> bool:
    """Stop the front door of ``root`` (SIGTERM); True when one was running."""
    root = Path(root).resolve()
    st = door_status(root)
    if st.port is not None:  # its port stays known: the people's addresses (their sheets) are the door's
        write_private_file(root / DOOR_NAME, (json.dumps({"port": st.port}) + "\n").encode(), replace=True)
    else:
        (root / DOOR_NAME).unlink(missing_ok=True)
    if not st.running or st.pid is None:
        return False
    os.kill(st.pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while pid_alive(st.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(st.pid):
        os.kill(st.pid, signal.SIGKILL)
    return True


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="annotate-front-door", description="annotate's front door (see the docstring)")
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--idle-seconds", type=float, default=DEFAULT_IDLE_SECONDS)
    ap.add_argument("--start-timeout", type=float, default=300.0)
    args = ap.parse_args(argv)
    # A test's shorter silence limit (tests/labelstudio/test_door_attacks.py); seconds.
    _Handler.timeout = float(os.environ.get("ANNOTATE_DOOR_TIMEOUT") or CONNECTION_TIMEOUT)
    door = Door(
        (args.host, args.port), args.root.resolve(), idle_seconds=args.idle_seconds, start_timeout=args.start_timeout
    )
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=door.shutdown, daemon=True).start())
    threading.Thread(target=door.watch_idle, daemon=True).start()
    door.log(f"front door on {args.host}:{args.port} for {args.root} (idle stop after {args.idle_seconds:.0f} s)")
    try:
        door.serve_forever(poll_interval=0.5)
    finally:
        door.stopping.set()
        door.server_close()
        door.log("front door stopped")


if __name__ == "__main__":
    main()
