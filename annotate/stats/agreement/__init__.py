"""Inter-annotator agreement: pure, vectorised statistics on count matrices.

Every coefficient here is computed from the **count matrix** ``n`` with shape ``(U, V)``: one row
per unit (a response sent to humans), one column per category, ``n[u, c]`` = number of annotators
who gave unit ``u`` category ``c``; ``m_u = n[u].sum()`` is the number of ratings of unit ``u``.
Helpers build it from a long table ``(item, annotator, label)`` or from a reliability matrix
``(annotators, units)`` with NaN for missing. Functions that need annotator identity (Cohen's
kappa, per-annotator diagnostics, Dawid-Skene) take a **label matrix** of integer codes with shape
``(U, J)``, ``-1`` or NaN meaning "no rating".

Notation follows ``docs/methods.md`` section 2: ``o`` coincidence matrix, ``n_c`` its margins,
``p_a`` / ``p_e`` observed and chance agreement, ``pi_q`` Gwet's category propensities.

Conventions (documented because the libraries disagree):

* **Single-rating units** (``m_u = 1``) are unpairable: they never enter alpha, percent agreement
  or category-specific agreement, but they *do* count towards AC1's ``pi_q`` (Gwet 2014 /
  irrCAC raw-data formulas). Fleiss' kappa uses complete units only (``m_u = r``) and reports how
  many units it dropped.
* **Q for AC1** is the number of declared categories (columns), as irrCAC does when the category
  labels are given; irrCAC's default counts only observed categories.
* **Percent agreement** is Gwet's ``p_a``: the mean over pairable units of the share of agreeing
  rater pairs, each unit weighted equally (alpha weights units by their number of values).
* **Undefined** results never raise and never fake a value: ``value`` is NaN and
  ``undefined_reason`` says why (fewer than two pairable units, one category only, no complete
  unit, ...). AC1 with a single observed category would be 1 by construction (``p_e = 0``) and
  is reported as undefined for the same reason as alpha.
* **Bootstrap**: Efron's nonparametric bootstrap over the units that enter each coefficient,
  BCa interval (bias-corrected and accelerated, the acceleration from the jackknife; issue #23:
  the percentile interval covered 0.30-0.88 on groups of 5-20 units), drawn in pattern-compressed
  form (docs/methods.md section 2.3). Replicates on which a coefficient is undefined (e.g. alpha on
  a resample with one category) are left out and counted in ``n_boot_undefined``. **No interval**
  (and so no verdict) with fewer than 30 pairable values or (alpha, Fleiss, Conger, category
  agreement) fewer than 10 pairable units holding the second most frequent category, with a
  majority of undefined replicates, or where it would have zero width: ``interval_note`` says why
  ("too few units for an interval"; docs/methods.md 9.13). The two-rater kappas of the reviewer
  diagnostics keep the percentile interval and their own minimum.

* **Two-rater kappas** (Cohen's, linear and quadratic weighted) carry the analytic SE of
  Fleiss, Cohen & Everitt (1969) beside the bootstrap, and a z test against chance; Fleiss'
  kappa on complete units carries the z test of Fleiss, Nee & Landis (1979).
* **Votes treated as missing** (the binary set's ``unsure``) are counted and reported with the
  summary (``AgreementSummary.dropped``): binary alpha describes the easier subset that remains.

Modules: ``results`` (result types), ``matrices`` (label- and count-matrix builders),
``_bootstrap`` (the pattern-compressed bootstrap and jackknife), ``_estimation`` (the one
estimation path and the undefined cases), ``_analytic`` (the analytic SEs and z tests of the
kappas and of Fleiss' kappa), ``coefficients`` (the core: alpha, AC1, Fleiss, percent and
category agreement), ``kappas`` (Cohen and weighted kappa, Brennan-Prediger, Conger, pairwise
Cohen), ``summary`` (one group's summary, the prevalence warning, the dropped votes),
``annotators`` (per-annotator diagnostics), ``progress`` (a round while it runs: time per task,
agreement so far, who stands out) and ``votes`` (the store's votes as label matrices;
Krippendorff's thresholds).
Dawid-Skene lives in :mod:`annotate.stats.aggregation`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from annotate.stats.agreement.annotators import annotator_diagnostics
    from annotate.stats.agreement.coefficients import (
        Level,
        category_agreement,
        fleiss_kappa,
        gwet_ac1,
        krippendorff_alpha,
        percent_agreement,
    )
    from annotate.stats.agreement.kappas import (
        brennan_prediger,
        cohen_kappa,
        cohen_kappa_table,
        conger_kappa,
        pairwise_cohen_kappa,
        randolph_kappa,
        weighted_kappa,
        weighted_kappa_table,
    )
    from annotate.stats.agreement.matrices import (
        LabelMatrix,
        counts_from_codes,
        counts_from_long,
        counts_from_reliability_data,
        label_matrix_from_long,
        label_matrix_from_reliability_data,
    )
    from annotate.stats.agreement.results import (
        CONVENTIONS,  # noqa: F401  (public before the split; not in __all__)
        AgreementSummary,
        AlphaResult,
        AnnotatorDiagnostic,
        AnnotatorDiagnostics,
        Coefficient,
        DroppedVotes,
        PairwiseKappa,
    )
    from annotate.stats.agreement.summary import agreement_summary, dropped_votes, prevalence_warning
    from annotate.stats.agreement.votes import (
        Thresholds,
        current_labels,
        verdict_for,
        vote_matrix,
        vote_matrix_with_dropped,
    )

#: Where each public name lives. The submodules are imported when a name is first used (PEP 562),
#: so that a command needing only the votes (``status``) does not load every coefficient.
_SUBMODULE = {
    "annotator_diagnostics": "annotators",
    "Level": "coefficients",
    "category_agreement": "coefficients",
    "fleiss_kappa": "coefficients",
    "gwet_ac1": "coefficients",
    "krippendorff_alpha": "coefficients",
    "percent_agreement": "coefficients",
    "brennan_prediger": "kappas",
    "cohen_kappa": "kappas",
    "cohen_kappa_table": "kappas",
    "conger_kappa": "kappas",
    "pairwise_cohen_kappa": "kappas",
    "randolph_kappa": "kappas",
    "weighted_kappa": "kappas",
    "weighted_kappa_table": "kappas",
    "LabelMatrix": "matrices",
    "counts_from_codes": "matrices",
    "counts_from_long": "matrices",
    "counts_from_reliability_data": "matrices",
    "label_matrix_from_long": "matrices",
    "label_matrix_from_reliability_data": "matrices",
    "CONVENTIONS": "results",
    "AgreementSummary": "results",
    "AlphaResult": "results",
    "AnnotatorDiagnostic": "results",
    "AnnotatorDiagnostics": "results",
    "Coefficient": "results",
    "DroppedVotes": "results",
    "PairwiseKappa": "results",
    "agreement_summary": "summary",
    "dropped_votes": "summary",
    "prevalence_warning": "summary",
    "Thresholds": "votes",
    "current_labels": "votes",
    "verdict_for": "votes",
    "vote_matrix": "votes",
    "vote_matrix_with_dropped": "votes",
}


def __getattr__(name: str) -> Any:
    submodule = _SUBMODULE.get(name)
    if submodule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{submodule}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBMODULE})


__all__ = [
    "Level",
    "LabelMatrix",
    "Coefficient",
    "AlphaResult",
    "PairwiseKappa",
    "AgreementSummary",
    "DroppedVotes",
    "AnnotatorDiagnostic",
    "AnnotatorDiagnostics",
    "label_matrix_from_long",
    "label_matrix_from_reliability_data",
    "counts_from_codes",
    "counts_from_long",
    "counts_from_reliability_data",
    "krippendorff_alpha",
    "gwet_ac1",
    "fleiss_kappa",
    "percent_agreement",
    "category_agreement",
    "cohen_kappa_table",
    "cohen_kappa",
    "pairwise_cohen_kappa",
    "weighted_kappa_table",
    "weighted_kappa",
    "brennan_prediger",
    "randolph_kappa",
    "conger_kappa",
    "prevalence_warning",
    "dropped_votes",
    "agreement_summary",
    "annotator_diagnostics",
    # from votes.py
    "Thresholds",
    "verdict_for",
    "current_labels",
    "vote_matrix",
    "vote_matrix_with_dropped",
]
