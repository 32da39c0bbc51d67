"""Tests of annotate.labelstudio.server: pure helpers, then a real Label Studio server (no mocks).

The real-server tests copy the golden data dir of ``tests/ls_fixture.py``; only the very first run
on a machine pays for the migrations.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from annotate.errors import LabelStudioError, WorkspaceError
from annotate.labelstudio import server as lss
from annotate.labelstudio.server import procnet
from tests.ls_fixture import (
    LSHandle,
    free_port,
    golden_data_dir,
    label_studio_or_skip,
    running_server,
)

real_server = [pytest.mark.labelstudio, pytest.mark.slow]

TOKEN = "0123456789abcdef0123456789abcdef01234567"
CREDS = lss.Secrets(admin_email="admin@annotate.local", password="pw-Secret-123456", token=TOKEN)


def ls_get_env(env: dict[str, str], name: str) -> str | None:
    """How Label Studio resolves a setting (label_studio.core.utils.params.get_env)."""
    for key in ("LABEL_STUDIO_" + name, "HEARTEX_" + name, name):
        if key in env:
            return env[key]
    return None


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---------------------------------------------------------------------------------------------
# Pure helpers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "token, ok",
    [
        (TOKEN, True),
        ("f" * 40, True),
        (TOKEN.upper(), False),
        (TOKEN[:-1], False),
        (TOKEN + "0", False),
        (TOKEN + "\n", False),  # re.match("^...$") would accept this one
        (" " + TOKEN, False),
        ("g" * 40, False),
        ("", False),
        (None, False),
        (int("1" * 40), False),
    ],
)
def test_token_format(token: object, ok: bool) -> None:
    assert lss.is_valid_token(token) is ok


def test_server_env_pins_settings_against_caller_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hostile = {
        "DEBUG": "1",
        "HOST": "http://evil.example",
        "DJANGO_DB": "postgresql",
        "DATABASE_NAME": "/evil/db.sqlite3",
        "USERNAME": "mallory@evil.example",
        "PASSWORD": "mallory",
        "USER_TOKEN": "f" * 40,
        "LOG_LEVEL": "DEBUG",
        "ALLOWED_HOSTS": "*",
        "LABEL_STUDIO_DEBUG": "true",
        "HEARTEX_DEBUG": "true",
        "LABEL_STUDIO_SENTRY_DSN": "https://key@sentry.example/1",
        "LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED": "true",
        "HEARTEX_COLLECT_ANALYTICS": "true",
        "DJANGO_SETTINGS_MODULE": "evil.settings",
        "PYTHONPATH": "/evil",
        "PYTHONHOME": "/evil",
        "HTTP_PROXY": "http://proxy.example:3128",
        "CI": "true",
        "LC_ALL": "C.UTF-8",
    }
    for k, v in hostile.items():
        monkeypatch.setenv(k, v)
    env = lss.server_env(data_dir=tmp_path, host="127.0.0.1", port=8123, secrets=CREDS)

    expected = {
        "DEBUG": "false",
        "HOST": "",
        "DJANGO_DB": "sqlite",
        "DATABASE_NAME": str(tmp_path / "label_studio.sqlite3"),
        "BASE_DATA_DIR": str(tmp_path),
        "USERNAME": CREDS.admin_email,
        "PASSWORD": CREDS.password,
        "USER_TOKEN": TOKEN,
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SENTRY_DSN": "",
        "FRONTEND_SENTRY_DSN": "",
        "COLLECT_ANALYTICS": "false",
        "LATEST_VERSION_CHECK": "false",
        "CORS_ALLOW_ALL_ORIGINS": "false",
        "DISABLE_SIGNUP_WITHOUT_LINK": "true",
        "ENABLE_LEGACY_API_TOKEN": "true",
        "CONVERTER_DOWNLOAD_RESOURCES": "false",
    }
    for name, value in expected.items():
        assert ls_get_env(env, name) == value, name
    assert env["LOG_LEVEL"] == "WARNING"  # base settings read the bare name
    assert env["SENTRY_DSN"] == ""
    # Nothing else of the caller's environment gets through, except the harmless allow-list.
    for name in (
        "HEARTEX_DEBUG",
        "LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED",
        "DJANGO_SETTINGS_MODULE",
        "PYTHONPATH",
        "PYTHONHOME",
        "HTTP_PROXY",
        "CI",
    ):
        assert name not in env, name
    assert ls_get_env(env, "LOCAL_FILES_SERVING_ENABLED") is None
    assert env["PATH"] == os.environ["PATH"]
    assert env["LC_ALL"] == "C.UTF-8"


def test_server_env_explicit_base_env_and_extra(tmp_path: Path) -> None:
    env = lss.server_env(
        data_dir=tmp_path,
        host="10.1.2.3",
        port=9000,
        secrets=CREDS,
        base_env={"PATH": "/bin", "DEBUG": "1"},
        extra={"LABEL_STUDIO_TASK_LOCK_TTL": "1800"},
    )
    assert env["PATH"] == "/bin" and "DEBUG" not in env
    assert env["LABEL_STUDIO_TASK_LOCK_TTL"] == "1800"
    # A deliberately exposed server must accept its own address in the Host header.
    assert env["LABEL_STUDIO_ALLOWED_HOSTS"] == "127.0.0.1,localhost,10.1.2.3"


def test_server_env_rejects_malformed_token(tmp_path: Path) -> None:
    bad = lss.Secrets(CREDS.admin_email, CREDS.password, TOKEN + "\n")
    with pytest.raises(ValueError):
        lss.server_env(data_dir=tmp_path, host="127.0.0.1", port=8080, secrets=bad)


def test_server_command_binds_internal_host_and_has_no_secret(tmp_path: Path) -> None:
    argv = lss.server_command("/x/label-studio", host="127.0.0.1", port=8123, data_dir=tmp_path)
    assert argv[:2] == ["/x/label-studio", "start"]
    assert argv[argv.index("--internal-host") + 1] == "127.0.0.1"
    assert argv[argv.index("--port") + 1] == "8123"
    assert "--debug" in argv and "--no-browser" in argv
    assert "--host" not in argv  # only a URL prefix, not the bind address
    joined = " ".join(argv)
    assert TOKEN not in joined and CREDS.password not in joined


def test_redact() -> None:
    text = (
        f"user pw-Secret-123456 token {TOKEN}\n"
        "GET /user/signup/?token=abcdef123456&next=/ HTTP/1.1\n"
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.sig\n"
        "set-cookie: sessionid=k7s9d8f7s9d8f7; csrftoken=AbC123xyz\n"
        "LABEL_STUDIO_PASSWORD=hunter22 SECRET_KEY='django-insecure-xyz'\n"
        "Initializing database..\n"
    )
    out = lss.redact(text, known=[TOKEN, "pw-Secret-123456"])
    for secret in (
        TOKEN,
        "pw-Secret-123456",
        "abcdef123456",
        "eyJhbGciOiJIUzI1NiJ9",
        "k7s9d8f7s9d8f7",
        "AbC123xyz",
        "hunter22",
        "django-insecure-xyz",
    ):
        assert secret not in out, secret
    assert "Initializing database.." in out
    assert "&next=/" in out


def test_parse_proc_net_tcp() -> None:
    tcp = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n"
        "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0"
        "        0 1111 1 0000000000000000 100 0 0 10 0\n"
        "   1: 00000000:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0"
        "        0 2222 1 0000000000000000 100 0 0 10 0\n"
        "   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0"
        "        0 3333 1 0000000000000000 100 0 0 10 0\n"
    )
    tcp6 = (
        "  sl  local_address                         remote_address                        st\n"
        "   0: 00000000000000000000000001000000:1F92 00000000000000000000000000000000:0000 0A "
        "00000000:00000000 00:00000000 00000000     0        0 4444 1\n"
        "   1: 00000000000000000000000000000000:1F93 00000000000000000000000000000000:0000 0A "
        "00000000:00000000 00:00000000 00000000     0        0 5555 1\n"
    )
    socks = lss.parse_proc_net_tcp(tcp) + lss.parse_proc_net_tcp(tcp6)
    if sys.byteorder != "little":  # pragma: no cover - the samples are little-endian
        pytest.skip("samples are from a little-endian machine")
    got = [(str(s.address), s.port, s.inode) for s in socks]
    assert got == [
        ("127.0.0.1", 8080, 1111),
        ("0.0.0.0", 8081, 2222),
        ("::1", 8082, 4444),
        ("::", 8083, 5555),
    ]  # the established connection (state 01) is not a listener


def test_secrets_file_is_0600_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "secrets.json"
    old = os.umask(0)  # the most permissive umask: the file must still be private
    try:
        created = lss.create_secrets(path)
    finally:
        os.umask(old)
    assert mode_of(path) == 0o600
    assert lss.is_valid_token(created.token) and len(created.password) >= 24
    assert lss.read_secrets(path) == created
    assert [p.name for p in tmp_path.iterdir()] == ["secrets.json"]  # no temp file left
    with pytest.raises(WorkspaceError, match="refusing to overwrite"):
        lss.create_secrets(path)
    assert lss.read_secrets(path) == created  # untouched


def test_read_secrets_rejects_broken_files(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    with pytest.raises(WorkspaceError, match="does not exist"):
        lss.read_secrets(p)
    p.write_text("{not json")
    with pytest.raises(WorkspaceError, match="cannot be read"):
        lss.read_secrets(p)
    p.write_text(json.dumps({"admin_email": "a@b", "admin_password": "x", "token": "short"}))
    with pytest.raises(WorkspaceError, match="malformed token") as exc:
        lss.read_secrets(p)
    assert "short" not in str(exc.value)


def test_secret_values_absent_from_repr() -> None:
    for text in (repr(CREDS), str(CREDS)):
        assert TOKEN not in text and CREDS.password not in text
        assert CREDS.admin_email in text


def test_find_label_studio_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(lss.ENV_LS_BIN, str(tmp_path / "nope"))
    with pytest.raises(LabelStudioError, match=lss.ENV_LS_BIN):
        lss.find_label_studio()
    exe = tmp_path / "label-studio"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o700)
    monkeypatch.setenv(lss.ENV_LS_BIN, str(exe))
    assert lss.find_label_studio() == exe


@pytest.mark.parametrize("host", ["::1", "example.com", "127.0.0.1:80", ""])
def test_start_rejects_unsupported_hosts(host: str, tmp_path: Path) -> None:
    with pytest.raises(LabelStudioError, match="Invalid host"):
        lss.start_server(tmp_path / "ls", host=host, executable=Path(sys.executable))
    assert not (tmp_path / "ls").exists()


def test_port_in_use_probe() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.listen()
        assert lss.port_in_use("127.0.0.1", port)
        assert lss.port_in_use("0.0.0.0", port)
    assert not lss.port_in_use("127.0.0.1", port)


def test_stop_and_status_without_server(tmp_path: Path) -> None:
    assert lss.stop_server(tmp_path / "missing") is False
    st = lss.server_status(tmp_path / "missing")
    assert not st.running and st.pid is None
    # A stale pid file naming a live process that is not Label Studio: never signalled.
    d = tmp_path / "ls"
    d.mkdir()
    (d / lss.PID_NAME).write_text(json.dumps({"pid": os.getpid(), "port": 1, "host": "127.0.0.1"}))
    st = lss.server_status(d)
    assert not st.running and "stale" in (st.detail or "")
    assert lss.stop_server(d) is False
    assert not (d / lss.PID_NAME).exists()


# ---------------------------------------------------------------------------------------------
# Real server, shared by the read-only tests of this module
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LSHandle]:
    with running_server(tmp_path_factory.mktemp("ls-module")) as handle:
        yield handle


def _http() -> httpx.Client:
    return httpx.Client(timeout=10, trust_env=False)


def _own_listeners(pid: int, port: int) -> list[lss.ListenSocket]:
    """Listening sockets of ``pid`` on ``port``, read from /proc (Linux)."""
    inodes = procnet.pid_sockets(pid)
    found = procnet.listeners(port)
    assert inodes is not None and found is not None, "/proc is not readable"
    return [s for s in found if s.inode in inodes]


def _non_loopback_ip() -> str | None:
    """An address of this machine other than loopback, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: no packet is sent for UDP connect
            ip = s.getsockname()[0]
        except OSError:
            return None
    return None if ipaddress.ip_address(ip).is_loopback else ip


