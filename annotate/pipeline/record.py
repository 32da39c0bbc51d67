"""The audit record of some rounds, built from the store: the one place where the store becomes the record.

:func:`record_from_store` gives an :class:`~annotate.audit.record.AuditRecord`: ``labels``
(labels.csv: one row per reviewed, routed response, with its stratum, inclusion probability,
final label, gold label and every annotator's verdict), ``judge_labels`` (judge_labels.csv: every
judge's verdict and label on each reviewed response, one row per response and judge with a row
under its key, the routing judge included; ``same_response`` says whether the row's prompt and
response text are the reviewed ones) and ``design`` (design.json: the rounds, seeds and waves,
and N_h / n_h per (model, benchmark) cell and stratum; a round routed with ``--strata-from`` also
names those judges). ``annotate score``, ``judges`` and ``export`` compute from it; an export
writes it, so ``verify`` re-derives everything from the export's own files without the database.
"""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.audit.channels import channel_cell, channel_summary
from annotate.audit.design import Design, RoundDesign, Stratum, Wave
from annotate.audit.hazard_answers import HAZARD_ANSWER_COLUMNS, answers_cell, expert_cell, settled_cells
from annotate.audit.labels import JUDGE_LABEL_COLUMNS, LABEL_COLUMNS, ds_labels
from annotate.audit.order import ORDER_COLUMNS, empty_order, order_rows
from annotate.audit.record import AuditRecord
from annotate.columns import BLINDING_INSTRUCTIONS, CHANNEL_UNRECORDED
from annotate.errors import InputError
from annotate.ingest.records import reserved_names_held
from annotate.labelstudio.labelconfig import (
    HAZARD_CONTROL,
    LabelConfig,
    asks_hazards,
    choice_code,
    parse_label_config,
)
from annotate.pipeline._resolve import resolve_round, round_judges, round_order
from annotate.stats.adjudication import expert_answers
from annotate.stats.agreement.votes import current_labels, reviewer_answers
from annotate.stats.ordering import item_key, review_order
from annotate.stats.scoring.strata import split_routed, stratum_key

if TYPE_CHECKING:
    from annotate.db import Store

__all__ = [
    "design_from_store",
    "hazard_questions_of",
    "judge_labels_frame",
    "labels_frame",
    "order_frame",
    "record_from_store",
]


def record_from_store(
    store: Store, round_names: list[str], *, label_config_sha: str | None = None, judges: bool = True
) -> AuditRecord:
    """The audit record of the rounds: labels.csv, judge_labels.csv and design.json as the store holds them.

    ``judges=False`` leaves out judge_labels.csv (None), which only the judge audit reads: a third
    of the rows at the study's scale (three judges on 16,000 reviewed responses). InputError when
    the rounds hold a benchmark, model or judge under a name the outputs reserve (``ALL``, stored
    before ingest refused it): its rows would be indistinguishable from the overall ones.
    """
    record = AuditRecord(
        labels=labels_frame(store, round_names),
        judge_labels=judge_labels_frame(store, round_names) if judges else None,
        design=design_from_store(store, round_names, label_config_sha=label_config_sha),
        order=order_frame(store, round_names),
    )
    judged = {j for r in record.design.rounds for j in r.routing_judges}
    judged |= set() if record.judge_labels is None else set(record.judge_labels.judge.unique())
    names = {"benchmark": record.labels.benchmark.unique(), "model": record.labels.model.unique(), "judge": judged}
    held = reserved_names_held(names)
    if held is not None:
        raise InputError(held)
    return record


