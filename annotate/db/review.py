"""Review rounds: annotators, the recorded design, Label Studio projects and tasks, annotations, quarantine."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
from sqlalchemy import func, select

from annotate.db import tables as m
from annotate.db.engine import begin_write, bulk_insert, frame, utcnow
from annotate.db.judges import same_response
from annotate.db.store_base import Component
from annotate.errors import StoreError


def _register(conn: Any, email: str, name: str | None, role: str = "annotator") -> tuple[str, bool]:
    """(pseudonym, created) within the caller's transaction. An e-mail already registered keeps its pseudonym."""
    t = m.ANNOTATOR
    prefix = "E" if role == "expert" else "A"
    row = conn.execute(select(t.c.pseudonym).where(func.lower(t.c.email) == email.lower())).first()
    if row:
        return row[0], False
    taken = conn.execute(select(t.c.pseudonym).where(t.c.pseudonym.like(f"{prefix}%"))).scalars().all()
    numbers = [int(p[1:]) for p in taken if p[1:].isdigit()]
    pseudonym = f"{prefix}{max(numbers, default=0) + 1}"
    conn.execute(
        t.insert(), {"pseudonym": pseudonym, "email": email, "name": name, "role": role, "created_at": utcnow()}
    )
    return pseudonym, True


def _whole(value: Any) -> int | None:
    """An optional count of a strata frame (NaN or None: absent)."""
    return None if value is None or pd.isna(value) else int(value)


def _write_round_wave(
    conn: Any,
    *,
    round_row: dict[str, Any] | None,
    new_round: dict[str, Any] | None,
    wave: int,
    max_response_id: int,
    items: Any,
    strata: Any,
    strata_from: Sequence[str] | None = None,
    judges: Mapping[str, str] | None = None,
) -> int:
    """A round (when new) and one wave of its design, within the caller's transaction; the round id."""
    now, per_benchmark = utcnow(), judges
    if round_row is None:
        assert new_round is not None, "a new round needs its row"
        t = m.REVIEW_ROUND
        row = {
            **new_round,
            "created_at": now,
            "strata_from": None if strata_from is None else json.dumps(list(strata_from)),
            "judges": None if per_benchmark is None else json.dumps(dict(sorted(per_benchmark.items()))),
        }
        round_id = conn.execute(t.insert().returning(t.c.id), row).scalar_one()
    else:
        round_id = round_row["id"]
    conn.execute(
        m.ROUND_WAVE.insert(),
        {"round_id": round_id, "wave": wave, "max_response_id": max_response_id, "routed_at": now},
    )
    if len(strata):
        conn.execute(
            m.ROUND_STRATUM.insert(),
            [
                {
                    "round_id": round_id,
                    "wave": wave,
                    "model": s.model,
                    "benchmark": s.benchmark,
                    "stratum": s.stratum,
                    "population": int(s.population),
                    "sample": int(s.sample),
                    # A next wave's stratum: the wave whose remainder it samples, and how many
                    # earlier waves took from it (None for a wave of new responses).
                    "of_wave": _whole(getattr(s, "of_wave", None)),
                    "sampled_before": _whole(getattr(s, "sampled_before", None)),
                }
                for s in strata.itertuples()
            ],
        )
    if len(items):
        bulk_insert(
            conn,
            m.ROUND_ITEM,
            ("round_id", "response_id", "wave", "stratum", "inclusion_prob", "ext_id"),
            list(
                zip(
                    [round_id] * len(items),
                    items.response_id.astype(int).tolist(),
                    [wave] * len(items),
                    items.stratum.tolist(),
                    items.inclusion_prob.astype(float).tolist(),
                    items.ext_id.tolist(),
                    strict=True,
                )
            ),
        )
    return round_id


