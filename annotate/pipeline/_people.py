"""Each person's login on Label Studio: shared by `annotate ls` and `annotate annotators`.

On the embedded servers every person gets an account with a generated password, written once
into their access sheet (``.annotate/access/<pseudonym>.txt``, 0600; ``labelstudio.accounts``):
on their own server (one per person, the default), or on the one shared embedded server
(``one_server_per_person = false``). An external server's admin makes the logins there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from annotate.config import label_studio_settings
from annotate.errors import LabelStudioError, StateError
from annotate.labelstudio import accounts, server
from annotate.labelstudio.gateway import LabelStudioGateway
from annotate.labelstudio.server import fleet, frontdoor

if TYPE_CHECKING:
    from annotate.config import Workspace
    from annotate.pipeline.session import Session

__all__ = [
    "EXTERNAL",
    "EXTERNAL_LOGIN",
    "PER_PERSON",
    "SHARED_ONLY",
    "PersonLine",
    "access_when_added",
    "person_access",
    "person_address",
    "person_line",
    "serving_mode",
    "with_server",
]

T = TypeVar("T")

#: How the workspace serves its reviewers (``LsReport.mode``).
PER_PERSON = "one server per person"
SHARED_ONLY = "one shared server"
EXTERNAL = "external server"


@dataclass
class PersonLine:
    """One person's own server, as `ls start` and `ls status` report it (no secret, no e-mail)."""

    pseudonym: str
    role: str
    url: str | None
    running: bool
    account: bool | None  # their Label Studio account exists (None: not known, the server is down)
    sheet: str | None  # their access sheet, when there is one
    started_now: bool = False
    note: str | None = None


def serving_mode(ws: Workspace) -> str:
    """How the workspace serves its reviewers: PER_PERSON, SHARED_ONLY or EXTERNAL."""
    conf = label_studio_settings(ws)
    if conf.url:
        return EXTERNAL
    return PER_PERSON if conf.one_server_per_person else SHARED_ONLY


def person_address(ws: Workspace, srv: fleet.PersonServer) -> str:
    """Where a person opens their own server: the front door's address (``http://a1.localhost:8080``),
    at the port it last had (8080, ``ls start``'s default, before it first ran). Never the server's own
    port: the server answers only the door."""
    door = frontdoor.door_status(ws.person_servers_dir)
    return frontdoor.person_address(srv.pseudonym, door.port or frontdoor.DEFAULT_PORT)


def with_server(srv: fleet.PersonServer, use: Callable[[fleet.PersonServer], T]) -> tuple[T, bool]:
    """``use`` of a person's server, started first when it sleeps and stopped again after (unless someone
    came meanwhile); (what ``use`` gave, whether it was started for it)."""
    held = fleet.hold(srv, timeout=300.0)
    try:
        return use(held.server), held.started_at is not None
    finally:
        held.release()


def person_line(
    ws: Workspace,
    person: Any,
    url: str,
    data_dir: Path,
    *,
    new_password: bool = False,
    shared: bool = False,
    address: str | None = None,
) -> PersonLine:
    """A person's login on a running server (their own, or the shared embedded one), made now if missing.

    ``address``: where they open it, when not ``url`` (the front door's address of their server).
    """
    pseudonym = str(person.pseudonym)
    with fleet.people_lock(ws.access_dir):  # two commands never make one account twice
        account = accounts.ensure_account(
            url,
            data_dir,
            pseudonym=pseudonym,
            role=str(person.role),
            email=str(person.email),
            access_dir=ws.access_dir,
            new_password=new_password,
            shared=shared,
            address=address,
        )
    note = None
    if account.made:
        note = "new: hand them the sheet"
    elif account.new_password:
        note = "new password: new sheet"
    elif account.sheet is None:
        note = "no sheet: --new-password"
    return PersonLine(
        pseudonym,
        str(person.role),
        address or url,
        True,
        True,
        str(account.sheet) if account.sheet else None,
        note=note,
    )


