"""`annotate agreement` and an export's agreement.json: per-group agreement of a round's reviewers.

Builds, for each group (stratum, benchmark, model or category; plus the pooled mixture), the
unit x category count matrix of the reviewers' current labels and runs the pure statistics of
``annotate.stats.agreement``. Two label sets: ``3-way`` (harmful / safe / unsure) and ``binary``
(harmful / safe, unsure treated as missing). Thresholds (Krippendorff 2004) are applied to the
lower end of alpha's 95 % interval, not to the point estimate.

Labels used: per (item, annotator) the latest non-deleted, non-skipped annotation with a verdict,
by annotators (never the adjudication expert). ``agreement_report`` reads them from the store;
``export_agreement`` from labels.csv's annotator columns (which hold the same verdicts), so an
export's agreement.json is re-derivable from the export alone. Both go through the one pure
``agreement_groups``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.columns import BINARY_VERDICTS as BINARY
from annotate.columns import VERDICTS as THREE_WAY
from annotate.errors import InputError
from annotate.pipeline._resolve import resolve_round
from annotate.pipeline._settings import thresholds_from_settings
from annotate.stats._common import jsonable
from annotate.stats.aggregation import binary_codes, dawid_skene
from annotate.stats.agreement.votes import Thresholds, current_labels, verdict_for, vote_matrix_with_dropped

if TYPE_CHECKING:
    from annotate.db import Store
    from annotate.pipeline.session import Session
    from annotate.stats.agreement.results import PairwiseKappa

GROUPINGS = ("stratum", "benchmark", "model", "category")


def agreement_report(
    store: Store,
    *,
    round_name: str | None,
    by: str,
    n_boot: int = 2000,
    seed: int = 0,
    thresholds: Thresholds | None = None,
) -> dict[str, Any]:
    """Everything `annotate agreement` prints, as plain data."""
    thresholds = thresholds or Thresholds()
    if by not in GROUPINGS:
        raise InputError(f"--by must be one of {', '.join(GROUPINGS)}")
    round_row = resolve_round(store, round_name)
    annotators = json.loads(round_row["annotators"])
    items = store.round_items(int(round_row["id"]))
    labels = current_labels(store.annotations(int(round_row["id"])), set(annotators))
    labels = labels.merge(
        items[["round_item_id", "model", "benchmark", "category", "gold_label"]], on="round_item_id", how="left"
    )
    return {
        "round": round_row["name"],
        "by": by,
        "n_boot": n_boot,
        "seed": seed,
        "thresholds": vars(thresholds),
        "annotators": annotators,
        "n_labels": int(len(labels)),
        "groups": agreement_groups(labels, annotators, by=by, n_boot=n_boot, seed=seed, thresholds=thresholds),
    }


def export_agreement(
    labels: pd.DataFrame, design_doc: dict[str, Any], *, n_boot: int, seed: int, thresholds: Thresholds
) -> list[dict[str, Any]]:
    """agreement.json of an export, from labels.csv's annotator columns alone (pure).

    Per round of ``design_doc`` (its annotators in its order): the groups by stratum with the
    pooled mixture, then the groups by benchmark; each group carries ``round`` and ``by``.
    ``export`` and ``verify`` both call this on the table as written in labels.csv.
    """
    from annotate.pipeline.audit import votes_long

    out: list[dict[str, Any]] = []
    for rnd in design_doc["rounds"]:
        annotators = [str(a) for a in rnd["annotators"]]
        votes = votes_long(labels.loc[labels["round"] == rnd["round"]], annotators)
        for by in ("stratum", "benchmark"):
            groups = agreement_groups(votes, annotators, by=by, n_boot=n_boot, seed=seed, thresholds=thresholds)
            for g in groups:
                if by == "benchmark" and g["pooled"]:
                    continue  # the pooled groups are already in from the stratum pass
                out.append({"round": rnd["round"], "by": by, **g})
    return out


def agreement_groups(
    votes: pd.DataFrame, annotators: list[str], *, by: str, n_boot: int, seed: int, thresholds: Thresholds
) -> list[dict[str, Any]]:
    """Agreement per group of ``by`` and pooled, on the 3-way and the binary label sets (pure).

    ``votes`` is the long table of current verdicts: ``round_item_id`` (the unit), ``annotator``,
    ``verdict`` and the grouping columns ``stratum``, ``benchmark``, ``model``, ``category``, with
    ``gold_label`` for the annotators' gold accuracy.
    """
    from annotate.stats import agreement as ag

    labels = votes.copy()
    labels["category"] = labels["category"].where(labels["category"].notna() & (labels["category"] != ""), "(none)")
    groups: list[dict[str, Any]] = []
    keys = sorted(labels[by].dropna().unique()) if len(labels) else []
    for name, subset in [*[(f"{by}={k}", labels.loc[labels[by] == k]) for k in keys], ("pooled (mixture)", labels)]:
        for set_name, cats in (("3-way", THREE_WAY), ("binary", BINARY)):
            as_missing = tuple(v for v in THREE_WAY if v not in cats)  # binary: ("unsure",), counted
            codes, counts, _, dropped = vote_matrix_with_dropped(subset, cats, annotators, as_missing)
            summary = ag.agreement_summary(
                counts, cats, labels=codes, dropped=dropped, dropped_labels=as_missing, n_boot=n_boot, seed=seed
            )
            alpha = summary.alpha
            group: dict[str, Any] = {
                "group": name,
                "labels": set_name,
                "pooled": name.startswith("pooled"),
                "n_units": int(summary.n_pairable_units),
                "n_annotators": int((codes >= 0).any(axis=0).sum()) if codes.size else 0,
                "alpha": alpha.value,
                "alpha_ci": [alpha.ci_low, alpha.ci_high],
                "alpha_se_bootstrap": alpha.se,
                "alpha_se_jackknife": alpha.se_jackknife,
                "q_below_0667": alpha.q_below(0.667) if alpha.value == alpha.value else None,
                "q_below_0800": alpha.q_below(0.800) if alpha.value == alpha.value else None,
                "alpha_undefined_reason": alpha.undefined_reason,
                "verdict": verdict_for(alpha.ci_low, thresholds),
                "ac1": summary.ac1.value,
                "ac1_ci": [summary.ac1.ci_low, summary.ac1.ci_high],
                "fleiss_kappa": summary.fleiss_kappa.value,
                "fleiss_n_complete": summary.fleiss_kappa.n_units,
                "percent_agreement": summary.percent_agreement.value,
                "percent_agreement_ci": [summary.percent_agreement.ci_low, summary.percent_agreement.ci_high],
                "brennan_prediger": summary.brennan_prediger.value,
                "brennan_prediger_ci": [summary.brennan_prediger.ci_low, summary.brennan_prediger.ci_high],
                "conger_kappa": None if summary.conger_kappa is None else summary.conger_kappa.value,
                "n_votes": summary.dropped.n_votes,
                "n_unsure_dropped": summary.dropped.n_dropped,
                "unsure_dropped_share": summary.dropped.share,
                "n_units_lost_to_unsure": summary.dropped.n_units_unpairable,
                "category_agreement": {c: k.value for c, k in zip(cats, summary.category_agreement, strict=True)},
                "prevalence_warning": summary.prevalence_warning,
                "pairwise_cohen": _pairwise(summary.pairwise_cohen, annotators),
                "annotators": _annotators(codes, cats, annotators, subset, thresholds),
            }
            groups.append(jsonable(group))
    return groups


def _pairwise(pk: PairwiseKappa | None, annotators: list[str]) -> list[dict[str, Any]]:
    if pk is None:
        return []
    return [{"a": annotators[i], "b": annotators[j], "kappa": coef.value} for i, j, coef in pk.pairs]


def _annotators(
    codes: np.ndarray, cats: tuple[str, ...], annotators: list[str], subset: pd.DataFrame, th: Thresholds
) -> list[dict[str, Any]]:
    """Per-annotator diagnostics of one group (with Dawid-Skene rates and gold accuracy)."""
    from annotate.stats.agreement import annotator_diagnostics

    if codes.size == 0 or codes.shape[0] < 2:
        return []
    ds = None
    positive = BINARY.index("harmful")  # a class of the Dawid-Skene fit, not a column of codes
    try:
        # Dawid-Skene's classes are harmful and safe; an unsure vote is a missing observation.
        ds = dawid_skene(binary_codes(codes, cats), len(BINARY))
    except ValueError:
        ds = None
    diag = annotator_diagnostics(
        codes,
        len(cats),
        annotators=annotators,
        kappa_threshold=th.kappa_consensus,
        alpha_gain_threshold=th.alpha_gain,
        dawid_skene_result=ds,
        positive=positive,
    )
    out = []
    for d in diag.annotators:
        gold = subset.loc[(subset.annotator == d.annotator) & subset.gold_label.notna()]
        gold_acc = float(np.mean(gold.verdict == gold.gold_label)) if len(gold) else None
        flags = list(d.flags)
        out.append(
            {
                "annotator": d.annotator,
                "n_rated": d.n_rated,
                "n_consensus_units": d.n_consensus_units,
                "agreement_with_consensus": d.agreement_with_consensus,
                "kappa_with_consensus": d.kappa_with_consensus.value,
                "alpha_if_removed": d.alpha_if_deleted.value,
                "alpha_delta": d.alpha_delta,
                "ds_sensitivity_harmful": d.sensitivity,
                "ds_specificity_harmful": d.specificity,
                "gold_n": int(len(gold)),
                "gold_accuracy": gold_acc,
                "flags": flags,
            }
        )
    return out


def agreement(s: Session, *, round_name: str | None, by: str, n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """`annotate agreement`: the report with the workspace's thresholds (``[agreement]``)."""
    return agreement_report(
        s.store, round_name=round_name, by=by, n_boot=n_boot, seed=seed, thresholds=thresholds_from_settings(s.ws)
    )
