"""Everything derived in an export, as a pure function of its audit record and manifest settings.

An export's inputs are its audit record (``labels.csv``, ``judge_labels.csv``, ``design.json``:
:class:`~.record.AuditRecord`) and the manifest's settings and provenance (name, creation time,
tool version, sources); plus ``diagnostics.json`` when present, which is stored as computed (it
needs the response texts, which an export never holds). :func:`derive` turns them into the bytes
of every derived file of the export's schema (``audit.schema``): ``scores.csv``, ``scores.json``,
``ranking.csv``, ``flips.csv``, ``p_safer.csv``, ``p_tie.csv``, ``judges.csv``,
``judge_pairs.csv``, ``agreement.json`` and ``report.html``. ``export`` writes what it returns;
``verify`` calls it on the record it reads back and compares byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.audit.agreement import export_agreement
from annotate.audit.confound import POOLED_CORRECTION, confound_table
from annotate.audit.design import pooled_strata
from annotate.audit.grades import Grading, domain_grade_frame, grade_frame
from annotate.audit.hazard_answers import hazard_agreement_doc
from annotate.audit.judges import JUDGE_ESTIMAND, estimand_statement, judges_from_record
from annotate.audit.record import json_bytes
from annotate.audit.safecsv import frame_to_csv
from annotate.audit.scores import domain_scores_of, scores_of
from annotate.audit.state import describe, export_status, round_states
from annotate.columns import ALL, DEFAULT_JUDGE_ONLY, TREATMENTS
from annotate.report import render_report
from annotate.stats._common import jsonable
from annotate.stats.agreement.votes import Thresholds
from annotate.stats.judge_figures import certifier_figures
from annotate.stats.judge_models import NEW_MODEL_COLUMNS
from annotate.stats.judges import (
    EXPORT_METRIC_COLUMNS,
    EXPORT_PAIR_COLUMNS,
    INTERVAL_METHOD,
    PAIR_TEST,
    PROMPTS_METHOD,
)
from annotate.stats.shares import cell_shares

if TYPE_CHECKING:
    from annotate.audit.design import Design
    from annotate.audit.record import AuditRecord
    from annotate.audit.schema import ExportSchema

__all__ = ["Provenance", "Settings", "check_diagnostics", "derive"]

#: Upper bounds of the settings (50 and 100 times the defaults): a hostile manifest cannot make
#: verify run for hours or fill the memory with posterior draws.
MAX_DRAWS = 200_000
MAX_BOOT = 200_000


def _whole(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{what} must be a whole number from {low:,} to {high:,}; it is {value!r}.")
    return value


def _fraction(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{what} must be a number from 0 to 1; it is {value!r}.")
    return float(value)


@dataclass(frozen=True)
class Settings:
    """The settings every derived file depends on (recorded in the manifest as ``settings``)."""

    draws: int = 4000
    seed: int = 0
    min_reviewed: int = 10
    estimand: str = "fixed"
    confidence: float = 0.95
    n_boot: int = 2000
    thresholds: Thresholds = field(default_factory=Thresholds)
    #: A certification scheme's grading (since annotate-export/14; None: the export holds no grades.csv).
    grading: Grading | None = None

    def to_manifest(self) -> dict[str, Any]:
        """The manifest's ``settings`` object (``grading`` only when there is one)."""
        return {
            "draws": self.draws,
            "seed": self.seed,
            "min_reviewed": self.min_reviewed,
            "estimand": self.estimand,
            "confidence": self.confidence,
            "n_boot": self.n_boot,
            "agreement_thresholds": {
                "reliable": self.thresholds.reliable,
                "tentative": self.thresholds.tentative,
                "kappa_consensus": self.thresholds.kappa_consensus,
                "alpha_gain": self.thresholds.alpha_gain,
            },
        } | ({"grading": self.grading.to_manifest()} if self.grading is not None else {})

    @classmethod
    def from_manifest(cls, raw: Any, *, need_thresholds: bool = True, options: bool = False) -> Settings:
        """The settings of a manifest; ``ValueError`` names the first setting that is not usable.

        The bounds keep a hostile manifest from asking for a computation that never ends;
        ``export`` applies them to its options too (``options=True`` names them as options).
        """

        def name(key: str) -> str:
            if not options:
                return f"manifest.json: settings.{key}"
            if key.startswith("agreement_thresholds."):
                return f"annotate.toml: [agreement] {key.split('.', 1)[1]}"
            return "--" + key.replace("_", "-")

        if not isinstance(raw, dict):
            raise ValueError("manifest.json: settings must be an object.")
        estimand = raw.get("estimand", "fixed")
        if estimand not in ("fixed", "general"):
            raise ValueError(f"{name('estimand')} must be 'fixed' or 'general'; it is {estimand!r}.")
        confidence = raw.get("confidence", 0.95)
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.5 <= confidence < 1:
            raise ValueError(f"{name('confidence')} must be in [0.5, 1); it is {confidence!r}.")
        th = raw.get("agreement_thresholds")
        if th is None and not need_thresholds:
            thresholds = Thresholds()
        elif not isinstance(th, dict):
            raise ValueError(f"{name('agreement_thresholds')} must be an object.")
        else:
            thresholds = Thresholds(
                **{
                    k: _fraction(th.get(k), name(f"agreement_thresholds.{k}"))
                    for k in ("reliable", "tentative", "kappa_consensus", "alpha_gain")
                }
            )
        return cls(
            draws=_whole(raw.get("draws", 4000), name("draws"), 1, MAX_DRAWS),
            seed=_whole(raw.get("seed", 0), name("seed"), 0, 2**32 - 1),
            min_reviewed=_whole(raw.get("min_reviewed", 10), name("min_reviewed"), 0, 10**9),
            estimand=estimand,
            confidence=float(confidence),
            n_boot=_whole(raw.get("n_boot", 2000), name("n_boot"), 1, MAX_BOOT),
            thresholds=thresholds,
            grading=Grading.from_manifest(raw["grading"], name("grading")) if "grading" in raw else None,
        )


