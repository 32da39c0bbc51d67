"""Audited score sets: `annotate export` writes them, `annotate verify` checks them.

An export is a folder ``exports/NAME/`` whose layout is a documented contract (README, "Export
layout"): ``scores.csv`` / ``scores.json``, ``ranking.csv``, ``flips.csv``, ``p_safer.csv``,
``labels.csv``, ``agreement.json``, ``design.json``, ``report.html`` and ``manifest.json``
(sha256 of every other file, tool and schema versions, the ingested sources, the command line,
the creation time, the scoring settings). Exports are immutable: an existing name is refused,
and the folder is written under a temporary name and renamed into place only when complete.

Nothing personal or secret goes in: annotators appear as pseudonyms, no e-mail, token, server
URL or prompt/response text is written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate import __version__
from annotate.columns import ALL, TREATMENTS
from annotate.errors import InputError, StateError
from annotate.fileio import sha256_bytes, sha256_file
from annotate.stats._common import jsonable

if TYPE_CHECKING:
    from annotate.config import Workspace
    from annotate.db import Store
    from annotate.pipeline.session import Session
    from annotate.stats.scoring.tables import ScoreOutput

EXPORT_SCHEMA = "annotate-export/1"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
REQUIRED_FILES = (
    "scores.csv",
    "scores.json",
    "ranking.csv",
    "flips.csv",
    "p_safer.csv",
    "labels.csv",
    "agreement.json",
    "design.json",
    "report.html",
)


def _dump_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(jsonable(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")


def _redacted_argv(argv: list[str]) -> list[str]:
    """The command line, with database passwords and token-like values masked."""
    out = []
    for arg in argv:
        arg = re.sub(r"(://[^:/@\s]+:)[^@/\s]+@", r"\1***@", arg)
        arg = re.sub(r"\b[0-9a-fA-F]{40}\b", "***", arg)
        out.append(arg)
    return out


@dataclass
class ExportOutcome:
    path: Path
    files: dict[str, str] = field(default_factory=dict)
    n_labels: int = 0
    report: Path | None = None


def export(
    s: Session,
    name: str,
    *,
    round_names: tuple[str, ...],
    draws: int = 4000,
    seed: int = 0,
    min_reviewed: int = 10,
    estimand: str = "fixed",
    n_boot: int = 2000,
    argv: list[str] | None = None,
) -> ExportOutcome:
    from annotate.pipeline._settings import thresholds_from_settings
    from annotate.pipeline.agreement import agreement_report
    from annotate.pipeline.audit import design, labels_frame
    from annotate.pipeline.score import rounds_to_score
    from annotate.report import render_report
    from annotate.stats.scoring.tables import score_tables

    ws, store = s.ws, s.store
    if not NAME_RE.match(name):
        raise InputError(
            f"export name {name!r}: use letters, digits, '.', '_' or '-' (no slashes), starting with a letter or digit."
        )
    target = ws.exports_dir / name
    if target.exists():
        raise StateError(f"{target} exists; exports are immutable. Choose another name.")
    rounds = rounds_to_score(store, round_names)
    labels = labels_frame(store, rounds)
    doc = design(store, rounds, label_config_sha=_label_config_sha(ws))
    try:
        scored = score_tables(labels, doc, draws=draws, seed=seed, min_reviewed=min_reviewed, estimand=estimand)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    thresholds = thresholds_from_settings(ws)
    groups: list[dict[str, Any]] = []
    for rnd in rounds:
        for by in ("stratum", "benchmark"):
            rep = agreement_report(store, round_name=rnd, by=by, n_boot=n_boot, seed=seed, thresholds=thresholds)
            for g in rep["groups"]:
                if by == "benchmark" and g["pooled"]:
                    continue  # the pooled groups are already in from the stratum pass
                groups.append({"round": rnd, "by": by, **g})
    sources = store.source_files()
    source_list = [{"path": r.path, "sha256": r.sha256, "format": r.format} for r in sources.itertuples()]

    ws.exports_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=ws.exports_dir))
    try:
        scored.scores.to_csv(tmp / "scores.csv", index=False)
        _dump_json(tmp / "scores.json", {"settings": scored.settings, "scores": scored.scores.to_dict("records")})
        scored.ranking.to_csv(tmp / "ranking.csv", index=False)
        scored.flips.to_csv(tmp / "flips.csv", index=False)
        scored.p_safer.to_csv(tmp / "p_safer.csv", index=True, index_label="model")
        labels.to_csv(tmp / "labels.csv", index=False)
        _dump_json(tmp / "agreement.json", groups)
        _dump_json(tmp / "design.json", doc)
        judges = sorted({r["judge"] for r in doc["rounds"]})
        diagnosis = store.latest_diagnosis(judges[0]) if len(judges) == 1 else None
        if diagnosis is not None:
            _dump_json(tmp / "diagnostics.json", diagnosis)
        created = datetime.now(UTC).isoformat(timespec="seconds")
        report_data = _report_data(store, rounds, name, created, scored, groups, doc, source_list, labels)
        if diagnosis is not None:
            report_data["diagnostics"] = diagnosis
        (tmp / "report.html").write_text(render_report(jsonable(report_data)), encoding="utf-8")
        files = {p.name: sha256_file(p) for p in sorted(tmp.iterdir()) if p.is_file()}
        from annotate.db.store import SCHEMA_VERSION

        manifest = {
            "schema": EXPORT_SCHEMA,
            "name": name,
            "tool": "annotate",
            "tool_version": __version__,
            "store_schema_version": SCHEMA_VERSION,
            "created_at": created,
            "command": _redacted_argv(argv if argv is not None else sys.argv),
            "rounds": rounds,
            "settings": {**scored.settings, "n_boot": n_boot},
            "files": files,
            "sources": source_list,
        }
        _dump_json(tmp / "manifest.json", manifest)
        for p in tmp.iterdir():  # make the content durable before it becomes visible
            with open(p, "rb") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o755)
        tmp.rename(target)  # atomic: the export appears complete or not at all
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportOutcome(path=target, files=files, n_labels=len(labels), report=target / "report.html")


def _label_config_sha(ws: Workspace) -> str | None:
    try:
        return sha256_bytes(ws.label_config_path.read_bytes())
    except FileNotFoundError:
        return None


def _report_data(
    store: Store,
    rounds: list[str],
    name: str,
    created: str,
    scored: ScoreOutput,
    groups: list[dict[str, Any]],
    doc: dict[str, Any],
    sources: list[dict[str, Any]],
    labels: pd.DataFrame,
) -> dict[str, Any]:
    from annotate.stats.shares import cell_shares

    judges = {r["judge"] for r in doc["rounds"]}
    counts = store.label_counts()
    counts = counts[counts.judge.isin(judges)]
    cells = cell_shares(counts)
    ranking = scored.ranking[scored.ranking.benchmark == ALL]
    flips = scored.flips[scored.flips.benchmark == ALL]
    present = [t for t in TREATMENTS if t in set(scored.scores.treatment)]
    return {
        "title": f"annotate audit: {name}",
        "created_at": created,
        "tool_version": __version__,
        "schema_version": EXPORT_SCHEMA,
        "rounds": [
            {k: r[k] for k in ("round", "judge", "seed", "clear_per_cell", "annotators")} for r in doc["rounds"]
        ],
        "cells": cells[["model", "benchmark", "n_responses", "share_harmful", "share_safe", "share_ambiguous"]].to_dict(
            "records"
        ),
        "agreement": [{**g, "group": (f"{g['round']}: " if len(rounds) > 1 else "") + g["group"]} for g in groups],
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
            "strata": [{**s, "round": r["round"]} for r in doc["rounds"] for s in r["strata"]],
            "label_config_sha256": doc.get("label_config_sha256"),
            "rubrics": [
                {"name": rb.get("format"), "summary": json.dumps(rb.get("verdicts"), sort_keys=True)[:400]}
                for rb in doc.get("rubrics", [])
            ],
        },
        "sources": sources,
        "unresolved": int((~labels.final_label.isin(["harmful", "safe"])).sum()),
    }


# -- verify ----------------------------------------------------------------------------------


@dataclass
class VerifyOutcome:
    path: Path
    problems: list[str] = field(default_factory=list)
    checked_files: int = 0
    rederived_rows: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(path: Path, *, tolerance: float = 1e-9) -> VerifyOutcome:
    """Check every hash against the manifest and re-derive scores.csv from labels.csv + design.json."""
    path = Path(path)
    out = VerifyOutcome(path=path)
    manifest_path = path / "manifest.json"
    if not manifest_path.is_file():
        raise InputError(f"{path}: no manifest.json here; is this an annotate export?")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        files: dict[str, str] = manifest["files"]
    except (ValueError, KeyError, TypeError) as exc:
        out.problems.append(f"manifest.json is unreadable ({exc})")
        return out
    present = {p.name for p in path.iterdir() if p.is_file()} - {"manifest.json"}
    for name in sorted(set(files) - present):
        out.problems.append(f"missing file: {name}")
    for name in sorted(present - set(files)):
        out.problems.append(f"extra file not in the manifest: {name}")
    for p in path.iterdir():
        if p.is_dir():
            out.problems.append(f"extra folder not in the manifest: {p.name}/")
    for name in sorted(set(files) & present):
        got = sha256_file(path / name)
        out.checked_files += 1
        if got != files[name]:
            out.problems.append(f"changed: {name} (sha256 {got[:16]}..., manifest says {files[name][:16]}...)")
    # Re-derive the scores from the export's own tables.
    try:
        from annotate.stats.scoring.tables import score_tables

        labels = pd.read_csv(
            path / "labels.csv",
            dtype={"prompt_id": str, "model": str, "benchmark": str, "stratum": str, "round": str},
            keep_default_na=False,
            na_values=[""],
        )
        doc = json.loads((path / "design.json").read_text(encoding="utf-8"))
        settings = manifest.get("settings", {})
        again = score_tables(
            labels,
            doc,
            draws=int(settings.get("draws", 4000)),
            seed=int(settings.get("seed", 0)),
            min_reviewed=int(settings.get("min_reviewed", 10)),
            estimand=settings.get("estimand", "fixed"),
            confidence=float(settings.get("confidence", 0.95)),
        ).scores
        stored = pd.read_csv(
            path / "scores.csv", dtype={"model": str, "benchmark": str}, keep_default_na=False, na_values=[""]
        )
    except FileNotFoundError as exc:
        out.problems.append(f"cannot re-derive the scores: {exc.filename} is missing")
        return out
    except (ValueError, KeyError) as exc:
        out.problems.append(f"cannot re-derive the scores from labels.csv and design.json: {exc}")
        return out
    key = ["model", "benchmark", "treatment"]
    merged = stored.merge(again, on=key, how="outer", suffixes=("", "_rederived"), indicator=True)
    for r in merged.loc[merged._merge != "both"].itertuples():
        where = "only in scores.csv" if r._merge == "left_only" else "missing from scores.csv"
        out.problems.append(f"scores row {r.model} x {r.benchmark} x {r.treatment}: {where}")
    both = merged.loc[merged._merge == "both"]
    out.rederived_rows = len(both)
    for col in ("estimate", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "n_responses", "n_reviewed"):
        a = pd.to_numeric(both[col], errors="coerce")
        b = pd.to_numeric(both[f"{col}_rederived"], errors="coerce")
        bad = ~(((a - b).abs() <= tolerance * (1 + b.abs())) | (a.isna() & b.isna()))
        for r in both.loc[bad].itertuples():
            out.problems.append(
                f"scores.csv {r.model} x {r.benchmark} x {r.treatment}: {col} is "
                f"{getattr(r, col)!r}, labels.csv and design.json give {getattr(r, col + '_rederived')!r}"
            )
    flag_bad = both.flag.fillna("") != both.flag_rederived.fillna("")
    for r in both.loc[flag_bad].itertuples():
        out.problems.append(
            f"scores.csv {r.model} x {r.benchmark} x {r.treatment}: flag {r.flag!r} != {r.flag_rederived!r}"
        )
    return out
