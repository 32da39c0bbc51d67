"""`annotate pull`: annotations back from Label Studio (the server, or its JSON export files) into the store.

Every result is validated against the round's label config and reconciled with what the store
holds (``labelstudio.tasks.reconcile``): results that cannot be counted are quarantined, edits
keep history, deletions are marked, skips are not labels. Pulling twice changes nothing.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate.errors import InputError
from annotate.labelstudio.tasks import PullCounts, read_export_file, reconcile
from annotate.pipeline._resolve import resolve_round
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


def pull(s: Session, *, round_name: str | None, from_files: list[Path], annotator: str | None) -> PullOutcome:
    """Read annotations back (server export, or Label Studio JSON export files) into the store."""
    from annotate.labelstudio.labelconfig import parse_label_config

    store = s.store
    round_row = resolve_round(store, round_name)
    config = parse_label_config(round_row["label_config"], source=f"round {round_row['name']} label config")
    projects = store.ls_projects(int(round_row["id"]))
    outcome = PullOutcome(round=round_row["name"])
    if from_files:
        if not annotator:
            raise InputError("--from-file needs --annotator: whose project the export file comes from.")
        chosen = projects[(projects.pseudonym == annotator)]
        if chosen.empty:
            raise InputError(
                f"{annotator} has no project in round {round_row['name']!r} "
                f"(annotators: {', '.join(projects.pseudonym)})"
            )
        exported: list[dict[str, Any]] = []
        for path in from_files:
            exported += read_export_file(Path(path))
        project = chosen.iloc[0].to_dict()
        outcome.per_annotator[annotator] = _pull_project(store, config, project, exported, server_time=None)
        return outcome

    with s.gateway() as gw:
        gw.whoami()  # fail on the token before any write
        server_projects = [p for p in projects.to_dict("records") if not is_missing(p["project_id"])]
        # Label Studio serialises the next project's export while this process stores the
        # current one.
        with ThreadPoolExecutor(max_workers=1) as pool:
            futures: list[Future[tuple[list[dict[str, Any]], str]]] = [
                pool.submit(_fetch, gw, p) for p in server_projects[:1]
            ]
            for k, project in enumerate(server_projects):
                exported, now = futures[k].result()
                if k + 1 < len(server_projects):
                    futures.append(pool.submit(_fetch, gw, server_projects[k + 1]))
                outcome.per_annotator[project["pseudonym"]] = _pull_project(
                    store, config, project, exported, server_time=now
                )
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


def _pull_project(
    store: Store,
    config: LabelConfig,
    project: dict[str, Any],
    exported: list[dict[str, Any]],
    *,
    server_time: str | None,
) -> PullCounts:
    tasks = store.ls_tasks(int(project["id"]))
    stored = store.annotations_of_project(int(project["id"]))
    ls_user = project.get("ls_user_id")
    writes, counts = reconcile(
        config,
        project,
        tasks,
        exported,
        stored,
        annotator_id=int(project["annotator_id"]),
        ls_user_id=None if is_missing(ls_user) else int(ls_user),  # type: ignore[arg-type]
    )
    counts.quarantined = store.apply_pull(int(project["id"]), pulled_at_server=server_time, **writes)
    return counts
