"""Hostile Label Studio JSON exports (issue #12): a corpus that every later change must keep refusing or quarantining.

Two parts:

* ``structural/*.json``: files that are no usable JSON export whatever the round (not a list,
  a task that is not an object, an ext_id that is a list or an object, a key twice in one
  object, nesting deep enough to exhaust the parser, not UTF-8, ...). ``annotate pull
  --from-file F --annotator A1`` must refuse each with one ``Error: F: ...`` line and exit 2,
  storing nothing. They are static: a structural check comes before any matching.
* :data:`CASES`: mutations of a valid export of one annotator's project. They are built rather
  than stored because task ids are per project and keyed with each round's random secret:
  :func:`valid_export` turns the task file that ``annotate route --to-file`` wrote into the
  export Label Studio would give after the annotator labelled some tasks, and each case's
  ``build`` bends a copy of it (or of another annotator's export) in one way that an export has
  been found to lie.

Every case states what must happen (:attr:`Case.expect`): ``"refused"`` (exit 2, one error
line, nothing stored) or the kind of quarantine reason (``annotate.labelstudio.tasks.R_*``) its
results must get. In every case no stored label changes: the cases are built from the export
last pulled, so everything they do not bend is already in the store.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotate.labelstudio import tasks as t
from annotate.labelstudio.labelconfig import choices_result

STRUCTURAL = sorted((Path(__file__).parent / "structural").glob("*.json"))

#: The Label Studio user ids of the two reviewers on the air-gapped server, and of a stranger.
A1_USER, A2_USER, STRANGER = 7, 8, 999


@dataclass(frozen=True)
class Label:
    """One annotation in a valid export: its id, verdict (None: a skip), confidence and rationale."""

    id: int
    verdict: str | None
    confidence: int | None = None
    rationale: str | None = None


def annotation(label: Label, user: int) -> dict[str, Any]:
    """A Label Studio JSON-export annotation, as the annotator ``user`` made it."""
    skipped = label.verdict is None
    return {
        "id": label.id,
        "completed_by": user,
        "result": []
        if skipped
        else choices_result(label.verdict, confidence=label.confidence, rationale=label.rationale),  # type: ignore[arg-type]
        "was_cancelled": skipped,
        "lead_time": 12.5,
        "created_at": "2026-01-05T10:00:00.000000Z",
        "updated_at": f"2026-01-05T10:{label.id % 60:02d}:00.000000Z",
    }


def valid_export(task_file: list[dict[str, Any]], labels: dict[int, Label], user: int) -> list[dict[str, Any]]:
    """The JSON export of a project whose tasks are ``task_file`` (as routed), with ``labels`` by task index."""
    return [
        {
            "id": 5000 + k,
            "data": copy.deepcopy(task["data"]),
            "meta": copy.deepcopy(task["meta"]),
            "annotations": [annotation(labels[k], user)] if k in labels else [],
            "predictions": [],
        }
        for k, task in enumerate(task_file)
    ]


@dataclass(frozen=True)
class Context:
    """What a case bends: the export of A1's project last pulled, and a valid export of A2's."""

    own: list[dict[str, Any]]
    other: list[dict[str, Any]]


@dataclass(frozen=True)
class Case:
    name: str
    expect: str  # "refused", or the quarantine reason kind (annotate.labelstudio.tasks.R_*)
    build: Callable[[Context], Any]  # the export (JSON-able), or None when the export has nothing to bend
    message: str = ""  # refused: a fragment of the error line


def _annotated(export: list[dict[str, Any]]) -> list[int]:
    return [k for k, task in enumerate(export) if task["annotations"] and not task["annotations"][0]["was_cancelled"]]


def _bend_first_label(fn: Callable[[dict[str, Any], dict[str, Any]], None]) -> Callable[[Context], Any]:
    """A case that changes the first labelled annotation (``fn(task, annotation)``)."""

    def build(ctx: Context) -> Any:
        export = copy.deepcopy(ctx.own)
        hit = _annotated(export)
        if not hit:
            return None
        task = export[hit[0]]
        fn(task, task["annotations"][0])
        return export

    return build


def _set_region(name: str, **changes: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def fn(task: dict[str, Any], ann: dict[str, Any]) -> None:
        regions = [r for r in ann["result"] if r["from_name"] == name]
        if not regions:
            ann["result"].append(
                {"from_name": name, "to_name": "response", "type": "rating", "value": {"rating": 3}}
                if name == "confidence"
                else {"from_name": name, "to_name": "response", "type": "textarea", "value": {"text": [""]}}
            )
            regions = ann["result"][-1:]
        for key, value in changes.items():
            if key == "value":
                regions[0]["value"].update(value)
            else:
                regions[0][key] = value

    return fn


def _foreign_annotation(ctx: Context) -> Any:
    # A newer annotation by another user on a labelled task (the finding: it replaced A1's vote).
    export = copy.deepcopy(ctx.own)
    target = _annotated(export)[:1] or [0]
    if not export:
        return None
    newer = annotation(Label(900_001, "safe"), STRANGER)
    newer["updated_at"] = "2030-01-01T00:00:00.000000Z"
    export[target[0]]["annotations"].append(newer)
    return export


def _duplicate_annotation(ctx: Context) -> Any:
    export = copy.deepcopy(ctx.own)
    hit = _annotated(export)
    if not hit:
        return None
    task = export[hit[0]]
    twin = copy.deepcopy(task["annotations"][0])
    twin["result"] = choices_result(
        "unsure" if task["annotations"][0]["result"][0]["value"]["choices"] != ["unsure"] else "safe"
    )
    task["annotations"].append(twin)
    return export


def _duplicate_task(ctx: Context) -> Any:
    export = copy.deepcopy(ctx.own)
    hit = _annotated(export)
    if not hit:
        return None
    twin = copy.deepcopy(export[hit[0]])
    twin["annotations"][0]["result"] = choices_result("unsure")
    twin["annotations"][0]["id"] = 900_002
    return [*export, twin]


def _moved_annotation(ctx: Context) -> Any:
    export = copy.deepcopy(ctx.own)
    hit = _annotated(export)
    empty = [k for k, task in enumerate(export) if not task["annotations"]]
    if not hit or not empty:
        return None
    export[empty[0]]["annotations"] = export[hit[0]]["annotations"]
    export[hit[0]]["annotations"] = []
    return export


def _id_mismatch(ctx: Context) -> Any:
    # meta names one task, data another (the finding: it deleted the other item's label).
    export = copy.deepcopy(ctx.own)
    if len(export) < 2:
        return None
    hit = (_annotated(export) or [0])[0]
    other = 1 if hit == 0 else 0
    export[other]["meta"]["ext_id"] = export[hit]["data"]["ext_id"]
    export[other]["annotations"] = []
    return export


def _text_changed(ctx: Context) -> Any:
    export = copy.deepcopy(ctx.own)
    if not export:
        return None
    hit = (_annotated(export) or [0])[0]
    export[hit]["data"]["response"] += " (edited after routing)"
    return export


def _no_ext_id(ctx: Context) -> Any:
    export = copy.deepcopy(ctx.own)
    if not export:
        return None
    hit = (_annotated(export) or [0])[0]
    export[hit]["data"].pop("ext_id")
    export[hit]["meta"].pop("ext_id")
    return export


def _unknown_task(ctx: Context) -> Any:
    export = copy.deepcopy(ctx.own)
    stray = copy.deepcopy(export[0]) if export else {"id": 1, "data": {"prompt": "p", "response": "r"}, "meta": {}}
    stray["id"] = 990_000
    stray["data"]["ext_id"] = stray["meta"]["ext_id"] = "0" * 32
    stray["annotations"] = [annotation(Label(900_003, "harmful"), A1_USER)]
    return [*export, stray]


def _mixed_projects(ctx: Context) -> Any:
    half = len(ctx.own) // 2
    return copy.deepcopy(ctx.own[:half] + ctx.other[half:])


CASES: dict[str, Case] = {
    c.name: c
    for c in [
        Case("another annotators export", "refused", lambda ctx: copy.deepcopy(ctx.other), "belong to A2's project"),
        Case("two projects in one file", "refused", _mixed_projects, "one project's export"),
        Case("another users annotation", t.R_OTHER_USER, _foreign_annotation),
        Case(
            "own annotation claimed by another user",
            t.R_OTHER_USER,
            _bend_first_label(lambda task, ann: ann.update(completed_by=STRANGER)),
        ),
        Case("no completed_by", t.R_NO_AUTHOR, _bend_first_label(lambda task, ann: ann.pop("completed_by"))),
        Case("completed_by as text", t.R_NO_AUTHOR, _bend_first_label(lambda task, ann: ann.update(completed_by="7"))),
        Case("task text changed", t.R_TEXT_CHANGED, _text_changed),
        Case(
            "task data gains a field",
            t.R_TEXT_CHANGED,
            _bend_first_label(lambda task, ann: task["data"].update(model="model-a")),
        ),
        Case("meta and data ext_id differ", t.R_ID_MISMATCH, _id_mismatch),
        Case("no ext_id", t.R_NO_EXT_ID, _no_ext_id),
        Case("unknown task", t.R_NOT_THIS_PROJECT, _unknown_task),
        Case("annotation id twice", t.R_ANNOTATION_REPEATED, _duplicate_annotation),
        Case("task twice", t.R_TASK_REPEATED, _duplicate_task),
        Case(
            "annotation id as text",
            t.R_BAD_ANNOTATION_ID,
            _bend_first_label(lambda task, ann: ann.update(id=str(ann["id"]))),
        ),
        Case(
            "annotation id as float",
            t.R_BAD_ANNOTATION_ID,
            _bend_first_label(lambda task, ann: ann.update(id=ann["id"] + 0.5)),
        ),
        Case(
            "annotation id out of range",
            t.R_BAD_ANNOTATION_ID,
            _bend_first_label(lambda task, ann: ann.update(id=2**63)),
        ),
        Case("annotation moved", t.R_MOVED, _moved_annotation),
        Case("verdict on the prompt", t.R_INVALID_RESULT, _bend_first_label(_set_region("verdict", to_name="prompt"))),
        Case("verdict as labels", t.R_INVALID_RESULT, _bend_first_label(_set_region("verdict", type="labels"))),
        Case("rating 2.7", t.R_INVALID_RESULT, _bend_first_label(_set_region("confidence", value={"rating": 2.7}))),
        Case(
            "rating NaN",
            t.R_INVALID_RESULT,
            _bend_first_label(_set_region("confidence", value={"rating": float("nan")})),
        ),
        Case(
            "rationale over the bound",
            t.R_INVALID_RESULT,
            _bend_first_label(_set_region("rationale", value={"text": ["x" * (t.MAX_TEXT_BYTES + 1)]})),
        ),
        Case("lead_time as text", t.R_MALFORMED, _bend_first_label(lambda task, ann: ann.update(lead_time="fast"))),
        Case(
            "was_cancelled as text", t.R_MALFORMED, _bend_first_label(lambda task, ann: ann.update(was_cancelled="no"))
        ),
        Case(
            "ext_id is a list",
            "refused",
            _bend_first_label(lambda task, ann: task["data"].update(ext_id=[task["data"]["ext_id"]])),
            "not a string",
        ),
        Case(
            "annotation is a string",
            "refused",
            _bend_first_label(lambda task, ann: task["annotations"].append("harmful")),
            "not an object",
        ),
    ]
}


def dump(export: Any, path: Path) -> Path:
    """Write an export as Label Studio would (``allow_nan``: Python's JSON writes NaN, and so may a hostile file)."""
    path.write_text(json.dumps(export), encoding="utf-8")
    return path
