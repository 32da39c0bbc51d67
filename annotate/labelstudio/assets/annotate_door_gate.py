"""A person's Label Studio answers only the front door: this file runs inside it, not in annotate.

annotate copies it as ``sitecustomize.py`` into the server's data dir and starts the server with that
folder alone on ``PYTHONPATH`` and ``ANNOTATE_DOOR_KEY`` in its environment. At interpreter start it
wraps the WSGI application Django's ``runserver`` serves: every request must carry
``X-Annotate-Door`` equal to the key (an HMAC of the admin token, known to the door and to the lead's
commands, never to a reviewer); anything else, a reviewer who found the server's own port included,
gets 403 before Django sees it.

Fail closed: without a key every request is refused, and if the wrapping cannot be installed the
process exits before it serves anything. Static files served by ``runserver`` pass outside the
application (Label Studio's public JavaScript and CSS, the same for everyone).
"""

import hmac
import os
import sys

_KEY = os.environ.get("ANNOTATE_DOOR_KEY", "").encode()
_REFUSAL = (
    b"This Label Studio answers only through annotate's front door. "
    b"Open the address on your access sheet (http://YOURNAME.localhost:PORT/).\n"
)


class DoorGate:
    """A WSGI application that passes a request to ``app`` only when it carries the door's key."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        given = environ.get("HTTP_X_ANNOTATE_DOOR", "").encode()
        if not _KEY or not hmac.compare_digest(given, _KEY):
            start_response(
                "403 Forbidden",
                [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(_REFUSAL)))],
            )
            return [_REFUSAL]
        return self.app(environ, start_response)


def _install() -> None:
    # runserver does `from django.core.servers.basehttp import get_internal_wsgi_application` when its
    # module is first imported, which is after this file runs: it takes the wrapped function.
    import django.core.servers.basehttp as basehttp

    original = basehttp.get_internal_wsgi_application

    def gated():
        return DoorGate(original())

    basehttp.get_internal_wsgi_application = gated


try:
    _install()
except Exception as exc:  # noqa: BLE001  (any failure: never serve ungated)
    sys.stderr.write(f"annotate: the front door's gate could not be installed ({exc!r}); not serving.\n")
    sys.stderr.flush()
    os._exit(70)
