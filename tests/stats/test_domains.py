"""Scores by domain (``annotate.stats.scoring.domains``, issue #44): what the stacked rows keep."""

from __future__ import annotations

import pandas as pd

from annotate.columns import SCORE_COLUMNS
from annotate.stats.scoring.domains import EVERY_MODEL, stacked_scores


def test_a_refused_domain_is_a_row_with_its_reason_not_left_out():
    rows = stacked_scores({"vcr": "no benchmark is shared by the models of this hazard"})
    assert list(rows.columns) == [*SCORE_COLUMNS, "domain"]
    (row,) = rows.to_dict("records")
    assert row["model"] == EVERY_MODEL and row["domain"] == "vcr" and pd.isna(row["estimate"])
    assert row["flag"] == row["note"] == "no benchmark is shared by the models of this hazard"