@pytest.mark.labelstudio
@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc")
def test_binds_to_loopback_only(server: LSHandle) -> None:
    socks = _own_listeners(server.pid, server.port)
    assert socks, "the server process holds no listening socket on its port"
    assert {str(s.address) for s in socks} == {"127.0.0.1"}
    assert server.info.warnings == ()
    if shutil.which("ss"):
        out = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=True).stdout
        local = [ln.split()[3] for ln in out.splitlines() if ln.split()[3].endswith(f":{server.port}")]
        assert local == [f"127.0.0.1:{server.port}"]
    ip = _non_loopback_ip()
    if ip is not None:  # from another interface the port is closed
        with socket.socket() as s:
            s.settimeout(2)
            assert s.connect_ex((ip, server.port)) != 0


@pytest.mark.labelstudio
@pytest.mark.slow
def test_whoami_with_token(server: LSHandle) -> None:
    with _http() as client:
        r = client.get(f"{server.url}/api/current-user/whoami", headers=server.headers)
        assert r.status_code == 200
        assert r.json()["email"] == server.admin_email
        assert client.get(f"{server.url}/api/current-user/whoami").status_code == 401
        wrong = {"Authorization": "Token " + "0" * 40}
        assert client.get(f"{server.url}/api/current-user/whoami", headers=wrong).status_code == 401