def person_access(s: Session, pseudonym: str, *, new_password: bool) -> PersonLine:
    """A person's login: their account on their own server (or the shared embedded one) ensured,
    with a new password on request."""
    ws = s.ws
    person = _registered(s, pseudonym)
    mode = serving_mode(ws)
    if mode == EXTERNAL:
        raise StateError(EXTERNAL_LOGIN.format(email="THEIR-EMAIL"))
    if mode == SHARED_ONLY:
        st = server.server_status(ws.ls_data_dir)
        if not st.running or not st.url:
            raise StateError("the shared Label Studio is not running; start it with `annotate ls start`.")
        line = person_line(ws, person, st.url, ws.ls_data_dir, new_password=new_password, shared=True)
        s.store.set_annotator_user(pseudonym, _user_on(st.url, ws.ls_data_dir, str(person.email)))
        return line
    srv = fleet.person_server(ws.person_servers_dir, pseudonym)
    if srv is None:
        raise StateError(f"{pseudonym} has no Label Studio server yet; `annotate ls start` makes it.")
    address = person_address(ws, srv)
    line, _ = with_server(
        srv, lambda up: person_line(ws, person, up.url, up.data_dir, new_password=new_password, address=address)
    )
    line.running = fleet.is_running(srv)
    return line


#: What the lead does for a reviewer's login on an external server, where annotate makes none.
EXTERNAL_LOGIN = (
    "the reviewers use an external Label Studio (ANNOTATE_LS_URL), where annotate makes no passwords. Its admin "
    "gives each reviewer a login: on the server's machine, with the server's own environment, "
    "`label-studio reset_password --username {email}` sets one (annotate creates the user when the round is "
    "routed). Every reviewer there can open the others' projects: the round is blinded by instructions only."
)


def _registered(s: Session, pseudonym: str) -> Any:
    people = s.store.annotators()
    row = people[people.pseudonym == pseudonym]
    if row.empty:
        known = ", ".join(people.pseudonym) or "none yet"
        raise StateError(f"no annotator {pseudonym!r} (registered: {known}).")
    return next(row.itertuples())


def _user_on(url: str, data_dir: Path, email: str) -> int:
    gw = LabelStudioGateway(url, server.read_secrets(data_dir / server.SECRETS_NAME).token)
    try:
        found = gw.find_user(email)
    finally:
        gw.close()
    if found is None:
        raise LabelStudioError(f"Label Studio at {url} lists no user {email!r} after making their account.")
    return found


def access_when_added(s: Session, pseudonym: str) -> PersonLine | None:
    """For `annotators add`: the new person's login when the servers run, else None (then the next
    `annotate ls start` makes their server and account).

    One server per person: when the people's servers run, the new person's is made and started
    too. The shared embedded server: their account is made on it when it runs.
    """
    ws = s.ws
    mode = serving_mode(ws)
    if mode == EXTERNAL:
        return None
    if mode == SHARED_ONLY:
        if not server.server_status(ws.ls_data_dir).running:
            return None
        return person_access(s, pseudonym, new_password=False)
    made = fleet.person_servers(ws.person_servers_dir)
    door = frontdoor.door_status(ws.person_servers_dir)
    if not door.running and not any(fleet.is_running(p) for p in made):
        return None
    person = _registered(s, pseudonym)
    template = fleet.ensure_template(ws.person_servers_dir)
    first = min((p.port for p in made), default=(door.port or 8080) + 1)
    srv, _made = fleet.provision(
        ws.person_servers_dir,
        pseudonym,
        host=made[0].host if made else (door.host or "127.0.0.1"),
        first_port=first,
        template=template,
    )
    address = person_address(ws, srv)
    line, started = with_server(srv, lambda up: person_line(ws, person, up.url, up.data_dir, address=address))
    line.started_now, line.running = started, fleet.is_running(srv)
    return line
