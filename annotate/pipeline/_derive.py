"""Everything derived in an export, as a pure function of its inputs (``export`` and ``verify`` share it).

An export's inputs are ``labels.csv`` (one row per reviewed response, with every annotator's
verdict and the gold label), ``judge_labels.csv`` (every judge's verdict on each reviewed
response; since ``annotate-export/3``), ``design.json`` (the rounds and N_h / n_h per cell and
stratum) and the manifest's settings and provenance (name, creation time, tool version,
sources); plus ``diagnostics.json`` when present, which is stored as computed (it needs the
response texts, which an export never holds). :func:`derive` turns them into the bytes of every
other file: ``scores.csv``, ``scores.json``, ``ranking.csv``, ``flips.csv``, ``p_safer.csv``,
``p_tie.csv``, ``judges.csv``, ``judge_pairs.csv``, ``agreement.json`` and ``report.html``.
``export`` writes what it returns for the inputs as written; ``verify`` calls it on the inputs it
finds and compares byte for byte. An ``annotate-export/2`` export has no judge files: given no
``judge_labels.csv``, :func:`derive` gives exactly the files (and the report) such an export holds.

:func:`check_design`, :func:`check_labels` and :func:`check_judge_labels` are the checks of the
inputs themselves: the design is well formed, labels.csv's rows are the design's samples, its
computed column (``ds_label``) is what its annotator columns give, and judge_labels.csv holds
verdicts on labels.csv's responses only, the routing judge's as labels.csv has them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from annotate.columns import ALL, BLINDINGS, HUMAN_LABELS, JUDGE_LABELS, TREATMENTS, VERDICTS
from annotate.pipeline._spreadsheet import CsvProblem, frame_to_csv, parse_csv
from annotate.stats._common import jsonable
from annotate.stats.agreement.votes import Thresholds

__all__ = [
    "CSV_FILES",
    "CsvProblem",
    "DERIVED_FILES",
    "EXPORT_SCHEMA",
    "JSON_FILES",
    "Provenance",
    "Settings",
    "check_design",
    "check_diagnostics",
    "check_judge_labels",
    "check_labels",
    "derive",
    "derived_files",
    "input_files",
    "json_bytes",
    "read_judge_labels",
    "read_labels",
]

EXPORT_SCHEMA = "annotate-export/3"
#: The schema before judge_labels.csv, judges.csv and judge_pairs.csv (still verified in full).
SCHEMA_2 = "annotate-export/2"
#: The derived files of the judge audit (annotate-export/3).
JUDGE_FILES = ("judges.csv", "judge_pairs.csv")
#: The derived files, in the order verify reports them.
CSV_FILES = ("scores.csv", "ranking.csv", "flips.csv", "p_safer.csv", "p_tie.csv", *JUDGE_FILES)
JSON_FILES = ("scores.json", "agreement.json")
DERIVED_FILES = (*CSV_FILES, *JSON_FILES, "report.html")
#: The inputs, in the order verify reports them.
INPUT_FILES = ("labels.csv", "judge_labels.csv", "design.json")


def input_files(schema: str) -> tuple[str, ...]:
    """The input files of an export of ``schema`` (annotate-export/2 has no judge_labels.csv)."""
    return tuple(f for f in INPUT_FILES if schema != SCHEMA_2 or f != "judge_labels.csv")


def derived_files(schema: str) -> tuple[str, ...]:
    """The derived files of an export of ``schema`` (annotate-export/2 has no judge files)."""
    return tuple(f for f in DERIVED_FILES if schema != SCHEMA_2 or f not in JUDGE_FILES)


#: How many problems of one kind are listed before the rest are only counted.
MAX_LISTED = 20
#: Upper bounds of the settings (50 and 100 times the defaults): a hostile manifest cannot make
#: verify run for hours or fill the memory with posterior draws.
MAX_DRAWS = 200_000
MAX_BOOT = 200_000


def json_bytes(data: Any) -> bytes:
    """The one JSON layout of an export: indented, UTF-8, no NaN (None instead), newline at the end."""
    text = json.dumps(jsonable(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return text.encode("utf-8")


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

    def to_manifest(self) -> dict[str, Any]:
        """The manifest's ``settings`` object."""
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
        }

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


# -- the inputs ------------------------------------------------------------------------------