def labels_frame(store: Store, round_names: list[str]) -> pd.DataFrame:
    """One row per routed response of the rounds (labels.csv). Annotator columns by pseudonym."""
    frames = []
    pseudonyms: list[str] = []
    reviewers_of: dict[str, list[str]] = {}
    team = store.annotators()
    experts = set(team.loc[team.role == "expert", "pseudonym"]) if len(team) else set()
    for name in round_names:
        row = resolve_round(store, name)
        rid = int(row["id"])
        reviewers = json.loads(row["annotators"])
        reviewers_of[name] = reviewers
        items = store.round_items(rid)
        annotations = store.annotations(rid)
        final = store.final_labels(rid)
        df = items.rename(columns={"stratum": "judge_stratum"})
        df["round"] = name
        routed = [split_routed(str(s)) for s in df.judge_stratum]  # (judge label, part of a round routed by hazard)
        df["stratum"] = [stratum_key(lab, w, part) for (lab, part), w in zip(routed, df.wave, strict=True)]
        df = df.merge(
            final[["round_item_id", "label", "status", "method", "adjudicator", "reason"]].rename(
                columns={"label": "final_label", "status": "final_status", "method": "final_method"}
            ),
            on="round_item_id",
            how="left",
        )
        df["final_status"] = df["final_status"].fillna("awaiting review")
        # The expert's answer each escalated item is decided on, exactly as `adjudicate` takes it
        # (checks of the majority excluded): verify re-derives the final labels from it.
        decided = _expert_rows(store, rid, annotations, experts) if experts else None
        answers = expert_answers(decided) if decided is not None else {}
        df["expert"] = df.round_item_id.map({i: who for i, (who, _) in answers.items()})
        df["expert_verdict"] = df.round_item_id.map({i: verdict for i, (_, verdict) in answers.items()})
        # Each reviewer's answer: a verdict, "skipped" (their vote is in, without a label) or empty.
        answers = reviewer_answers(annotations, df.round_item_id.astype(int).tolist(), reviewers)
        for p in reviewers:
            df[p] = answers[p].to_numpy()
            if p not in pseudonyms:
                pseudonyms.append(p)
        # How each of those answers (and the expert's) arrived (annotate.audit.channels).
        df["channels"] = round_channels(annotations, df.round_item_id.astype(int).tolist(), reviewers, decided)[0]
        # The hazard questions' answers of a round routed with --ask-hazards (empty for any other round).
        cells = _hazard_cells(store, row, reviewers, decided, df.round_item_id.astype(int).tolist())
        for column in HAZARD_ANSWER_COLUMNS:  # object: an empty cell stays None, as labels.csv reads back
            df[column] = pd.Series(
                cells[column] if cells is not None else [None] * len(df), index=df.index, dtype=object
            )
        frames.append(df)
    if not frames:
        return pd.DataFrame(columns=list(LABEL_COLUMNS))
    out = pd.concat(frames, ignore_index=True)
    for p in pseudonyms:
        if p not in out.columns:
            out[p] = None
    out["ds_label"] = None
    cols = list(LABEL_COLUMNS) + sorted(pseudonyms, key=lambda p: (p[0], int(p[1:]) if p[1:].isdigit() else 0))
    out = out[cols].sort_values(["round", "model", "benchmark", "prompt_id", "epoch"]).reset_index(drop=True)
    # Computed on the table as it is written, so that verify re-derives it from the file alike.
    out["ds_label"] = ds_labels(out, reviewers_of)
    return out


def hazard_questions_of(round_row: dict[str, Any]) -> LabelConfig | None:
    """The round's label config when it asks the hazard questions (``route --ask-hazards``), else None.

    Only a config holding them is parsed again: a round routed under an older, laxer check stays readable.
    """
    xml = str(round_row["label_config"])
    if HAZARD_CONTROL not in xml:
        return None
    config = parse_label_config(xml, source=f"round {round_row['name']} label config")
    return config if asks_hazards(config) else None


def _hazard_cells(
    store: Store, row: dict[str, Any], reviewers: list[str], decided: pd.DataFrame | None, item_ids: list[int]
) -> dict[str, list[str | None]] | None:
    """labels.csv's hazard answer cells of each item (``audit.hazard_answers``), in ``item_ids`` order: the
    reviewers' current answers (those their verdict is in), the expert's on the items they decide; None for a
    round whose page does not ask."""
    config = hazard_questions_of(row)
    if config is None:
        return None
    annotations = store.annotations(int(row["id"]), with_result=True)

    def answer(raw: str) -> tuple[list[str] | None, str | None]:
        fields, problems = config.validate_result(json.loads(raw))
        chosen = fields.get("hazard") if not problems else None
        # The choices are the round's own config's (validated): each names its code.
        codes_chosen = None if chosen is None else sorted({c for c in map(choice_code, chosen) if c is not None})
        return codes_chosen, (fields.get("severity") if not problems else None)

    hazards: dict[int, dict[str, list[str]]] = {}
    severity: dict[int, dict[str, str]] = {}
    current = current_labels(annotations, set(reviewers))
    for item, who, raw in zip(current.round_item_id, current.annotator, current.result, strict=True):
        chosen, level = answer(raw)
        if chosen is not None:
            hazards.setdefault(int(item), {})[str(who)] = chosen
        if level is not None:
            severity.setdefault(int(item), {})[str(who)] = level
    expert: dict[int, str | None] = {}
    if decided is not None and len(decided):
        results = annotations.set_index("annotation_id").result
        for item, aid in zip(decided.round_item_id, decided.annotation_id, strict=True):
            # The last row of an item wins, as its verdict does: the deciding expert's own answer or none.
            chosen, _level = answer(results.loc[aid])
            expert[int(item)] = None if chosen is None else expert_cell(chosen)
    out: dict[str, list[str | None]] = {c: [] for c in HAZARD_ANSWER_COLUMNS}
    for item in item_ids:
        answers = answers_cell(hazards.get(item, {}), reviewers)
        decided_by = expert.get(item)
        settled, tied = settled_cells(answers, decided_by)
        out["hazard_answers"].append(answers)
        out["severity_answers"].append(answers_cell(severity.get(item, {}), reviewers))
        out["expert_hazards"].append(decided_by)
        out["reviewed_hazard"].append(settled)
        out["hazard_tied"].append(tied)
    return out


