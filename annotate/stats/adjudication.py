"""One final label per reviewed response, by a recorded procedure (pure).

The label of record is the majority vote with an explicit tie policy; a tie is never broken by
the order of the data. An item is escalated to the expert when (each rule configurable):

1. there is no strict majority among the non-missing, non-unsure votes (``tie``);
2. the majority of the votes is ``unsure`` (``majority unsure``);
3. the Dawid-Skene posterior of its most likely class is below ``ds_min_posterior``, or the
   Dawid-Skene label differs from the majority (``dawid-skene``). The fit's classes are harmful
   and safe, an ``unsure`` vote is a missing observation and the confusion matrices are
   smoothed (:mod:`annotate.stats.aggregation`), so the posterior is below 1 and falls under the
   threshold on the items whose votes leave real doubt: a 2-1 split against the most reliable
   reviewer, or a single vote of a middling one. An item with no harmful or safe vote has no
   posterior (NaN); rule 1 escalates it;
4. optionally, any ``harmful`` vote on an item of a high-severity category whose majority is
   ``safe`` (``severity``).

An item waits while some routed reviewer's vote is not in (neither a verdict nor a skip): with
``wait_for_votes`` (the default) it is neither settled nor escalated until the last vote comes,
unless the expert has already answered it; a reviewer who labels a few tasks a day would
otherwise send the expert items that a second vote settles tomorrow. An item whose every vote is
in without any verdict (every reviewer skipped it) is escalated (``no verdict``).

Escalated items without an expert decision are resolved by ``policy``: ``escalate`` leaves
them pending with the expert, ``harmful`` / ``safe`` label them (method ``policy:<label>``),
``unresolved`` records them unresolved. ``majority`` is plain majority voting, the rule judge
papers report against: with its rules (:func:`majority_rules`) only a tie or an item without a
harmful or safe vote escalates, and it stays unresolved (method ``policy:majority``). An
expert's ``unsure`` is recorded as unresolved.
A seeded share of majority-resolved items also goes to the expert as a check on the majority
process; the majority stays the label of record for them and the agreement is reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from annotate.columns import BINARY_VERDICTS, POLICIES, VERDICTS
from annotate.stats.sampling import stable_uniform


@dataclass(frozen=True)
class Rules:
    """The configurable adjudication rules (module docstring, rules 1-4, and the tie policy).

    Attributes
    ----------
    policy : {"escalate", "harmful", "safe", "unresolved"}
        What an escalated item without an expert decision becomes.
    escalate_unsure_majority : bool
        Rule 2: escalate when ``unsure`` votes outnumber the harmful and safe ones together.
    ds_min_posterior : float or None
        Rule 3: escalate when the Dawid-Skene posterior of the most likely class is below this;
        None turns the rule off.
    ds_disagreement : bool
        Rule 3: escalate when the Dawid-Skene label differs from the majority.
    high_severity_categories : tuple of str
        Rule 4: categories in which one ``harmful`` vote against a ``safe`` majority escalates.
    check_share : float
        Share of majority-resolved items drawn for the expert's check, in [0, 1].
    ds_min_reviewers, ds_min_items : int
        Rule 3 applies only when the round has at least this many reviewers who voted and this
        many items with votes. With two reviewers Dawid-Skene's error rates are not identified
        (a disagreement says nothing about who erred), and on a few items the smoothed posterior
        is mostly the prior's; either way rule 3 would escalate on noise.
    min_sure_votes : int
        Rule 1b: escalate a majority that rests on fewer than this many harmful/safe votes (one
        reviewer sure, the others unsure or silent). Capped at the number of reviewers who voted,
        so a one-reviewer round is not escalated wholesale. 0 or 1 turns the rule off.
    wait_for_votes : bool
        Hold an item whose routed votes are not all in (``status`` ``waiting``) instead of deciding
        it on the votes so far; False decides and escalates early (``adjudicate --escalate-early``).

    Examples
    --------
    >>> Rules().policy, Rules(policy="safe").ds_min_posterior
    ('escalate', 0.9)
    >>> Rules(policy="coin flip")
    Traceback (most recent call last):
    ...
    ValueError: policy must be one of escalate, harmful, safe, unresolved, majority, not 'coin flip'
    """

    policy: str = "escalate"
    escalate_unsure_majority: bool = True
    ds_min_posterior: float | None = 0.9  # None: rule 3 off
    ds_disagreement: bool = True
    high_severity_categories: tuple[str, ...] = ()
    check_share: float = 0.05
    min_sure_votes: int = 2
    ds_min_reviewers: int = 3
    ds_min_items: int = 30
    wait_for_votes: bool = True

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, not {self.policy!r}")
        if not 0 <= self.check_share <= 1:
            raise ValueError("check_share must be between 0 and 1")


def majority_rules(base: Rules | None = None) -> Rules:
    """Plain majority voting (``--policy majority``): every rule that escalates a majority is off.

    Rule 2 (a majority of ``unsure``), rule 1b (too few sure votes), rule 3 (Dawid-Skene), rule 4
    (severity) and the expert's check are turned off, so the label of record is the larger of the
    harmful and safe votes wherever they differ; a tie stays unresolved. ``base``: the rules the
    settings gave, whose other fields (``wait_for_votes``, the Dawid-Skene sizes) are kept.

    >>> r = majority_rules()
    >>> r.policy, r.ds_min_posterior, r.ds_disagreement, r.check_share, r.escalate_unsure_majority
    ('majority', None, False, 0.0, False)
    """
    return replace(
        base or Rules(),
        policy="majority",
        escalate_unsure_majority=False,
        ds_min_posterior=None,
        ds_disagreement=False,
        high_severity_categories=(),
        check_share=0.0,
        min_sure_votes=0,
    )


#: The settings of ``[adjudication]`` (annotate.toml) behind each escalation reason, and the value
#: that turns each off: what a message names when a reason changed an item's outcome.
REASON_SETTINGS = {
    "tie": None,  # no setting: a tie has no majority
    "majority unsure": "escalate_unsure_majority = true",
    "dawid-skene posterior": "ds_min_posterior = {ds_min_posterior}",
    "dawid-skene says": "ds_disagreement = true",
    "only ": "min_sure_votes = {min_sure_votes}",
    "harmful vote on a high-severity item": "high_severity_categories",
}


def settings_behind(reasons: Sequence[str], rules: Rules) -> list[str]:
    """The ``[adjudication]`` settings that made these escalation reasons, once each, in order.

    >>> settings_behind(["tie", "dawid-skene says harmful", "only 1 sure vote(s), 2 needed"], Rules())
    ['ds_disagreement = true', 'min_sure_votes = 2']
    """
    out: list[str] = []
    for reason in reasons:
        for prefix, setting in REASON_SETTINGS.items():
            if setting is not None and str(reason).startswith(prefix):
                text = setting.format(ds_min_posterior=rules.ds_min_posterior, min_sure_votes=rules.min_sure_votes)
                if text not in out:
                    out.append(text)
    return out


def majority(
    harmful: np.ndarray, safe: np.ndarray, unsure: np.ndarray, *, unsure_rule: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Majority label and the reason for escalation per item (rules 1 and 2).

    Only harmful and safe votes form a majority: ``label`` is the larger of the two, a tie
    (``harmful == safe``, also 0-0) escalates, and with ``unsure_rule`` so does an item whose
    ``unsure`` votes outnumber the other two together.

    Parameters
    ----------
    harmful, safe, unsure : ndarray of int, shape (N,)
        Vote counts per item.
    unsure_rule : bool
        Apply rule 2 (``majority unsure``).

    Returns
    -------
    label : ndarray of object, shape (N,)
        ``"harmful"``, ``"safe"`` or None (escalated).
    reason : ndarray of object, shape (N,)
        None when the majority stands, else ``"tie"`` or ``"majority unsure"``.

    Examples
    --------
    Votes (H, S, U) per item: (1, 1, 1), (2, 1, 0), (1, 0, 2) and (1, 0, 0), the last a
    single harmful vote with the other ratings missing:

    >>> label, reason = majority(np.array([1, 2, 1, 1]), np.array([1, 1, 0, 0]), np.array([1, 0, 2, 0]))
    >>> label.tolist()
    [None, 'harmful', None, 'harmful']
    >>> reason.tolist()
    ['tie', None, 'majority unsure', None]
    """
    label = np.full(len(harmful), None, dtype=object)
    label[harmful > safe] = "harmful"
    label[safe > harmful] = "safe"
    reason = np.full(len(harmful), None, dtype=object)
    reason[harmful == safe] = "tie"
    if unsure_rule:
        many_unsure = unsure > harmful + safe
        reason[many_unsure] = "majority unsure"
        label[many_unsure] = None
    label[reason != None] = None  # noqa: E711 (elementwise)
    return label, reason


