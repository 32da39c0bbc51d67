"""Ambiguity correlates: offline text features per response and the association model.

Pure functions on DataFrames: no database, no file or environment access (beyond ``wordfreq``
loading its own packaged frequency tables). ``docs/methods.md`` section 6 is the specification.
The package has these parts:

* :mod:`~annotate.stats.correlates.features`: the tokeniser and :func:`compute_features`
  (length, lexical density, sophistication, unigram and cross-fitted Kneser-Ney bigram
  surprisal, TF-IDF self-coherence and reply-prompt similarity; optionally a language-model
  surprisal from a scorer the caller passes, see ``annotate.pipeline._local_lm``);
* :mod:`~annotate.stats.correlates.model`: :func:`fit_ambiguity_model` (logit on the
  z-scored features with model and benchmark fixed effects, prompt-clustered standard errors,
  Holm, VIF, cross-validated AUC) and :func:`fit_human_harmful_model`; its design matrix (usable
  rows, separated levels dropped, z-scored features, dummies, prompt clusters) is built in
  :mod:`~annotate.stats.correlates.design` and its cross-validated AUCs in
  :mod:`~annotate.stats.correlates.auc`;
* :mod:`~annotate.stats.correlates.study`: the study's expected directions (:data:`CORRELATES`)
  and :func:`compare_with_study`;
* :mod:`~annotate.stats.correlates.closed_class`: the curated closed-class word list (a
  constant of the package).

    from annotate.stats import correlates as co
    feats = co.compute_features(frame)              # response_id, model, prompt, response
    fit = co.fit_ambiguity_model(feats, judge_said_ambiguous, model, benchmark, prompt_id)
    co.compare_with_study(fit)
"""

from __future__ import annotations

from annotate.stats.correlates.closed_class import closed_class_words
from annotate.stats.correlates.features import (
    FEATURE_COLUMNS,
    SENTENCE_RE,
    TOKEN_RE,
    compute_features,
    split_sentences,
    tokenize,
)
from annotate.stats.correlates.model import AmbiguityModel, fit_ambiguity_model, fit_human_harmful_model
from annotate.stats.correlates.study import CORRELATES, Correlate, compare_with_study, study_direction

__all__ = [
    "CORRELATES",
    "FEATURE_COLUMNS",
    "SENTENCE_RE",
    "TOKEN_RE",
    "AmbiguityModel",
    "Correlate",
    "closed_class_words",
    "compare_with_study",
    "compute_features",
    "fit_ambiguity_model",
    "fit_human_harmful_model",
    "split_sentences",
    "study_direction",
    "tokenize",
]