def read_labels(data: bytes, *, restore: bool = True) -> tuple[pd.DataFrame, list[int]]:
    """labels.csv as the computations take it, and the line each row starts on.

    Every cell is text as written (spreadsheet neutralising undone unless ``restore`` is False,
    for exports older than it); an empty cell is None. Raises :class:`CsvProblem`.
    """
    table = parse_csv(data, "labels.csv", restore_cells=restore)
    frame = table.frame()
    frame = frame.where(frame != "", None)
    return frame, table.lines


def read_judge_labels(data: bytes) -> tuple[pd.DataFrame, list[int]]:
    """judge_labels.csv as the computations take it (text cells, empty as None), and each row's line.

    Raises :class:`CsvProblem`.
    """
    table = parse_csv(data, "judge_labels.csv")
    frame = table.frame()
    frame = frame.where(frame != "", None)
    return frame, table.lines


def _problem_list(problems: list[str], found: list[str], what: str) -> None:
    problems.extend(found[:MAX_LISTED])
    if len(found) > MAX_LISTED:
        problems.append(f"... and {len(found) - MAX_LISTED} more {what}")


def check_design(doc: Any) -> list[str]:
    """Problems of design.json's structure (empty when the design is well formed).

    Every round needs a name, a judge, whole-number seed and clear_per_cell, a list of annotator
    pseudonyms and strata whose judge label, wave, stratum key, population N_h and sample n_h
    (0 <= n_h <= N_h) are consistent.
    """
    from annotate.stats.scoring.strata import stratum_key

    if not isinstance(doc, dict) or not isinstance(doc.get("rounds"), list):
        return ["design.json: the document must be an object with a list of rounds."]
    problems: list[str] = []
    if not isinstance(doc.get("rubrics", []), list):
        problems.append("design.json: rubrics must be a list.")
    names: set[str] = set()
    for i, rnd in enumerate(doc["rounds"]):
        where = f"design.json: rounds[{i}]"
        if not isinstance(rnd, dict):
            problems.append(f"{where} must be an object.")
            continue
        if not isinstance(rnd.get("round"), str) or not isinstance(rnd.get("judge"), str):
            problems.append(f"{where} needs text fields round and judge.")
            continue
        if rnd["round"] in names:
            problems.append(f"{where}: round {rnd['round']!r} appears twice.")
        names.add(rnd["round"])
        for field_name in ("seed", "clear_per_cell"):
            if isinstance(rnd.get(field_name), bool) or not isinstance(rnd.get(field_name), int):
                problems.append(f"{where}.{field_name} must be a whole number.")
        if "blinding" in rnd and rnd["blinding"] not in BLINDINGS:
            problems.append(f"{where}.blinding must be one of {', '.join(map(repr, BLINDINGS))}.")
        annotators = rnd.get("annotators")
        if not isinstance(annotators, list) or not all(isinstance(a, str) and a for a in annotators):
            problems.append(f"{where}.annotators must be a list of pseudonyms.")
        elif len(set(annotators)) != len(annotators):
            problems.append(f"{where}.annotators lists a pseudonym twice.")
        strata = rnd.get("strata")
        if not isinstance(strata, list):
            problems.append(f"{where}.strata must be a list.")
            continue
        found: list[str] = []
        seen: set[tuple[str, str, str]] = set()
        for j, s in enumerate(strata):
            at = f"{where}.strata[{j}]"
            if not isinstance(s, dict):
                found.append(f"{at} must be an object.")
                continue
            if not all(isinstance(s.get(k), str) for k in ("model", "benchmark", "judge_label", "stratum")):
                found.append(f"{at} needs text fields model, benchmark, judge_label and stratum.")
                continue
            if any(
                isinstance(s.get(k), bool) or not isinstance(s.get(k), int) for k in ("wave", "population", "sample")
            ):
                found.append(f"{at}: wave, population and sample must be whole numbers.")
                continue
            wave: int = s["wave"]
            if s["judge_label"] not in JUDGE_LABELS:
                found.append(f"{at}.judge_label {s['judge_label']!r} is not one of {', '.join(JUDGE_LABELS)}.")
            if wave < 1 or s["stratum"] != stratum_key(s["judge_label"], wave):
                found.append(f"{at}.stratum {s['stratum']!r} does not match its judge label and wave.")
            if not 0 <= s["sample"] <= s["population"]:
                found.append(f"{at}: sample {s['sample']} is not between 0 and its population {s['population']}.")
            key = (s["model"], s["benchmark"], s["stratum"])
            if key in seen:
                found.append(f"{at}: {key[0]} x {key[1]} x {key[2]} appears twice.")
            seen.add(key)
        _problem_list(problems, found, "problems in the strata")
    return problems