@pytest.mark.labelstudio
@pytest.mark.slow
def test_lockdown_settings_are_live(server: LSHandle) -> None:
    with _http() as client:
        # Host-header allow-list (the default is "*").
        r = client.get(f"{server.url}/health/", headers={"Host": "evil.example"})
        assert r.status_code == 400
        # No CORS wildcard.
        r = client.get(f"{server.url}/api/version", headers={"Origin": "http://evil.example", **server.headers})
        assert "access-control-allow-origin" not in r.headers
        # No PyPI version check.
        assert r.json().get("latest_version_from_pypi") is None


@pytest.mark.labelstudio
@pytest.mark.slow
def test_file_modes(server: LSHandle) -> None:
    d = server.data_dir
    assert mode_of(d) == 0o700
    assert mode_of(d / lss.SECRETS_NAME) == 0o600
    assert mode_of(d / lss.PID_NAME) == 0o600
    assert mode_of(d / lss.LOG_NAME) == 0o600
    for p in [d / "label_studio.sqlite3", *d.glob("label_studio.sqlite3-*"), d / ".env"]:
        assert mode_of(p) & 0o077 == 0, p
    assert lss.read_secrets(d / lss.SECRETS_NAME).token == server.token


@pytest.mark.labelstudio
@pytest.mark.slow
def test_status_of_running_server(server: LSHandle) -> None:
    st = lss.server_status(server.data_dir)
    assert st.running and st.healthy and st.authenticated
    assert st.pid == server.pid and st.url == server.url
    assert st.admin_email == server.admin_email and st.detail is None


