"""Settings of annotate.toml turned into the typed objects the statistics take."""

from __future__ import annotations

from typing import TYPE_CHECKING

from annotate.stats.adjudication import Rules, majority_rules
from annotate.stats.agreement.votes import Thresholds

if TYPE_CHECKING:
    from annotate.config import Workspace


def thresholds_from_settings(ws: Workspace) -> Thresholds:
    """``[agreement]``: Krippendorff's reading of alpha and the per-annotator flags."""
    cfg = ws.settings.get("agreement", {})
    return Thresholds(
        reliable=float(cfg.get("reliable", 0.8)),
        tentative=float(cfg.get("tentative", 0.667)),
        kappa_consensus=float(cfg.get("kappa_consensus", 0.6)),
        alpha_gain=float(cfg.get("alpha_gain", 0.05)),
    )


def rules_from_settings(ws: Workspace, policy: str) -> Rules:
    """``[adjudication]``: escalation rules, with the --policy for escalations nobody decides."""
    cfg = ws.settings.get("adjudication", {})
    ds = cfg.get("ds_min_posterior", 0.9)
    rules = Rules(
        policy="unresolved" if policy == "majority" else policy,
        escalate_unsure_majority=bool(cfg.get("escalate_unsure_majority", True)),
        ds_min_posterior=None if ds in (None, False, 0) else float(ds),
        ds_disagreement=bool(cfg.get("ds_disagreement", True)),
        high_severity_categories=tuple(cfg.get("high_severity_categories", ())),
        check_share=float(cfg.get("check_share", 0.05)),
        min_sure_votes=int(cfg.get("min_sure_votes", 2)),
        ds_min_reviewers=int(cfg.get("ds_min_reviewers", 3)),
        ds_min_items=int(cfg.get("ds_min_items", 30)),
    )
    return majority_rules(rules) if policy == "majority" else rules