def check_labels(labels: pd.DataFrame, lines: list[int], doc: dict[str, Any]) -> list[str]:
    """Problems of labels.csv against itself and design.json (empty when consistent).

    Checks: the documented columns and exactly one column per annotator of the design; every
    row in a stratum of its round's design, and each stratum holding n_h rows; ``judge`` the
    round's judge; ``inclusion_prob`` = n_h / N_h; verdicts, final labels and statuses from their
    vocabularies, a final label exactly when the status is ``resolved``; and ``ds_label`` equal
    to the Dawid-Skene labels re-derived from the annotator columns.
    """
    from annotate.pipeline.audit import EXPORT_LABEL_COLUMNS, ds_labels

    problems: list[str] = []
    missing = [c for c in EXPORT_LABEL_COLUMNS if c not in labels.columns]
    if missing:
        return [f"labels.csv: the column(s) {', '.join(missing)} are missing."]
    annotators_by_round = {r["round"]: list(r["annotators"]) for r in doc["rounds"]}
    expected = sorted({a for names in annotators_by_round.values() for a in names})
    have = [c for c in labels.columns if c not in EXPORT_LABEL_COLUMNS]
    if sorted(have) != expected:
        problems.append(
            f"labels.csv: annotator columns {', '.join(have) or '(none)'}; design.json's rounds have "
            f"{', '.join(expected) or '(none)'}."
        )
        return problems

    def line(i: int) -> str:
        return f"labels.csv:{lines[i]}" if i < len(lines) else "labels.csv"

    strata = {(r["round"], s["model"], s["benchmark"], s["stratum"]): s for r in doc["rounds"] for s in r["strata"]}
    judges = {r["round"]: r["judge"] for r in doc["rounds"]}
    found: list[str] = []
    counts: dict[tuple[str, str, str, str], int] = {}
    for i, rec in enumerate(labels.to_dict("records")):
        key = (rec["round"], rec["model"], rec["benchmark"], rec["stratum"])
        s = strata.get(key)
        if s is None:
            found.append(f"{line(i)}: {key[1]} x {key[2]}, stratum {key[3]} of round {key[0]} is not in design.json.")
            continue
        counts[key] = counts.get(key, 0) + 1
        if rec["judge"] != judges[key[0]]:
            found.append(f"{line(i)}: judge {rec['judge']!r}; round {key[0]} was routed for {judges[key[0]]!r}.")
        try:
            prob = float(rec["inclusion_prob"])
        except (TypeError, ValueError):
            prob = math.nan
        want = s["sample"] / s["population"] if s["population"] else math.nan
        if not math.isclose(prob, want, rel_tol=1e-9, abs_tol=1e-12):
            found.append(f"{line(i)}: inclusion_prob {rec['inclusion_prob']!r}; design.json gives n_h/N_h = {want!r}.")
        if rec["final_label"] not in (None, *HUMAN_LABELS[:2]):
            found.append(f"{line(i)}: final_label {rec['final_label']!r} is not harmful, safe or empty.")
        elif (rec["final_label"] is not None) != (rec["final_status"] == "resolved"):
            found.append(
                f"{line(i)}: final_status {rec['final_status']!r} with final_label {rec['final_label']!r} "
                "(a resolved item has a final label, any other has none)."
            )
        for a in annotators_by_round.get(key[0], []):
            v = rec[a]
            if v is not None and v not in VERDICTS:
                found.append(f"{line(i)}: {a}'s verdict {v!r} is not one of {', '.join(VERDICTS)}.")
    _problem_list(problems, found, "rows that do not fit the design")
    short = [
        f"labels.csv: {k[1]} x {k[2]}, stratum {k[3]} of round {k[0]} has {counts.get(k, 0)} rows; "
        f"design.json samples n_h = {s['sample']}."
        for k, s in strata.items()
        if counts.get(k, 0) != s["sample"]
    ]
    _problem_list(problems, short, "strata whose rows do not match their sample")
    if problems:
        return problems
    again = ds_labels(labels, annotators_by_round)
    differ = [
        f"{line(i)}: ds_label {a!r}; the annotator columns give {b!r} (Dawid-Skene re-derived)."
        for i, (a, b) in enumerate(zip(labels["ds_label"], again, strict=True))
        if a != b
    ]
    _problem_list(problems, differ, "ds_label differences")
    return problems


