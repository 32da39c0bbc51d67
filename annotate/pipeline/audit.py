"""The two audit tables every score is computed from, built from the store (and exported).

``labels_frame`` is ``labels.csv`` of an export: one row per reviewed (routed) response, with
its stratum, inclusion probability, final label, gold label and every annotator's verdict.
``design`` is ``design.json``: the rounds and seeds, and N_h / n_h per (model, benchmark) cell
and stratum; a round routed with ``--strata-from`` also names those judges (``strata_from``) and
says what its strata mean (``strata_rule``). ``strata_table(labels, design)`` turns the two
into the per-stratum counts the estimators take. ``annotate score`` and ``annotate verify`` both
go through ``strata_table``, so an export's scores can be re-derived from its own files without
the database.

The part of ``labels.csv`` that is computed rather than recorded, the Dawid-Skene label, is a
pure function of its annotator columns (:func:`ds_labels`), and :func:`votes_long` turns those
columns back into the long vote table the agreement statistics take: ``export`` and ``verify``
call the same two functions on the same table.

``judge_labels_frame`` is ``judge_labels.csv``: every judge's verdict and label on each reviewed
response (one row per response and judge with a row under its key, the routing judge included),
so that every judge can be audited against the reviewed label (``annotate judges``, an
export's ``judges.csv``). ``same_response`` says whether the row's prompt and response text are
the reviewed ones (``yes``) or another response under the same key (``no``: listed, never audited).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.columns import BLINDING_INSTRUCTIONS, LABEL_COLUMNS
from annotate.pipeline._resolve import resolve_round
from annotate.stats.scoring.strata import stratum_key

if TYPE_CHECKING:
    from annotate.db import Store

#: labels.csv of an export before the annotator columns.
EXPORT_LABEL_COLUMNS = LABEL_COLUMNS
#: judge_labels.csv of an export (annotate-export/3): one row per reviewed response and judge.
JUDGE_LABEL_COLUMNS = (
    "round",
    "model",
    "benchmark",
    "prompt_id",
    "epoch",
    "judge",
    "judge_verdict",
    "judge_label",
    "same_response",
)


#: design.json's ``strata_rule`` of a round with ``strata_from``: what its strata' judge labels mean.
STRATA_FROM_RULE = (
    "unanimity of the strata_from judges on the same response (same key, prompt and response text): "
    "harmful = every one says harmful, safe = every one says safe, ambiguous = anything else (a disagreement, "
    "an ambiguous label or no verdict), reviewed in full; judge is the judge whose rows were routed"
)


def labels_frame(store: Store, round_names: list[str]) -> pd.DataFrame:
    """One row per routed response of the rounds (labels.csv). Annotator columns by pseudonym."""
    from annotate.stats.agreement.votes import current_labels

    frames = []
    pseudonyms: list[str] = []
    reviewers_of: dict[str, list[str]] = {}
    for name in round_names:
        row = resolve_round(store, name)
        rid = int(row["id"])
        reviewers = json.loads(row["annotators"])
        reviewers_of[name] = reviewers
        items = store.round_items(rid)
        votes = current_labels(store.annotations(rid), set(reviewers))
        final = store.final_labels(rid)
        df = items.rename(columns={"stratum": "judge_stratum"})
        df["round"] = name
        df["stratum"] = [stratum_key(s, w) for s, w in zip(df.judge_stratum, df.wave, strict=True)]
        df = df.merge(
            final[["round_item_id", "label", "status", "method", "adjudicator", "reason"]].rename(
                columns={"label": "final_label", "status": "final_status", "method": "final_method"}
            ),
            on="round_item_id",
            how="left",
        )
        df["final_status"] = df["final_status"].fillna("awaiting review")
        wide = votes.pivot_table(index="round_item_id", columns="annotator", values="verdict", aggfunc="last")
        for p in reviewers:
            df[p] = df.round_item_id.map(wide[p]) if p in wide.columns else None
            if p not in pseudonyms:
                pseudonyms.append(p)
        frames.append(df)
    if not frames:
        return pd.DataFrame(columns=list(EXPORT_LABEL_COLUMNS))
    out = pd.concat(frames, ignore_index=True)
    for p in pseudonyms:
        if p not in out.columns:
            out[p] = None
    out["ds_label"] = None
    cols = list(EXPORT_LABEL_COLUMNS) + sorted(pseudonyms, key=lambda p: (p[0], int(p[1:]) if p[1:].isdigit() else 0))
    out = out[cols].sort_values(["round", "model", "benchmark", "prompt_id", "epoch"]).reset_index(drop=True)
    # Computed on the table as it is written, so that verify re-derives it from the file alike.
    out["ds_label"] = ds_labels(out, reviewers_of)
    return out


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


def judge_stratum(stratum: pd.Series) -> pd.Series:
    """The judge label a stratum key stands for (``ambiguous#w2`` -> ``ambiguous``).

    >>> judge_stratum(pd.Series(["ambiguous", "safe#w3"])).tolist()
    ['ambiguous', 'safe']
    """
    return stratum.astype(object).where(stratum.notna(), "").astype(str).str.replace(r"#w\d+$", "", regex=True)


def votes_long(labels: pd.DataFrame, annotators: Sequence[str]) -> pd.DataFrame:
    """The verdicts in ``labels``' annotator columns as a long vote table.

    One row per (row of ``labels``, annotator of ``annotators``) with a non-empty verdict:
    ``round_item_id`` (the row's index label: the unit), ``annotator``, ``verdict``, and the
    row's ``model``, ``benchmark``, ``category``, ``gold_label`` and ``stratum`` (the judge label
    of its stratum, waves merged, as the store's round items carry it). Annotators without a
    column have no votes.
    """
    cols = [a for a in annotators if a in labels.columns]
    empty = pd.DataFrame(
        columns=["round_item_id", "model", "benchmark", "category", "gold_label", "stratum", "annotator", "verdict"]
    )
    if not cols or labels.empty:
        return empty
    base = pd.DataFrame(
        {
            "round_item_id": np.asarray(labels.index),
            "model": labels["model"].to_numpy(),
            "benchmark": labels["benchmark"].to_numpy(),
            "category": labels["category"].to_numpy() if "category" in labels else None,
            "gold_label": labels["gold_label"].to_numpy() if "gold_label" in labels else None,
            "stratum": judge_stratum(labels["stratum"]).to_numpy(),
        }
    )
    for a in cols:
        base[a] = labels[a].to_numpy()
    long = base.melt(
        id_vars=["round_item_id", "model", "benchmark", "category", "gold_label", "stratum"],
        value_vars=cols,
        var_name="annotator",
        value_name="verdict",
    )
    keep = long.verdict.notna() & (long.verdict.astype(object) != "")
    return long.loc[keep].reset_index(drop=True)


def ds_labels(labels: pd.DataFrame, annotators_by_round: Mapping[str, Sequence[str]]) -> pd.Series:
    """labels.csv's ``ds_label`` column, from its annotator columns alone (pure).

    Per round, Dawid-Skene over the votes of the round's annotators (two at least); a row without
    any vote, or of a round with fewer than two annotators, gets no label (None).
    """
    from annotate.stats.aggregation import dawid_skene_labels

    out = pd.Series(None, index=labels.index, dtype=object)
    for name, annotators in annotators_by_round.items():
        reviewers = list(annotators)
        votes = votes_long(labels.loc[labels["round"] == name], reviewers)
        if len(votes) and len(reviewers) >= 2:
            ds = dawid_skene_labels(votes, reviewers)
            out.loc[ds.index] = ds["ds_label"].to_numpy()
    return out


def design(store: Store, round_names: list[str], *, label_config_sha: str | None = None) -> dict[str, Any]:
    """design.json: rounds, seeds, and per (model, benchmark, stratum) N_h and n_h."""
    rounds = []
    for name in round_names:
        row = resolve_round(store, name)
        rid = int(row["id"])
        strata = store.round_strata(rid)
        waves = store.round_waves(rid)
        strata_from = store.round_strata_from(rid)
        # Said only for such rounds: the design of every other round stays as it was, byte for byte.
        several = {"strata_from": strata_from, "strata_rule": STRATA_FROM_RULE} if strata_from is not None else {}
        rounds.append(
            {
                "round": name,
                "judge": row["judge"],
                **several,
                "seed": int(row["seed"]),
                "clear_per_cell": int(row["clear_per_cell"]),
                "annotators": json.loads(row["annotators"]),
                # How the reviewers were kept apart (columns.BLINDINGS): a round never sent to a
                # server (task files) is said to be blinded by instructions only.
                "blinding": row.get("blinding") or BLINDING_INSTRUCTIONS,
                "label_config_sha256": row["label_config_sha"],
                "waves": [
                    {"wave": int(w.wave), "max_response_id": int(w.max_response_id), "routed_at": str(w.routed_at)}
                    for w in waves.itertuples()
                ],
                "strata": [
                    {
                        "model": s.model,
                        "benchmark": s.benchmark,
                        "judge_label": s.stratum,
                        "wave": int(s.wave),
                        "stratum": stratum_key(s.stratum, s.wave),
                        "population": int(s.population),
                        "sample": int(s.sample),
                    }
                    for s in strata.itertuples()
                ],
            }
        )
    runs = store.ingest_runs()
    rubrics = sorted({r for r in runs.rubric}) if len(runs) else []
    return {
        "schema": "annotate-design/1",
        "rounds": rounds,
        "rubrics": [json.loads(r) for r in rubrics],
        "label_config_sha256": label_config_sha,
    }
