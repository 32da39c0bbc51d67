"""`annotate pull`: annotations back from Label Studio (the server, or its JSON export files) into the store.

Every label is bound to its annotator, and every result is validated or quarantined with its
reason (``labelstudio.tasks.reconcile``); edits keep history, deletions are marked, skips are not
labels. Pulling twice changes nothing.

What is refused (exit 2, the store unchanged), before anything is written:

* an export that is structurally broken (``labelstudio.tasks.check_export_structure``);
* with ``--from-file``, a file whose tasks belong to another project (another annotator's, or
  another round's: task ids are per project), or to no project at all; a file is one project's
  export, so a file mixing projects is refused too;
* a first pull whose annotations come from several Label Studio users none of whom made 90 % of
  them (``labelstudio.tasks.decide_pin``), and an ``--ls-user`` that contradicts the pinned one;
* a pull that would mark more than half of a project's current labels deleted, unless
  ``--allow-deletions``.

Each project's writes are one transaction (``Store.apply_pull``); with a server, every project
is read and checked before the first one is written.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate.columns import CHANNEL_FILE, CHANNEL_SERVER
from annotate.errors import InputError
from annotate.labelstudio import own_server
from annotate.labelstudio.labelconfig import parse_label_config
from annotate.labelstudio.server.fleet import db_signature as fleet_signature
from annotate.labelstudio.server.fleet import is_running as fleet_running
from annotate.labelstudio.server.fleet import pulled_unchanged as fleet_unchanged
from annotate.labelstudio.server.fleet import record_pulled
from annotate.labelstudio.tasks import (
    MAX_DELETION_SHARE,
    MAX_LS_ID,
    ProjectState,
    PullCounts,
    PullPlan,
    StoredTask,
    check_export_structure,
    export_ext_ids,
    read_export_file_sha,
    reconcile,
)
from annotate.pipeline._resolve import resolve_round, round_lock
from annotate.pipeline.session import project_owner
from annotate.stats._common import is_missing

if TYPE_CHECKING:
    from annotate.db import Store
    from annotate.labelstudio import Gateway
    from annotate.labelstudio.labelconfig import LabelConfig
    from annotate.pipeline.session import Session


@dataclass
class PullOutcome:
    round: str
    per_annotator: dict[str, PullCounts] = field(default_factory=dict)
    pinned: dict[str, int] = field(default_factory=dict)  # pseudonym -> Label Studio user pinned now
    reasons: dict[str, dict[str, int]] = field(default_factory=dict)  # pseudonym -> quarantine kind -> n
    #: People whose server was asleep and unchanged since their last pull: not started, nothing to read.
    unchanged: list[str] = field(default_factory=list)
    #: People whose server this pull started (it was asleep), and stopped again after reading it.
    woken: list[str] = field(default_factory=list)


def pull(
    s: Session,
    *,
    round_name: str | None,
    from_files: list[Path],
    annotator: str | None,
    ls_user: int | None = None,
    allow_deletions: bool = False,
) -> PullOutcome:
    """Read annotations back (server export, or Label Studio JSON export files) into the store."""
    round_row = resolve_round(s.store, round_name)
    with round_lock(s.store, str(round_row["name"])):
        return _pull(s, round_row, from_files, annotator, ls_user, allow_deletions)


def _pull(
    s: Session,
    round_row: dict[str, Any],
    from_files: list[Path],
    annotator: str | None,
    ls_user: int | None,
    allow_deletions: bool,
) -> PullOutcome:
    store = s.store
    config = parse_label_config(round_row["label_config"], source=f"round {round_row['name']} label config")
    projects = store.ls_projects(int(round_row["id"]))
    outcome = PullOutcome(round=round_row["name"])
    if ls_user is not None and not 0 < ls_user <= MAX_LS_ID:
        raise InputError(f"--ls-user {ls_user} is not a Label Studio user id (a positive integer).")
    if from_files:
        if not annotator:
            raise InputError("--from-file needs --annotator: whose project the export file comes from.")
        chosen = projects[(projects.pseudonym == annotator)]
        if chosen.empty:
            raise InputError(
                f"{annotator} has no project in round {round_row['name']!r} "
                f"(annotators: {', '.join(projects.pseudonym)})"
            )
        project = chosen.iloc[0].to_dict()
        exported: list[dict[str, Any]] = []
        file_of: dict[int, str] = {}  # id(task) -> the sha256 of its file, recorded with its labels
        for path in from_files:
            tasks, sha = read_export_file_sha(Path(path))
            _check_file_belongs(store, project, round_row["name"], tasks, Path(path))
            exported += tasks
            file_of.update((id(task), sha) for task in tasks)
        source = ", ".join(str(p) for p in from_files)
        plan = _plan_project(
            store,
            config,
            project,
            exported,
            source=source,
            ls_user=ls_user,
            allow_deletions=allow_deletions,
            channel=CHANNEL_FILE,
            file_of=file_of,
        )
        _apply(store, project, plan, outcome, server_time=None)
        return outcome

    if ls_user is not None:
        raise InputError("--ls-user goes with --from-file: a server project's user is the annotator's own.")
    slept: dict[str, tuple[Any, list[int], Any]] = {}  # pseudonym -> (server, projects, signature at its stop)
    with s.servers() as servers:
        server_projects = []
        for p in projects.to_dict("records"):
            if is_missing(p["project_id"]):
                continue
            own = own_server(s.ws, str(p["pseudonym"])) if project_owner(p) is not None else None
            if own is not None and fleet_unchanged(own, int(p["project_id"])):
                # Asleep, and its database unwritten since the stop that followed its last pull.
                outcome.unchanged.append(str(p["pseudonym"]))
                continue
            server_projects.append(p)
        # A server already running (a reviewer's, or woken by the door): its database's signature before
        # its export. If nothing is written while it is read, its next pull may be skipped once the door
        # has put it to sleep (whoever stopped it), as for the servers this pull stops itself.
        before: dict[str, Any] = {}
        for p in server_projects:
            owner = project_owner(p)
            own = own_server(s.ws, owner) if owner is not None else None
            if own is not None and fleet_running(own):
                before[str(owner)] = fleet_signature(own)
        read_running: dict[str, tuple[Any, list[int], Any]] = {}
        plans: list[tuple[dict[str, Any], PullPlan, str]] = []
        # Label Studio serialises the next project's export while this process checks the
        # current one; nothing is written until every project has been checked. A person's server
        # that was asleep is started for its export and stopped again once it is read (unless they
        # came back meanwhile), so a pull over twenty people holds the memory of two or three.
        with ThreadPoolExecutor(max_workers=1) as pool:
            futures: list[Future[tuple[list[dict[str, Any]], str]]] = [
                pool.submit(_fetch, servers.for_project(p), p) for p in server_projects[:1]
            ]
            for k, project in enumerate(server_projects):
                exported, now = futures[k].result()
                owner = project_owner(project)
                if owner is not None and servers.release(owner):
                    own = own_server(s.ws, owner)
                    slept[owner] = (own, [int(project["project_id"])], fleet_signature(own))
                    outcome.woken.append(owner)
                elif owner is not None and owner in before:
                    own = own_server(s.ws, owner)
                    if before[owner] is not None and fleet_signature(own) == before[owner]:
                        read_running[owner] = (own, [int(project["project_id"])], before[owner])
                if k + 1 < len(server_projects):
                    following = server_projects[k + 1]
                    futures.append(pool.submit(_fetch, servers.for_project(following), following))
                source = f"Label Studio project {int(project['project_id'])} ({project['pseudonym']})"
                checked = check_export_structure(exported, source)
                plan = _plan_project(
                    store, config, project, checked, source=source, ls_user=None, allow_deletions=allow_deletions
                )
                plans.append((project, plan, now))
    for project, plan, now in plans:
        _apply(store, project, plan, outcome, server_time=now)
    # Only now, with everything stored: these servers' next pull may be skipped while they sleep.
    for own, pulled, signature in [*slept.values(), *read_running.values()]:
        record_pulled(own, pulled, signature)
    return outcome


def _fetch(gw: Gateway, project: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The project's tasks changed since its last pull (all annotated tasks on the first), and the server time."""
    pid = int(project["project_id"])
    now = gw.server_time()
    since = project["last_pulled_at"]
    if isinstance(since, str) and since:  # None / NaN: never pulled
        changed = gw.changed_task_ids(pid, since)
        return (gw.export_tasks(pid, changed) if changed else []), now
    return gw.export_tasks(pid, annotated_only=True), now