def check_judge_labels(judge_labels: pd.DataFrame, lines: list[int], labels: pd.DataFrame) -> list[str]:
    """Problems of judge_labels.csv against itself and labels.csv (empty when consistent).

    Checks: exactly the documented columns; every row on a reviewed response of labels.csv
    (round, model, benchmark, prompt_id, epoch), a judge named, a judge label from the
    vocabulary, ``same_response`` ``yes`` or ``no``, one row per response and judge; and every
    response of labels.csv with its routing judge's row, ``same_response`` ``yes``, with the
    verdict and label labels.csv gives.
    """
    from annotate.pipeline.audit import JUDGE_LABEL_COLUMNS

    if list(judge_labels.columns) != list(JUDGE_LABEL_COLUMNS):
        return [
            f"judge_labels.csv: the columns are {', '.join(map(str, judge_labels.columns)) or '(none)'}; an export "
            f"has {', '.join(JUDGE_LABEL_COLUMNS)}."
        ]

    def line(i: int) -> str:
        return f"judge_labels.csv:{lines[i]}" if i < len(lines) else "judge_labels.csv"

    key_cols = ["round", "model", "benchmark", "prompt_id", "epoch"]
    reviewed = {
        tuple(r): (j, v, a)
        for r, j, v, a in zip(
            labels[key_cols].itertuples(index=False, name=None),
            labels["judge"],
            labels["judge_verdict"],
            labels["judge_label"],
            strict=True,
        )
    }
    found: list[str] = []
    seen: dict[tuple[Any, ...], int] = {}
    routed: set[tuple[Any, ...]] = set()
    for i, rec in enumerate(judge_labels.to_dict("records")):
        key = tuple(rec[c] for c in key_cols)
        what = f"{key[1]} x {key[2]}, prompt {key[3]!r}, epoch {key[4]} of round {key[0]}"
        if key not in reviewed:
            found.append(f"{line(i)}: {what} is not a reviewed response of labels.csv.")
            continue
        if not rec["judge"]:
            found.append(f"{line(i)}: the judge is empty.")
            continue
        if rec["judge_label"] not in JUDGE_LABELS:
            found.append(f"{line(i)}: judge_label {rec['judge_label']!r} is not one of {', '.join(JUDGE_LABELS)}.")
        if rec["same_response"] not in ("yes", "no"):
            found.append(f"{line(i)}: same_response {rec['same_response']!r} is not yes or no.")
        if (key, rec["judge"]) in seen:
            first = line(seen[(key, rec["judge"])])
            found.append(f"{line(i)}: judge {rec['judge']!r} on {what} already has a row ({first}).")
        seen[(key, rec["judge"])] = i
        judge, verdict, label = reviewed[key]
        if rec["judge"] == judge:
            routed.add(key)
            if rec["same_response"] != "yes" or rec["judge_verdict"] != verdict or rec["judge_label"] != label:
                found.append(
                    f"{line(i)}: the routing judge {judge!r} on {what}: verdict {rec['judge_verdict']!r}, label "
                    f"{rec['judge_label']!r}, same_response {rec['same_response']!r}; labels.csv gives {verdict!r}, "
                    f"{label!r} on the reviewed response itself."
                )
    missing = [
        f"judge_labels.csv: no row of the routing judge {reviewed[k][0]!r} on {k[1]} x {k[2]}, prompt {k[3]!r}, "
        f"epoch {k[4]} of round {k[0]} (labels.csv has it)."
        for k in reviewed
        if k not in routed
    ]
    problems: list[str] = []
    _problem_list(problems, found, "rows of judge_labels.csv that do not fit labels.csv")
    _problem_list(problems, missing, "reviewed responses without their routing judge's row")
    return problems


