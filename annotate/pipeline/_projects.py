"""One annotator's project of a round: ensure it exists, then bring its tasks up to date.

Shared by `route` (a reviewer's project) and `adjudicate` (the expert's project): ensure the
Label Studio user and project (or only the store's record of it, in file mode), then either
write the task file or reconcile with the server and import what is missing.

Facts relied on (docs/labelstudio.md): imports are synchronous and return task ids in input
order; Label Studio does not de-duplicate, so an import is never repeated blindly: an earlier
run may have died after Label Studio committed, so the project is re-read first.

Task files are written only at :func:`task_file_path`: names checked (``annotate.names``), the
path resolved and required to stay under the workspace's ``tasks/``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.errors import InputError, LabelStudioError, StateError
from annotate.fileio import write_atomic
from annotate.labelstudio import OWN
from annotate.labelstudio.gateway import ImportOutcomeUnknown
from annotate.names import check_name
from annotate.stats._common import is_missing

if TYPE_CHECKING:
    from annotate.config import Workspace
    from annotate.db import Store
    from annotate.labelstudio import Gateway

#: Tasks per import request, and the most bytes of JSON one request may carry: Label Studio
#: refuses requests over 250 MB (``DATA_UPLOAD_MAX_MEMORY_SIZE``), and 5,000 tasks with dialogues
#: near their bound (``labelstudio.tasks.MAX_DIALOGUE_CHARS``) would pass it.
IMPORT_BATCH = 5000
MAX_IMPORT_BYTES = 64 * 1024**2

#: Builds the Label Studio task payloads of some pending tasks (columns ext_id, round_item_id).
BuildPayloads = Callable[[pd.DataFrame], list[dict[str, Any]]]


@dataclass(frozen=True)
class ProjectSpec:
    """Which project: a round, an annotator (a row of ``Store.annotators()``), and how it looks."""

    round_id: int
    annotator: Any  # a row (itertuples or Series) with id, pseudonym, email, name, ls_user_id
    title: str
    label_config: str
    instructions: str


def ensure_project(store: Store, gw: Gateway | None, spec: ProjectSpec, *, own_server: bool = False) -> dict[str, Any]:
    """The store's ``ls_project`` row, creating the Label Studio project when a server is used.

    ``own_server``: ``gw`` is the person's own server (technical blinding). Their account there
    was made with a password by `annotate ls start` (``labelstudio.accounts``); the project is
    pinned to it at once. On the shared server the user is created here when missing (no
    password: the reviewer cannot log in until the admin gives them one), as before.
    """
    ann = spec.annotator
    project = store.ls_project(spec.round_id, int(ann.id))
    if project is not None and (gw is None or not is_missing(project["project_id"])):
        return project
    project_id = pinned = None
    if gw is not None:
        if own_server:
            check_own_account(gw, ann)
            pinned = gw.find_user(str(ann.email))
        elif is_missing(ann.ls_user_id):
            store.set_annotator_user(ann.pseudonym, gw.create_user(ann.email, first_name=ann.name))
        project_id = gw.create_project(title=spec.title, label_config=spec.label_config, instructions=spec.instructions)
    server = OWN if gw is not None and own_server else None
    if project is None:
        store.add_ls_project(spec.round_id, int(ann.id), spec.title, project_id, server=server, pinned_user_id=pinned)
    elif project_id is not None:
        keep_pin = not is_missing(project.get("pinned_user_id"))
        store.set_ls_project_id(
            int(project["id"]), project_id, server=server, pinned_user_id=None if keep_pin else pinned
        )
    project = store.ls_project(spec.round_id, int(ann.id))
    assert project is not None
    return project


def check_own_account(gw: Gateway, person: Any) -> None:
    """Refuse, before anything is recorded, a person who has no account on their own server yet."""
    if gw.find_user(str(person.email)) is None:
        raise StateError(
            f"{person.pseudonym} has no account on their own Label Studio yet; run `annotate ls start`, "
            "which makes it (and their access sheet), then route again."
        )


def task_file_path(ws: Workspace, round_name: str, annotator: str, suffix: str = "") -> Path:
    """``tasks/<round>/<annotator><suffix>.json``, checked to stay under the workspace's ``tasks/``.

    Both names must be names (``annotate.names``); the path is resolved (symbolic links
    followed) and refused when it leads anywhere but inside ``tasks/``.
    """
    check_name(round_name, "round name")
    check_name(annotator, "pseudonym")
    check_name(f"{annotator}{suffix}", "task file name")
    base = ws.tasks_dir.resolve()
    path = (base / round_name / f"{annotator}{suffix}.json").resolve()
    if not path.is_relative_to(base) or path == base:
        raise InputError(
            f"the task file of round {round_name!r} for {annotator} would be written to {path}, outside "
            f"{base}; remove the link that leads there, or choose another round name."
        )
    return path


def write_task_file(path: Path, payloads: list[dict[str, Any]]) -> Path:
    """A Label Studio import file (JSON list of tasks), written atomically."""
    return write_atomic(path, json.dumps(payloads, ensure_ascii=False, indent=1))


def sync_tasks(
    store: Store,
    gw: Gateway,
    project: dict[str, Any],
    who: str,
    pending: pd.DataFrame,
    build: BuildPayloads,
    *,
    already: int,
    command: str,
    progress: Callable[[int, int], None] | None = None,
    on_first_submit: Callable[[], None] | None = None,
) -> tuple[int, int]:
    """Import the project's pending tasks (ext_id, round_item_id, position); (imported, already there).

    Never imports blindly: when the server holds more tasks than the store knows of, their ids are
    recovered by ext_id first. ``command`` (e.g. ``annotate route``) is named in the message
    asking to resume after a timeout. ``on_first_submit`` runs while the server imports the first batch.
    """
    pid = int(project["project_id"])
    if len(pending) and gw.task_count(pid) > already:
        if on_first_submit is not None:
            on_first_submit()
            on_first_submit = None
        found = gw.task_ids_by_ext_id(pid)
        recovered = {e: found[e] for e in pending.ext_id if e in found}
        store.set_task_ids(int(project["id"]), recovered)
        pending = pending[~pending.ext_id.isin(recovered)]
        already += len(recovered)
    imported = _import_pending(
        store, gw, project, who, pending.sort_values("position"), build, command, progress, on_first_submit
    )
    return imported, already


def _import_pending(
    store: Store,
    gw: Gateway,
    project: dict[str, Any],
    who: str,
    pending: pd.DataFrame,
    build: BuildPayloads,
    command: str,
    progress: Callable[[int, int], None] | None,
    on_first_submit: Callable[[], None] | None,
) -> int:
    """Import the pending tasks in batches, overlapping our own work with Label Studio's.

    While the server imports batch k, this process builds batch k+1 and records the task ids
    of batch k-1. A batch goes out only after the previous one returned, so an import whose
    outcome is unknown (a timeout) is never followed by another: the project is re-read, what
    did commit is recorded, and the command stops so that a re-run resumes.
    """
    pid = int(project["project_id"])
    if not len(pending):
        if on_first_submit is not None:
            on_first_submit()
        return 0

    def settle(chunk: pd.DataFrame, future: Future[list[int]]) -> list[int]:
        try:
            return future.result()
        except ImportOutcomeUnknown:
            found = gw.task_ids_by_ext_id(pid)
            recovered = {e: found[e] for e in chunk.ext_id if e in found}
            store.set_task_ids(int(project["id"]), recovered)
            raise LabelStudioError(
                f"an import into {who}'s project timed out; {len(recovered)} of {len(chunk)} tasks turned out "
                f"to be there and are recorded. Run the same `{command}` again to resume."
            ) from None

    imported = 0
    batches = _batches(pending, build)
    with ThreadPoolExecutor(max_workers=1) as pool:
        chunk, payload = next(batches)
        future = pool.submit(gw.import_tasks, pid, payload)
        if on_first_submit is not None:
            on_first_submit()  # runs while the server imports the first batch
        while True:
            following = next(batches, None)
            ids = settle(chunk, future)
            if following is not None:
                future = pool.submit(gw.import_tasks, pid, following[1])
            store.set_task_ids(int(project["id"]), dict(zip(chunk.ext_id, ids, strict=True)))
            imported += len(ids)
            if progress:
                progress(len(ids), len(pending))
            if following is None:
                return imported
            chunk = following[0]


def _batches(pending: pd.DataFrame, build: BuildPayloads) -> Iterator[tuple[pd.DataFrame, list[dict[str, Any]]]]:
    """The pending tasks as import requests: (rows, payloads) of at most ``IMPORT_BATCH`` tasks and
    ``MAX_IMPORT_BYTES`` of JSON (one task more than that goes alone)."""
    for start in range(0, len(pending), IMPORT_BATCH):
        rows = pending.iloc[start : start + IMPORT_BATCH]
        payloads = build(rows)
        # Measured as the client sends it (httpx: compact, UTF-8, not ASCII-escaped).
        sizes = [
            len(json.dumps(p, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
            for p in payloads
        ]
        first = size = 0
        for k, n in enumerate(sizes):
            if k > first and size + n > MAX_IMPORT_BYTES:
                yield rows.iloc[first:k], payloads[first:k]
                first, size = k, 0
            size += n
        yield rows.iloc[first:], payloads[first:]
