"""The study's six correlates of ambiguity, their expected directions, and the reading of a fit against them.

:data:`CORRELATES` (and :data:`study_direction`) hold the expected sign of each correlate's
feature column on P(judge says ambiguous); ``_ALTERNATIVES`` the other columns that measure
the same correlate. :func:`compare_with_study` reads a fitted
:class:`annotate.stats.correlates.model.AmbiguityModel` against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from annotate.stats.correlates.model import AmbiguityModel


@dataclass(frozen=True)
class Correlate:
    """One of the six correlates of ambiguity: its feature column and the study's expected sign
    of the effect *of that column* on P(judge says ambiguous)."""

    name: str
    column: str
    expected_sign: int  # +1: a higher column value raises ambiguity; -1: lowers it
    note: str


# The study's expected directions: length +, density +, perplexity +, sophistication -,
# coherence -, similarity -. Sophistication is measured by zipf_mean, which is high for COMMON
# words, i.e. low sophistication: "sophistication -" is therefore a positive sign on zipf_mean.
CORRELATES: tuple[Correlate, ...] = (
    Correlate("length", "log_len", +1, "longer replies are more often judged ambiguous"),
    Correlate("density", "lexical_density", +1, "denser replies are more often judged ambiguous"),
    Correlate(
        "sophistication",
        "zipf_mean",
        +1,
        "sophistication lowers ambiguity; zipf_mean is inverse sophistication, so its sign is +",
    ),
    Correlate("perplexity", "bigram_log_ppl", +1, "less predictable replies are more often ambiguous"),
    Correlate("coherence", "coherence", -1, "more coherent replies are less often ambiguous"),
    Correlate("similarity", "prompt_similarity", -1, "replies closer to the prompt are less often ambiguous"),
)

#: feature column -> expected sign of its odds ratio (>1: +1, <1: -1), per the study.
study_direction: Mapping[str, int] = {c.column: c.expected_sign for c in CORRELATES}

# Other columns that measure the same correlate (``columns=`` of the fit may use them instead),
# with the study's sign for that column. rare_share is direct sophistication, hence -1.
_ALTERNATIVES: Mapping[str, tuple[tuple[str, int], ...]] = {
    "length": (("n_tokens", +1),),
    "sophistication": (("rare_share", -1),),
    "perplexity": (("lm_log_ppl", +1), ("unigram_log_ppl", +1)),
}
_CORRELATE_OF: dict[str, tuple[str, int]] = {c.column: (c.name, c.expected_sign) for c in CORRELATES}
for _name, _alts in _ALTERNATIVES.items():
    for _col, _sign in _alts:
        _CORRELATE_OF[_col] = (_name, _sign)


def compare_with_study(result: AmbiguityModel) -> pd.DataFrame:
    """Which of the study's six correlates hold here.

    Parameters
    ----------
    result : AmbiguityModel
        A fit from :func:`fit_ambiguity_model` (or :func:`fit_human_harmful_model`).

    Returns
    -------
    DataFrame, (6, 6)
        One row per correlate in :data:`CORRELATES`: correlate; feature, the column that
        measured it (the default column, or an alternative such as ``lm_log_ppl`` for
        perplexity or ``rare_share`` for sophistication when the fit used that one); expected,
        the study's direction for that column; odds_ratio and verdict as observed; and
        ``holds``: "holds" (significant after Holm, outside the null band, expected side),
        "reversed" (same, other side), "no effect" (negligible or not significant), "not
        estimable", or "not in model".
    """
    rows = []
    by_feature = result.table.set_index("feature")
    for c in CORRELATES:
        candidates = [(c.column, c.expected_sign), *_ALTERNATIVES.get(c.name, ())]
        found = [(col, sign) for col, sign in candidates if col in by_feature.index]
        if not found:
            rows.append(
                {
                    "correlate": c.name,
                    "feature": c.column,
                    "expected": f"{'raises' if c.expected_sign > 0 else 'lowers'} {result.outcome_name}",
                    "odds_ratio": np.nan,
                    "verdict": "",
                    "holds": "not in model",
                }
            )
            continue
        col, sign = found[0]
        r = by_feature.loc[col]
        verdict = r["verdict"]
        if verdict.startswith(("raises", "lowers")):
            observed = +1 if r["odds_ratio"] > 1 else -1
            holds = "holds" if observed == sign else "reversed"
        elif verdict in ("negligible", "not significant"):
            holds = "no effect"
        else:
            holds = "not estimable"
        rows.append(
            {
                "correlate": c.name,
                "feature": col,
                "expected": f"{'raises' if sign > 0 else 'lowers'} {result.outcome_name}",
                "odds_ratio": r["odds_ratio"],
                "verdict": verdict,
                "holds": holds,
            }
        )
    return pd.DataFrame(rows)
