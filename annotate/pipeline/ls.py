"""`annotate ls`: the workspace's embedded Label Studio (start, stop, status).

By default every registered reviewer and expert gets a Label Studio server of their own
(``labelstudio.server.fleet``: technical blinding on Label Studio Community, which has no
roles), and an account on it with a generated password, written once into their access sheet
(``.annotate/access/<pseudonym>.txt``, 0600; ``labelstudio.accounts``). The servers are reached
through annotate's front door (``labelstudio.server.frontdoor``), one port on loopback where
``http://a1.localhost:PORT`` is A1's: a server starts when its person opens it (or a command needs
it) and stops after ``--idle-minutes`` without use, so a round of twenty people holds the memory
of those who are labelling. ``--all`` starts everyone's now and keeps them up; ``--only A1,A2``
starts those now. With ``[labelstudio]
one_server_per_person = false`` one shared server serves everyone (blinding by instructions
only). The shared server is also started when earlier rounds' projects live on it. An external
server (``ANNOTATE_LS_URL``) is never started here.

Every server binds 127.0.0.1 unless told otherwise; each one's admin password and API token live
in a 0600 secrets file in its data dir.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate.config import ensure_private_dir, label_studio_settings
from annotate.errors import InputError, LabelStudioError, StateError
from annotate.labelstudio import accounts, server
from annotate.labelstudio.server import fleet, frontdoor
from annotate.labelstudio.server.procnet import port_in_use
from annotate.pipeline._people import (
    EXTERNAL,
    PER_PERSON,
    SHARED_ONLY,
    PersonLine,
    person_access,
    person_address,
    person_line,
    serving_mode,
)

if TYPE_CHECKING:
    import pandas as pd

    from annotate.config import Workspace
    from annotate.pipeline.session import Session

LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: Servers started at once (each takes a core for a few seconds while Django starts).
_PARALLEL_STARTS = 4

Say = Callable[[str], None]


@dataclass
class SharedLine:
    running: bool
    url: str | None
    pid: int | None
    healthy: bool
    authenticated: bool
    admin_email: str | None
    secrets_file: str
    detail: str | None = None


@dataclass
class LsReport:
    mode: str
    people: list[PersonLine] = field(default_factory=list)
    shared: SharedLine | None = None
    external_server: str | None = None
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    access_dir: str | None = None
    #: Admin logins of the people's servers (for the lead): the secrets file of each.
    admin_secrets: dict[str, str] = field(default_factory=dict)
    #: The front door (one server per person): its address, and after how long a server sleeps (0: never).
    door: str | None = None
    idle_minutes: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _shared_in_use(s: Session) -> bool:
    """True when some project of an earlier round lives on the shared embedded server."""
    projects = s.store.ls_projects()
    if not len(projects):
        return False
    on_server = projects[projects.project_id.notna()]
    return bool(len(on_server)) and bool((on_server.server.isna() | (on_server.server == "shared")).any())


def start(
    s: Session,
    *,
    host: str,
    port: int,
    timeout: float,
    template_seed: Path | None = None,
    shared_seed: Path | None = None,
    say: Say | None = None,
    every: bool = False,
    only: list[str] | None = None,
    idle_minutes: float = frontdoor.DEFAULT_IDLE_SECONDS / 60,
) -> LsReport:
    """Start the front door and make each new person's server and account (one server per person), or
    the shared server when it is the workspace's way or holds earlier rounds' projects.

    ``port``: the front door's (one server per person) or the shared server's; people's servers get
    ports from ``port + 1`` up, kept once chosen. A person's server runs when they open it, or now
    with ``every`` (everyone's, never stopped for idleness) or ``only`` (these people's); a new
    person's is started to make their account and left to sleep. ``template_seed`` /
    ``shared_seed``: migrated data dirs to copy instead of migrating (tests).
    """
    ws = s.ws
    mode = serving_mode(ws)
    report = LsReport(mode=mode)
    if mode == EXTERNAL:
        raise StateError(
            f"Label Studio is the external server at {label_studio_settings(ws).url} (ANNOTATE_LS_URL or "
            "[labelstudio] url); nothing is started here. Unset it to use the embedded servers."
        )
    started = time.monotonic()
    tell = say or (lambda _m: None)
    if idle_minutes < 0:
        raise InputError("--idle-minutes must be 0 (never stop) or more.")
    people_now = s.store.annotators()
    unknown = sorted(set(only or ()) - set(people_now.pseudonym.astype(str)))
    if unknown:
        raise InputError(f"--only {', '.join(unknown)}: no such reviewer or expert (annotate annotators list).")
    if mode == SHARED_ONLY or _shared_in_use(s) or (ws.ls_data_dir / server.SQLITE_NAME).exists():
        if not server.server_status(ws.ls_data_dir).running:
            # With one server per person the front door has `port`; earlier rounds' shared server moves aside.
            shared_port = port if mode == SHARED_ONLY else _free_port(host, port + 500)
            info = server.start_server(
                ws.ls_data_dir, host=host, port=shared_port, timeout=timeout, seed_from=shared_seed
            )
            report.warnings += list(info.warnings)
        if mode == SHARED_ONLY:  # everyone's login on the one server
            report.people = [person_access(s, str(p), new_password=False) for p in s.store.annotators().pseudonym]
    if mode == PER_PERSON:
        people = people_now
        ensure_private_dir(ws.person_servers_dir)
        door = frontdoor.start_door(
            ws.person_servers_dir,
            host=host,
            port=port,
            idle_seconds=0 if every else idle_minutes * 60,
            start_timeout=timeout,
        )
        report.door, report.idle_minutes = f"http://{host}:{port}", (door.idle_seconds or 0) / 60
        if len(people):
            template = fleet.ensure_template(ws.person_servers_dir, seed_from=template_seed, say=tell)
            servers = _provision_all(ws, people, host=host, port=port, template=template)
            wanted = set(servers) if every else set(only or ())
            # A new person's server starts to make their account (and the sheet that says how to log in).
            new = {p for p in servers if not accounts.sheet_path(ws.access_dir, p).exists()}
            report.people = _start_all(
                ws, people, servers, timeout=timeout, say=tell, report=report, only=wanted | new, keep=wanted
            )
    _describe(s, report)
    report.seconds = time.monotonic() - started
    return report


def _provision_all(
    ws: Workspace, people: pd.DataFrame, *, host: str, port: int, template: Path
) -> dict[str, fleet.PersonServer]:
    out: dict[str, fleet.PersonServer] = {}
    for p in people.itertuples():
        server_, _made = fleet.provision(
            ws.person_servers_dir, str(p.pseudonym), host=host, first_port=port + 1, template=template
        )
        out[str(p.pseudonym)] = server_
    return out


def _free_port(host: str, first: int) -> int:
    port = first
    while port_in_use(host, port):
        port += 1
    return port


def _start_all(
    ws: Workspace,
    people: pd.DataFrame,
    servers: dict[str, fleet.PersonServer],
    *,
    timeout: float,
    say: Say,
    report: LsReport,
    only: set[str] | None = None,
    keep: set[str] | None = None,
) -> list[PersonLine]:
    """Start the servers of ``only`` (default: everyone's; a few at once) and make the accounts that are
    missing; the others' lines say they sleep until opened (their sheets give the front door's address).
    Of those started here, the ones in ``keep`` (default: all) stay up; the others go back to sleep."""

    def one(pseudonym: str) -> fleet.Held | LabelStudioError:
        try:
            return fleet.hold(servers[pseudonym], timeout=timeout)
        except LabelStudioError as exc:
            return exc

    names = [n for n in servers if only is None or n in only]
    with ThreadPoolExecutor(max_workers=min(_PARALLEL_STARTS, max(1, len(names)))) as pool:
        results = dict(zip(names, pool.map(one, names), strict=True))
    failed = {n: r for n, r in results.items() if isinstance(r, LabelStudioError)}
    lines = []
    for p in people.itertuples():
        pseudonym = str(p.pseudonym)
        if pseudonym not in results:  # asleep: their sheet gives the front door's address
            srv = servers[pseudonym]
            address = person_address(ws, srv)
            kw = {"role": str(p.role), "email": str(p.email), "address": address, "on_demand": True}
            has_sheet = accounts.readdress_sheet(ws.access_dir, pseudonym, **kw)  # type: ignore[arg-type]
            sheet = accounts.sheet_path(ws.access_dir, pseudonym)
            running = fleet.is_running(srv)
            lines.append(
                PersonLine(
                    pseudonym,
                    str(p.role),
                    address,
                    running,
                    None,
                    str(sheet) if has_sheet else None,
                    note=None if running else "starts when opened",
                )
            )
            continue
        held = results[pseudonym]
        if isinstance(held, LabelStudioError):
            continue
        try:
            result = held.started
            if result is not None and result.moved_from is not None:
                report.warnings.append(
                    f"{pseudonym}'s server moved from port {result.moved_from} to {result.server.port} (another "
                    f"program holds {result.moved_from}); their address, the front door's, stays the same."
                )
            if result is not None and result.info is not None:
                report.warnings += [f"{pseudonym}: {w}" for w in result.info.warnings]
                sleeps = keep is not None and pseudonym not in keep
                say(
                    f"{pseudonym}'s Label Studio is set up, their account made ({result.info.startup_seconds:.0f} s)"
                    + ("; it sleeps until they open it" if sleeps else "")
                )
            srv = held.server
            line = person_line(ws, p, srv.url, srv.data_dir, address=person_address(ws, srv))
            line.started_now = result is not None
        finally:
            held.release(stop_if_started=keep is not None and pseudonym not in keep)
        line.running = fleet.is_running(held.server)
        lines.append(line)
    if failed:
        detail = "\n".join(f"  {n}: {e}" for n, e in failed.items())
        raise LabelStudioError(
            f"{len(failed)} of {len(names)} Label Studio servers did not start (the others run):\n{detail}"
        )
    return lines


def _describe(s: Session, report: LsReport) -> None:
    """Fill in the shared server's line and where the people's admin logins are."""
    ws = s.ws
    report.access_dir = str(ws.access_dir)
    if report.mode != EXTERNAL and (ws.ls_data_dir.exists() or report.mode == SHARED_ONLY):
        st = server.server_status(ws.ls_data_dir)
        report.shared = SharedLine(
            running=st.running,
            url=st.url,
            pid=st.pid,
            healthy=st.healthy,
            authenticated=st.authenticated,
            admin_email=st.admin_email,
            secrets_file=str(ws.ls_data_dir / server.SECRETS_NAME),
            detail=st.detail,
        )
    for srv in fleet.person_servers(ws.person_servers_dir):
        report.admin_secrets[srv.pseudonym] = str(srv.data_dir / server.SECRETS_NAME)


def stop(ws: Workspace) -> list[str]:
    """Stop every embedded server of the workspace and its front door; the names of those that were running."""
    stopped = ["front door"] if frontdoor.stop_door(ws.person_servers_dir) else []
    servers = fleet.person_servers(ws.person_servers_dir)

    def one(srv: fleet.PersonServer) -> bool:
        return fleet.stop_person(srv)

    with ThreadPoolExecutor(max_workers=max(1, min(8, len(servers)))) as pool:
        for srv, was in zip(servers, pool.map(one, servers), strict=True):
            if was:
                stopped.append(srv.pseudonym)
    if server.stop_server(ws.ls_data_dir):
        stopped.append("shared")
    return stopped


def status(s: Session) -> LsReport:
    """What runs, where, and how each person logs in. Starts and changes nothing."""
    ws = s.ws
    report = LsReport(mode=serving_mode(ws))
    report.external_server = label_studio_settings(ws).url
    people = s.store.annotators()
    made = {p.pseudonym: p for p in fleet.person_servers(ws.person_servers_dir)}
    door = frontdoor.door_status(ws.person_servers_dir)
    if door.running:
        report.door, report.idle_minutes = f"http://{door.host}:{door.port}", (door.idle_seconds or 0) / 60
    for p in people.itertuples():
        srv = made.get(str(p.pseudonym))
        sheet = accounts.sheet_path(ws.access_dir, str(p.pseudonym))
        if srv is None:
            if report.mode == PER_PERSON:
                report.people.append(
                    PersonLine(
                        str(p.pseudonym),
                        str(p.role),
                        None,
                        False,
                        None,
                        None,
                        note="no server yet: `annotate ls start`",
                    )
                )
            continue
        st = server.server_status(srv.data_dir)
        note: str | None = None
        if st.running:
            pass
        elif door.running:
            note = "starts when opened"
        else:
            note = "stopped: `annotate ls start`"
        report.people.append(
            PersonLine(
                str(p.pseudonym),
                str(p.role),
                person_address(ws, srv),
                st.running and st.healthy,
                None,
                str(sheet) if sheet.exists() else None,
                note=note,
            )
        )
    _describe(s, report)
    return report
