"""An in-memory Label Studio that satisfies ``annotate.labelstudio.Gateway``, for fast pipeline tests.

It keeps the behaviours the pipeline relies on (docs/labelstudio.md), so tests of route, pull
and adjudicate can exercise them in milliseconds: imports return task ids in input order and are
never de-duplicated; the JSON export carries every annotation with ``completed_by``, skips as
``was_cancelled``, and ``meta``; an import whose task lacks a ``$variable`` of the project's config
(or holds a list for ``<Text>``, a string for ``<Paragraphs>``... as Label Studio's
``tasks/validation.py`` checks) is refused whole; a task's ``updated_at`` moves when one of its annotations is
created, changed or deleted (or its data is edited, ``edit_task``), and ``changed_task_ids``
filters on it; ``server_time`` is a monotonic clock. Like the real server, it accepts any
``result`` and any ``completed_by`` (another user's annotations are made that way). Failures a
real server cannot produce on demand are injected with ``fail_next_import`` (the import
commits, then the outcome is lost, as after a timeout).

The real-server tests (tests/labelstudio/test_rounds_server.py) keep checking the same flows
against Label Studio itself.
"""

from __future__ import annotations

import copy
import itertools
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from annotate.errors import LabelStudioError
from annotate.labelstudio.gateway import ImportOutcomeUnknown

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
# The data types Label Studio 1.23 accepts per object tag (label_studio/tasks/validation.py).
_DATA_TYPES: dict[str, tuple[type, ...]] = {
    "Text": (str, int, float, list),
    "HyperText": (str,),
    "Paragraphs": (list, str),
    "Header": (str, int, float),
}


def _data_types(label_config: str) -> dict[str, str]:
    """$variable -> tag of every named element with a ``$`` value, as Label Studio reads a config."""
    out: dict[str, str] = {}
    for el in ET.fromstring(label_config).iter():
        value = el.get("value") or ""
        if el.get("name") and value.startswith("$") and len(value) > 1:
            out[value[1:]] = str(el.tag)
    return out


@dataclass
class _Project:
    id: int
    title: str
    label_config: str
    instructions: str
    tasks: list[dict[str, Any]] = field(default_factory=list)