def _project_name(pseudonym: str, round_name: str, this_round: str) -> str:
    return f"{pseudonym}'s project" + ("" if round_name == this_round else f" of round {round_name!r}")


def _check_file_belongs(
    store: Store, project: dict[str, Any], round_name: str, tasks: list[dict[str, Any]], path: Path
) -> None:
    """Refuse a file whose tasks are not all this project's, and say whose they are.

    Task ids are per project (rounds routed before schema v5 excepted: their tasks carry the
    round item's id in every project of the round, so only other rounds' tasks can be told
    apart). Tasks that are no project's at all are quarantined by the pull, unless the file
    has none of this project's: then it is refused.
    """
    ext_ids = export_ext_ids(tasks)
    if not ext_ids:
        return
    owners = store.task_owners(sorted(ext_ids))
    own = set(owners.loc[owners.ls_project_id == int(project["id"]), "ext_id"])
    others = owners.loc[~owners.ext_id.isin(own)].drop_duplicates("ext_id")
    who = str(project["pseudonym"])
    if len(others):
        foreign = Counter(
            _project_name(p, r, round_name) for p, r in zip(others.pseudonym, others["round"], strict=True)
        )
        listed = ", ".join(f"{n} to {name}" for name, n in foreign.most_common())
        if not own and len(foreign) == 1:
            owner, owner_round = str(others.pseudonym.iloc[0]), str(others["round"].iloc[0])
            rest = "" if len(others) == len(ext_ids) else f"; the other {len(ext_ids) - len(others)} are no project's"
            hint = f"--annotator {owner}" + ("" if owner_round == round_name else f" --round {owner_round}")
            raise InputError(
                f"{path}: these tasks belong to {next(iter(foreign))}, not to {who}'s ({len(others)} of its "
                f"{len(ext_ids)} ext_ids{rest}); nothing was stored. If it is {owner}'s export, pull it with {hint}."
            )
        raise InputError(
            f"{path}: a file is one project's export, but of its {len(ext_ids)} ext_ids {len(own)} belong to "
            f"{who}'s project, {listed}; nothing was stored. Export each project on its own and pull each file "
            "with its own --annotator."
        )
    if not own:
        raise InputError(
            f"{path}: none of its {len(ext_ids)} ext_ids is a task of {who}'s project in round {round_name!r}, "
            "or of any other project in this store; nothing was stored. Is it an export of this round?"
        )