@dataclass(frozen=True)
class Provenance:
    """What the report shows from the manifest: the export's name, time, tool and sources."""

    name: str
    created_at: str
    tool_version: str
    schema: str
    sources: list[dict[str, Any]]

    @classmethod
    def from_manifest(cls, manifest: dict[str, Any]) -> Provenance:
        """The provenance fields of a manifest; ``ValueError`` names the first malformed one."""
        for key in ("name", "created_at", "tool_version", "schema"):
            if not isinstance(manifest.get(key), str):
                raise ValueError(f"manifest.json: {key} must be a string.")
        sources = manifest.get("sources")
        if not isinstance(sources, list):
            raise ValueError("manifest.json: sources must be a list.")
        for i, src in enumerate(sources):
            if not isinstance(src, dict) or not all(isinstance(src.get(k), str) for k in ("path", "sha256", "format")):
                raise ValueError(f"manifest.json: sources[{i}] must have text fields path, sha256 and format.")
            sha = src["sha256"]
            if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
                raise ValueError(f"manifest.json: sources[{i}].sha256 is not a sha256 (64 lower-case hex digits).")
        return cls(
            name=manifest["name"],
            created_at=manifest["created_at"],
            tool_version=manifest["tool_version"],
            schema=manifest["schema"],
            sources=[{k: s[k] for k in ("path", "sha256", "format")} for s in sources],
        )