@pytest.mark.labelstudio
@pytest.mark.slow
def test_token_absent_from_reprs_and_log(server: LSHandle) -> None:
    st = lss.server_status(server.data_dir)
    secret = lss.read_secrets(server.data_dir / lss.SECRETS_NAME)
    for obj in (server, server.info, st, secret):
        for text in (repr(obj), str(obj)):
            assert server.token not in text and secret.password not in text
    assert server.info.token() == server.token
    log = (server.data_dir / lss.LOG_NAME).read_text()
    assert server.token not in log and secret.password not in log
    argv = Path(f"/proc/{server.pid}/cmdline").read_bytes().decode()
    assert server.token not in argv and secret.password not in argv


@pytest.mark.labelstudio
@pytest.mark.slow
def test_second_server_on_same_data_dir_is_refused(server: LSHandle) -> None:
    pidfile = (server.data_dir / lss.PID_NAME).read_text()
    with pytest.raises(lss.AlreadyRunningError, match=str(server.pid)):
        lss.start_server(server.data_dir, port=free_port(), executable=label_studio_or_skip())
    assert (server.data_dir / lss.PID_NAME).read_text() == pidfile
    assert procnet.scan_servers_for(server.data_dir) in ([server.pid], [])  # [] without /proc


@pytest.mark.labelstudio
@pytest.mark.slow
def test_busy_port_is_refused_without_hop(tmp_path: Path) -> None:
    exe = label_studio_or_skip()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.listen()
        with pytest.raises(lss.PortInUseError, match=f"Port {port}"):
            lss.start_server(tmp_path / "ls", port=port, executable=exe)
    # Refused before anything happened: no data dir, no process, nothing on PORT+1.
    assert not (tmp_path / "ls").exists()
    assert procnet.scan_servers_for(tmp_path / "ls") == []
    with socket.socket() as probe:
        probe.settimeout(1)
        assert probe.connect_ex(("127.0.0.1", port + 1)) != 0