class FakeLabelStudio:
    """One fake server; ``gateway()`` (or calling it as a ``Connect``) gives a client of it."""

    url = "http://fake-label-studio.invalid"

    def __init__(self) -> None:
        self.users: dict[str, int] = {}
        self.projects: dict[int, _Project] = {}
        self.tasks: dict[int, dict[str, Any]] = {}  # task id -> task (shared with the project's list)
        self.annotations: dict[int, tuple[int, dict[str, Any]]] = {}  # annotation id -> (task id, annotation)
        self._ids = itertools.count(1)
        self._tick = 0
        self.fail_next_import = False
        self.calls: list[str] = []
        self.closed = 0

    # A ``Connect``: the pipeline calls ``connect(ws, owner)`` and closes what it gets. One fake
    # is one server: the workspace's shared one (see FakeServers for one per person).
    def __call__(self, ws: Any, owner: str | None = None, /) -> FakeLabelStudio:
        return self

    def _now(self) -> str:
        self._tick += 1
        return (_EPOCH + timedelta(seconds=self._tick)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def _project(self, project_id: int) -> _Project:
        if project_id not in self.projects:
            raise LabelStudioError(f"Label Studio at {self.url} answered 404 while reading project {project_id}")
        return self.projects[project_id]

    # -- the Gateway protocol ---------------------------------------------------------------
    def whoami(self) -> dict[str, Any]:
        self.calls.append("whoami")
        return {"id": 1, "email": "admin@fake.invalid"}

    def validate_config(self, label_config: str) -> None:
        self.calls.append("validate_config")
        if "<View" not in label_config:
            raise LabelStudioError("Label Studio answered 400 while validating the label config: not a config")

    def create_user(self, email: str, *, first_name: str | None = None) -> int:
        self.calls.append("create_user")
        key = email.lower()
        if key not in self.users:
            self.users[key] = 100 + len(self.users)
        return self.users[key]

    def find_user(self, email: str) -> int | None:
        self.calls.append("find_user")
        return self.users.get(email.lower())

    def create_project(self, *, title: str, label_config: str, instructions: str, maximum_annotations: int = 1) -> int:
        self.calls.append("create_project")
        pid = next(self._ids)
        self.projects[pid] = _Project(pid, title, label_config, instructions)
        return pid

    def task_count(self, project_id: int) -> int:
        return len(self._project(project_id).tasks)

    def task_ids_by_ext_id(self, project_id: int) -> dict[str, int]:
        out: dict[str, int] = {}
        for task in self._project(project_id).tasks:
            ext = (task.get("meta") or {}).get("ext_id") or task["data"].get("ext_id")
            if ext:
                out[str(ext)] = int(task["id"])
        return out

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> list[int]:
        self.calls.append("import_tasks")
        project = self._project(project_id)
        for k, payload in enumerate(tasks):  # one transaction: any invalid task refuses them all
            data = payload.get("data") or {}
            for key, tag in _data_types(project.label_config).items():
                if key not in data:
                    raise LabelStudioError(
                        f"Label Studio at {self.url} answered 400 while importing tasks into project {project_id}: "
                        f'Error at item {k}: "{key}" key is expected in task data'
                    )
                if not isinstance(data[key], _DATA_TYPES.get(tag, (str,))):
                    raise LabelStudioError(
                        f"Label Studio at {self.url} answered 400 while importing tasks into project {project_id}: "
                        f"Error at item {k}: data['{key}'] is of type '{type(data[key]).__name__}', but the object "
                        f"tag {tag} expects another"
                    )
        ids = []
        for payload in tasks:
            tid = next(self._ids)
            task = {
                "id": tid,
                "data": copy.deepcopy(payload["data"]),
                "meta": copy.deepcopy(payload.get("meta") or {}),
                "annotations": [],
                "updated_at": self._now(),
                "project": project_id,
            }
            project.tasks.append(task)
            self.tasks[tid] = task
            ids.append(tid)
        if self.fail_next_import:
            self.fail_next_import = False
            raise ImportOutcomeUnknown(f"importing {len(tasks)} tasks into project {project_id}: ReadTimeout")
        return ids

    def export_tasks(
        self, project_id: int, ids: list[int] | None = None, *, annotated_only: bool = False
    ) -> list[dict[str, Any]]:
        self.calls.append("export_tasks")
        wanted = set(ids) if ids else None
        out = []
        for task in self._project(project_id).tasks:
            if wanted is not None and task["id"] not in wanted:
                continue
            if annotated_only and not task["annotations"]:
                continue
            out.append(copy.deepcopy({k: v for k, v in task.items() if k != "project"}))
        return out

    def changed_task_ids(self, project_id: int, since: str) -> list[int]:
        return [t["id"] for t in self._project(project_id).tasks if t["updated_at"] > since]

    def server_time(self) -> str:
        return self._now()

    def create_annotation(
        self,
        task_id: int,
        result: list[dict[str, Any]],
        *,
        completed_by: int,
        lead_time: float | None = None,
        was_cancelled: bool = False,
        unique_id: str | None = None,
    ) -> int:
        task = self.tasks[task_id]
        aid = next(self._ids)
        now = self._now()
        ann = {
            "id": aid,
            "result": copy.deepcopy(result),
            "completed_by": completed_by,
            "was_cancelled": was_cancelled,
            "lead_time": lead_time,
            "created_at": now,
            "updated_at": now,
        }
        task["annotations"].append(ann)
        task["updated_at"] = now
        self.annotations[aid] = (task_id, ann)
        return aid

    def close(self) -> None:
        self.closed += 1

    # -- what tests do in the Label Studio UI ------------------------------------------------
    def update_annotation(self, annotation_id: int, result: list[dict[str, Any]]) -> None:
        task_id, ann = self.annotations[annotation_id]
        ann["result"] = copy.deepcopy(result)
        ann["updated_at"] = self._now()
        self.tasks[task_id]["updated_at"] = ann["updated_at"]

    def edit_task(
        self, task_id: int, *, data: dict[str, Any] | None = None, meta: dict[str, Any] | None = None
    ) -> None:
        """A member edits a task's data or meta (the Data Manager and the API allow it); updated_at moves."""
        task = self.tasks[task_id]
        if data is not None:
            task["data"] = copy.deepcopy(data)
        if meta is not None:
            task["meta"] = copy.deepcopy(meta)
        task["updated_at"] = self._now()

    def delete_annotation(self, annotation_id: int) -> None:
        task_id, ann = self.annotations.pop(annotation_id)
        task = self.tasks[task_id]
        task["annotations"] = [a for a in task["annotations"] if a["id"] != annotation_id]
        task["updated_at"] = self._now()

    def project_by_title(self, fragment: str) -> _Project:
        (hit,) = [p for p in self.projects.values() if fragment in p.title]
        return hit


class FakeServers:
    """One fake server per person, as the embedded servers of the default workspace are
    (``labelstudio.server.fleet``), and the shared one. Accounts exist once ``make_account`` made
    them (``annotate ls start`` does that for real servers)."""

    def __init__(self) -> None:
        self.shared = FakeLabelStudio()
        self.own: dict[str, FakeLabelStudio] = {}

    def __call__(self, ws: Any, owner: str | None = None, /) -> FakeLabelStudio:
        if owner is None:
            return self.shared
        return self.server(owner)

    def server(self, owner: str) -> FakeLabelStudio:
        if owner not in self.own:
            srv = FakeLabelStudio()
            srv.url = f"http://fake-label-studio-{owner.lower()}.invalid"
            self.own[owner] = srv
        return self.own[owner]

    def make_account(self, owner: str, email: str) -> int:
        """The person's account on their own server (what `annotate ls start` makes)."""
        return self.server(owner).create_user(email)