def check_diagnostics(diag: Any, design: Design) -> list[str]:
    """Internal consistency of diagnostics.json (it cannot be re-derived without the response texts).

    Its judge is the design's one judge; its counts are whole and ordered (events <= responses);
    every odds ratio is positive and inside its interval; p-values and AUCs are in [0, 1].
    """
    if not isinstance(diag, dict):
        return ["diagnostics.json: the document must be an object."]
    problems: list[str] = []
    judges = sorted({j for r in design.rounds for j in r.routing_judges})
    if judges != [diag.get("judge")]:
        problems.append(f"diagnostics.json: judge {diag.get('judge')!r}; design.json's rounds are judged by {judges}.")
    n, events = diag.get("n_responses"), diag.get("n_events")
    counts_ok = isinstance(n, int) and isinstance(events, int) and not isinstance(n, bool) and 0 <= events <= n
    if not counts_ok:
        problems.append(
            f"diagnostics.json: n_events {events!r} and n_responses {n!r} must be counts, events <= responses."
        )
    for key in ("auc_features", "auc_fixed_effects", "auc_combined"):
        v = diag.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1):
            problems.append(f"diagnostics.json: {key} {v!r} is not in [0, 1].")
    table = diag.get("table")
    if not isinstance(table, list):
        return [*problems, "diagnostics.json: table must be a list."]
    for i, row in enumerate(table):
        if not isinstance(row, dict):
            problems.append(f"diagnostics.json: table[{i}] must be an object.")
            continue
        nums = {k: row.get(k) for k in ("odds_ratio", "ci_low", "ci_high", "p_holm")}
        if any(v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))) for v in nums.values()):
            problems.append(f"diagnostics.json: table[{i}] has a non-numeric odds ratio, interval or p-value.")
            continue
        o, lo, hi, p = nums["odds_ratio"], nums["ci_low"], nums["ci_high"], nums["p_holm"]
        if o is not None and (o <= 0 or (lo is not None and hi is not None and not lo <= o <= hi)):
            problems.append(f"diagnostics.json: table[{i}]: odds ratio {o!r} outside its interval [{lo!r}, {hi!r}].")
        if p is not None and not 0 <= p <= 1:
            problems.append(f"diagnostics.json: table[{i}]: p_holm {p!r} is not in [0, 1].")
    return problems


# -- the derivation --------------------------------------------------------------------------