# ---------------------------------------------------------------------------------------------
# Real server, one per test: lifecycle and failures
# ---------------------------------------------------------------------------------------------


@pytest.mark.labelstudio
@pytest.mark.slow
def test_stop_server_and_restart_in_hostile_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with running_server(tmp_path) as h:
        t0 = time.monotonic()
        assert lss.stop_server(h.data_dir) is True
        elapsed = time.monotonic() - t0
        assert elapsed < 15
        assert not procnet.pid_alive(h.pid)
        assert not (h.data_dir / lss.PID_NAME).exists()
        assert not lss.port_in_use("127.0.0.1", h.port)
        st = lss.server_status(h.data_dir)
        assert not st.running and not st.healthy and st.admin_email == h.admin_email
        assert lss.stop_server(h.data_dir) is False
        # The data survives: a restart on the same dir works with the same token, even with
        # generic names in the caller's environment that LS would otherwise pick up.
        for k, v in {
            "DEBUG": "1",
            "HOST": "http://evil.example",
            "DJANGO_DB": "postgresql",
            "PORT": "1",
            "PYTHONPATH": "/nonexistent",
        }.items():
            monkeypatch.setenv(k, v)
        info = lss.start_server(h.data_dir, port=free_port(), executable=label_studio_or_skip())
        assert info.token() == h.token and not info.seeded
        assert lss.server_status(h.data_dir).authenticated
        with _http() as client:  # Django DEBUG is off: a 404 is not the yellow debug page
            r = client.get(f"{info.url}/no-such-page-xyz/", headers=h.headers)
            assert r.status_code == 404 and "URLconf" not in r.text