class ReviewTables(Component):
    """Annotators, rounds (waves, strata, items), Label Studio projects and tasks, annotations."""

    # annotators ---------------------------------------------------------------------------------
    def annotators(self) -> pd.DataFrame:
        t = m.ANNOTATOR
        with self.engine.connect() as conn:
            return frame(conn, select(t).order_by(t.c.id))

    def add_annotator(self, email: str, name: str | None, role: str = "annotator") -> tuple[str, bool]:
        """(pseudonym, created). An e-mail already registered keeps its pseudonym."""
        with self.engine.begin() as conn:
            return _register(conn, email, name, role)

    def set_annotator_user(self, pseudonym: str, ls_user_id: int) -> None:
        t = m.ANNOTATOR
        with self.engine.begin() as conn:
            conn.execute(t.update().where(t.c.pseudonym == pseudonym).values(ls_user_id=ls_user_id))

    # rounds -------------------------------------------------------------------------------------
    def get_round(self, name: str) -> dict[str, Any] | None:
        t = m.REVIEW_ROUND
        with self.engine.connect() as conn:
            row = conn.execute(select(t).where(t.c.name == name)).mappings().first()
            return dict(row) if row else None

    def rounds(self) -> pd.DataFrame:
        t = m.REVIEW_ROUND
        with self.engine.connect() as conn:
            return frame(conn, select(t).order_by(t.c.id))

    def round_waves(self, round_id: int) -> pd.DataFrame:
        t = m.ROUND_WAVE
        with self.engine.connect() as conn:
            return frame(conn, select(t).where(t.c.round_id == round_id).order_by(t.c.wave))

    def create_round_wave(
        self,
        *,
        round_row: dict[str, Any] | None,
        new_round: dict[str, Any] | None,
        wave: int,
        max_response_id: int,
        items: Any,
        strata: Any,
        strata_from: Sequence[str] | None = None,
        judges: Mapping[str, str] | None = None,
    ) -> int:
        """Record a round (when new) and one wave of its design in one transaction; the round id.

        ``strata_from``: a new round's judges whose unanimity made its strata (``route
        --strata-from``); None: the routing judge's own labels. ``judges``: a new round across
        suites' judge per benchmark ({benchmark: judge}); None: one judge for all.
        """
        with self.engine.begin() as conn:
            return _write_round_wave(
                conn,
                round_row=round_row,
                new_round=new_round,
                wave=wave,
                max_response_id=max_response_id,
                items=items,
                strata=strata,
                strata_from=strata_from,
                judges=judges,
            )

    def record_imported_round(
        self,
        *,
        raters: Mapping[str, tuple[str, str]],
        build: Callable[
            [dict[str, str], dict[str, str], dict[str, int]], tuple[dict[str, Any], Sequence[dict[str, Any]]]
        ],
        max_response_id: int,
        items: Any,
        strata: Any,
        experts: Mapping[str, tuple[str, str]] | None = None,
    ) -> tuple[int, dict[str, str], dict[str, str]]:
        """An imported round whole, in **one** transaction: its raters registered as annotators, the
        round, its one wave and design, and per rater a file-mode project with its tasks and
        annotations (``annotate import-labels``). Killed at any point, nothing of it stays (no rater
        registered either), so a re-run imports it all.

        ``raters``: {rater: (email, name)}; ``experts``: {settler: (email, name)}, registered as experts
        (a file's settled final labels). ``build(pseudonyms, expert_pseudonyms, annotator_ids)`` -> (the
        round's row, projects), called once they have pseudonyms ({rater: pseudonym}, {settler:
        pseudonym}, {pseudonym: id}); a
        project is ``annotator_id``, ``title``, ``tasks`` (round item index in ``items`` -> ext_id,
        position) and ``annotations`` (dicts of the annotation columns, ``item`` the index in
        ``items`` instead of ``round_item_id``). Returns (round id, {rater: pseudonym}, {settler: pseudonym}).
        """
        now = utcnow()
        with self.engine.begin() as conn:
            pseudonyms = {rater: _register(conn, email, name)[0] for rater, (email, name) in raters.items()}
            settlers = {
                who: _register(conn, email, name, role="expert")[0] for who, (email, name) in (experts or {}).items()
            }
            t = m.ANNOTATOR
            everyone = [*pseudonyms.values(), *settlers.values()]
            ids = {
                str(p): int(i)
                for p, i in conn.execute(select(t.c.pseudonym, t.c.id).where(t.c.pseudonym.in_(everyone))).all()
            }
            new_round, projects = build(pseudonyms, settlers, ids)
            round_id = _write_round_wave(
                conn,
                round_row=None,
                new_round=new_round,
                wave=0,
                max_response_id=max_response_id,
                items=items,
                strata=strata,
            )
            item_of = dict(
                conn.execute(
                    select(m.ROUND_ITEM.c.response_id, m.ROUND_ITEM.c.id).where(m.ROUND_ITEM.c.round_id == round_id)
                ).all()
            )
            item_ids = [int(item_of[int(r)]) for r in items.response_id]
            for p in projects:
                t = m.LS_PROJECT
                pid = conn.execute(
                    t.insert().returning(t.c.id),
                    {
                        "round_id": round_id,
                        "annotator_id": p["annotator_id"],
                        "title": p["title"],
                        "project_id": None,
                        "created_at": now,
                    },
                ).scalar_one()
                tasks = [(pid, item_ids[i], ext, pos, None, None) for i, (ext, pos) in sorted(p["tasks"].items())]
                cols = ("ls_project_id", "round_item_id", "ext_id", "position", "text_sha", "prior_votes")
                if tasks:
                    bulk_insert(conn, m.LS_TASK, cols, tasks)
                rows = [
                    {
                        **{k: v for k, v in a.items() if k != "item"},
                        "ls_project_id": pid,
                        "round_item_id": item_ids[a["item"]],
                        "pulled_at": now,
                    }
                    for a in p["annotations"]
                ]
                if rows:
                    conn.execute(m.ANNOTATION.insert(), rows)
        return round_id, pseudonyms, settlers

    def round_strata_from(self, round_id: int) -> list[str] | None:
        """The judges whose unanimity made the round's strata (``route --strata-from``), in the order given.

        None: the strata are the routing judge's own labels (every round routed without it).
        """
        t = m.REVIEW_ROUND
        with self.engine.connect() as conn:
            value = conn.execute(select(t.c.strata_from).where(t.c.id == int(round_id))).scalar()
        return None if value is None else [str(j) for j in json.loads(value)]

    def strata_labels(self, judge: str, judges: Sequence[str], after_id: int, up_to_id: int) -> pd.DataFrame:
        """Other judges' labels on the same responses as one judge's rows with after_id < id <= up_to_id.

        The same response: the same (benchmark, model, prompt_id, epoch) **and** the same prompt
        and response text (as :meth:`annotate.db.judges.JudgeTables.judge_verdicts`); a row with
        the same key and another text is another response and is not returned. Only rows with
        id <= up_to_id count, so that a wave's strata depend on what was ingested when it was
        routed.

        Returns
        -------
        DataFrame
            ``response_id`` (the routing judge's row), ``judge``, ``judge_label``: one row per
            response and judge of ``judges`` with a verdict on it.
        """
        routed = m.RESPONSE.alias("routed")
        other = m.RESPONSE.alias("other")
        stmt = (
            select(routed.c.id.label("response_id"), other.c.judge, other.c.judge_label)
            .select_from(routed.join(other, same_response(routed, other)))
            .where(
                routed.c.judge == judge,
                routed.c.id > after_id,
                routed.c.id <= up_to_id,
                other.c.judge.in_(list(judges)),
                other.c.id <= up_to_id,
            )
            .order_by(routed.c.id, other.c.judge)
        )
        with self.engine.connect() as conn:
            return frame(conn, stmt)

    def round_strata(self, round_id: int) -> pd.DataFrame:
        t = m.ROUND_STRATUM
        with self.engine.connect() as conn:
            return frame(conn, select(t).where(t.c.round_id == round_id).order_by(t.c.id))

    def round_items(self, round_id: int, *, with_text: bool = False) -> pd.DataFrame:
        """Items of a round joined with their response (model, benchmark, prompt_id, ..., image: its name
        in the workspace's media/, None without one).

        ``with_text``: also prompt, response and transcript (JSON text, None for single-turn).
        """
        i, r = m.ROUND_ITEM, m.RESPONSE
        cols = [
            i.c.id.label("round_item_id"),
            i.c.response_id,
            i.c.wave,
            i.c.stratum,
            i.c.inclusion_prob,
            i.c.ext_id,
            i.c.gold_label,
            i.c.priority,
            r.c.model,
            r.c.benchmark,
            r.c.prompt_id,
            r.c.epoch,
            r.c.judge,
            r.c.category,
            r.c.judge_label,
            r.c.judge_verdict,
            r.c.image,
            r.c.hazard,
            r.c.persona,
            r.c.locale,
        ]
        if with_text:
            cols += [r.c.prompt, r.c.response, r.c.transcript]
        stmt = select(*cols).join(r, r.c.id == i.c.response_id).where(i.c.round_id == round_id).order_by(i.c.id)
        with self.engine.connect() as conn:
            return frame(conn, stmt)

    def set_item_priorities(self, round_id: int, priorities: Mapping[int, float]) -> None:
        """round_item_id -> the ambiguity priority it is ordered by; an item keeps one it already has."""
        t = m.ROUND_ITEM
        with self.engine.begin() as conn:
            for item, value in priorities.items():
                conn.execute(
                    t.update()
                    .where(t.c.round_id == round_id, t.c.id == int(item), t.c.priority.is_(None))
                    .values(priority=float(value))
                )

    def set_gold(self, round_id: int, labels: dict[int, str]) -> None:
        """round_item_id -> known correct verdict (gold items), in one transaction."""
        t = m.ROUND_ITEM
        with self.engine.begin() as conn:
            for item, label in labels.items():
                conn.execute(t.update().where(t.c.round_id == round_id, t.c.id == item).values(gold_label=label))

    # Label Studio projects and tasks ------------------------------------------------------------
    def ls_project(self, round_id: int, annotator_id: int) -> dict[str, Any] | None:
        t = m.LS_PROJECT
        with self.engine.connect() as conn:
            row = (
                conn.execute(select(t).where(t.c.round_id == round_id, t.c.annotator_id == annotator_id))
                .mappings()
                .first()
            )
            return dict(row) if row else None

    def ls_projects(self, round_id: int | None = None) -> pd.DataFrame:
        p, a, rr = m.LS_PROJECT, m.ANNOTATOR, m.REVIEW_ROUND
        stmt = (
            select(p, a.c.pseudonym, a.c.ls_user_id, rr.c.name.label("round"))
            .join(a, a.c.id == p.c.annotator_id)
            .join(rr, rr.c.id == p.c.round_id)
            .order_by(p.c.id)
        )
        if round_id is not None:
            stmt = stmt.where(p.c.round_id == round_id)
        with self.engine.connect() as conn:
            return frame(conn, stmt)

    def add_ls_project(
        self,
        round_id: int,
        annotator_id: int,
        title: str,
        project_id: int | None,
        *,
        server: str | None = None,
        pinned_user_id: int | None = None,
    ) -> int:
        """A project row; ``server`` ``"own"`` (its person's own server) or None (the shared one),
        ``pinned_user_id`` the Label Studio user whose annotations count (known at creation on an own server)."""
        t = m.LS_PROJECT
        with self.engine.begin() as conn:
            return conn.execute(
                t.insert().returning(t.c.id),
                {
                    "round_id": round_id,
                    "annotator_id": annotator_id,
                    "title": title,
                    "project_id": project_id,
                    "created_at": utcnow(),
                    "server": server,
                    "pinned_user_id": pinned_user_id,
                },
            ).scalar_one()

    def set_ls_project_id(
        self, ls_project_id: int, project_id: int, *, server: str | None = None, pinned_user_id: int | None = None
    ) -> None:
        """A file-mode project sent to a server now: its id there, where it lives and (own server) its user."""
        t = m.LS_PROJECT
        values: dict[str, Any] = {"project_id": project_id, "server": server}
        if pinned_user_id is not None:
            values["pinned_user_id"] = pinned_user_id
        with self.engine.begin() as conn:
            conn.execute(t.update().where(t.c.id == ls_project_id).values(**values))

    def set_round_blinding(self, round_id: int, blinding: str) -> None:
        """Record how a round is blinded when it first reaches a server (never changed afterwards)."""
        t = m.REVIEW_ROUND
        with self.engine.begin() as conn:
            conn.execute(t.update().where(t.c.id == round_id, t.c.blinding.is_(None)).values(blinding=blinding))

    def set_last_pulled(self, ls_project_id: int, when: str) -> None:
        t = m.LS_PROJECT
        with self.engine.begin() as conn:
            conn.execute(t.update().where(t.c.id == ls_project_id).values(last_pulled_at=when))

    def ls_tasks(self, ls_project_id: int) -> pd.DataFrame:
        t = m.LS_TASK
        with self.engine.connect() as conn:
            return frame(conn, select(t).where(t.c.ls_project_id == ls_project_id).order_by(t.c.position))

    def add_ls_tasks(self, rows: list[dict[str, Any]]) -> None:
        """New task rows: ls_project_id, round_item_id, ext_id, position, text_sha (and prior_votes)."""
        if rows:
            cols = ("ls_project_id", "round_item_id", "ext_id", "position", "text_sha", "prior_votes")
            with self.engine.begin() as conn:
                bulk_insert(conn, m.LS_TASK, cols, [tuple(r.get(c) for c in cols) for r in rows])

    def task_owners(self, ext_ids: Sequence[str]) -> pd.DataFrame:
        """Which projects hold tasks with these ext_ids: ext_id, ls_project_id, round, pseudonym."""
        t, p, a, rr = m.LS_TASK, m.LS_PROJECT, m.ANNOTATOR, m.REVIEW_ROUND
        ids = sorted({str(e) for e in ext_ids})
        parts = []
        with self.engine.connect() as conn:
            for start in range(0, len(ids), 900):
                stmt = (
                    select(t.c.ext_id, t.c.ls_project_id, rr.c.name.label("round"), a.c.pseudonym)
                    .join(p, p.c.id == t.c.ls_project_id)
                    .join(a, a.c.id == p.c.annotator_id)
                    .join(rr, rr.c.id == p.c.round_id)
                    .where(t.c.ext_id.in_(ids[start : start + 900]))
                )
                parts.append(frame(conn, stmt))
        if not parts:
            return pd.DataFrame(columns=["ext_id", "ls_project_id", "round", "pseudonym"])
        return pd.concat(parts, ignore_index=True)

    def item_texts(self, round_item_ids: Sequence[int]) -> dict[int, tuple[str, str, str | None, str, str | None]]:
        """round_item_id -> (prompt, response, transcript, model, image), for building tasks batch by batch.

        The transcript is JSON text (None for a single-turn response); the model is what the
        dialogue must not show (``labelstudio.tasks.task_dialogue``); the image is its name in the
        workspace's media/ (None without one).
        """
        i, r = m.ROUND_ITEM, m.RESPONSE
        out: dict[int, tuple[str, str, str | None, str, str | None]] = {}
        ids = [int(x) for x in round_item_ids]
        cols = (i.c.id, r.c.prompt, r.c.response, r.c.transcript, r.c.model, r.c.image)
        with self.engine.connect() as conn:
            for start in range(0, len(ids), 900):
                chunk = ids[start : start + 900]
                rows = conn.execute(select(*cols).join(r, r.c.id == i.c.response_id).where(i.c.id.in_(chunk))).all()
                out.update({row[0]: (row[1], row[2], row[3], row[4], row[5]) for row in rows})
        return out

    def set_task_ids(self, ls_project_id: int, mapping: dict[str, int]) -> None:
        """Record ext_id -> task id for imported tasks (one transaction)."""
        if not mapping:
            return
        now = utcnow()
        with self.engine.begin() as conn:
            ph = "?" if conn.dialect.name == "sqlite" else "%s"
            stamp = self.db_timestamp(now)
            begin_write(conn)  # the raw cursor bypasses the write gate: take the lock (and announce a wait)
            cur = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
            cur.executemany(
                f"UPDATE ls_task SET task_id = {ph}, imported_at = {ph} WHERE ls_project_id = {ph} AND ext_id = {ph}",
                [(int(tid), stamp, int(ls_project_id), ext) for ext, tid in mapping.items()],
            )
            cur.close()

    # annotations --------------------------------------------------------------------------------
    def annotations_of_project(self, ls_project_id: int) -> dict[int, dict[str, Any]]:
        t = m.ANNOTATION
        with self.engine.connect() as conn:
            rows = conn.execute(select(t).where(t.c.ls_project_id == ls_project_id)).mappings().all()
        return {r["ls_annotation_id"]: dict(r) for r in rows}

    def apply_pull(
        self,
        ls_project_id: int,
        *,
        inserts: list[dict[str, Any]],
        updates: list[dict[str, Any]],
        deletions: list[int],
        quarantine: list[dict[str, Any]],
        pulled_at_server: str | None,
        authors: Sequence[tuple[int, int]] = (),
        pin: int | None = None,
    ) -> int:
        """Write one project's pull in one transaction; returns the number of new quarantine rows.

        ``updates`` carry the annotation ``id`` and the new values; the old values go to
        annotation_history first. ``deletions`` are annotation ids no longer in Label Studio.
        ``authors`` are (annotation id, completed_by) of annotations stored before completed_by
        was (no label changes). ``pin`` is the Label Studio user pinned on the project's first pull.
        """
        a, h, q, p = (
            m.ANNOTATION,
            m.ANNOTATION_HISTORY,
            m.QUARANTINE,
            m.LS_PROJECT,
        )
        now = utcnow()
        kept = ("verdict", "refusal", "confidence", "rationale", "skipped", "deleted", "updated_at", "result")
        new_quarantine = 0
        with self.engine.begin() as conn:
            if inserts:
                conn.execute(a.insert(), [{**row, "pulled_at": now} for row in inserts])
            for row in updates:
                old = conn.execute(select(*[a.c[k] for k in kept]).where(a.c.id == row["id"])).mappings().one()
                conn.execute(
                    h.insert(),
                    {
                        **dict(old),
                        "annotation_id": row["id"],
                        "replaced_at": now,
                        "change": row.pop("change", "updated"),
                    },
                )
                conn.execute(
                    a.update()
                    .where(a.c.id == row["id"])
                    .values(**{k: v for k, v in row.items() if k != "id"}, pulled_at=now)
                )
            for annotation_id in deletions:
                old = conn.execute(select(*[a.c[k] for k in kept]).where(a.c.id == annotation_id)).mappings().one()
                conn.execute(
                    h.insert(), {**dict(old), "annotation_id": annotation_id, "replaced_at": now, "change": "deleted"}
                )
                conn.execute(a.update().where(a.c.id == annotation_id).values(deleted=True, pulled_at=now))
            for row in quarantine:
                exists = conn.execute(
                    select(q.c.id).where(q.c.ls_project_id == ls_project_id, q.c.fingerprint == row["fingerprint"])
                ).first()
                if not exists:
                    conn.execute(q.insert(), {**row, "ls_project_id": ls_project_id, "pulled_at": now})
                    new_quarantine += 1
            for annotation_id, user in authors:
                conn.execute(
                    a.update().where(a.c.id == annotation_id, a.c.completed_by.is_(None)).values(completed_by=user)
                )
            if pin is not None:
                # Only a project without a pinned user gets one: a concurrent pull cannot re-pin.
                pinned = conn.execute(
                    p.update().where(p.c.id == ls_project_id, p.c.pinned_user_id.is_(None)).values(pinned_user_id=pin)
                ).rowcount
                if pinned != 1:
                    raise StoreError(
                        "another pull pinned this project's Label Studio user at the same time; "
                        "nothing of this pull was stored. Run the pull again."
                    )
            if pulled_at_server:
                conn.execute(p.update().where(p.c.id == ls_project_id).values(last_pulled_at=pulled_at_server))
        return new_quarantine

    def annotations(
        self, round_id: int | None = None, *, include_inactive: bool = False, with_result: bool = False
    ) -> pd.DataFrame:
        """Long table of annotations: round, item, annotator pseudonym, verdict, ... (and with ``with_result``
        each annotation's whole Label Studio ``result``, JSON text: the answers beyond the verdict)."""
        a, p, an, i, rr = (
            m.ANNOTATION,
            m.LS_PROJECT,
            m.ANNOTATOR,
            m.ROUND_ITEM,
            m.REVIEW_ROUND,
        )
        stmt = (
            select(
                rr.c.name.label("round"),
                a.c.id.label("annotation_id"),
                a.c.round_item_id,
                i.c.response_id,
                i.c.stratum,
                an.c.pseudonym.label("annotator"),
                a.c.ls_annotation_id,
                a.c.verdict,
                a.c.refusal,
                a.c.confidence,
                a.c.rationale,
                a.c.skipped,
                a.c.deleted,
                a.c.lead_time,
                a.c.created_at,
                a.c.updated_at,
                a.c.channel,
                a.c.source_sha256,
                a.c.pulled_at,
                *([a.c.result] if with_result else []),
            )
            .join(p, p.c.id == a.c.ls_project_id)
            .join(an, an.c.id == a.c.annotator_id)
            .join(i, i.c.id == a.c.round_item_id)
            .join(rr, rr.c.id == p.c.round_id)
            .order_by(a.c.id)
        )
        if round_id is not None:
            stmt = stmt.where(p.c.round_id == round_id)
        if not include_inactive:
            stmt = stmt.where(a.c.deleted == False)  # noqa: E712 (SQL expression)
        with self.engine.connect() as conn:
            return frame(conn, stmt)

    def annotation_history(self) -> pd.DataFrame:
        t = m.ANNOTATION_HISTORY
        with self.engine.connect() as conn:
            return frame(conn, select(t).order_by(t.c.id))

    def quarantined(self, round_id: int | None = None) -> pd.DataFrame:
        """Quarantined results, with the round and the pseudonym of the project's annotator."""
        q, p, a = m.QUARANTINE, m.LS_PROJECT, m.ANNOTATOR
        stmt = (
            select(q, p.c.round_id, a.c.pseudonym.label("annotator"))
            .join(p, p.c.id == q.c.ls_project_id)
            .join(a, a.c.id == p.c.annotator_id)
            .order_by(q.c.id)
        )
        if round_id is not None:
            stmt = stmt.where(p.c.round_id == round_id)
        with self.engine.connect() as conn:
            return frame(conn, stmt)