def derive(
    record: AuditRecord,
    settings: Settings,
    provenance: Provenance,
    schema: ExportSchema,
    diagnostics: dict[str, Any] | None = None,
) -> dict[str, bytes]:
    """The bytes of every derived file of an export of ``schema``, from its record (pure and deterministic).

    A judged schema (``annotate-export/3`` on) adds ``judges.csv``, ``judge_pairs.csv`` and the
    report's judges section from ``record.judge_labels``; an ``annotate-export/2`` export has none.
    Raises ``ValueError`` when the design cannot be scored (e.g. two rounds over one cell).
    """
    labels, design = record.labels, record.design
    scored = scores_of(
        record,
        draws=settings.draws,
        seed=settings.seed,
        min_reviewed=settings.min_reviewed,
        estimand=settings.estimand,
        confidence=settings.confidence,
        share_component=schema.fiducial_component,
    )
    groups = export_agreement(
        labels,
        design,
        n_boot=settings.n_boot,
        seed=settings.seed,
        thresholds=settings.thresholds,
        ds_shared_only=schema.one_posterior,
    )
    p_safer = scored.p_safer.reset_index(names="model", allow_duplicates=True)  # a model may be named "model"
    p_tie = scored.p_tie.reset_index(names="model", allow_duplicates=True)
    out = {
        "scores.csv": frame_to_csv(scored.scores),
        "scores.json": json_bytes({"settings": scored.settings, "scores": scored.scores.to_dict("records")}),
        "ranking.csv": frame_to_csv(scored.ranking),
        "flips.csv": frame_to_csv(scored.flips),
        "p_safer.csv": frame_to_csv(p_safer),
        "p_tie.csv": frame_to_csv(p_tie),
        "agreement.json": json_bytes(groups),
    }
    audit = None
    if schema.judged:
        # Per benchmark and per model besides the pooled rows, on the scores' draws and seed.
        estimand = JUDGE_ESTIMAND[settings.estimand] if schema.one_posterior else "responses"
        audit = judges_from_record(
            record,
            by=("benchmark", "model"),
            draws=settings.draws,
            seed=settings.seed,
            confidence=settings.confidence,
            estimand=estimand,
        )
        if schema.one_posterior:
            # Since annotate-export/11: every figure, which estimand it is, each pair's test, the test's testability.
            audit = replace(audit, metrics=audit.metrics.assign(estimand=estimand))
        else:
            # The figures and columns of annotate-export/3 to /10.
            audit = replace(
                audit,
                metrics=audit.metrics[list(EXPORT_METRIC_COLUMNS)],
                pairs=audit.pairs[list(EXPORT_PAIR_COLUMNS)],
                models=audit.models[[c for c in audit.models.columns if c not in NEW_MODEL_COLUMNS]],
            )
        if schema.certifier_figures:  # since annotate-export/14: judges.csv and the report name them too
            audit = replace(audit, metrics=certifier_figures(audit.metrics))
        out["judges.csv"] = frame_to_csv(audit.metrics)
        out["judge_pairs.csv"] = frame_to_csv(audit.pairs)
        if schema.model_test:
            out["judge_models.csv"] = frame_to_csv(audit.models)
    graded = None
    if settings.grading is not None:
        if "grades.csv" not in schema.optional_derived:
            raise ValueError(
                f"a grading is recorded, but {schema.name} exports hold no grades (since annotate-export/14)"
            )
        graded = grade_frame(scored, settings.grading, confidence=settings.confidence)
        population = design.hazard_population() if schema.hazard_grades else None
        if population is not None:  # since annotate-export/16: a row per model and hazard
            by_hazard = domain_scores_of(
                record, "hazard", population, draws=settings.draws, seed=settings.seed,
                min_reviewed=settings.min_reviewed, estimand=settings.estimand, confidence=settings.confidence,
                share_component=schema.fiducial_component,
            )  # fmt: skip
            hazard_rows = domain_grade_frame(by_hazard, settings.grading, confidence=settings.confidence)
            graded = pd.concat([graded, hazard_rows], ignore_index=True) if len(hazard_rows) else graded
        if not schema.hazard_grades:  # grades.csv of annotate-export/14 and /15: no note
            graded = graded.drop(columns="note")
        out["grades.csv"] = frame_to_csv(graded)
    hazard_doc = None
    if schema.reviewer_hazards:  # since annotate-export/17: present exactly when some row carries an answer
        hazard_doc = hazard_agreement_doc(
            labels, n_boot=settings.n_boot, seed=settings.seed, thresholds=settings.thresholds,
            interval="joined" if schema.plain_words else "bootstrap",
        )  # fmt: skip
        if hazard_doc is not None:
            out["hazard_agreement.json"] = json_bytes(hazard_doc)
    data = _report_data(labels, design, scored, groups, provenance)
    if schema.answer_first:  # since annotate-export/18: older reports stay as they were, byte for byte
        data["answer_first"] = {"judge_only": DEFAULT_JUDGE_ONLY}
    if schema.plain_words:  # since annotate-export/19
        data["plain_words"] = True
    if hazard_doc is not None:
        data["hazard_agreement"] = hazard_doc
    if graded is not None and settings.grading is not None:
        data["grades"] = _grades_report(graded, settings.grading)
    if audit is not None:
        data["judges"] = _judges_report(audit, settings, schema)
        if schema.model_test:  # since annotate-export/9: older reports stay as they were
            rows, flips = confound_table(record, scored, audit)
            data["judges"] |= {
                "models": audit.models.to_dict("records"),
                "model_test": audit.settings.get("model_test"),
                "fdr": audit.settings.get("fdr"),
                "confound": {
                    "models": rows.to_dict("records"),
                    "order_changes": flips,
                    "pooled_correction": POOLED_CORRECTION,
                },
            }
    if diagnostics is not None:
        data["diagnostics"] = diagnostics
    if schema.round_state:  # only since annotate-export/8: older reports stay as they were
        states = round_states(labels, design)
        data["state"] = {"status": export_status(states), "lines": [describe(st) for st in states]}
        if schema.interim_headline:  # since annotate-export/14: what an interim headline counts
            data["state"]["with_vote"] = sum(st["responses"] - st["awaiting_review"] for st in states)
    out["report.html"] = render_report(jsonable(data)).encode("utf-8")
    return out


def _grades_report(graded: pd.DataFrame, grading: Grading) -> dict[str, Any]:
    """The report's ``grades``: the scheme, the references and one row per model (grades.csv's)."""
    scheme = grading.scheme
    return {
        "scheme": scheme.title,
        "rules": [r.said() for r in scheme.rules],
        "otherwise": scheme.otherwise,
        "grades": list(scheme.grades),
        "references": list(grading.references),
        "judge_only": grading.judge_only,
        "rows": graded.to_dict("records"),
    }


