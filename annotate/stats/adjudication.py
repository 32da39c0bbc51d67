"""One final label per reviewed response, by a recorded procedure (pure).

The label of record is the majority vote with an explicit tie policy; a tie is never broken by
the order of the data. An item is escalated to the expert when (each rule configurable):

1. there is no strict majority among the non-missing, non-unsure votes (``tie``);
2. the majority of the votes is ``unsure`` (``majority unsure``);
3. the Dawid-Skene posterior of its most likely class is below ``ds_min_posterior``, or the
   Dawid-Skene label differs from the majority (``dawid-skene``);
4. optionally, any ``harmful`` vote on an item of a high-severity category whose majority is
   ``safe`` (``severity``).

Escalated items without an expert decision are resolved by ``policy``: ``escalate`` leaves
them pending with the expert, ``harmful`` / ``safe`` label them (method ``policy:<label>``),
``unresolved`` records them unresolved. An expert's ``unsure`` is recorded as unresolved.
A seeded share of majority-resolved items also goes to the expert as a check on the majority
process; the majority stays the label of record for them and the agreement is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

POLICIES = ("escalate", "harmful", "safe", "unresolved")
VERDICTS = ("harmful", "safe", "unsure")


@dataclass(frozen=True)
class Rules:
    policy: str = "escalate"
    escalate_unsure_majority: bool = True
    ds_min_posterior: float | None = 0.9  # None: rule 3 off
    ds_disagreement: bool = True
    high_severity_categories: tuple[str, ...] = ()
    check_share: float = 0.05

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, not {self.policy!r}")
        if not 0 <= self.check_share <= 1:
            raise ValueError("check_share must be between 0 and 1")


def majority(
    harmful: np.ndarray, safe: np.ndarray, unsure: np.ndarray, *, unsure_rule: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Majority label and the reason for escalation per item.

    Args:
        harmful, safe, unsure: (N,) vote counts per item.

    Returns:
        (label, reason): (N,) object arrays; label is "harmful" / "safe" / None, reason is
        None when the majority stands, else "tie" or "majority unsure".

    >>> majority(np.array([1, 2, 1]), np.array([1, 1, 0]), np.array([1, 0, 2]))[1].tolist()
    ['tie', None, 'majority unsure']
    """
    label = np.where(harmful > safe, "harmful", np.where(safe > harmful, "safe", None)).astype(object)
    reason = np.full(len(harmful), None, dtype=object)
    reason[harmful == safe] = "tie"
    if unsure_rule:
        many_unsure = unsure > harmful + safe
        reason[many_unsure] = "majority unsure"
        label[many_unsure] = None
    label[reason != None] = None  # noqa: E711 (elementwise)
    return label, reason


def propose(
    votes: pd.DataFrame, rules: Rules, *, ds: pd.DataFrame | None = None, categories: pd.Series | None = None
) -> pd.DataFrame:
    """Majority labels and escalations for every item with at least one vote.

    Args:
        votes: one row per (round_item_id, annotator) with ``verdict`` in harmful/safe/unsure.
        ds: optional, indexed by round_item_id, columns ``ds_label``, ``ds_posterior``.
        categories: optional, round_item_id -> category (for the severity rule).

    Returns:
        Indexed by round_item_id: harmful, safe, unsure (counts), majority (label or None),
        escalate (bool), reasons (a "; "-joined string or None), ds_label, ds_posterior.
    """
    counts = votes.pivot_table(
        index="round_item_id", columns="verdict", values="annotator", aggfunc="count", fill_value=0
    ).reindex(columns=list(VERDICTS), fill_value=0)
    h, s, u = (counts[c].to_numpy() for c in VERDICTS)
    label, reason = majority(h, s, u, unsure_rule=rules.escalate_unsure_majority)
    out = counts.copy()
    # dtype=object keeps None as None (pandas would otherwise infer a string dtype with NaN)
    out["majority"] = pd.Series(label, index=out.index, dtype=object)
    reasons: list[list[str]] = [[r] if r else [] for r in reason]
    out["ds_label"] = None
    out["ds_posterior"] = np.nan
    if ds is not None and len(ds):
        joined = ds.reindex(out.index)
        out["ds_label"] = pd.Series(joined["ds_label"].to_numpy(), index=out.index, dtype=object)
        out["ds_posterior"] = joined["ds_posterior"].to_numpy()
        for i, (lab, post, mv) in enumerate(zip(out["ds_label"], out["ds_posterior"], label)):
            if rules.ds_min_posterior is not None and post == post and post < rules.ds_min_posterior:
                reasons[i].append(f"dawid-skene posterior {post:.2f} < {rules.ds_min_posterior:.2f}")
            elif rules.ds_disagreement and isinstance(mv, str) and isinstance(lab, str) and lab != mv:
                reasons[i].append(f"dawid-skene says {lab}")
    if rules.high_severity_categories and categories is not None:
        cat = categories.reindex(out.index)
        high = cat.isin(rules.high_severity_categories).to_numpy()
        for i in np.flatnonzero(high & (h > 0) & (label == "safe")):
            reasons[i].append("harmful vote on a high-severity item")
    out["reasons"] = pd.Series(["; ".join(r) if r else None for r in reasons], index=out.index, dtype=object)
    out["escalate"] = out["reasons"].notna()
    return out


