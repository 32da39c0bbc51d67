"""The two audit tables every score is computed from, built from the store (and exported).

``labels_frame`` is ``labels.csv`` of an export: one row per reviewed (routed) response, with
its stratum, inclusion probability, final label and every annotator's verdict. ``design`` is
``design.json``: the rounds and seeds, and N_h / n_h per (model, benchmark) cell and stratum.
``strata_table(labels, design)`` turns the two into the per-stratum counts the estimators take.
``annotate score`` and ``annotate verify`` both go through ``strata_table``, so an export's
scores can be re-derived from its own files without the database.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.columns import LABEL_COLUMNS
from annotate.pipeline._resolve import resolve_round
from annotate.stats.scoring.strata import stratum_key

if TYPE_CHECKING:
    from annotate.db import Store


def labels_frame(store: Store, round_names: list[str]) -> pd.DataFrame:
    """One row per routed response of the rounds (labels.csv). Annotator columns by pseudonym."""
    from annotate.stats.aggregation import dawid_skene_labels
    from annotate.stats.agreement.votes import current_labels

    frames = []
    pseudonyms: list[str] = []
    for name in round_names:
        row = resolve_round(store, name)
        rid = int(row["id"])
        reviewers = json.loads(row["annotators"])
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
        ds = dawid_skene_labels(votes, reviewers) if len(votes) and len(reviewers) >= 2 else None
        df["ds_label"] = df.round_item_id.map(ds["ds_label"]) if ds is not None else None
        wide = votes.pivot_table(index="round_item_id", columns="annotator", values="verdict", aggfunc="last")
        for p in reviewers:
            df[p] = df.round_item_id.map(wide[p]) if p in wide.columns else None
            if p not in pseudonyms:
                pseudonyms.append(p)
        frames.append(df)
    if not frames:
        return pd.DataFrame(columns=list(LABEL_COLUMNS))
    out = pd.concat(frames, ignore_index=True)
    for p in pseudonyms:
        if p not in out.columns:
            out[p] = None
    cols = list(LABEL_COLUMNS) + sorted(pseudonyms, key=lambda p: (p[0], int(p[1:]) if p[1:].isdigit() else 0))
    return out[cols].sort_values(["round", "model", "benchmark", "prompt_id", "epoch"]).reset_index(drop=True)


def design(store: Store, round_names: list[str], *, label_config_sha: str | None = None) -> dict[str, Any]:
    """design.json: rounds, seeds, and per (model, benchmark, stratum) N_h and n_h."""
    rounds = []
    for name in round_names:
        row = resolve_round(store, name)
        rid = int(row["id"])
        strata = store.round_strata(rid)
        waves = store.round_waves(rid)
        rounds.append(
            {
                "round": name,
                "judge": row["judge"],
                "seed": int(row["seed"]),
                "clear_per_cell": int(row["clear_per_cell"]),
                "annotators": json.loads(row["annotators"]),
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