def _judges_report(audit: Any, settings: Settings, schema: ExportSchema) -> dict[str, Any]:
    """The report's ``judges`` (see :mod:`annotate.report`): the rows of judges.csv and judge_pairs.csv."""
    if not schema.one_posterior:
        return {
            "rows": audit.metrics.to_dict("records"),
            "pairs": audit.pairs.to_dict("records"),
            "notes": list(audit.notes),
            "method": f"{INTERVAL_METHOD}; {settings.draws} draws, {settings.confidence:.0%} intervals",
        }
    estimand = str(audit.settings.get("estimand"))
    method = INTERVAL_METHOD if estimand == "responses" else PROMPTS_METHOD
    return {
        "rows": audit.metrics.to_dict("records"),
        "pairs": audit.pairs.to_dict("records"),
        "notes": list(audit.notes),
        "method": f"{method}; {settings.draws} draws, {settings.confidence:.0%} intervals",
        "estimand": {"name": estimand, **estimand_statement(audit)},
        "pair_test": PAIR_TEST,
    }


def _cells(design: Design) -> pd.DataFrame:
    """The judge's label shares per model x benchmark, from the design's populations (waves summed)."""
    rows = [
        {
            "judge": r.judge_for(s.benchmark),
            "model": s.model,
            "benchmark": s.benchmark,
            "judge_label": s.judge_label,
            "n": s.population,
        }
        for r in design.rounds
        for s, _sample in pooled_strata(r.strata)
    ]
    return cell_shares(pd.DataFrame(rows, columns=["judge", "model", "benchmark", "judge_label", "n"]))


def _report_data(
    labels: pd.DataFrame,
    design: Design,
    scored: Any,
    groups: list[dict[str, Any]],
    prov: Provenance,
) -> dict[str, Any]:
    """The report's ``data`` (see :mod:`annotate.report`), from the export's own files only."""
    cells = _cells(design)
    ranking = scored.ranking[scored.ranking.benchmark == ALL]
    flips = scored.flips[scored.flips.benchmark == ALL]
    present = [t for t in TREATMENTS if t in set(scored.scores.treatment)]
    several = len(design.rounds) > 1
    return {
        "title": f"annotate audit: {prov.name}",
        "created_at": prov.created_at,
        "tool_version": prov.tool_version,
        "schema_version": prov.schema,
        "rounds": [
            {
                "round": r.round,
                "judge": r.judge,
                "seed": r.seed,
                "clear_per_cell": r.clear_per_cell,
                "annotators": list(r.annotators),
            }
            # Only for rounds routed with --strata-from: every other report stays as it was, byte for byte.
            | ({"strata_from": list(r.strata_from)} if r.strata_from else {})
            # Only in exports that record it (annotate-export/4 on): older reports stay as they were.
            | ({"blinding": r.blinding} if r.blinding else {})
            # How the labels arrived (annotate-export/13 on).
            | ({"channels": {c: dict(e) for c, e in r.channels.items()}} if r.channels is not None else {})
            for r in design.rounds
        ],
        "cells": cells[["model", "benchmark", "n_responses", "share_harmful", "share_safe", "share_ambiguous"]].to_dict(
            "records"
        ),
        "agreement": [{**g, "group": (f"{g['round']}: " if several else "") + g["group"]} for g in groups],
        "scores": scored.scores.to_dict("records"),
        "treatments": present,
        "reference_treatment": "corrected",
        "ranking": [
            {
                "treatment": r.treatment,
                "tau_b": r.tau_b,
                "rho": r.rho,
                "flips": r.flips,
                "credible_flips": r.credible_flips,
                "max_shift": r.max_rank_shift,
            }
            for r in ranking.itertuples()
        ],
        "flips": [
            {"treatment": r.treatment, "a": r.model_a, "b": r.model_b, "credible": bool(r.credible)}
            for r in flips.itertuples()
        ],
        "p_safer": {
            "models": list(scored.p_safer.index),
            "matrix": [
                [None if i == j else v for j, v in enumerate(row)]
                for i, row in enumerate(scored.p_safer.to_numpy().tolist())
            ],
        },
        "design": {
            "strata": [{**s.to_json(), "round": r.round} for r in design.rounds for s in r.strata],
            "label_config_sha256": design.label_config_sha256,
            "rubrics": [
                {"name": rb.get("format"), "summary": json.dumps(rb.get("verdicts"), sort_keys=True)[:400]}
                for rb in design.rubrics
                if isinstance(rb, dict)
            ],
        },
        "sources": prov.sources,
        "unresolved": int((~labels.final_label.isin(["harmful", "safe"])).sum()),
    }
