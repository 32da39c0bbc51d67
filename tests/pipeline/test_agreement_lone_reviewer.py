"""`annotate agreement`: Dawid-Skene rates only for a reviewer who shares items with two others (issue #41).

The rounds are JailbreakBench's judge-comparison table (tests/data/formats/jailbreakbench-judges)
imported with its raters split:

* three and a lone fourth: human1, human2 and human3 label responses 0-199 together, and a fourth
  rater (``human4``: the file's ``human_majority`` with every 25th label flipped) labels responses
  200-299 alone. A1-A3 keep their figures, the fit's own; A4 gets none: no item shared.
* two and a lone third: human1 and human2 label responses 0-199, human3 alone labels responses
  200-299. None of them gets figures: A1 and A2 share items with one other rater only, A3 with none.
  Before, `annotate agreement` printed A1 and A2 the same pooled sensitivity and specificity
  (0.619, 0.960), and A3 0.733 and 0.044, from nothing but A3's own votes.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from annotate.audit.agreement import agreement_groups
from annotate.cli import cli
from annotate.columns import BINARY_VERDICTS
from annotate.stats.aggregation import dawid_skene
from annotate.stats.agreement.annotators import DS_NOT_SHARED, DS_ONE_OTHER
from annotate.stats.agreement.votes import Thresholds

JBB = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "formats"
    / "jailbreakbench-judges"
    / "judge_comparison.synthetic.csv"
)
GROUPS = {"pooled (mixture)", "stratum=harmful", "stratum=safe"}
#: The pooled fit's (sensitivity, specificity) for harmful of A1-A3, who rate responses 0-199
#: together, beside A4 alone on 200-299 (fitted on the items two or more raters voted on; A1 and A2
#: alike: the fixture's dissents are symmetric).
THREE = {
    "A1": (0.804418435907399, 0.9475513678130941),
    "A2": (0.8044184359073989, 0.9475513678130941),
    "A3": (0.878934034488253, 0.9471423568152485),
}
#: A1's and A2's (sensitivity, specificity) for harmful in the fit on the two and a lone third,
#: figures of a model that is not identified (the values `annotate agreement` printed before).
BEFORE = {
    "pooled (mixture)": {
        "A1": (0.6189000048738867, 0.9598549868284973),
        "A2": (0.6189000048738867, 0.9598549868284973),
    },
    "stratum=harmful": {
        "A1": (0.14424686364248235, 0.36391940573476655),
        "A2": (0.1050850344054945, 0.4073864793632487),
    },
    "stratum=safe": {"A1": (0.5818945248135983, 0.962467883910561), "A2": (0.607769953197519, 0.9590632093589205)},
}
FLIPPED = range(200, 300, 25)  # human4's labels that are not human_majority's


def _table(tmp_path: Path, design: str) -> Path:
    """The table with the raters of ``design`` ("three" or "two") blank where they did not rate."""
    with JBB.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    fields = list(rows[0])
    for i, row in enumerate(rows):
        if design == "three":
            blank = ("human1", "human2", "human3") if i >= 200 else ()
            majority = row["human_majority"]
            row["human4"] = "" if i < 200 else str(1 - int(majority)) if i in FLIPPED else majority
        else:
            blank = ("human3",) if i < 200 else ("human1", "human2")
        for rater in blank:
            row[rater] = ""
    if design == "three":
        fields.insert(fields.index("human3") + 1, "human4")
    out = tmp_path / f"judge_comparison_{design}.csv"
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return out


def _import(workspace, runner, path: Path) -> list[str]:
    _, prefix = workspace
    result = runner.invoke(cli, [*prefix, "import-labels", str(path), "--round", "jbb"])
    assert result.exit_code == 0, result.output
    return prefix


@pytest.fixture
def three_round(workspace, runner, tmp_path):
    return _import(workspace, runner, _table(tmp_path, "three"))


@pytest.fixture
def two_round(workspace, runner, tmp_path):
    return _import(workspace, runner, _table(tmp_path, "two"))


def _per_annotator(output: str, n: int) -> tuple[dict[str, list[str]], list[str]]:
    """The per-annotator rows of `annotate agreement` by name, and the DS footnotes."""
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("annotator "))
    rows = {line.split()[0]: line.split() for line in lines[header + 2 : header + 2 + n]}
    notes: list[str] = []  # each footnote a paragraph wrapped to 100 columns: its lines joined back
    for line in lines[header + 2 + n :]:
        if line.startswith("DS sens./spec. -"):
            notes.append(line)
        elif notes and line.strip():
            notes[-1] += " " + line.strip()
        elif notes:
            break
    return rows, notes


def _votes(path: Path) -> pd.DataFrame:
    """The long table of votes `agreement_groups` takes, from a split table."""
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    raters = [c for c in table.columns if c.startswith("human") and c != "human_majority"]
    rows = [
        (i, f"A{k}", {"1": "harmful", "0": "safe"}[row[rater]])
        for i, row in table.iterrows()
        for k, rater in enumerate(raters, start=1)
        if row[rater]
    ]
    votes = pd.DataFrame(rows, columns=["round_item_id", "annotator", "verdict"])
    return votes.assign(stratum="all", benchmark="jbb", model="m", category="", gold_label=None)


def test_three_raters_together_keep_their_figures_and_a_lone_fourth_gets_the_reason(three_round, runner):
    out = runner.invoke(cli, [*three_round, "agreement", "--round", "jbb", "--boot", "0"])
    assert out.exit_code == 0, out.output
    rows, notes = _per_annotator(out.output, 4)
    assert rows["A4"][6:8] == ["-", "-"], rows["A4"]  # DS sens., DS spec.
    for name, (sens, spec) in THREE.items():
        assert rows[name][6:8] == [f"{sens:.3f}", f"{spec:.3f}"], rows[name]
    assert notes == [f"DS sens./spec. - for A4: {DS_NOT_SHARED}."]


def test_three_raters_figures_are_the_fits_own(three_round, runner, tmp_path):
    out = runner.invoke(cli, [*three_round, "agreement", "--round", "jbb", "--boot", "0", "--json"])
    assert out.exit_code == 0, out.output
    groups = json.loads(out.output)["groups"]
    assert {g["group"] for g in groups} == GROUPS
    for g in groups:
        by_name = {a["annotator"]: a for a in g["annotators"]}
        a4 = by_name["A4"]
        assert a4["ds_sensitivity_harmful"] is None and a4["ds_specificity_harmful"] is None
        assert a4["ds_n_shared"] == 0 and a4["ds_undefined_reason"] == DS_NOT_SHARED
        for name in ("A1", "A2", "A3"):
            a = by_name[name]
            assert a["ds_sensitivity_harmful"] is not None and a["ds_specificity_harmful"] is not None
            assert a["ds_n_shared"] > 0 and a["ds_undefined_reason"] is None
    # Pooled: the figures of a Dawid-Skene fit on the table itself, on the items two or more raters voted on
    # (responses 0-199, shared by all three; A4's lone items carry no evidence on anyone's errors).
    pooled = next(g for g in groups if g["pooled"] and g["labels"] == "binary")
    table = pd.read_csv(_table(tmp_path, "three"), dtype=str, keep_default_na=False)
    y = np.array([[int(v) if v else -1 for v in table[f"human{k}"]] for k in (1, 2, 3, 4)]).T
    y = np.where(((y >= 0).sum(axis=1) >= 2)[:, None], y, -1)
    fit = dawid_skene(np.where(y >= 0, 1 - y, -1), len(BINARY_VERDICTS))  # 1 (jailbroken) is harmful, code 0
    sens, spec = fit.sensitivity_specificity(BINARY_VERDICTS.index("harmful"))
    by_name = {a["annotator"]: a for a in pooled["annotators"]}
    for jj, name in enumerate(("A1", "A2", "A3")):
        a = by_name[name]
        assert (a["ds_sensitivity_harmful"], a["ds_specificity_harmful"]) == pytest.approx((sens[jj], spec[jj]))
        assert (a["ds_sensitivity_harmful"], a["ds_specificity_harmful"]) == pytest.approx(THREE[name], rel=1e-12)
        assert a["ds_n_shared"] == 200
    assert fit.n_shared is not None and fit.n_shared.tolist() == [200, 200, 200, 0]


def test_two_raters_sharing_items_get_no_figures_and_say_why(two_round, runner):
    out = runner.invoke(cli, [*two_round, "agreement", "--round", "jbb", "--boot", "0"])
    assert out.exit_code == 0, out.output
    rows, notes = _per_annotator(out.output, 3)
    for name in ("A1", "A2", "A3"):
        assert rows[name][6:8] == ["-", "-"], rows[name]
    assert notes == [f"DS sens./spec. - for A1, A2: {DS_ONE_OTHER}.", f"DS sens./spec. - for A3: {DS_NOT_SHARED}."]
    out = runner.invoke(cli, [*two_round, "agreement", "--round", "jbb", "--boot", "0", "--json"])
    groups = json.loads(out.output)["groups"]
    assert {g["group"] for g in groups} == GROUPS
    for g in groups:
        by_name = {a["annotator"]: a for a in g["annotators"]}
        for name, reason in (("A1", DS_ONE_OTHER), ("A2", DS_ONE_OTHER), ("A3", DS_NOT_SHARED)):
            a = by_name[name]
            assert a["ds_sensitivity_harmful"] is None and a["ds_specificity_harmful"] is None
            assert a["ds_n_shared"] == 0 and a["ds_undefined_reason"] == reason


def test_export_layout_is_kept_until_a_schema_adopts_the_rule(tmp_path):
    # agreement.json up to annotate-export/10 (export_agreement's default): every rate the fit
    # gives, no ds_n_shared / ds_undefined_reason, so that verify re-derives those exports as written.
    votes = _votes(_table(tmp_path, "two"))
    kw = {"by": "stratum", "n_boot": 0, "seed": 0, "thresholds": Thresholds()}
    ruled = agreement_groups(votes, ["A1", "A2", "A3"], **kw)
    legacy = agreement_groups(votes, ["A1", "A2", "A3"], ds_shared_only=False, **kw)
    pooled = next(g for g in legacy if g["pooled"] and g["labels"] == "binary")
    a1, _, a3 = pooled["annotators"]
    assert not {"ds_n_shared", "ds_undefined_reason"} & set(a3)
    assert (a3["ds_sensitivity_harmful"], a3["ds_specificity_harmful"]) == pytest.approx((0.7333, 0.0436), abs=1e-4)
    assert (a1["ds_sensitivity_harmful"], a1["ds_specificity_harmful"]) == pytest.approx(
        BEFORE["pooled (mixture)"]["A1"]
    )
    for new, old in zip(ruled, legacy, strict=True):
        for a, b in zip(new["annotators"], old["annotators"], strict=True):
            # Under the rule no one of the two and a lone third has figures; the rest is the same.
            rest = {k: v for k, v in a.items() if k not in ("ds_n_shared", "ds_undefined_reason")}
            assert rest["ds_sensitivity_harmful"] is None and rest["ds_specificity_harmful"] is None
            assert b["ds_sensitivity_harmful"] is not None and b["ds_specificity_harmful"] is not None
            assert rest | {k: b[k] for k in ("ds_sensitivity_harmful", "ds_specificity_harmful")} == b
        assert {k: v for k, v in new.items() if k != "annotators"} == {
            k: v for k, v in old.items() if k != "annotators"
        }
