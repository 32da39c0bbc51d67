"""`annotate summary`: label shares per model x benchmark, and how rankings move with ambiguous responses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from annotate.stats.shares import cell_shares, ranking_sensitivity

if TYPE_CHECKING:
    from annotate.pipeline.session import Session


@dataclass
class Summary:
    cells: pd.DataFrame  # per judge x model x benchmark: n and share of each judge label
    ranking: pd.DataFrame  # per judge x model: rates and ranks with ambiguous as safe / as harmful
    ambiguity_warn: float  # the share of ambiguous responses highlighted ([summary] ambiguity_warn)


def summary(s: Session, *, judge: str | None = None) -> Summary:
    shares = cell_shares(s.store.label_counts(judge=judge))
    return Summary(
        cells=shares,
        ranking=ranking_sensitivity(shares),
        ambiguity_warn=float(s.ws.setting("summary", "ambiguity_warn", 0.10)),
    )