def _expert_rows(store: Store, round_id: int, annotations: pd.DataFrame, experts: set[str]) -> pd.DataFrame:
    """The experts' current answers that decide items (their checks of a majority left out)."""
    labels = current_labels(annotations, experts)
    escal = store.escalations(round_id)
    checks = set(escal.loc[escal.kind == "check", "round_item_id"]) if len(escal) else set()
    return labels.loc[~labels.round_item_id.isin(checks)]


def round_channels(
    annotations: pd.DataFrame, item_ids: list[int], reviewers: list[str], expert_rows: pd.DataFrame | None
) -> tuple[list[str], dict[str, set[str]]]:
    """labels.csv's ``channels`` cell of each item (in ``item_ids`` order) and the sha256 of the files
    the answers came from, per channel: the reviewers' answers as labels.csv takes them, then the
    expert's answer the item is decided on (``expert_rows``, as :func:`_expert_rows`)."""
    if "channel" not in annotations:  # an empty frame
        annotations = annotations.assign(channel=None, source_sha256=None)
    known = annotations.assign(channel=annotations.channel.fillna(CHANNEL_UNRECORDED))
    channel = reviewer_answers(known, item_ids, reviewers, of="channel")
    sha = reviewer_answers(known, item_ids, reviewers, of="source_sha256")
    expert: dict[int, tuple[str, str, str | None]] = {}
    if expert_rows is not None and len(expert_rows):
        rows = known.set_index("annotation_id").loc[expert_rows.annotation_id]
        for i, who, ch, digest in zip(
            rows.round_item_id, rows.annotator, rows.channel, rows.source_sha256, strict=True
        ):
            expert[int(i)] = (str(who), str(ch), None if pd.isna(digest) else str(digest))  # the last row wins
    cells: list[str] = []
    files: dict[str, set[str]] = {}
    channels, digests = channel.to_numpy(dtype=object), sha.to_numpy(dtype=object)  # (N, J): one pass
    for k, item in enumerate(item_ids):
        row, row_sha = channels[k], digests[k]
        answers = [(p, row[j], row_sha[j]) for j, p in enumerate(reviewers) if row[j] is not None]
        if item in expert:
            answers.append(expert[item])
        for _, ch, digest in answers:
            if digest is not None:
                files.setdefault(ch, set()).add(digest)
        cells.append(channel_cell((who, ch) for who, ch, _ in answers))
    return cells, files


def order_frame(store: Store, round_names: list[str]) -> pd.DataFrame:
    """order.csv: each reviewer's queue of every round (``audit.order``), from the positions the tasks were sent at.

    Sorted by round, reviewer and position. The blocks are the round's order design's (none for a
    round routed before orders were recorded).
    """
    frames = []
    for name in round_names:
        row = resolve_round(store, name)
        rid = int(row["id"])
        reviewers = json.loads(row["annotators"])
        items = store.round_items(rid)
        design = round_order(row)
        block_of = None
        if design is not None and len(items):
            keys = [item_key(*k) for k in zip(items.model, items.benchmark, items.prompt_id, items.epoch, strict=True)]
            _, block = review_order(
                int(row["seed"]),
                str(reviewers[0]),
                keys,
                items.wave.to_numpy(),
                design,
                items.priority.astype(float).to_numpy(),
            )
            block_of = {int(i): int(b) for i, b in zip(items.round_item_id, block, strict=True) if b}
        projects = store.ls_projects(rid)
        by_reviewer = projects.set_index("pseudonym").id.to_dict() if len(projects) else {}
        keep = ["round_item_id", "model", "benchmark", "prompt_id", "epoch", "priority"]
        for who in reviewers:
            if who not in by_reviewer:
                continue
            tasks = store.ls_tasks(int(by_reviewer[who]))[["round_item_id", "position"]]
            tasks = tasks.merge(items[keep], on="round_item_id", how="inner")
            frames.append(order_rows(name, str(who), tasks, block_of))
    if not frames:
        return empty_order()
    return pd.concat(frames, ignore_index=True)[list(ORDER_COLUMNS)]


