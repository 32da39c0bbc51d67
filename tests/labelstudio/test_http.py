"""The HTTP client policy (annotate.labelstudio.http), against a real HTTP server on loopback.

Every proxy variable points at a port that refuses connections. The gateway, the factory's client
and the server's readiness probe must still reach the server directly, and the server must see the
token: so the token never went to a proxy.
"""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from annotate.labelstudio import http as ls_http
from annotate.labelstudio.gateway import LabelStudioGateway
from annotate.labelstudio.server import lifecycle

TOKEN = "0123456789abcdef0123456789abcdef01234567"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@dataclass
class Seen:
    """One request as the tiny server received it."""

    path: str
    authorization: str | None
    client_port: int


@dataclass
class TinyServer:
    url: str
    seen: list[Seen] = field(default_factory=list)


@pytest.fixture
def tiny_server() -> Iterator[TinyServer]:
    """An HTTP/1.1 server on loopback that answers every GET with a small JSON body."""
    server = TinyServer(url="")

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keeps connections open, so a pooling client would reuse one

        def do_GET(self) -> None:
            server.seen.append(Seen(self.path, self.headers.get("Authorization"), self.client_address[1]))
            body = json.dumps({"version": "tiny"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:  # the test's output stays quiet
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.url = f"http://127.0.0.1:{httpd.server_port}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def dead_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every proxy variable set to a loopback port that refuses connections; NO_PROXY unset."""
    # Bound but never listening: a connection to it is refused for as long as we hold it.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        proxy = f"http://127.0.0.1:{s.getsockname()[1]}"
        for name in PROXY_VARS:
            monkeypatch.setenv(name, proxy)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        yield proxy


def test_the_proxy_variables_are_in_force(tiny_server: TinyServer, dead_proxy: str) -> None:
    """Control: a client that trusts the environment goes to the proxy and fails."""
    with httpx.Client(timeout=5) as client, pytest.raises(httpx.TransportError):
        client.get(f"{tiny_server.url}/api/version", headers={"Authorization": f"Token {TOKEN}"})
    assert tiny_server.seen == []


def test_gateway_ignores_proxies_and_sends_its_token(tiny_server: TinyServer, dead_proxy: str) -> None:
    gw = LabelStudioGateway(tiny_server.url, TOKEN)
    try:
        assert gw._raw("GET", "/api/version", "reading the version") == {"version": "tiny"}
    finally:
        gw.close()
    assert [(s.path, s.authorization) for s in tiny_server.seen] == [("/api/version", f"Token {TOKEN}")]


def test_factory_client_ignores_proxies_and_opens_a_connection_per_request(
    tiny_server: TinyServer, dead_proxy: str
) -> None:
    with ls_http.client(tiny_server.url, token=TOKEN, timeout=5) as client:
        for _ in range(2):
            r = client.get("/api/version")
            assert r.status_code == 200 and r.json() == {"version": "tiny"}
    assert [(s.path, s.authorization) for s in tiny_server.seen] == [("/api/version", f"Token {TOKEN}")] * 2
    ports = [s.client_port for s in tiny_server.seen]
    assert ports[0] != ports[1]  # no keep-alive

    # Control for the line above: a pooling client reuses its connection with this server.
    tiny_server.seen.clear()
    with httpx.Client(base_url=tiny_server.url, timeout=5, trust_env=False) as pooling:
        pooling.get("/a")
        pooling.get("/b")
    assert tiny_server.seen[0].client_port == tiny_server.seen[1].client_port


def test_factory_client_without_token_sends_no_authorization(tiny_server: TinyServer, dead_proxy: str) -> None:
    with ls_http.client(tiny_server.url, timeout=5) as client:
        assert client.get("/health/").status_code == 200
    assert [(s.path, s.authorization) for s in tiny_server.seen] == [("/health/", None)]


def test_server_probe_ignores_proxies(tiny_server: TinyServer, dead_proxy: str) -> None:
    """The supervisor's readiness probe: /health without the token, then whoami with it."""
    with lifecycle._probe_client(tiny_server.url) as client:
        probe = lifecycle._probe(client, TOKEN)
    assert probe.healthy and probe.whoami == 200
    assert [(s.path, s.authorization) for s in tiny_server.seen] == [
        ("/health/", None),
        ("/api/current-user/whoami", f"Token {TOKEN}"),
    ]


def test_https_clients_still_read_the_ca_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """trust_env=False would drop SSL_CERT_FILE; the factory keeps it for https URLs."""
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing-ca.pem"))
    with pytest.raises(OSError):
        ls_http.client("https://127.0.0.1:1", timeout=1)
    ls_http.client("http://127.0.0.1:1", timeout=1).close()  # plain HTTP needs no CA