def check_sample(resolved_ids: pd.Series, keys: pd.Series, share: float, seed: int) -> set[int]:
    """A seeded share (rounded up) of majority-resolved items for the expert's check."""
    from annotate.stats.sampling import stable_uniform

    if share <= 0 or len(resolved_ids) == 0:
        return set()
    n = int(np.ceil(share * len(resolved_ids)))
    order = np.argsort(stable_uniform(seed, ("check\x1f" + keys.astype(str)).reset_index(drop=True)), kind="mergesort")
    return set(resolved_ids.to_numpy()[order[:n]].tolist())


@dataclass
class Decision:
    round_item_id: int
    status: str  # resolved / escalated / unresolved
    label: str | None
    method: str  # majority / expert / policy:<p> / pending
    adjudicator: str
    reason: str
    votes: dict[str, str] = field(default_factory=dict)


def decide(proposals: pd.DataFrame, votes: pd.DataFrame, expert: pd.DataFrame, rules: Rules) -> list[Decision]:
    """The final record per item.

    Args:
        proposals: from ``propose``.
        votes: the annotators' votes (round_item_id, annotator, verdict), recorded with each decision.
        expert: the expert's current labels (round_item_id, annotator, verdict).
    """
    by_item = {k: dict(zip(g.annotator, g.verdict)) for k, g in votes.groupby("round_item_id")}
    expert_by_item = {int(r.round_item_id): (r.annotator, r.verdict) for r in expert.itertuples()}
    out: list[Decision] = []
    for item, row in proposals.iterrows():
        item = int(item)
        v = by_item.get(item, {})
        tally = f"{int(row.harmful)} harmful, {int(row.safe)} safe, {int(row.unsure)} unsure"
        if not row.escalate:
            out.append(Decision(item, "resolved", row.majority, "majority", "majority vote", f"majority of {tally}", v))
            continue
        if item in expert_by_item:
            who, verdict = expert_by_item[item]
            if verdict in ("harmful", "safe"):
                out.append(Decision(item, "resolved", verdict, "expert", who, f"escalated ({row.reasons}); {tally}", v))
            else:
                out.append(
                    Decision(
                        item,
                        "unresolved",
                        None,
                        "expert",
                        who,
                        f"the expert was unsure; escalated ({row.reasons}); {tally}",
                        v,
                    )
                )
            continue
        if rules.policy in ("harmful", "safe"):
            out.append(
                Decision(
                    item,
                    "resolved",
                    rules.policy,
                    f"policy:{rules.policy}",
                    "policy",
                    f"escalated ({row.reasons}); resolved by policy; {tally}",
                    v,
                )
            )
        elif rules.policy == "unresolved":
            out.append(
                Decision(
                    item,
                    "unresolved",
                    None,
                    "policy:unresolved",
                    "policy",
                    f"escalated ({row.reasons}); left unresolved by policy; {tally}",
                    v,
                )
            )
        else:
            out.append(
                Decision(
                    item, "escalated", None, "pending", "expert (pending)", f"escalated ({row.reasons}); {tally}", v
                )
            )
    return out


def dawid_skene_labels(votes: pd.DataFrame, annotators: list[str]) -> pd.DataFrame:
    """Dawid-Skene on harmful/safe/unsure votes: round_item_id -> ds_label, ds_posterior (all classes)."""
    from annotate.stats.agreement import dawid_skene
    from annotate.stats.agreement.votes import vote_matrix

    if votes.empty:
        return pd.DataFrame(columns=["ds_label", "ds_posterior"])
    codes, _counts, items = vote_matrix(votes, VERDICTS, annotators)
    result = dawid_skene(codes, len(VERDICTS))
    post = result.posteriors
    best = post.argmax(axis=1)
    return pd.DataFrame(
        {"ds_label": [VERDICTS[k] for k in best], "ds_posterior": post.max(axis=1)},
        index=pd.Index(items, name="round_item_id"),
    )