def judge_labels_frame(store: Store, round_names: list[str]) -> pd.DataFrame:
    """judge_labels.csv: every judge's verdict on each reviewed response of the rounds (see the module docstring).

    Sorted by round, model, benchmark, prompt_id, epoch and judge.
    """
    frames = []
    for name in round_names:
        rid = int(resolve_round(store, name)["id"])
        items = store.round_items(rid)[["round_item_id", "model", "benchmark", "prompt_id", "epoch"]]
        found = store.judge_verdicts(rid)
        df = items.merge(found, on="round_item_id", how="inner")
        df["round"] = name
        df["same_response"] = np.where(df["same_text"].astype(int) == 1, "yes", "no")
        frames.append(df)
    if not frames:
        return pd.DataFrame(columns=list(JUDGE_LABEL_COLUMNS))
    out = pd.concat(frames, ignore_index=True)[list(JUDGE_LABEL_COLUMNS)]
    return out.sort_values(["round", "model", "benchmark", "prompt_id", "epoch", "judge"]).reset_index(drop=True)


def exported_origin(text: str | None) -> dict | None:
    """An imported round's origin as an export may say it: the file's name (never its folder) and
    sha256, the design, the key and value maps and the judge whose labels made the strata. The raters'
    column names stay in the store: a column may be named after a person."""
    origin = json.loads(text) if text else None
    if not isinstance(origin, dict) or not origin.get("imported"):
        return None
    keep = ("sha256", "design", "key", "values", "strata_judge", "settled")
    out = {"imported": True, "file": PurePath(str(origin.get("file") or "")).name}
    return out | {k: origin[k] for k in keep if k in origin}


def design_from_store(store: Store, round_names: list[str], *, label_config_sha: str | None = None) -> Design:
    """design.json: rounds, seeds, waves, and per (model, benchmark, stratum) N_h and n_h; how the labels arrived."""
    rounds = []
    team = store.annotators()
    experts = set(team.loc[team.role == "expert", "pseudonym"]) if len(team) else set()
    for name in round_names:
        row = resolve_round(store, name)
        rid = int(row["id"])
        strata_from = store.round_strata_from(rid)
        # How the round's labels arrived, counted as labels.csv's channels column says it.
        reviewers = json.loads(row["annotators"])
        annotations = store.annotations(rid)
        item_ids = store.round_items(rid).round_item_id.astype(int).tolist()
        decided = _expert_rows(store, rid, annotations, experts) if experts else None
        cells, files = round_channels(annotations, item_ids, reviewers, decided)
        # How the reviewers were kept apart (columns.BLINDINGS): a round never sent to a server
        # (task files) is said to be blinded by instructions only.
        blinding = row.get("blinding") or BLINDING_INSTRUCTIONS
        rounds.append(
            RoundDesign(
                round=name,
                judge=str(row["judge"]),
                seed=int(row["seed"]),
                clear_per_cell=int(row["clear_per_cell"]),
                annotators=tuple(json.loads(row["annotators"])),
                strata=tuple(
                    Stratum(
                        str(s.model),
                        str(s.benchmark),
                        label,
                        int(s.wave),
                        int(s.population),
                        int(s.sample),
                        None if pd.isna(s.of_wave) else int(s.of_wave),
                        None if pd.isna(s.sampled_before) else int(s.sampled_before),
                        part,
                    )
                    for s in store.round_strata(rid).itertuples()
                    for label, part in [split_routed(str(s.stratum))]
                ),
                waves=tuple(
                    Wave(int(w.wave), int(w.max_response_id), str(w.routed_at))
                    for w in store.round_waves(rid).itertuples()
                ),
                label_config_sha256=row["label_config_sha"],
                strata_from=tuple(strata_from) if strata_from is not None else None,
                blinding=blinding,
                adjudication=json.loads(row["adjudication"]) if row.get("adjudication") else None,
                records_adjudication=True,
                judges=round_judges(row),
                ambiguous=row.get("ambiguous"),
                order=json.loads(row["task_order"]) if row.get("task_order") else None,
                records_order=True,
                origin=exported_origin(row.get("origin")),
                channels=channel_summary(cells, blinding, files),
            )
        )
    runs = store.ingest_runs()
    rubrics = sorted({r for r in runs.rubric}) if len(runs) else []
    return Design(
        rounds=tuple(rounds), rubrics=tuple(json.loads(r) for r in rubrics), label_config_sha256=label_config_sha
    )