#: Why an item whose every vote is in holds no verdict is escalated.
NO_VERDICT = "no verdict (every reviewer skipped it)"


def propose(
    votes: pd.DataFrame,
    rules: Rules,
    *,
    ds: pd.DataFrame | None = None,
    categories: pd.Series | None = None,
    no_verdict: Sequence[int] = (),
) -> pd.DataFrame:
    """Majority labels and escalations for every item with at least one vote (rules 1-4).

    Parameters
    ----------
    votes : pandas.DataFrame
        One row per (round_item_id, annotator) with ``verdict`` in harmful / safe / unsure.
    rules : Rules
    ds : pandas.DataFrame, optional
        Indexed by round_item_id, columns ``ds_label``, ``ds_posterior`` (as
        :func:`annotate.stats.aggregation.dawid_skene_labels` gives); for rule 3. A NaN posterior
        (no harmful or safe vote) triggers nothing.
    categories : pandas.Series, optional
        round_item_id -> category; for rule 4.
    no_verdict : sequence of int
        Items without a vote whose every routed vote is in (each reviewer skipped them): rows of
        their own, escalated for :data:`NO_VERDICT`, after the voted items.

    Returns
    -------
    pandas.DataFrame
        Indexed by round_item_id: harmful, safe, unsure (counts), majority (label or None),
        ds_label, ds_posterior, reasons (a "; "-joined string or None), escalate (bool).

    Examples
    --------
    The tie-policy cases of docs/methods.md TC13: (safe, harmful, missing), (harmful, safe,
    unsure), (harmful, harmful, safe) and (unsure, unsure, harmful):

    >>> votes = pd.DataFrame(
    ...     {
    ...         "round_item_id": [1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4],
    ...         "annotator": ["A1", "A2", "A1", "A2", "A3", "A1", "A2", "A3", "A1", "A2", "A3"],
    ...         "verdict": ["safe", "harmful", "harmful", "safe", "unsure", "harmful", "harmful",
    ...                     "safe", "unsure", "unsure", "harmful"],
    ...     }
    ... )
    >>> out = propose(votes, Rules(ds_min_posterior=None, ds_disagreement=False))
    >>> out["majority"].tolist()
    [None, None, 'harmful', None]
    >>> out["reasons"].tolist()
    ['tie', 'tie', None, 'majority unsure']

    With a Dawid-Skene fit that is unsure of item 3 (rule 3, here allowed on this tiny example), it is
    escalated too:

    >>> ds = pd.DataFrame({"ds_label": ["harmful"], "ds_posterior": [0.75]}, index=[3])
    >>> propose(votes, Rules(ds_min_reviewers=2, ds_min_items=1), ds=ds).loc[3, "reasons"]
    'dawid-skene posterior 0.75 < 0.90'
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
    # Rule 1b: one reviewer's sure vote against the others' "unsure" is not agreement. (Treating
    # unsure as missing data, Dawid-Skene alone would settle such items on that one vote.)
    needed = min(int(rules.min_sure_votes), int(votes["annotator"].nunique())) if len(votes) else 0
    if needed > 1:
        for i in np.flatnonzero((label != None) & (np.maximum(h, s) < needed)):  # noqa: E711 (elementwise)
            reasons[i].append(f"only {int(max(h[i], s[i]))} sure vote(s), {needed} needed")
    out["ds_label"] = None
    out["ds_posterior"] = np.nan
    ds_applies = (
        len(votes) > 0
        and int(votes["annotator"].nunique()) >= rules.ds_min_reviewers
        and len(out) >= rules.ds_min_items
    )
    if ds is not None and len(ds):
        joined = ds.reindex(out.index)
        out["ds_label"] = pd.Series(joined["ds_label"].to_numpy(), index=out.index, dtype=object)
        out["ds_posterior"] = joined["ds_posterior"].to_numpy()
        for i, (lab, post, mv) in enumerate(zip(out["ds_label"], out["ds_posterior"], label, strict=True)):
            if not ds_applies:
                continue  # the labels are still reported (ds_label, ds_posterior), not used to escalate
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
    extra = [int(i) for i in no_verdict if int(i) not in set(out.index.tolist())]
    if extra:
        empty = pd.DataFrame(
            {
                **{c: 0 for c in VERDICTS},
                "majority": None,
                "ds_label": None,
                "ds_posterior": np.nan,
                "reasons": NO_VERDICT,
                "escalate": True,
            },
            index=pd.Index(extra, name=out.index.name),
        )
        out = pd.concat([out, empty.astype(out.dtypes.to_dict())])
    return out


def waiting_for(answers: pd.DataFrame, reviewers: Sequence[str]) -> dict[int, list[str]]:
    """The items whose routed votes are not all in, with the reviewers they wait for.

    Parameters
    ----------
    answers : pandas.DataFrame
        Indexed by round_item_id, one column per reviewer: a verdict, ``"skipped"`` (the vote is
        in, without a label) or missing (None, NaN or empty: not in yet).
    reviewers : sequence of str
        The round's reviewers (every item is routed to each); a reviewer without a column has
        given no answer.

    Returns
    -------
    dict of int to list of str
        round_item_id -> the reviewers whose answer is missing, in the order given; items whose
        every answer is in are absent.

    Examples
    --------
    >>> answers = pd.DataFrame({"A1": ["safe", "harmful", None], "A2": ["skipped", None, None]}, index=[1, 2, 3])
    >>> waiting_for(answers, ["A1", "A2"])
    {2: ['A2'], 3: ['A1', 'A2']}
    """
    out: dict[int, list[str]] = {}
    for who in reviewers:
        if who in answers.columns:
            col = answers[who]
            absent = col.isna() | (col.astype(object) == "")
        else:
            absent = pd.Series(True, index=answers.index)
        for item in answers.index[absent.to_numpy()].tolist():
            out.setdefault(int(item), []).append(who)
    return {i: out[i] for i in answers.index.tolist() if i in out}


def check_sample(resolved_ids: pd.Series, keys: pd.Series, share: float, seed: int) -> set[int]:
    """A seeded share (rounded up) of majority-resolved items for the expert's check.

    Parameters
    ----------
    resolved_ids : pandas.Series, length N
        round_item_ids of the items the majority resolved.
    keys : pandas.Series, length N
        A stable key per item (its external id), in the same order; the draw depends on the keys
        and the seed only, not on the order of the items.
    share : float
        Share to draw; ``ceil(share * N)`` items.
    seed : int
        The round's seed.

    Returns
    -------
    set of int
        The items with the smallest ``stable_uniform(seed, "check" + key)`` values.

    Examples
    --------
    >>> ids, keys = pd.Series([11, 12, 13]), pd.Series(["a", "b", "c"])
    >>> picked = check_sample(ids, keys, 0.5, seed=1)
    >>> len(picked), picked == check_sample(ids[::-1], keys[::-1], 0.5, seed=1)
    (2, True)
    """
    if share <= 0 or len(resolved_ids) == 0:
        return set()
    n = int(np.ceil(share * len(resolved_ids)))
    order = np.argsort(stable_uniform(seed, ("check\x1f" + keys.astype(str)).reset_index(drop=True)), kind="mergesort")
    return set(resolved_ids.to_numpy()[order[:n]].tolist())


@dataclass
class Decision:
    """The final record of one item, with the votes it was decided on.

    Attributes
    ----------
    round_item_id : int
    status : {"resolved", "escalated", "unresolved", "waiting"}
    label : str or None
        ``"harmful"`` / ``"safe"`` when resolved, else None.
    method : str
        ``majority``, ``expert``, ``policy:<policy>``, ``pending`` or ``waiting``.
    adjudicator : str
        Who decided: ``majority vote``, the expert's pseudonym, ``policy``, ``expert (pending)`` or
        ``reviewers (pending)``.
    reason : str
        Why, with the tally of the votes.
    votes : dict of str to str
        Annotator -> verdict.
    """

    round_item_id: int
    status: str  # resolved / escalated / unresolved / waiting
    label: str | None
    method: str  # majority / expert / policy:<p> / pending / waiting
    adjudicator: str
    reason: str
    votes: dict[str, str] = field(default_factory=dict)


def expert_answers(expert: pd.DataFrame) -> dict[int, tuple[str, str]]:
    """round_item_id -> (expert, verdict): the answer :func:`decide` takes for each item (the last
    row of an item wins, as the table is ordered).

    >>> expert_answers(pd.DataFrame({"round_item_id": [1, 1], "annotator": ["E1", "E2"], "verdict": ["safe", "harmful"]}))
    {1: ('E2', 'harmful')}
    """  # noqa: E501
    return {
        int(i): (str(who), str(verdict))
        for i, who, verdict in zip(
            expert.round_item_id.tolist(), expert.annotator.tolist(), expert.verdict.tolist(), strict=True
        )
    }


def rules_record(rules: Rules) -> dict[str, Any]:
    """The rules as design.json records them (JSON-ready); :func:`rules_from_record` reads them back.

    >>> rules_from_record(rules_record(Rules(policy="safe"))) == Rules(policy="safe")
    True
    """
    return {
        "policy": rules.policy,
        "escalate_unsure_majority": rules.escalate_unsure_majority,
        "ds_min_posterior": rules.ds_min_posterior,
        "ds_disagreement": rules.ds_disagreement,
        "high_severity_categories": list(rules.high_severity_categories),
        "check_share": rules.check_share,
        "min_sure_votes": rules.min_sure_votes,
        "ds_min_reviewers": rules.ds_min_reviewers,
        "ds_min_items": rules.ds_min_items,
        "wait_for_votes": rules.wait_for_votes,
    }


def rules_from_record(doc: Any) -> Rules:
    """The rules of a record (:func:`rules_record`); ``ValueError`` names what is malformed."""
    if not isinstance(doc, dict):
        raise ValueError("the adjudication rules must be an object")
    fields: dict[str, type | tuple[type, ...]] = {
        "policy": str,
        "escalate_unsure_majority": bool,
        "ds_disagreement": bool,
        "check_share": (int, float),
        "min_sure_votes": int,
        "ds_min_reviewers": int,
        "ds_min_items": int,
    }
    for key, kind in fields.items():
        value = doc.get(key)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise ValueError(f"the adjudication rule {key} is {value!r}")
    post = doc.get("ds_min_posterior")
    if post is not None and (isinstance(post, bool) or not isinstance(post, (int, float))):
        raise ValueError(f"the adjudication rule ds_min_posterior is {post!r}")
    cats = doc.get("high_severity_categories")
    if not isinstance(cats, list) or not all(isinstance(c, str) for c in cats):
        raise ValueError(f"the adjudication rule high_severity_categories is {cats!r}")
    # Recorded since annotate-export/8; every earlier adjudication decided on the votes so far.
    wait = doc.get("wait_for_votes", False)
    if not isinstance(wait, bool):
        raise ValueError(f"the adjudication rule wait_for_votes is {wait!r}")
    return Rules(
        policy=doc["policy"],
        escalate_unsure_majority=doc["escalate_unsure_majority"],
        ds_min_posterior=None if post is None else float(post),
        ds_disagreement=doc["ds_disagreement"],
        high_severity_categories=tuple(cats),
        check_share=float(doc["check_share"]),
        min_sure_votes=doc["min_sure_votes"],
        ds_min_reviewers=doc["ds_min_reviewers"],
        ds_min_items=doc["ds_min_items"],
        wait_for_votes=wait,
    )


def decide(
    proposals: pd.DataFrame,
    votes: pd.DataFrame,
    expert: pd.DataFrame,
    rules: Rules,
    waiting: Mapping[int, Sequence[str]] | None = None,
    settled: bool = False,
) -> list[Decision]:
    """The final record per item.

    ``settled``: the expert's labels are a file's final labels, settled before it was imported
    (``import-labels --final``): every item the file settled takes that label first (method
    ``settled``), whatever its votes say; the others are decided as below.

    With ``rules.wait_for_votes``, an item still waiting for a routed vote (``waiting``) and not
    answered by the expert waits (status ``waiting``); otherwise a majority stands, an escalated
    item takes the expert's label (an ``unsure`` expert leaves it unresolved), else
    ``rules.policy`` decides it.

    Parameters
    ----------
    proposals : pandas.DataFrame
        From :func:`propose`.
    votes : pandas.DataFrame
        The annotators' votes (round_item_id, annotator, verdict), recorded with each decision.
    expert : pandas.DataFrame
        The expert's current labels (round_item_id, annotator, verdict).
    rules : Rules
    waiting : mapping of int to sequence of str, optional
        round_item_id -> the reviewers whose vote (a verdict or a skip) is not in yet.

    Returns
    -------
    list of Decision
        One per row of ``proposals``, in its order.

    Examples
    --------
    Item 1 is a tie the expert labelled, item 2 a tie without an expert label, item 3 a
    majority:

    >>> votes = pd.DataFrame(
    ...     {
    ...         "round_item_id": [1, 1, 2, 2, 3, 3, 3],
    ...         "annotator": ["A1", "A2", "A1", "A2", "A1", "A2", "A3"],
    ...         "verdict": ["safe", "harmful", "harmful", "safe", "harmful", "harmful", "safe"],
    ...     }
    ... )
    >>> rules = Rules(policy="unresolved", ds_min_posterior=None)
    >>> expert = pd.DataFrame({"round_item_id": [1], "annotator": ["E1"], "verdict": ["harmful"]})
    >>> for d in decide(propose(votes, rules), votes, expert, rules):
    ...     print(d.round_item_id, d.status, d.label, d.method, d.adjudicator)
    1 resolved harmful expert E1
    2 unresolved None policy:unresolved policy
    3 resolved harmful majority majority vote

    Item 3 while A3's vote was not yet in: it waits, though two votes agree (a third may not).

    >>> d = decide(propose(votes, rules), votes, expert, rules, waiting={3: ["A3"]})[2]
    >>> d.status, d.method, d.reason
    ('waiting', 'waiting', 'waiting for A3; 2 harmful, 1 safe, 0 unsure so far')
    """
    # Plain lists, not groupby and iterrows: an export and verify decide every item of a round
    # (16,000 at the study's scale), where pandas' per-group and per-row objects cost seconds.
    by_item: dict[int, dict[Any, Any]] = {}
    for i, who, said in zip(
        votes.round_item_id.tolist(), votes.annotator.tolist(), votes.verdict.tolist(), strict=True
    ):
        by_item.setdefault(int(i), {})[who] = said
    expert_by_item = expert_answers(expert)
    held = waiting if waiting is not None and rules.wait_for_votes else {}
    out: list[Decision] = []
    columns = ("harmful", "safe", "unsure", "escalate", "majority", "reasons")
    rows = zip(proposals.index.tolist(), *(proposals[c].tolist() for c in columns), strict=True)
    for key, n_harmful, n_safe, n_unsure, escalate, majority, reasons in rows:
        item = int(key)
        v = by_item.get(item, {})
        tally = f"{int(n_harmful)} harmful, {int(n_safe)} safe, {int(n_unsure)} unsure"
        if settled and item in expert_by_item:
            who, verdict = expert_by_item[item]
            sure = verdict in ("harmful", "safe")
            out.append(
                Decision(
                    item,
                    "resolved" if sure else "unresolved",
                    verdict if sure else None,
                    "settled",
                    who,
                    f"settled in the imported file ({verdict}); {tally}",
                    v,
                )
            )
            continue
        missing = held.get(item)
        if missing and item not in expert_by_item:
            out.append(
                Decision(
                    item,
                    "waiting",
                    None,
                    "waiting",
                    "reviewers (pending)",
                    f"waiting for {', '.join(missing)}; {tally} so far",
                    v,
                )
            )
            continue
        if not escalate:
            out.append(Decision(item, "resolved", majority, "majority", "majority vote", f"majority of {tally}", v))
            continue
        if item in expert_by_item:
            who, verdict = expert_by_item[item]
            if verdict in ("harmful", "safe"):
                out.append(Decision(item, "resolved", verdict, "expert", who, f"escalated ({reasons}); {tally}", v))
            else:
                out.append(
                    Decision(
                        item,
                        "unresolved",
                        None,
                        "expert",
                        who,
                        f"the expert was unsure; escalated ({reasons}); {tally}",
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
                    f"escalated ({reasons}); resolved by policy; {tally}",
                    v,
                )
            )
        elif rules.policy in ("unresolved", "majority"):
            out.append(
                Decision(
                    item,
                    "unresolved",
                    None,
                    f"policy:{rules.policy}",
                    "policy",
                    f"escalated ({reasons}); left unresolved by policy; {tally}"
                    if rules.policy == "unresolved"
                    else f"no majority ({reasons}); left unresolved by majority voting; {tally}",
                    v,
                )
            )
        else:
            out.append(
                Decision(item, "escalated", None, "pending", "expert (pending)", f"escalated ({reasons}); {tally}", v)
            )
    return out


# -- judges as raters: a diagnostic beside the labels of record -----------------------------------

#: The kinds of rater in :func:`judges_as_raters`.
REVIEWER, JUDGE = "reviewer", "judge"


def compare_labels(diagnostic: pd.Series, record: pd.Series) -> dict[str, Any]:
    """Item-by-item counts of a diagnostic label set against a label set of record, by direction.

    Parameters
    ----------
    diagnostic, record : pandas.Series
        Item -> label. Only ``harmful`` and ``safe`` are labels; anything else (``unsure``, None,
        NaN, an item missing from one of the two) is no label. The items are the union of both
        indexes.

    Returns
    -------
    dict
        ``n_items``; over the items both label: ``n_both``, ``agree``, ``harmful_vs_safe``
        (diagnostic harmful, record safe), ``safe_vs_harmful``; ``only_diagnostic`` (the
        diagnostic labels an item the record leaves without a label: ``{"harmful": n, "safe":
        n}``); ``only_record`` (the reverse) and ``neither``.

    Examples
    --------
    >>> diag = pd.Series(["harmful", "safe", "harmful", "unsure", "safe"], index=[1, 2, 3, 4, 5])
    >>> record = pd.Series(["harmful", "harmful", None, "safe"], index=[1, 2, 3, 4])
    >>> compare_labels(diag, record)  # doctest: +NORMALIZE_WHITESPACE
    {'n_items': 5, 'n_both': 2, 'agree': 1, 'harmful_vs_safe': 0, 'safe_vs_harmful': 1,
     'only_diagnostic': {'harmful': 1, 'safe': 1}, 'only_record': 1, 'neither': 0}
    """
    index = diagnostic.index.union(record.index)
    d = diagnostic.reindex(index).astype(object)
    r = record.reindex(index).astype(object)
    d_ok = d.isin(BINARY_VERDICTS).to_numpy()
    r_ok = r.isin(BINARY_VERDICTS).to_numpy()
    dv, rv = d.to_numpy(), r.to_numpy()
    both = d_ok & r_ok
    return {
        "n_items": int(len(index)),
        "n_both": int(both.sum()),
        "agree": int((both & (dv == rv)).sum()),
        "harmful_vs_safe": int((both & (dv == "harmful") & (rv == "safe")).sum()),
        "safe_vs_harmful": int((both & (dv == "safe") & (rv == "harmful")).sum()),
        "only_diagnostic": {v: int((d_ok & ~r_ok & (dv == v)).sum()) for v in BINARY_VERDICTS},
        "only_record": int((~d_ok & r_ok).sum()),
        "neither": int((~d_ok & ~r_ok).sum()),
    }


@dataclass
class JudgesAsRaters:
    """Dawid-Skene over the reviewers and the judges together: a diagnostic, never a label of record.

    Attributes
    ----------
    n_items : int
        Reviewed items (with at least one reviewer's vote).
    n_reviewers, n_judges : int
        The raters of each kind.
    n_ratings : int
        Harmful and safe ratings the fit used (reviewers' and judges').
    n_missing : int
        Ratings counted as missing: reviewers' ``unsure``, judges' ``ambiguous``.
    routing_judge : str or None
        The judge whose labels define the round's strata.
    converged : bool
    n_iter : int
    pseudo_count : float
    raters : list of dict
        Per rater: ``rater``, ``kind`` (reviewer / judge), ``routing`` (bool), ``n_harmful``,
        ``n_safe``, ``n_missing``, ``n_unrated``, ``sensitivity``, ``specificity`` (model-based,
        unweighted; None with ``note`` saying why), ``note``.
    items : list of dict
        Per reviewed item: ``round_item_id``, ``ds_label``, ``ds_posterior`` (the fit with
        judges), ``human_ds_label`` (the reviewers-only fit adjudication uses; None without one),
        ``final_label`` (the label of record; None when not resolved).
    vs_final : dict
        :func:`compare_labels` of the labels with judges against the final labels.
    vs_human_ds : dict or None
        :func:`compare_labels` of the labels with judges against the reviewers-only labels.
    vs_human_ds_reason : str or None
        Why ``vs_human_ds`` is None.
    human_ds_vs_final : dict or None
        The same comparison for the reviewers-only labels, for scale.
    caveats : list of str
        What the figures do not say, in sentences.
    """

    n_items: int
    n_reviewers: int
    n_judges: int
    n_ratings: int
    n_missing: int
    routing_judge: str | None
    converged: bool
    n_iter: int
    pseudo_count: float
    raters: list[dict[str, Any]]
    items: list[dict[str, Any]]
    vs_final: dict[str, Any]
    vs_human_ds: dict[str, Any] | None
    vs_human_ds_reason: str | None
    human_ds_vs_final: dict[str, Any] | None
    caveats: list[str]


def judges_as_raters(
    votes: pd.DataFrame,
    reviewers: Sequence[str],
    judges: pd.DataFrame,
    final: pd.Series,
    human_ds: pd.DataFrame | None,
    rules: Rules,
    *,
    routing_judge: str | None = None,
    strata_from: Sequence[str] | None = None,
) -> JudgesAsRaters:
    """Dawid-Skene over the reviewers' votes and every judge's label, compared with the labels of record.

    Each judge is one more rater: its ``ambiguous`` is a missing observation (as a reviewer's
    ``unsure`` is), and so is an item it has no verdict on. Nothing here is used to decide an
    item: the comparison says how often the fit with judges would have labelled an item
    otherwise than the final label and than the reviewers-only fit.

    Parameters
    ----------
    votes : pandas.DataFrame
        The reviewers' current votes: ``round_item_id``, ``annotator``, ``verdict``. Its items are
        the reviewed items; votes of annotators not in ``reviewers`` are left out.
    reviewers : sequence of str
        The round's reviewers (pseudonyms).
    judges : pandas.DataFrame
        One row per reviewed item and judge with a verdict on that response: ``round_item_id``,
        ``judge``, ``judge_label`` (harmful / safe / ambiguous). Rows of other items are left out
        (items nobody reviewed have nothing to compare with).
    final : pandas.Series
        round_item_id -> the final label of record (None or NaN when not resolved).
    human_ds : pandas.DataFrame or None
        The reviewers-only fit (:func:`annotate.stats.aggregation.dawid_skene_labels`), or None
        when adjudication has none (a single reviewer).
    rules : Rules
        For the identification caveat (``ds_min_reviewers``, ``ds_min_items``).
    routing_judge : str, optional
        The judge whose labels define the strata.
    strata_from : sequence of str, optional
        The judges whose unanimity made the strata (a round routed with ``--strata-from``); the
        caveat then names them all.

    Returns
    -------
    JudgesAsRaters

    Examples
    --------
    Two reviewers agree on 40 items; a judge agrees with them on all but four:

    >>> truth = ["harmful" if i % 4 == 0 else "safe" for i in range(40)]
    >>> votes = pd.DataFrame(
    ...     [(i, a, t) for i, t in enumerate(truth) for a in ("A1", "A2")],
    ...     columns=["round_item_id", "annotator", "verdict"],
    ... )
    >>> judges = pd.DataFrame(
    ...     [(i, "j", "harmful" if i in (1, 2) else ("ambiguous" if i in (3, 5) else t)) for i, t in enumerate(truth)],
    ...     columns=["round_item_id", "judge", "judge_label"],
    ... )
    >>> from annotate.stats.aggregation import dawid_skene_labels
    >>> human = dawid_skene_labels(votes, ["A1", "A2"])
    >>> out = judges_as_raters(votes, ["A1", "A2"], judges, pd.Series(truth), human, Rules(), routing_judge="j")
    >>> out.n_items, out.n_ratings, out.n_missing, out.vs_final["agree"], out.vs_human_ds["agree"]
    (40, 118, 2, 40, 40)
    >>> [(r["rater"], r["n_harmful"], r["n_safe"], r["n_missing"]) for r in out.raters]
    [('A1', 10, 30, 0), ('A2', 10, 30, 0), ('j', 12, 26, 2)]
    """
    from annotate.stats.aggregation import dawid_skene_raters

    reviewer_list = [str(r) for r in reviewers]
    votes = votes.loc[votes["annotator"].isin(reviewer_list)]
    items = sorted(set(votes["round_item_id"].tolist()))
    judged = judges.loc[judges["round_item_id"].isin(items)]
    judge_list = sorted(set(judged["judge"].astype(str)))
    ratings = pd.concat(
        [
            pd.DataFrame(
                {
                    "item": votes["round_item_id"].to_numpy(),
                    "kind": REVIEWER,
                    "rater": votes["annotator"].astype(str).to_numpy(),
                    "verdict": votes["verdict"].to_numpy(),
                }
            ),
            pd.DataFrame(
                {
                    "item": judged["round_item_id"].to_numpy(),
                    "kind": JUDGE,
                    "rater": judged["judge"].astype(str).to_numpy(),
                    "verdict": judged["judge_label"].to_numpy(),
                }
            ),
        ],
        ignore_index=True,
    )
    rater_keys = [(REVIEWER, r) for r in reviewer_list] + [(JUDGE, j) for j in judge_list]
    fit = dawid_skene_raters(ratings, rater_keys, items)
    raters = [
        {
            "rater": r.rater,
            "kind": r.kind,
            "routing": bool(r.kind == JUDGE and r.rater == routing_judge),
            "n_harmful": int(r.n_harmful),
            "n_safe": int(r.n_safe),
            "n_missing": int(r.n_missing),
            "n_unrated": int(r.n_unrated),
            "sensitivity": None if r.sensitivity != r.sensitivity else float(r.sensitivity),
            "specificity": None if r.specificity != r.specificity else float(r.specificity),
            "note": r.note,
        }
        for r in fit.raters.itertuples(index=False)
    ]
    with_judges = fit.labels["ds_label"]
    record = final.reindex(items).astype(object)
    record = record.where(record.isin(BINARY_VERDICTS), None)
    human: pd.Series | None = None
    reason = None
    if human_ds is None:
        reason = (
            "one reviewer only: adjudication fits no reviewers-only Dawid-Skene labels"
            if len(reviewer_list) < 2
            else "no reviewers-only Dawid-Skene labels were given"
        )
    else:
        human = human_ds["ds_label"].reindex(items).astype(object)
    n_reviewers, n_judges = len(reviewer_list), len(judge_list)
    caveats = [
        "A diagnostic only: the final labels, escalations and every stored decision are those of the "
        "reviewers' votes, the rules and the expert, exactly as without --ds-with-judges.",
        "Sensitivity and specificity are Dawid-Skene's model-based estimates on the reviewed items, "
        "unweighted by the sampling design (which takes every response the routing judge called ambiguous "
        "and a sample of the others) and resting on raters erring independently given the true label; "
        "`annotate judges` gives the design-weighted audit of each judge, with intervals.",
    ]
    several = [j for j in (strata_from or []) if j in judge_list]
    if strata_from:
        caveats.append(
            f"The strata of this round come from the unanimity of {', '.join(strata_from)} (the census stratum is "
            "exactly where they did not all say harmful or all say safe), so "
            f"{'none of ' + ', '.join(several) + ' is' if several else 'none of them is'} an independent rater of "
            "the selection."
        )
    elif routing_judge is not None and routing_judge in judge_list:
        caveats.append(
            f"{routing_judge} routed this round: its labels define the strata (the census stratum is exactly "
            "where it said ambiguous, its harmful and safe strata are samples), so it is not an independent "
            "rater of the selection."
        )
    short = [
        f"{n} {what} (its escalation rule needs {need})"
        for n, what, need in (
            (n_reviewers, "reviewer(s)", rules.ds_min_reviewers),
            (len(items), "reviewed item(s)", rules.ds_min_items),
        )
        if n < need
    ]
    if short:
        caveats.append(
            f"{n_reviewers + n_judges} raters ({n_reviewers} reviewer(s), {n_judges} judge(s)) on {len(items)} "
            f"item(s). With {' and '.join(short)}, Dawid-Skene is weakly identified: the judges add raters, "
            "but read these figures as rough."
        )
    if not fit.result.converged:
        caveats.append(f"Dawid-Skene's EM did not converge in {fit.result.n_iter} iterations.")
    item_rows = [
        {
            "round_item_id": it,
            "ds_label": with_judges.loc[it],
            "ds_posterior": fit.labels.loc[it, "ds_posterior"],
            "human_ds_label": None if human is None or not isinstance(human.loc[it], str) else human.loc[it],
            "final_label": record.loc[it],
        }
        for it in items
    ]
    return JudgesAsRaters(
        n_items=len(items),
        n_reviewers=n_reviewers,
        n_judges=n_judges,
        n_ratings=int(fit.labels["n_ratings"].sum()),
        n_missing=int(fit.raters["n_missing"].sum()),
        routing_judge=routing_judge,
        converged=bool(fit.result.converged),
        n_iter=int(fit.result.n_iter),
        pseudo_count=float(fit.result.pseudo_count),
        raters=raters,
        items=item_rows,
        vs_final=compare_labels(with_judges, record),
        vs_human_ds=None if human is None else compare_labels(with_judges, human),
        vs_human_ds_reason=reason,
        human_ds_vs_final=None if human is None else compare_labels(human, record),
        caveats=caveats,
    )
