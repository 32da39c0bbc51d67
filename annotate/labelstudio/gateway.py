"""The Label Studio gateway: the only module that imports ``label_studio_sdk``.

Plain dicts in and out. Every failure becomes ``LabelStudioError`` with the HTTP status and
body only: ``str(ApiError)`` carries the response headers, among them a session cookie, so it
is never printed. The SDK is imported lazily (it takes about 2 s).

Facts this code relies on (measured, see docs/labelstudio.md): imports are synchronous
and return task ids in input order; there is no de-duplication, so an import is never retried
blindly (``max_retries=0``; after a timeout the caller re-reads the project); the full JSON
export is the only format that includes skipped annotations; the SDK's default 60 s timeout is
too short for big exports.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC
from typing import Any

from annotate.errors import LabelStudioError

IMPORT_TIMEOUT = 600.0
EXPORT_TIMEOUT = 900.0
DEFAULT_TIMEOUT = 60.0


class ImportOutcomeUnknown(LabelStudioError):
    """An import request timed out or lost its connection: it may or may not have committed."""


class LabelStudioGateway:
    def __init__(self, url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        from annotate.labelstudio import http

        self.url = url.rstrip("/")
        # The project's one client policy (no proxies, no keep-alive); the SDK shares this client.
        self._http = http.client(self.url, token=token, timeout=timeout)
        self._sdk: Any = None
        self._token = token

    def __repr__(self) -> str:  # never show the token
        return f"LabelStudioGateway({self.url!r})"

    @property
    def sdk(self) -> Any:
        if self._sdk is None:
            from label_studio_sdk import LabelStudio

            # api_key is passed explicitly: the SDK reads its env default at import time.
            self._sdk = LabelStudio(base_url=self.url, api_key=self._token, httpx_client=self._http)
        return self._sdk

    def close(self) -> None:
        self._http.close()

    # -- error translation -------------------------------------------------------------------
    @contextmanager
    def _call(self, what: str) -> Iterator[None]:
        import httpx

        try:
            yield
        except LabelStudioError:
            raise
        except httpx.TimeoutException as exc:
            raise LabelStudioError(
                f"Label Studio at {self.url} did not answer in time while {what} ({type(exc).__name__})."
            ) from None
        except httpx.TransportError as exc:
            raise LabelStudioError(
                f"cannot reach Label Studio at {self.url} while {what} ({type(exc).__name__}). "
                "Is it running? Start it with `annotate ls start`, or set ANNOTATE_LS_URL."
            ) from None
        except Exception as exc:  # the SDK's ApiError / ParsingError, imported lazily
            status = getattr(exc, "status_code", None)
            if status is None and type(exc).__name__ not in ("ApiError", "ParsingError"):
                raise
            raise self._http_error(what, status, getattr(exc, "body", None)) from None

    def _http_error(self, what: str, status: int | None, body: Any) -> LabelStudioError:
        text = body if isinstance(body, str) else json.dumps(body, default=str)
        if isinstance(text, str) and text.lstrip().startswith("<"):
            text = "(an HTML page: the endpoint does not exist in this Label Studio edition)"
        text = (text or "")[:500]
        hint = ""
        if status == 401:
            hint = (
                " Check the token (ANNOTATE_LS_TOKEN, or the workspace's Label Studio secrets); "
                "a server's data dir keeps the token it was first started with."
            )
        return LabelStudioError(f"Label Studio at {self.url} answered {status} while {what}: {text}.{hint}")

    def _raw(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        with self._call(what):
            resp = self._http.request(method, path, **kwargs)
        if resp.status_code >= 400:
            try:
                body: Any = resp.json()
            except ValueError:
                body = resp.text
            raise self._http_error(what, resp.status_code, body)
        if not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            return resp.text

    # -- server and users --------------------------------------------------------------------
    def whoami(self) -> dict[str, Any]:
        return self._raw("GET", "/api/current-user/whoami", "checking the token")

    def version(self) -> dict[str, Any]:
        return self._raw("GET", "/api/version", "reading the version")

    def find_user(self, email: str) -> int | None:
        users = self._raw("GET", "/api/users", "listing users")
        for user in users or []:
            if str(user.get("email", "")).lower() == email.lower():
                return int(user["id"])
        return None

    def create_user(self, email: str, *, first_name: str | None = None) -> int:
        """The user's id: created, or found when the e-mail already exists."""
        existing = self.find_user(email)
        if existing is not None:
            return existing
        with self._call("creating a user"):
            user = self.sdk.users.create(
                username=email, email=email, first_name=first_name or "", request_options={"max_retries": 0}
            )
        return int(user.id)

    # -- projects ---------------------------------------------------------------------------
    def validate_config(self, label_config: str) -> None:
        """Ask the server to validate a label config (204 when valid)."""
        self._raw("POST", "/api/projects/validate", "validating the label config", json={"label_config": label_config})

    def create_project(self, *, title: str, label_config: str, instructions: str, maximum_annotations: int = 1) -> int:
        """A project for one annotator's tasks: no predictions shown, skip allowed, tasks in order.

        A plain POST rather than the SDK's ``projects.create``: importing the SDK costs about
        2 s, which `route` would otherwise pay on every run.
        """
        data = self._raw(
            "POST",
            "/api/projects/",
            "creating a project",
            json={
                "title": title,
                "label_config": label_config,
                "expert_instruction": instructions,
                "show_instruction": True,
                "maximum_annotations": maximum_annotations,
                "overlap_cohort_percentage": 100,
                "sampling": "Sequential sampling",
                "show_skip_button": True,
                "show_collab_predictions": False,
                "show_annotation_history": False,
                "enable_empty_annotation": False,
            },
        )
        return int(data["id"])

    def project_exists(self, project_id: int) -> bool:
        try:
            self._raw("GET", f"/api/projects/{project_id}", "reading a project")
        except LabelStudioError as exc:
            if "answered 404" in str(exc):
                return False
            raise
        return True

    def task_count(self, project_id: int) -> int:
        data = self._raw("GET", f"/api/projects/{project_id}", "reading a project")
        return int(data.get("task_number") or 0)

    def _task_pages(self, project_id: int, what: str, **params: Any) -> Iterator[list[dict[str, Any]]]:
        """Pages of ``GET /api/tasks`` until an empty or short page (or a 404 past the end)."""
        page = 1
        while True:
            try:
                data = self._raw(
                    "GET",
                    "/api/tasks",
                    what,
                    timeout=EXPORT_TIMEOUT,
                    params={"project": project_id, "page": page, "page_size": 1000, "fields": "task_only", **params},
                )
            except LabelStudioError as exc:
                if page > 1 and "answered 404" in str(exc):
                    return
                raise
            tasks = data.get("tasks", []) if isinstance(data, dict) else data
            yield tasks
            if len(tasks) < 1000:
                return
            page += 1

    def task_ids_by_ext_id(self, project_id: int) -> dict[str, int]:
        """Every task of the project: ext_id -> task id (tasks without ext_id are skipped)."""
        out: dict[str, int] = {}
        for tasks in self._task_pages(project_id, "listing tasks"):
            for task in tasks:
                ext = (task.get("meta") or {}).get("ext_id") or (task.get("data") or {}).get("ext_id")
                if ext:
                    out[str(ext)] = int(task["id"])
        return out

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> list[int]:
        """Import synchronously; the new task ids in input order.

        Raises ImportOutcomeUnknown when the request timed out or the connection broke after
        sending: the import may have committed, so the caller must re-read the project.
        """
        import httpx

        try:
            resp = self._http.post(
                f"/api/projects/{project_id}/import",
                params={"return_task_ids": "true"},
                json=tasks,
                timeout=IMPORT_TIMEOUT,
            )
        except (httpx.TimeoutException, httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise ImportOutcomeUnknown(
                f"importing {len(tasks)} tasks into project {project_id}: {type(exc).__name__}; the outcome is unknown"
            ) from None
        except httpx.TransportError as exc:
            raise LabelStudioError(
                f"cannot reach Label Studio at {self.url} ({type(exc).__name__}). Is it running? `annotate ls status`"
            ) from None
        if resp.status_code >= 400:
            try:
                body: Any = resp.json()
            except ValueError:
                body = resp.text
            raise self._http_error(f"importing tasks into project {project_id}", resp.status_code, body)
        ids = resp.json().get("task_ids") or []
        if len(ids) != len(tasks):
            raise ImportOutcomeUnknown(f"Label Studio returned {len(ids)} task ids for {len(tasks)} tasks")
        return [int(i) for i in ids]

    def export_tasks(
        self, project_id: int, ids: list[int] | None = None, *, annotated_only: bool = False
    ) -> list[dict[str, Any]]:
        """JSON export (the only format that includes skips), optionally only some tasks.

        ``annotated_only`` leaves out tasks without any annotation (a skip counts as one): much
        cheaper on a fresh round. It cannot show a deletion that left a task empty, so it is
        only right for a project's first pull (later pulls ask for the changed tasks by id).
        """
        params: list[tuple[str, Any]] = [
            ("exportType", "JSON"),
            ("download_all_tasks", "false" if annotated_only else "true"),
            ("download_resources", "false"),
        ]
        for i in ids or []:
            params.append(("ids[]", i))
        data = self._raw(
            "GET", f"/api/projects/{project_id}/export", "exporting annotations", params=params, timeout=EXPORT_TIMEOUT
        )
        if isinstance(data, str):
            data = json.loads(data)
        return data or []

    def changed_task_ids(self, project_id: int, since: str) -> list[int]:
        """Tasks whose updated_at is after ``since`` (annotation created, updated or deleted)."""
        query = json.dumps(
            {
                "filters": {
                    "conjunction": "and",
                    "items": [
                        {"filter": "filter:tasks:updated_at", "operator": "greater", "type": "Datetime", "value": since}
                    ],
                }
            }
        )
        return [
            int(t["id"]) for tasks in self._task_pages(project_id, "listing changed tasks", query=query) for t in tasks
        ]

    def server_time(self) -> str:
        """A point in the server's time just before now, for incremental pulls.

        Taken from the HTTP Date header (whole seconds) minus a 2 s margin: a change in the same
        second as the pull is then seen again next time, which is harmless (pulling is
        idempotent), rather than missed. Formatted as Label Studio's Datetime filter expects.
        """
        from datetime import datetime, timedelta
        from email.utils import parsedate_to_datetime

        with self._call("reading the server time"):
            resp = self._http.get("/api/version")
        date = resp.headers.get("date")
        now = parsedate_to_datetime(date) if date else datetime.now(UTC)
        return (now.astimezone(UTC) - timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    # -- annotations (tests, demo replay, expert write-back) ---------------------------------
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
        body: dict[str, Any] = {
            "result": result,
            "completed_by": completed_by,
            "was_cancelled": was_cancelled,
            "ground_truth": False,
        }
        if lead_time is not None:
            body["lead_time"] = lead_time
        if unique_id:
            body["unique_id"] = unique_id
        data = self._raw("POST", f"/api/tasks/{task_id}/annotations", "creating an annotation", json=body)
        return int(data["id"])

    def update_annotation(self, annotation_id: int, result: list[dict[str, Any]]) -> None:
        self._raw("PATCH", f"/api/annotations/{annotation_id}", "updating an annotation", json={"result": result})

    def delete_annotation(self, annotation_id: int) -> None:
        self._raw("DELETE", f"/api/annotations/{annotation_id}", "deleting an annotation")