def _plan_project(
    store: Store,
    config: LabelConfig,
    project: dict[str, Any],
    exported: list[dict[str, Any]],
    *,
    source: str,
    ls_user: int | None,
    allow_deletions: bool,
    channel: str = CHANNEL_SERVER,
    file_of: dict[int, str] | None = None,
) -> PullPlan:
    """Reconcile one project's export with the store (reads only); refusals raise ``InputError``.

    ``channel`` and ``file_of``: how the export arrived, recorded with its labels (``reconcile``)."""
    who = str(project["pseudonym"])
    tasks = store.ls_tasks(int(project["id"]))
    recorded = _int_or_none(project.get("pinned_user_id"))
    if recorded is not None and ls_user is not None and ls_user != recorded:
        raise InputError(
            f"--ls-user {ls_user}: {who}'s project is pinned to Label Studio user {recorded} (since its first "
            "pull); nothing was stored. Leave out --ls-user, or check which file this is."
        )
    pinned = recorded if recorded is not None else ls_user
    if pinned is None and not is_missing(project.get("project_id")):
        # A server project's annotator is the Label Studio user annotate created for them.
        pinned = _int_or_none(project.get("ls_user_id"))
    state = ProjectState(
        ls_project_id=int(project["id"]),
        annotator_id=int(project["annotator_id"]),
        who=who,
        tasks={
            str(e): StoredTask(int(i), sha if isinstance(sha, str) else None)
            for e, i, sha in zip(
                tasks.ext_id,
                tasks.round_item_id,
                tasks.text_sha if "text_sha" in tasks else [None] * len(tasks),
                strict=True,
            )
        },
        annotations=store.annotations_of_project(int(project["id"])),
        pinned_user=pinned,
    )
    plan = reconcile(config, state, exported, source=source, channel=channel, file_of=file_of)
    if recorded is None and pinned is not None:
        plan.pin = pinned  # the server's user of the annotator, or --ls-user: recorded on this pull
    deleted = len(plan.writes["deletions"])
    if not allow_deletions and deleted and deleted > MAX_DELETION_SHARE * plan.current_labels:
        raise InputError(
            f"{source}: this pull would mark {deleted} of the {plan.current_labels} current labels of {who}'s project "
            f"deleted (more than {MAX_DELETION_SHARE:.0%}); nothing was stored. Check that the export is complete "
            "and recent; if the labels really were deleted in Label Studio, pull again with --allow-deletions."
        )
    return plan


def _int_or_none(value: Any) -> int | None:
    return None if value is None or is_missing(value) else int(value)


def _apply(
    store: Store, project: dict[str, Any], plan: PullPlan, outcome: PullOutcome, *, server_time: str | None
) -> None:
    who = str(project["pseudonym"])
    counts = plan.counts
    counts.quarantined = store.apply_pull(int(project["id"]), pulled_at_server=server_time, pin=plan.pin, **plan.writes)
    outcome.per_annotator[who] = counts
    if plan.pin is not None:
        outcome.pinned[who] = plan.pin
    if plan.reasons:
        outcome.reasons[who] = dict(plan.reasons)