def check_diagnostics(diag: Any, doc: dict[str, Any]) -> list[str]:
    """Internal consistency of diagnostics.json (it cannot be re-derived without the response texts).

    Its judge is the design's one judge; its counts are whole and ordered (events <= responses);
    every odds ratio is positive and inside its interval; p-values and AUCs are in [0, 1].
    """
    if not isinstance(diag, dict):
        return ["diagnostics.json: the document must be an object."]
    problems: list[str] = []
    judges = sorted({r["judge"] for r in doc["rounds"]})
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
    labels: pd.DataFrame,
    doc: dict[str, Any],
    settings: Settings,
    provenance: Provenance,
    diagnostics: dict[str, Any] | None = None,
    judge_labels: pd.DataFrame | None = None,
) -> dict[str, bytes]:
    """The bytes of every derived file of an export, from its inputs (pure and deterministic).

    ``judge_labels`` (judge_labels.csv) adds ``judges.csv``, ``judge_pairs.csv`` and the report's
    judges section (annotate-export/3); without it the files are those of an annotate-export/2
    export. Raises ``ValueError`` when the design cannot be scored (e.g. two rounds over one cell).
    """
    from annotate.pipeline.agreement import export_agreement
    from annotate.pipeline.judges import judges_from_tables
    from annotate.report import render_report
    from annotate.stats.scoring.tables import score_tables

    scored = score_tables(
        labels,
        doc,
        draws=settings.draws,
        seed=settings.seed,
        min_reviewed=settings.min_reviewed,
        estimand=settings.estimand,
        confidence=settings.confidence,
    )
    groups = export_agreement(labels, doc, n_boot=settings.n_boot, seed=settings.seed, thresholds=settings.thresholds)
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
    if judge_labels is not None:
        # Per benchmark and per model besides the pooled rows, on the scores' draws and seed.
        audit = judges_from_tables(
            labels,
            judge_labels,
            doc,
            by=("benchmark", "model"),
            draws=settings.draws,
            seed=settings.seed,
            confidence=settings.confidence,
        )
        out["judges.csv"] = frame_to_csv(audit.metrics)
        out["judge_pairs.csv"] = frame_to_csv(audit.pairs)
    data = _report_data(labels, doc, scored, groups, provenance)
    if audit is not None:
        data["judges"] = _judges_report(audit, settings)
    if diagnostics is not None:
        data["diagnostics"] = diagnostics
    out["report.html"] = render_report(jsonable(data)).encode("utf-8")
    return out


def _judges_report(audit: Any, settings: Settings) -> dict[str, Any]:
    """The report's ``judges`` (see :mod:`annotate.report`): the rows of judges.csv and judge_pairs.csv."""
    from annotate.stats.judges import INTERVAL_METHOD

    return {
        "rows": audit.metrics.to_dict("records"),
        "pairs": audit.pairs.to_dict("records"),
        "notes": list(audit.notes),
        "method": f"{INTERVAL_METHOD}; {settings.draws} draws, {settings.confidence:.0%} intervals",
    }


def _cells(doc: dict[str, Any]) -> pd.DataFrame:
    """The judge's label shares per model x benchmark, from the design's populations (waves summed)."""
    from annotate.stats.shares import cell_shares

    rows = [
        {
            "judge": r["judge"],
            "model": s["model"],
            "benchmark": s["benchmark"],
            "judge_label": s["judge_label"],
            "n": s["population"],
        }
        for r in doc["rounds"]
        for s in r["strata"]
    ]
    return cell_shares(pd.DataFrame(rows, columns=["judge", "model", "benchmark", "judge_label", "n"]))


def _report_data(
    labels: pd.DataFrame,
    doc: dict[str, Any],
    scored: Any,
    groups: list[dict[str, Any]],
    prov: Provenance,
) -> dict[str, Any]:
    """The report's ``data`` (see :mod:`annotate.report`), from the export's own files only."""
    cells = _cells(doc)
    ranking = scored.ranking[scored.ranking.benchmark == ALL]
    flips = scored.flips[scored.flips.benchmark == ALL]
    present = [t for t in TREATMENTS if t in set(scored.scores.treatment)]
    several = len(doc["rounds"]) > 1
    return {
        "title": f"annotate audit: {prov.name}",
        "created_at": prov.created_at,
        "tool_version": prov.tool_version,
        "schema_version": prov.schema,
        "rounds": [
            {k: r[k] for k in ("round", "judge", "seed", "clear_per_cell", "annotators")}
            # Only for rounds routed with --strata-from: every other report stays as it was, byte for byte.
            | ({"strata_from": r["strata_from"]} if r.get("strata_from") else {})
            # Only in exports that record it (schema 8 stores on): older reports stay as they were.
            | ({"blinding": r["blinding"]} if r.get("blinding") else {})
            for r in doc["rounds"]
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
            "strata": [{**s, "round": r["round"]} for r in doc["rounds"] for s in r["strata"]],
            "label_config_sha256": doc.get("label_config_sha256"),
            "rubrics": [
                {"name": rb.get("format"), "summary": json.dumps(rb.get("verdicts"), sort_keys=True)[:400]}
                for rb in doc.get("rubrics", [])
                if isinstance(rb, dict)
            ],
        },
        "sources": prov.sources,
        "unresolved": int((~labels.final_label.isin(["harmful", "safe"])).sum()),
    }
