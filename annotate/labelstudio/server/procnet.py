"""Processes, ports and sockets as the kernel reports them.

Linux ``/proc`` first (a pid's argv, zombie state and socket inodes; the listening sockets in
``/proc/net/tcp``), with ``ps`` or a warning where there is no procfs. ``port_in_use`` works
everywhere. These checks let us signal a pid only when it really is our server, and tell which
addresses it listens on.

Names without an underscore that are not in ``__all__`` are for the other modules of this package.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from annotate.errors import LabelStudioError

__all__ = ["ListenSocket", "parse_proc_net_tcp", "port_in_use"]


@dataclass(frozen=True)
class ListenSocket:
    """One listening TCP socket, as parsed from ``/proc/net/tcp`` or ``/proc/net/tcp6``."""

    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    port: int
    inode: int


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


def proc_cmdline(pid: int) -> list[str] | None:
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


def pid_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return not _is_zombie(pid)


def is_server_for(pid: int, data_dir: Path) -> bool:
    """True if ``pid`` is a live ``label-studio start`` serving ``data_dir``.

    Checked before any signal: a stale pid file may name a recycled pid that now belongs to an
    unrelated process.
    """
    args = proc_cmdline(pid)
    if not args or not pid_alive(pid):
        return False
    # argv is "[python] /path/label-studio start ..." (the script runs through its shebang).
    if not any(Path(a).name == "label-studio" for a in args[:3]) or "start" not in args:
        return False
    try:
        given = args[args.index("--data-dir") + 1]
    except (ValueError, IndexError):
        return False
    return Path(given).resolve() == data_dir.resolve()


def scan_servers_for(data_dir: Path) -> list[int]:
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
        if b"label-studio" in raw and target.encode() in raw and is_server_for(int(d.name), data_dir):
            pids.append(int(d.name))
    return pids


def pid_sockets(pid: int) -> set[int] | None:
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


def listeners(port: int) -> list[ListenSocket] | None:
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
