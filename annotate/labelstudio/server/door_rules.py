"""What the front door lets through: one reading of each request, and an allow-list of routes.

Pure (stdlib only). The door (``frontdoor``) reads a request once, here, and forwards only what this
module allows, as it read it:

* **Framing** (:func:`framing_problem`): exactly one ``Host``; at most one ``Content-Length``, plain
  digits, at most ``MAX_BODY``; no ``Transfer-Encoding`` (the door implements none, so a chunked
  body is refused rather than passed on to be read another way). The door then sets
  ``Content-Length`` itself on the request it forwards: what it read is what Label Studio reads.
* **The route** (:func:`route_of`): the path is percent-decoded once, as Django routes it; a path
  that still holds a ``%`` after that (double encoding), a backslash, a control character, an
  empty segment (``//``) or a dot segment (``.``, ``..``) is refused, so no spelling reaches
  Django as a route the allow-list did not see.
* **The allow-list** (:func:`refusal`): the methods and routes the labelling page uses, measured
  on Label Studio 1.23.2 by tracing the browser tests through the door (``ANNOTATE_DOOR_TRACE``):
  the pages, the login, the static files, the reads the page makes, and exactly four writes
  (an annotation, its update or removal, a draft, the Data Manager's own tabs) plus the
  ``next_task`` action. Anything else is refused (403), whatever Label Studio would do with it:
  creating or changing projects (their label config), importing or deleting tasks, invitations,
  signup, tokens reset, every other Data Manager action. annotate's own calls reach each server
  directly with its admin token, never through the door.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote_to_bytes

__all__ = ["MAX_BODY", "Route", "framing_problem", "refusal", "route_of"]

#: The largest request body the door forwards: a reviewer's annotation, a draft or a tab is a few
#: kilobytes (Label Studio's own 250 MB limit is for imports, which never pass the door).
MAX_BODY = 16 * 1024 * 1024
_DIGITS = re.compile(r"[0-9]{1,10}")


def framing_problem(
    hosts: Sequence[str], lengths: Sequence[str], transfer_encodings: Sequence[str]
) -> tuple[int, str] | None:
    """Why a request's framing is refused: (status, reason); None when it is one plain request.

    >>> framing_problem(["a1.localhost"], ["297", "0"], [])
    (400, 'more than one Content-Length')
    >>> framing_problem(["a1.localhost"], ["-1"], [])
    (400, "Content-Length '-1' is not a number of bytes")
    >>> framing_problem(["a1.localhost"], [], ["chunked"])
    (411, 'a body of unknown length (Transfer-Encoding): send a Content-Length')
    >>> framing_problem(["a1.localhost"], ["12"], []) is None
    True
    """
    if len(hosts) != 1:
        return 400, "one Host header, not " + str(len(hosts))
    if transfer_encodings:
        return 411, "a body of unknown length (Transfer-Encoding): send a Content-Length"
    if len(lengths) > 1:
        return 400, "more than one Content-Length"
    if lengths:
        value = lengths[0].strip()
        if not _DIGITS.fullmatch(value):
            return 400, f"Content-Length {value[:20]!r} is not a number of bytes"
        if int(value) > MAX_BODY:
            return 413, f"a body over {MAX_BODY:,} bytes"
    return None


@dataclass(frozen=True)
class Route:
    """A request target as Django routes it: the decoded path and the decoded query."""

    path: str
    query: dict[str, list[str]]


def route_of(target: str) -> Route | str:
    """The route of a request target (origin-form), or why it is refused.

    >>> route_of("/api/%70rojects/").path
    '/api/projects/'
    >>> route_of("/api/projects%2F").path  # Django decodes %2F into a slash before routing, and so does this
    '/api/projects/'
    >>> route_of("/api/%2570rojects/")
    'a path still percent-encoded after decoding (double encoding)'
    >>> route_of("/api//projects/")
    'an empty or dot segment in the path'
    """
    if not target.startswith("/"):
        return "not a path (the door takes origin-form targets only)"
    raw_path, _, raw_query = target.partition("?")
    raw_path = raw_path.partition("#")[0]
    try:
        path = unquote_to_bytes(raw_path).decode("utf-8")
    except UnicodeDecodeError:
        return "a path that is not UTF-8 once decoded"
    if "%" in path:
        return "a path still percent-encoded after decoding (double encoding)"
    if "\\" in path or any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        return "a backslash or a control character in the path"
    segments = path.split("/")[1:]
    if any(s in ("", ".", "..") for s in segments[:-1]) or segments[-1] in (".", ".."):
        return "an empty or dot segment in the path"
    try:
        query = parse_qs(raw_query, keep_blank_values=True, strict_parsing=False, errors="strict")
    except UnicodeDecodeError:
        return "a query that is not UTF-8 once decoded"
    return Route(path, query)


_N = r"[0-9]+"
#: (methods, route) the labelling page uses; a trailing slash is optional where Django accepts both.
_ALLOWED: tuple[tuple[frozenset[str], re.Pattern[str]], ...] = tuple(
    (frozenset(methods.split()), re.compile(pattern))
    for methods, pattern in (
        # pages and the login
        ("GET HEAD", r"/"),
        ("GET HEAD POST", r"/user/login/?"),
        ("GET HEAD", r"/user/logout/?|/logout/?"),
        ("GET HEAD", r"/user/account/?"),
        ("GET HEAD", rf"/projects/?|/projects/{_N}(/[a-z-]+)*/?"),
        # static files of the page (Label Studio's, annotate's own)
        ("GET HEAD", r"/(static|react-app|label-studio-frontend|__annotate)/[A-Za-z0-9._/-]+"),
        ("GET HEAD", r"/favicon\.ico|/sw\.js|/heidi-tips/?|/health/?|/version/?"),
        # what the page reads
        ("GET HEAD", r"/api/(version|label_links|ml|users|current-user/whoami|current-user/token)/?"),
        ("GET HEAD", rf"/api/projects/?|/api/projects/{_N}/?|/api/projects/{_N}/label-stream-history/?"),
        ("GET HEAD", rf"/api/projects/{_N}/export/?"),
        ("GET HEAD", rf"/api/tasks/?|/api/tasks/{_N}/?|/api/tasks/{_N}/annotations/?"),
        ("GET HEAD", rf"/api/annotations/{_N}/?|/api/drafts/{_N}/?"),
        ("GET HEAD", r"/api/dm/(views|project|columns|actions)/?"),
        ("GET HEAD", rf"/api/dm/views/{_N}/?"),
        ("GET HEAD", rf"/api/organizations/{_N}/memberships/?"),
        # what a reviewer writes: their annotation (a skip is one), its change or removal, a draft
        ("POST", rf"/api/tasks/{_N}/annotations/?"),
        ("PATCH PUT DELETE", rf"/api/annotations/{_N}/?"),
        ("POST", rf"/api/tasks/{_N}/drafts/?|/api/annotations/{_N}/drafts/?"),
        ("PATCH PUT DELETE", rf"/api/drafts/{_N}/?"),
        # the Data Manager's own tabs (the reviewer's view of their list)
        ("POST", r"/api/dm/views/?"),
        ("PATCH PUT DELETE", rf"/api/dm/views/{_N}/?"),
    )
)
#: The Data Manager actions a reviewer's page runs (``POST /api/dm/actions?id=...``).
_ACTIONS = frozenset({"next_task"})


def refusal(method: str, route: Route) -> str | None:
    """What a request would do that a review does not (None: the allow-list lets it through).

    >>> refusal("POST", route_of("/api/projects/"))
    'POST /api/projects/ is not part of a review'
    >>> refusal("POST", route_of("/api/dm/actions?id=delete%5Ftasks&project=1"))
    'the Data Manager action delete_tasks is not part of a review'
    >>> refusal("POST", route_of("/api/dm/actions?id=next_task&project=1")) is None
    True
    """
    path = route.path
    if path.rstrip("/") == "/api/dm/actions" and method == "POST":
        ids = route.query.get("id", [])
        if len(ids) != 1 or ids[0] not in _ACTIONS:
            return f"the Data Manager action {', '.join(ids) or '(none)'} is not part of a review"
        return None
    for methods, pattern in _ALLOWED:
        if method in methods and pattern.fullmatch(path):
            return None
    return f"{method} {path[:80]} is not part of a review"
