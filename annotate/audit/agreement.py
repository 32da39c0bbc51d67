"""Agreement of a round's reviewers, per group: the pure computation behind `annotate agreement`
and an export's agreement.json.

For each group (stratum, benchmark, model or category; plus the pooled mixture), the unit x
category count matrix of the reviewers' current labels goes through the statistics of
``annotate.stats.agreement``. Two label sets: ``3-way`` (harmful / safe / unsure) and ``binary``
(harmful / safe, unsure treated as missing). Thresholds (Krippendorff 2004) are applied to the
lower end of alpha's 95 % interval, not to the point estimate.

:func:`agreement_groups` takes the long table of current votes (from the store for `annotate
agreement`, from labels.csv's annotator columns for an export: :func:`export_agreement`), so an
export's agreement.json is re-derivable from the export alone.

Per annotator, the Dawid-Skene sensitivity and specificity are figures only for a reviewer who
shares an item with two others (harmful or safe votes of all three; docs/methods.md 2.5); otherwise
None, with ``ds_undefined_reason`` saying why and ``ds_n_shared`` the items so shared. `annotate
agreement` applies that rule, and so does an export's agreement.json from the schema that adopts it
(``ds_shared_only``); up to annotate-export/10 it keeps their layout and figures (every figure, no
such keys).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.audit.labels import votes_long
from annotate.columns import BINARY_VERDICTS as BINARY
from annotate.columns import NO_CATEGORY
from annotate.columns import VERDICTS as THREE_WAY
from annotate.stats import agreement as ag
from annotate.stats._common import jsonable
from annotate.stats.aggregation import binary_codes, dawid_skene
from annotate.stats.agreement import annotator_diagnostics
from annotate.stats.agreement.votes import Thresholds, verdict_for, vote_matrix_with_dropped

if TYPE_CHECKING:
    from annotate.audit.design import Design
    from annotate.stats.agreement.results import PairwiseKappa

__all__ = ["GROUPINGS", "agreement_groups", "export_agreement"]

GROUPINGS = ("stratum", "benchmark", "model", "category")


def export_agreement(
    labels: pd.DataFrame,
    design: Design,
    *,
    n_boot: int,
    seed: int,
    thresholds: Thresholds,
    ds_shared_only: bool = False,
) -> list[dict[str, Any]]:
    """agreement.json of an export, from labels.csv's annotator columns alone (pure).

    Per round of ``design`` (its annotators in its order): the groups by stratum with the
    pooled mixture, then the groups by benchmark; each group carries ``round`` and ``by``.
    ``export`` and ``verify`` both call this on the table as written in labels.csv.
    ``ds_shared_only`` as in :func:`agreement_groups`; False (the default) writes the per-annotator
    records of annotate-export/10 and earlier, which verify re-derives byte for byte.
    """
    out: list[dict[str, Any]] = []
    for rnd in design.rounds:
        annotators = [str(a) for a in rnd.annotators]
        votes = votes_long(labels.loc[labels["round"] == rnd.round], annotators)
        for by in ("stratum", "benchmark"):
            groups = agreement_groups(
                votes, annotators, by=by, n_boot=n_boot, seed=seed, thresholds=thresholds, ds_shared_only=ds_shared_only
            )
            for g in groups:
                if by == "benchmark" and g["pooled"]:
                    continue  # the pooled groups are already in from the stratum pass
                out.append({"round": rnd.round, "by": by, **g})
    return out


def agreement_groups(
    votes: pd.DataFrame,
    annotators: list[str],
    *,
    by: str,
    n_boot: int,
    seed: int,
    thresholds: Thresholds,
    ds_shared_only: bool = True,
    reader_notes: bool = False,
) -> list[dict[str, Any]]:
    """Agreement per group of ``by`` and pooled, on the 3-way and the binary label sets (pure).

    ``votes`` is the long table of current verdicts: ``round_item_id`` (the unit), ``annotator``,
    ``verdict`` and the grouping columns ``stratum``, ``benchmark``, ``model``, ``category``, with
    ``gold_label`` for the annotators' gold accuracy. With ``ds_shared_only`` (the default) an
    annotator's Dawid-Skene rates are None unless it shares an item of the group with two others
    (docs/methods.md 2.5), and its record says so (``ds_n_shared``, ``ds_undefined_reason``);
    without, every rate the fit gives is kept and those keys are left out (agreement.json up to
    annotate-export/10). With ``reader_notes`` (the terminal's report, not agreement.json, whose
    bytes every export schema fixes) each group adds ``alpha_interval_note``, why a defined alpha
    has no interval, and the undefined reason names its category ("(safe)", not "(category 1)").
    """
    labels = votes.copy()
    labels["category"] = labels["category"].where(labels["category"].notna() & (labels["category"] != ""), NO_CATEGORY)
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
                "annotators": _annotators(codes, cats, annotators, subset, thresholds, ds_shared_only),
            }
            if reader_notes:
                group["alpha_interval_note"] = alpha.interval_note if alpha.value == alpha.value else None
                if alpha.undefined_reason:
                    group["alpha_undefined_reason"] = _named_categories(alpha.undefined_reason, cats)
            groups.append(jsonable(group))
    return groups


def _named_categories(reason: str, cats: tuple[str, ...]) -> str:
    """``reason`` with "category K" (the statistics' column index) replaced by the label's name.

    >>> _named_categories("All 4 values fall in one category (category 1), so ...", ("harmful", "safe"))
    'All 4 values fall in one category (safe), so ...'
    """
    import re

    return re.sub(r"\(category (\d+)\)", lambda m: f"({cats[int(m.group(1))]})", reason)


def _pairwise(pk: PairwiseKappa | None, annotators: list[str]) -> list[dict[str, Any]]:
    if pk is None:
        return []
    return [{"a": annotators[i], "b": annotators[j], "kappa": coef.value} for i, j, coef in pk.pairs]


def _annotators(
    codes: np.ndarray,
    cats: tuple[str, ...],
    annotators: list[str],
    subset: pd.DataFrame,
    th: Thresholds,
    ds_shared_only: bool,
) -> list[dict[str, Any]]:
    """Per-annotator diagnostics of one group (with Dawid-Skene rates and gold accuracy)."""
    if codes.size == 0 or codes.shape[0] < 2:
        return []
    ds = None
    positive = BINARY.index("harmful")  # a class of the Dawid-Skene fit, not a column of codes
    try:
        # Dawid-Skene's classes are harmful and safe; an unsure vote is a missing observation.
        binary = binary_codes(codes, cats)
        if ds_shared_only:
            # Since annotate-export/11: the per-reviewer rates are fitted on the items at least two reviewers
            # voted on; an item one reviewer labelled alone says nothing about anyone's errors, and many of them
            # (a reviewer alone on a stratum's items) pulled the fit's class shares and swapped the others' rates.
            binary = np.where(((binary >= 0).sum(axis=1) >= 2)[:, None], binary, -1)
        ds = dawid_skene(binary, len(BINARY))
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
    # Up to annotate-export/10: the fit's rate of every annotator, identified or not.
    every = ds.sensitivity_specificity(positive) if ds is not None else None
    out = []
    for jj, d in enumerate(diag.annotators):
        gold = subset.loc[(subset.annotator == d.annotator) & subset.gold_label.notna()]
        gold_acc = float(np.mean(gold.verdict == gold.gold_label)) if len(gold) else None
        flags = list(d.flags)
        if ds_shared_only:
            ds_fields: dict[str, Any] = {
                "ds_sensitivity_harmful": d.sensitivity,
                "ds_specificity_harmful": d.specificity,
                "ds_n_shared": d.ds_n_shared,
                "ds_undefined_reason": d.ds_undefined_reason,
            }
        else:
            ds_fields = {
                "ds_sensitivity_harmful": d.sensitivity if every is None else float(every[0][jj]),
                "ds_specificity_harmful": d.specificity if every is None else float(every[1][jj]),
            }
        out.append(
            {
                "annotator": d.annotator,
                "n_rated": d.n_rated,
                "n_consensus_units": d.n_consensus_units,
                "agreement_with_consensus": d.agreement_with_consensus,
                "kappa_with_consensus": d.kappa_with_consensus.value,
                "alpha_if_removed": d.alpha_if_deleted.value,
                "alpha_delta": d.alpha_delta,
                **ds_fields,
                "gold_n": int(len(gold)),
                "gold_accuracy": gold_acc,
                "flags": flags,
            }
        )
    return out
