"""The one HTTP client policy for talking to Label Studio.

Every httpx client of ``annotate`` comes from ``client``: the gateway's (which the SDK shares) and
the supervisor's readiness and status probes. One policy, because each of them sends the admin's
token.
"""

from __future__ import annotations

import httpx

__all__ = ["client"]


def client(base_url: str, *, token: str | None = None, timeout: float, door: str | None = None) -> httpx.Client:
    """An httpx client for the Label Studio at ``base_url``; the caller closes it.

    ``token``, when given, is sent on every request as ``Authorization: Token <token>``, with the
    front door's key derived from it (``X-Annotate-Door``: a person's server answers nothing without
    it; other servers ignore it). ``door``: that key without the token (web forms, readiness probes).
    Environment proxies are ignored, every request gets a fresh connection, and redirects are not
    followed.
    """
    https = httpx.URL(base_url).scheme == "https"
    return httpx.Client(
        base_url=base_url,
        timeout=timeout,
        headers=_headers(token, door),
        # With HTTP(S)_PROXY or ALL_PROXY set (and the host not in NO_PROXY), httpx would send the
        # Authorization header to the proxy. Label Studio is on loopback or at a URL we were given.
        trust_env=False,
        # trust_env=False also stops httpx reading SSL_CERT_FILE / SSL_CERT_DIR, which an HTTPS
        # Label Studio with a private CA may rely on; keep honouring them for https URLs.
        verify=httpx.create_ssl_context(trust_env=True) if https else True,
        # No keep-alive: Label Studio runs Django's development server, and a request sent on a
        # pooled connection was seen to hang until the client timeout (both ends idle). A fresh
        # loopback connection per request costs well under a millisecond.
        limits=httpx.Limits(max_keepalive_connections=0),
        follow_redirects=False,
    )


def _headers(token: str | None, door: str | None) -> dict[str, str]:
    from annotate.labelstudio.server.secrets import DOOR_HEADER, door_key

    headers = {}
    if token is not None:
        headers["Authorization"] = f"Token {token}"
        door = door or door_key(token)
    if door is not None:
        headers[DOOR_HEADER] = door
    return headers