@pytest.mark.labelstudio
@pytest.mark.slow
def test_rejected_token_stops_the_server(tmp_path: Path) -> None:
    exe = label_studio_or_skip()
    data_dir = tmp_path / "ls"
    shutil.copytree(golden_data_dir(), data_dir, symlinks=True)
    # A well-formed token the database has never seen, as after a lost secrets file.
    other = "abcdef0123456789abcdef0123456789abcdef01"
    s = lss.read_secrets(data_dir / lss.SECRETS_NAME)
    (data_dir / lss.SECRETS_NAME).write_text(
        json.dumps({"admin_email": s.admin_email, "admin_password": s.password, "token": other})
    )
    with pytest.raises(LabelStudioError, match="rejected the token") as exc:
        lss.start_server(data_dir, port=free_port(), executable=exe)
    assert other not in str(exc.value)
    assert procnet.scan_servers_for(data_dir) == []
    assert not (data_dir / lss.PID_NAME).exists()


@pytest.mark.labelstudio
@pytest.mark.slow
def test_crash_is_reported_with_redacted_log(tmp_path: Path) -> None:
    exe = label_studio_or_skip()
    data_dir = tmp_path / "ls"
    shutil.copytree(golden_data_dir(), data_dir, symlinks=True)
    (data_dir / "label_studio.sqlite3").write_bytes(b"this is not a database" * 100)
    s = lss.read_secrets(data_dir / lss.SECRETS_NAME)
    with pytest.raises(LabelStudioError, match="exited with code") as exc:
        lss.start_server(data_dir, port=free_port(), executable=exe, timeout=120)
    msg = str(exc.value)
    assert "not a database" in msg  # the log tail is there
    assert s.token not in msg and s.password not in msg
    assert not (data_dir / lss.PID_NAME).exists()


def test_crash_log_tail_never_shows_secrets(tmp_path: Path) -> None:
    """A stand-in executable that prints its secrets and dies: they must come out redacted.

    Runs the real start path (subprocess, log file, tail); only the program is fake, because
    Label Studio itself does not print its token.
    """
    fake = tmp_path / "label-studio"
    fake.write_text(
        "#!/bin/sh\n"
        'echo "argv: $*"\n'
        'echo "env token: $LABEL_STUDIO_USER_TOKEN"\n'
        'echo "Authorization: Token $LABEL_STUDIO_USER_TOKEN"\n'
        'echo "password is $LABEL_STUDIO_PASSWORD"\n'
        'echo "boom" >&2\n'
        "exit 3\n"
    )
    fake.chmod(0o700)
    data_dir = tmp_path / "ls"
    with pytest.raises(LabelStudioError, match="exited with code 3") as exc:
        lss.start_server(data_dir, port=free_port(), executable=fake, timeout=30)
    s = lss.read_secrets(data_dir / lss.SECRETS_NAME)
    msg = str(exc.value)
    assert "boom" in msg and "--internal-host 127.0.0.1" in msg and "--debug" in msg
    assert s.token not in msg and s.password not in msg
    assert "[REDACTED]" in msg
    assert not (data_dir / lss.PID_NAME).exists()
    assert mode_of(data_dir / lss.SECRETS_NAME) == 0o600


def test_timeout_stops_the_process_group(tmp_path: Path) -> None:
    """A program that never becomes ready is stopped, with any child it forked."""
    child_pid = tmp_path / "child.pid"
    fake = tmp_path / "label-studio"
    fake.write_text(f'#!/bin/sh\nsleep 300 &\necho $! > "{child_pid}"\nwait\n')
    fake.chmod(0o700)
    data_dir = tmp_path / "ls"
    t0 = time.monotonic()
    with pytest.raises(LabelStudioError, match="not ready after") as exc:
        lss.start_server(data_dir, port=free_port(), executable=fake, timeout=1.5)
    assert time.monotonic() - t0 < 10
    assert "starting Label Studio" in str(exc.value)  # our header line of this run's log
    assert not (data_dir / lss.PID_NAME).exists()
    log = (data_dir / lss.LOG_NAME).read_text()
    assert log.count("--- annotate: starting") == 1
    # The forked child went down with the server's process group.
    pid = int(child_pid.read_text())
    deadline = time.monotonic() + 5
    while procnet.pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)  # the orphan is reaped by init, not by us
    assert not procnet.pid_alive(pid)
