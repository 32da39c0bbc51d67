"""Ambiguity correlates: offline text features per response and the association model.

Pure functions on DataFrames (no database). ``methods.md`` section 6 is the specification.

**Features** (:func:`compute_features`), one row per response, all computed offline:

* tokeniser: lower-case, regex ``[a-z]+(?:'[a-z]+)?``; sentences split on ``(?<=[.!?])\\s+``.
  One pre-step before the regex: the typographic apostrophe U+2019 (and U+02BC) becomes ``'``,
  so ``don’t`` is one token like ``don't`` instead of the two content tokens ``don`` + ``t``.
  Tokens never straddle a sentence break (the break is whitespace), so the response's tokens
  are exactly its sentences' tokens in order. Sentences without any token ("1." in a numbered
  list) are not counted as sentences.
* ``n_tokens``, ``n_chars``, ``n_sentences``; ``log_len = log(1 + n_tokens)``.
* ``lexical_density`` (Ure 1971): tokens not in the shipped closed-class list
  (``annotate/data/closed_class_words.txt``) / tokens.
* ``zipf_mean``: mean ``wordfreq`` Zipf frequency of the content tokens (unknown word = 0.0);
  ``rare_share``: share of content tokens with Zipf < 4. Looked up once per vocabulary type.
* ``unigram_log_ppl``: mean surprisal in nats, ``-mean ln p(w)``, with ``p`` = wordfreq's
  general-English frequency floored at 1e-8 (the log of the unigram perplexity).
* ``bigram_log_ppl``: mean surprisal of each token given the previous one (the first given a
  start symbol; no end symbol) under an interpolated Kneser-Ney bigram model with discount 0.75,
  trained on the responses themselves and **cross-fitted**: responses are split into 2 folds by
  model (whole models, balanced by token count), and each fold is scored by the model trained on
  the other fold, so no response (and no model's own style) ever scores itself. With a single
  model the folds are a stable hash (CRC-32) of ``response_id``. The unigram level is itself
  interpolated with a uniform distribution over the training types plus one unknown type, so
  unseen words get a finite probability and every conditional distribution sums to one.
* ``coherence``: mean TF-IDF cosine of adjacent sentences, TF-IDF as scikit-learn's
  ``TfidfVectorizer(min_df=2, sublinear_tf=True)`` fitted on all sentences of all responses
  (smooth idf ``ln((1 + n) / (1 + df)) + 1``, ``1 + ln tf``, L2 rows); NaN below 2 sentences,
  with ``coherence_missing`` = 1.
* ``prompt_similarity``: TF-IDF cosine of prompt and response, as
  ``TfidfVectorizer(stop_words=<closed-class list>)`` fitted on the responses plus each distinct
  prompt once; 0 when either has no word outside the list (scikit-learn's convention), NaN for an
  empty response or a missing prompt.
* optional ``lm_log_ppl``: mean token surprisal under a causal language model loaded only from a
  user-given local directory (``local_files_only=True``, hub offline). ``transformers`` and
  ``torch`` are not dependencies; they are imported only then.

Implementation: texts are tokenised in chunks of ``chunk_size`` responses into one int32 array
of token ids (one global vocabulary) plus sentence lengths, so no per-token Python object
outlives its chunk; every feature is then computed with numpy/scipy.sparse, again chunk by chunk
where temporaries scale with the tokens. The TF-IDF formulas run on the token ids with global
document frequencies, so no value depends on the chunking; the tests check them against
``TfidfVectorizer`` itself. The bigram model finds the distinct bigrams once (hash
factorisation) with their count per fold and evaluates both fold models on that table. Measured
on the 2-core machine: about 1 min and 2.3 GiB peak for 130,000 responses of 250 words
(``bench/correlates.py``).

**Association** (:func:`fit_ambiguity_model`): logistic regression of a 0/1 outcome (the judge
said "ambiguous") on the z-scored features, with model and benchmark fixed effects (dummies),
cluster-robust standard errors by prompt (statsmodels ``Logit``, ``cov_type="cluster"``). Odds
ratio per SD with a 95 % interval, Holm-adjusted p-values over the features (statsmodels
``multipletests``), variance inflation factors on the full design the regression sees (equal to
statsmodels' ``variance_inflation_factor``, computed from one Gram matrix), and the
cross-validated AUC (scikit-learn ``LogisticRegression``, folds grouped by prompt) of the
features alone against the fixed effects alone (and of both).
An odds ratio inside the null band (default 0.9-1.1 per SD) is "negligible" whatever its p-value.

Conventions worth knowing:

* ``coherence`` enters as its z-score with missing values set to 0 (the mean) plus the
  ``coherence_missing`` indicator as a control (missing-indicator method); the indicator is not
  one of the six reported correlates and is left out when it does not vary.
* Rows with a missing outcome, grouping value or feature (other than coherence) are dropped
  and counted in ``dropped``.
* A fixed-effect level whose responses all have the same outcome is perfectly separated by its
  dummy: its maximum-likelihood effect is infinite and its rows carry no information about the
  features. Such rows are dropped before fitting (as fixest does), repeatedly until no level is
  constant, and counted; ``predict_proba`` gives those levels probability 0 or 1. The same holds
  for the coherence-missing indicator when every one-sentence reply has the same outcome.
* Separation that remains (a feature or combination predicting the outcome perfectly) is
  detected (non-convergence, fitted probabilities within 1.5e-8 of 0 or 1, a coefficient above
  10 in absolute value) and reported in ``separation`` / ``notes``; the verdicts then say
  "separation: not estimable".
* The AUCs use scikit-learn's default L2 penalty (C = 1), negligible at these n; the fixed-effects
  model is fitted on one weighted row per (model x benchmark cell, outcome), which gives the
  same fit in milliseconds.
"""

from __future__ import annotations

import os
import re
import time
import warnings
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

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

TOKEN_RE = re.compile(r"[a-z]+(?:'[a-z]+)?")
SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'"})

KN_DISCOUNT = 0.75
UNIGRAM_FLOOR = 1e-8
RARE_ZIPF = 4.0

FEATURE_COLUMNS = (
    "n_tokens",
    "n_chars",
    "n_sentences",
    "log_len",
    "lexical_density",
    "zipf_mean",
    "rare_share",
    "unigram_log_ppl",
    "bigram_log_ppl",
    "coherence",
    "coherence_missing",
    "prompt_similarity",
)


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


# --------------------------------------------------------------------------------------------
# Tokenisation
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def closed_class_words() -> frozenset[str]:
    """The shipped closed-class word list (comments and blank lines skipped)."""
    text = resources.files("annotate").joinpath("data", "closed_class_words.txt").read_text(encoding="utf-8")
    words = set()
    for line in text.splitlines():
        word = line.split("#", 1)[0].strip()
        if word:
            words.add(word)
    return frozenset(words)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` (methods.md section 6)."""
    return TOKEN_RE.findall(_normalise(text))


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: split on whitespace after ``.``, ``!`` or ``?``."""
    return SENTENCE_RE.split(text)


class _Clock:
    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self.t
        self.t = now


class _Vocabulary:
    """Global token -> int id, grown chunk by chunk."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def lookup(self, words: Iterable[str], end_mark: str | None = None) -> np.ndarray:
        """Ids of ``words`` (new words are added). With ``end_mark``, scanner items are mapped:
        the end mark to -2, a sentence break (anything not starting with a-z) to -1."""
        ids = self.ids
        if end_mark is None:
            return np.fromiter((ids.setdefault(w, len(ids)) for w in words), dtype=np.int64)
        return np.fromiter(
            (ids.setdefault(w, len(ids)) if "a" <= w[0] <= "z" else (-2 if w == end_mark else -1) for w in words),
            dtype=np.int64,
        )

    def words(self) -> list[str]:
        out = [""] * len(self.ids)
        for word, i in self.ids.items():
            out[i] = word
        return out


@dataclass
class _Corpus:
    """Every text as integer arrays (no per-token Python objects).

    tok: (T,) int32 token ids, texts in order; sent_len: (S,) tokens per sentence (sentences
    without tokens are not kept); n_tokens, n_sent: (R,) per text; resp_start, sent_start:
    (R + 1,) offsets into tok and into the sentences.
    """

    tok: np.ndarray
    sent_len: np.ndarray
    n_tokens: np.ndarray
    n_sent: np.ndarray

    def __post_init__(self) -> None:
        self.resp_start = np.concatenate([[0], np.cumsum(self.n_tokens)]).astype(np.int64)
        self.sent_start = np.concatenate([[0], np.cumsum(self.n_sent)]).astype(np.int64)

    @property
    def n_resp(self) -> int:
        return len(self.n_tokens)

    def chunks(self, size: int) -> Iterable[tuple[int, int, int, int]]:
        """(lo, hi, t0, t1): texts lo..hi and their tokens t0..t1."""
        for lo in range(0, self.n_resp, size):
            hi = min(lo + size, self.n_resp)
            yield lo, hi, int(self.resp_start[lo]), int(self.resp_start[hi])

    def token_text(self, lo: int, hi: int) -> np.ndarray:
        """Local text index (0..hi-lo) of each token of texts lo..hi."""
        return np.repeat(np.arange(hi - lo, dtype=np.int32), self.n_tokens[lo:hi])

    def token_sentence(self, lo: int, hi: int) -> np.ndarray:
        """Local sentence index of each token of texts lo..hi."""
        s0, s1 = self.sent_start[lo], self.sent_start[hi]
        return np.repeat(np.arange(s1 - s0, dtype=np.int32), self.sent_len[s0:s1])


_END_MARK = "\x01"  # closes each text; never a token nor whitespace, so never a findall item
# TOKEN_RE, or a sentence break (SENTENCE_RE: a whitespace run after . ! or ?). Tokens contain no
# whitespace, so scanning for either is the same as splitting into sentences, then tokenising.
_SCAN_RE = re.compile(r"[a-z]+(?:'[a-z]+)?|(?<=[.!?])\s+")


def _normalise(text: str) -> str:
    low = text.lower()
    if "\u2019" in low or "\u02bc" in low:  # cheap test first: translate is slow
        low = low.translate(_APOSTROPHES)
    return low


def _tokenize_corpus(texts: Sequence[Any], vocab: _Vocabulary, chunk_size: int) -> tuple[_Corpus, np.ndarray]:
    """Tokenise texts chunk by chunk into a :class:`_Corpus`; also returns ``n_chars``.

    Per text, one ``findall`` returns its tokens and its sentence breaks (whitespace runs), and an
    end marker closes the text; all the rest is vectorised over the chunk. Equivalent to
    ``[tokenize(s) for s in split_sentences(text)]`` (the tests check it on awkward texts).
    """
    tok_parts, sent_len_parts = [], []
    n_tokens = np.zeros(len(texts), dtype=np.int64)
    n_sent = np.zeros(len(texts), dtype=np.int64)
    n_chars = np.zeros(len(texts), dtype=np.int64)
    scan = _SCAN_RE.findall
    for lo in range(0, len(texts), chunk_size):
        chunk = texts[lo : lo + chunk_size]
        hi = lo + len(chunk)
        items: list[str] = []
        for j, text in enumerate(chunk):
            if isinstance(text, str):
                n_chars[lo + j] = len(text)
                items += scan(_normalise(text))
            items.append(_END_MARK)
        codes, uniques = pd.factorize(np.asarray(items, dtype=object))
        del items
        uniq_ids = vocab.lookup(uniques, end_mark=_END_MARK)
        g = uniq_ids[codes]
        del codes
        boundary = np.flatnonzero(g < 0)  # every segment (sentence candidate) ends at one
        seg_len = np.diff(boundary, prepend=-1) - 1
        ends_text = g[boundary] == -2
        seg_text = np.cumsum(ends_text) - ends_text  # local text index of each segment
        keep = seg_len > 0
        sent_len_parts.append(seg_len[keep])
        n_sent[lo:hi] = np.bincount(seg_text[keep], minlength=hi - lo)
        n_tokens[lo:hi] = np.bincount(seg_text, weights=seg_len, minlength=hi - lo).astype(np.int64)
        tok_parts.append(g[g >= 0].astype(np.int32))
        del g
    tok = np.concatenate(tok_parts) if tok_parts else np.empty(0, dtype=np.int32)
    sent_len = np.concatenate(sent_len_parts) if sent_len_parts else np.empty(0, dtype=np.int64)
    return _Corpus(tok, sent_len, n_tokens, n_sent), n_chars


# --------------------------------------------------------------------------------------------
# Word-level features
# --------------------------------------------------------------------------------------------


def _wordfreq_frequencies(words: Sequence[str]) -> np.ndarray:
    """wordfreq's English frequency per word (0.0 when unknown), one call per type."""
    try:
        import wordfreq
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "annotate's ambiguity features need the 'wordfreq' package (pip install 'annotate[diagnostics]')."
        ) from exc
    freq = wordfreq.word_frequency
    return np.fromiter((freq(w, "en") for w in words), dtype=np.float64, count=len(words))


def _zipf_from_frequency(freq: np.ndarray) -> np.ndarray:
    """wordfreq.zipf_frequency from word_frequency: round(log10(f) + 9, 2), 0.0 for f = 0."""
    with np.errstate(divide="ignore"):
        z = np.round(np.log10(freq) + 9.0, 2)
    return np.where(freq > 0, z, 0.0)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _word_features(
    corpus: _Corpus, is_closed: np.ndarray, zipf: np.ndarray, surprisal: np.ndarray, chunk_size: int
) -> dict[str, np.ndarray]:
    """Density, sophistication and unigram surprisal per text, in chunks of texts."""
    n = corpus.n_resp
    n_content = np.zeros(n)
    zipf_sum = np.zeros(n)
    rare = np.zeros(n)
    surprisal_sum = np.zeros(n)
    for lo, hi, t0, t1 in corpus.chunks(chunk_size):
        tk = corpus.tok[t0:t1]
        r = corpus.token_text(lo, hi)
        content = ~is_closed[tk]
        rc, zc = r[content], zipf[tk[content]]
        n_content[lo:hi] = np.bincount(rc, minlength=hi - lo)
        zipf_sum[lo:hi] = np.bincount(rc, weights=zc, minlength=hi - lo)
        rare[lo:hi] = np.bincount(rc[zc < RARE_ZIPF], minlength=hi - lo)
        surprisal_sum[lo:hi] = np.bincount(r, weights=surprisal[tk], minlength=hi - lo)
    return {
        "lexical_density": _ratio(n_content, corpus.n_tokens),
        "zipf_mean": _ratio(zipf_sum, n_content),
        "rare_share": _ratio(rare, n_content),
        "unigram_log_ppl": _ratio(surprisal_sum, corpus.n_tokens),
    }


# --------------------------------------------------------------------------------------------
# Kneser-Ney bigram model
# --------------------------------------------------------------------------------------------


class _KneserNeyBigram:
    """Interpolated Kneser-Ney bigram model on integer ids (Chen & Goodman 1999).

    ``P(w | v) = max(c(v,w) - D, 0) / c(v) + D * N1+(v .) / c(v) * P_cont(w)`` for a seen history
    ``v`` (``c(v) > 0``), else ``P_cont(w)``;
    ``P_cont(w) = max(N1+(. w) - D, 0) / N1+(. .) + D * T / N1+(. .) / (T + 1)``, where ``T`` is
    the number of training types: the continuation distribution interpolated with a uniform one
    over the ``T`` types plus one unknown type.

    Ids are in ``[0, n_ids)``; ``bos = n_ids`` is the start symbol (a history only). The model is
    defined by a table of distinct bigrams (prev, cur) with their training counts (0 allowed).
    """

    def __init__(self, n_ids: int, discount: float = KN_DISCOUNT) -> None:
        self.n_ids = n_ids
        self.base = n_ids + 1
        self.discount = discount

    def fit_counts(self, prev: np.ndarray, cur: np.ndarray, count: np.ndarray) -> _KneserNeyBigram:
        """Fit from distinct bigrams ``(prev, cur)`` and their training counts (zeros ignored)."""
        d = self.discount
        present = (count > 0).astype(np.float64)
        self.c_hist = np.bincount(prev, weights=count, minlength=self.base)
        self.n1_hist = np.bincount(prev, weights=present, minlength=self.base)
        n1_cont = np.bincount(cur, weights=present, minlength=self.base)
        n_bigram_types = float(present.sum())
        n_types = float(np.count_nonzero(n1_cont))
        if n_bigram_types == 0:
            self.p_cont = np.full(self.base, 1.0)  # no training data: flat, improper fallback
        else:
            self.p_cont = (np.maximum(n1_cont - d, 0.0) + d * n_types / (n_types + 1.0)) / n_bigram_types
        return self

    def log_prob_counts(self, prev: np.ndarray, cur: np.ndarray, count: np.ndarray) -> np.ndarray:
        """Natural-log P(cur | prev) for bigrams whose training count is ``count``."""
        ch = self.c_hist[prev]
        pc = self.p_cont[cur]
        seen = ch > 0
        chs = np.where(seen, ch, 1.0)
        p = np.where(seen, (np.maximum(count - self.discount, 0.0) + self.discount * self.n1_hist[prev] * pc) / chs, pc)
        return np.log(p)

    # convenience on raw keys ``prev * base + cur`` (tests, small data)
    def fit(self, keys: np.ndarray) -> _KneserNeyBigram:
        self.keys, self.counts = np.unique(keys, return_counts=True)
        return self.fit_counts(self.keys // self.base, self.keys % self.base, self.counts.astype(np.float64))

    def log_prob(self, keys: np.ndarray) -> np.ndarray:
        pos = np.minimum(np.searchsorted(self.keys, keys), max(len(self.keys) - 1, 0))
        c = (
            np.where(self.keys[pos] == keys, self.counts[pos], 0).astype(np.float64)
            if len(self.keys)
            else np.zeros(len(keys))
        )
        return self.log_prob_counts(keys // self.base, keys % self.base, c)


def _bigram_keys(corpus: _Corpus, n_ids: int) -> np.ndarray:
    """(T,) int64 keys ``prev * (n_ids + 1) + cur``; prev is the start symbol at each text start."""
    keys = np.empty(len(corpus.tok), dtype=np.int64)
    if len(keys):
        keys[1:] = corpus.tok[:-1]
        keys[corpus.resp_start[:-1][corpus.n_tokens > 0]] = n_ids
        keys *= n_ids + 1
        keys += corpus.tok
    return keys


def _crossfit_folds(model: pd.Series, response_id: pd.Series, n_tokens: np.ndarray) -> np.ndarray:
    """Fold 0/1 per response: whole models balanced by token count, or a CRC-32 hash of the id."""
    levels = model.astype("string").fillna("<NA>")
    if levels.nunique() >= 2:
        load = pd.Series(n_tokens, index=levels.index).groupby(levels.to_numpy()).sum()
        order = sorted(load.items(), key=lambda kv: (-kv[1], kv[0]))
        fold_of: dict[str, int] = {}
        totals = [0.0, 0.0]
        for name, size in order:
            f = 0 if totals[0] <= totals[1] else 1
            fold_of[name] = f
            totals[f] += size
        return levels.map(fold_of).to_numpy(dtype=np.int8)
    return np.fromiter(
        (zlib.crc32(str(r).encode("utf-8", "surrogatepass")) & 1 for r in response_id),
        dtype=np.int8,
        count=len(response_id),
    )


def _bigram_log_ppl(corpus: _Corpus, n_ids: int, folds: np.ndarray, chunk_size: int) -> np.ndarray:
    """Cross-fitted KN bigram surprisal per text: fold f is scored by the model of fold 1 - f.

    The distinct bigrams are found once (hash factorisation) with their count in each fold, both
    fold models are evaluated on that table, and each token looks its log-probability up there.
    """
    keys = _bigram_keys(corpus, n_ids)
    codes, uniq = pd.factorize(keys)
    del keys
    codes = codes.astype(np.int32) if len(uniq) < 2**31 else codes
    base = n_ids + 1
    prev, cur = uniq // base, uniq % base
    del uniq
    tok_fold = np.repeat(folds, corpus.n_tokens)
    count = [np.bincount(codes[tok_fold == f], minlength=len(prev)).astype(np.float64) for f in (0, 1)]
    # log P under the model trained on fold f, for every distinct bigram
    logp = []
    for f in (0, 1):
        lm = _KneserNeyBigram(n_ids).fit_counts(prev, cur, count[f])
        logp.append(lm.log_prob_counts(prev, cur, count[f]))
    del prev, cur, count
    out = np.full(corpus.n_resp, np.nan)
    for lo, hi, t0, t1 in corpus.chunks(chunk_size):
        c = codes[t0:t1]
        surprisal = -np.where(tok_fold[t0:t1] == 0, logp[1][c], logp[0][c])
        r = corpus.token_text(lo, hi)
        out[lo:hi] = _ratio(np.bincount(r, weights=surprisal, minlength=hi - lo), corpus.n_tokens[lo:hi])
    return out


# --------------------------------------------------------------------------------------------
# TF-IDF on ids
# --------------------------------------------------------------------------------------------


def _count_matrix(rows: np.ndarray, cols: np.ndarray, n_rows: int, n_cols: int):
    """CSR term counts (float64), duplicates summed, indices sorted."""
    from scipy import sparse

    m = sparse.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(n_rows, n_cols))
    m.sum_duplicates()
    return m


def _l2_normalise_rows(m) -> None:
    counts = np.diff(m.indptr)
    sq = np.bincount(np.repeat(np.arange(m.shape[0]), counts), weights=m.data**2, minlength=m.shape[0])
    norm = np.sqrt(sq)
    norm[norm == 0] = 1.0
    m.data /= np.repeat(norm, counts)


def _row_dot(a, b) -> np.ndarray:
    """Row-wise dot products of two CSR matrices of the same shape."""
    return np.asarray(a.multiply(b).sum(axis=1)).ravel()


def _coherence(corpus: _Corpus, n_ids: int, chunk_size: int) -> np.ndarray:
    """Mean TF-IDF cosine of adjacent sentences per text (NaN below 2 sentences)."""
    n_sent = int(corpus.sent_start[-1])
    out = np.full(corpus.n_resp, np.nan)
    if n_sent == 0:
        return out
    # pass 1: sentence-term counts per chunk of texts; document frequency over all sentences
    chunks = []
    df = np.zeros(n_ids, dtype=np.int64)
    for lo, hi, t0, t1 in corpus.chunks(chunk_size):
        s0, s1 = int(corpus.sent_start[lo]), int(corpus.sent_start[hi])
        m = _count_matrix(corpus.token_sentence(lo, hi), corpus.tok[t0:t1], s1 - s0, n_ids)
        df += np.bincount(m.indices, minlength=n_ids)
        m.data = m.data.astype(np.float32)  # counts are small integers: exact in float32
        chunks.append((lo, hi, m))
    keep = df >= 2  # min_df=2
    idf = np.log((1.0 + n_sent) / (1.0 + df)) + 1.0
    # pass 2: weights, L2 rows, dot products of adjacent sentences of the same text
    for lo, hi, m in chunks:
        tf = m.data.astype(np.float64)
        m.data = np.where(keep[m.indices], (1.0 + np.log(tf)) * idf[m.indices], 0.0)
        _l2_normalise_rows(m)
        if m.shape[0] < 2:
            continue
        cos = _row_dot(m[:-1], m[1:])
        owner = np.repeat(np.arange(hi - lo), corpus.n_sent[lo:hi])  # local text of each sentence
        same = owner[:-1] == owner[1:]
        total = np.bincount(owner[:-1][same], weights=cos[same], minlength=hi - lo)
        pairs = np.bincount(owner[:-1][same], minlength=hi - lo)
        out[lo:hi] = _ratio(total, pairs)
    return out


def _prompt_similarity(
    corpus: _Corpus, prompt_corpus: _Corpus, prompt_index: np.ndarray, n_ids: int, stop_ids: np.ndarray, chunk_size: int
) -> np.ndarray:
    """TF-IDF cosine(prompt, response); stop words removed; idf over responses + distinct prompts."""
    stop = np.zeros(n_ids, dtype=bool)
    stop[stop_ids] = True
    n_resp, n_prompts = corpus.n_resp, prompt_corpus.n_resp

    p_tok = prompt_corpus.tok
    p_keep = ~stop[p_tok]
    pm = _count_matrix(prompt_corpus.token_text(0, n_prompts)[p_keep], p_tok[p_keep], n_prompts, n_ids)
    df = np.bincount(pm.indices, minlength=n_ids).astype(np.int64)
    chunks = []
    for lo, hi, t0, t1 in corpus.chunks(chunk_size):
        tok = corpus.tok[t0:t1]
        keep = ~stop[tok]
        m = _count_matrix(corpus.token_text(lo, hi)[keep], tok[keep], hi - lo, n_ids)
        df += np.bincount(m.indices, minlength=n_ids)
        m.data = m.data.astype(np.float32)
        chunks.append((lo, hi, m))
    idf = np.log((1.0 + n_resp + n_prompts) / (1.0 + df)) + 1.0
    pm.data = pm.data * idf[pm.indices]
    _l2_normalise_rows(pm)
    out = np.empty(n_resp)
    for lo, hi, m in chunks:
        m.data = m.data.astype(np.float64) * idf[m.indices]
        _l2_normalise_rows(m)
        idx = prompt_index[lo:hi]
        valid = idx >= 0
        sim = np.full(hi - lo, np.nan)
        if valid.any():
            rows = np.flatnonzero(valid)
            sim[rows] = _row_dot(m[rows], pm[idx[rows]])
        out[lo:hi] = sim
    return out


# --------------------------------------------------------------------------------------------
# Optional local causal language model
# --------------------------------------------------------------------------------------------


def _load_local_lm(lm_dir: str | os.PathLike[str]) -> tuple[Any, Any, Any]:
    """(torch, tokenizer, model) of a causal LM saved in ``lm_dir``; never downloads."""
    path = Path(lm_dir).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(
            f"local_lm_dir {str(path)!r} is not a directory; give the folder that holds "
            "the model's config.json and weights (nothing is downloaded)."
        )
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"local_lm_dir {str(path)!r} has no config.json, so it is not a saved transformers model folder."
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ImportError(
            "local_lm_dir needs the 'transformers' and 'torch' packages, which annotate does not install; "
            "install them (pip install transformers torch) or leave local_lm_dir unset."
        ) from exc
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True)
    model.eval()
    return torch, tokenizer, model


def _local_lm_log_ppl(
    texts: Sequence[Any], loaded: tuple[Any, Any, Any], *, batch_size: int = 8, max_length: int = 1024
) -> np.ndarray:
    """Mean surprisal (nats) of each text's LM tokens after the first (NaN below 2 tokens);
    texts longer than ``max_length`` LM tokens are truncated."""
    torch, tokenizer, model = loaded
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token if tokenizer.eos_token is not None else tokenizer.unk_token
    tokenizer.padding_side = "right"
    out = np.full(len(texts), np.nan)
    clean = [t if isinstance(t, str) else "" for t in texts]
    with torch.no_grad():
        for lo in range(0, len(clean), batch_size):
            batch = clean[lo : lo + batch_size]
            enc = tokenizer(batch, return_tensors="pt", padding=True, truncation=True, max_length=max_length)
            logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
            logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
            target = enc["input_ids"][:, 1:]
            nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
            mask = enc["attention_mask"][:, 1:].float()
            n = mask.sum(dim=1)
            mean = (nll * mask).sum(dim=1) / n.clamp(min=1)
            vals = mean.numpy()
            vals[n.numpy() == 0] = np.nan
            out[lo : lo + len(batch)] = vals
    return out


# --------------------------------------------------------------------------------------------
# compute_features
# --------------------------------------------------------------------------------------------


def compute_features(
    frame: pd.DataFrame,
    *,
    context: pd.DataFrame | None = None,
    local_lm_dir: str | os.PathLike[str] | None = None,
    chunk_size: int = 10_000,
) -> pd.DataFrame:
    """Offline text features per response.

    Args:
        frame: columns ``response_id, model, prompt, response``; one row per response
            (``response_id`` unique). ``model`` defines the cross-fitting folds of the bigram
            model. A missing response counts as empty; a missing prompt gives NaN similarity.
        context: optional responses already featurised and stored (same columns). Three
            features depend on the corpus, not only on the text: the bigram model, and the idf
            (and min_df) of coherence and prompt similarity. When only new responses are
            computed, pass the stored ones here so that the corpus is the whole collection:
            they are tokenised and used for those estimates but get no output row (rows whose
            ``response_id`` is also in ``frame`` are ignored). Stored rows are left as they were.
        local_lm_dir: optional folder of a saved causal LM (transformers format); adds
            ``lm_log_ppl`` (for ``frame`` only). Read with ``local_files_only=True``.
        chunk_size: responses tokenised (and TF-IDF rows built) per chunk; bounds peak memory.

    Returns:
        DataFrame, one row per response of ``frame`` in input order: ``response_id`` and
        :data:`FEATURE_COLUMNS` (plus ``lm_log_ppl`` with ``local_lm_dir``). Per-token features
        are NaN for a response without tokens. ``attrs["timings"]``: seconds per step.
    """
    required = ["response_id", "model", "prompt", "response"]
    for name, df in (("frame", frame), ("context", context)):
        if df is None:
            continue
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise ValueError(f"compute_features needs the columns {required} in {name}; missing: {missing}.")
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1.")
    if frame["response_id"].duplicated().any():
        dup = frame.loc[frame["response_id"].duplicated(), "response_id"].iloc[0]
        raise ValueError(f"response_id must be unique; {dup!r} appears more than once.")
    n_out = len(frame)
    if context is not None and len(context):
        extra = context.loc[~context["response_id"].isin(frame["response_id"]), required]
        extra = extra.drop_duplicates("response_id")
        out_frame = frame
        frame = pd.concat([frame[required], extra], ignore_index=True)
    else:
        out_frame = frame
    n = len(frame)
    responses = frame["response"].tolist()
    clock = _Clock()
    lm = _load_local_lm(local_lm_dir) if local_lm_dir is not None else None  # fail before the long part

    vocab = _Vocabulary()
    corpus, n_chars = _tokenize_corpus(responses, vocab, chunk_size)
    prompt_codes, prompt_uniques = pd.factorize(frame["prompt"], use_na_sentinel=True)
    prompt_corpus, _ = _tokenize_corpus(list(prompt_uniques.astype(str)), vocab, chunk_size)
    closed = closed_class_words()
    stop_ids = vocab.lookup(sorted(closed))
    n_ids = len(vocab.ids)
    words = vocab.words()
    clock.lap("tokenise")

    n_tokens = corpus.n_tokens
    n_sentences = corpus.n_sent

    is_closed = np.zeros(n_ids, dtype=bool)
    is_closed[stop_ids] = True
    freq = _wordfreq_frequencies(words)
    clock.lap("wordfreq lookups")
    word = _word_features(
        corpus, is_closed, _zipf_from_frequency(freq), -np.log(np.maximum(freq, UNIGRAM_FLOOR)), chunk_size
    )
    clock.lap("density, sophistication, unigram")

    folds = _crossfit_folds(frame["model"], frame["response_id"], n_tokens)
    bigram_log_ppl = _bigram_log_ppl(corpus, n_ids, folds, chunk_size)
    clock.lap("bigram")

    coherence = _coherence(corpus, n_ids, chunk_size)
    coherence_missing = np.isnan(coherence).astype(np.int8)
    clock.lap("coherence")

    similarity = _prompt_similarity(corpus, prompt_corpus, np.asarray(prompt_codes), n_ids, stop_ids, chunk_size)
    similarity[n_tokens == 0] = np.nan
    clock.lap("similarity")

    out = pd.DataFrame(
        {
            "response_id": frame["response_id"].to_numpy(),
            "n_tokens": n_tokens,
            "n_chars": n_chars,
            "n_sentences": n_sentences,
            "log_len": np.log1p(n_tokens),
            "lexical_density": word["lexical_density"],
            "zipf_mean": word["zipf_mean"],
            "rare_share": word["rare_share"],
            "unigram_log_ppl": word["unigram_log_ppl"],
            "bigram_log_ppl": bigram_log_ppl,
            "coherence": coherence,
            "coherence_missing": coherence_missing,
            "prompt_similarity": similarity,
        }
    )
    if n > n_out:
        out = out.iloc[:n_out].reset_index(drop=True)
    if lm is not None:
        out["lm_log_ppl"] = _local_lm_log_ppl(out_frame["response"].tolist(), lm)
        clock.lap("local LM")
    out.attrs["timings"] = clock.laps  # seconds per step, for benchmarks
    return out


# --------------------------------------------------------------------------------------------
# Association model
# --------------------------------------------------------------------------------------------


_VERDICT_CONSTANT = "constant: not estimable"
_VERDICT_SEPARATION = "separation: not estimable"


@dataclass
class AmbiguityModel:
    """A fitted association model.

    ``table``: one row per correlate: correlate, feature, odds_ratio (per SD), ci_low, ci_high
    (95 %), p, p_holm, vif, negligible (OR inside the null band), verdict.
    ``coefficients``: every term of the logit (intercept, features, controls, fixed effects):
    term, coef, se, z, p. ``auc_*``: cross-validated AUC (folds grouped by prompt) of features
    alone, fixed effects alone, and both (NaN unless asked for). ``dropped``: rows left out, by reason.
    """

    table: pd.DataFrame
    coefficients: pd.DataFrame
    auc_features: float
    auc_fixed_effects: float
    auc_combined: float
    n: int
    n_events: int
    n_clusters: int
    dropped: dict[str, int]
    fixed_effects: tuple[str, ...]
    null_band: tuple[float, float]
    outcome_name: str
    separation: bool
    notes: list[str]
    _columns: list[str] = field(repr=False)
    _center: dict[str, float] = field(repr=False)
    _scale: dict[str, float] = field(repr=False)
    _use_missing: bool = field(repr=False)
    _intercept: float = field(repr=False)
    _slopes: dict[str, float] = field(repr=False)
    _level_effects: dict[str, dict[str, float]] = field(repr=False)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per step of the fit

    def predict_proba(
        self, features: pd.DataFrame, model: Iterable[Any] | None = None, benchmark: Iterable[Any] | None = None
    ) -> np.ndarray:
        """Predicted probability of the outcome for new rows.

        ``features`` holds the feature columns (as from :func:`compute_features`); ``model`` and
        ``benchmark`` default to the columns of those names in ``features``. A level not seen in
        the fit gets the mean effect of the fitted levels (reference level 0 included); a level
        dropped for a constant outcome gives probability 0 or 1. Rows with a missing feature
        give NaN.
        """
        eta = np.full(len(features), self._intercept, dtype=np.float64)
        for col in self._columns:
            if col not in self._slopes:
                continue
            x = pd.to_numeric(features[col], errors="coerce").to_numpy(dtype=np.float64)
            z = (x - self._center[col]) / self._scale[col]
            if col == "coherence":
                z = np.where(np.isnan(z), 0.0, z)
            eta += self._slopes[col] * z
        if self._use_missing:
            miss = (
                features["coherence"].isna().to_numpy()
                if "coherence" in features
                else features["coherence_missing"].to_numpy(dtype=bool)
            )
            eta += np.where(miss, self._slopes["coherence_missing"], 0.0)
        given = {"model": model, "benchmark": benchmark}
        for fe in self.fixed_effects:
            values = given[fe]
            if values is None:
                if fe not in features.columns:
                    raise ValueError(f"predict_proba needs '{fe}' (the model has {fe} fixed effects).")
                values = features[fe]
            effects = self._level_effects[fe]
            finite = [v for v in effects.values() if np.isfinite(v)]
            default = float(np.mean(finite)) if finite else 0.0
            eta += np.array([effects.get(str(v), default) for v in values], dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            p = 1.0 / (1.0 + np.exp(-eta))
        return p


def _as_array(values: Any, n: int, name: str) -> np.ndarray:
    """Positional (N,) array of ``values``; raises when the length is not ``n``."""
    if values is None:
        raise ValueError(f"{name} is required.")
    arr = values.to_numpy() if isinstance(values, (pd.Series, pd.Index)) else np.asarray(values, dtype=object)
    if arr.ndim != 1 or len(arr) != n:
        raise ValueError(f"{name} has {len(arr)} values but features has {n} rows.")
    return arr


def _optional_array(values: Any, n: int, name: str) -> np.ndarray | None:
    return None if values is None else _as_array(values, n, name)


def _holm(p: np.ndarray) -> np.ndarray:
    from statsmodels.stats.multitest import multipletests

    if len(p) == 0:
        return p
    return multipletests(p, method="holm")[1]


def _vif(D: np.ndarray) -> np.ndarray:
    """Variance inflation factor of every column of a design whose column 0 is the intercept.

    ``VIF_j = 1 / (1 - R_j^2)``, ``R_j^2`` the centred R^2 of column j on all other columns and the
    intercept: exactly what statsmodels' ``variance_inflation_factor(D, j)`` returns (the tests
    check this), computed from one k x k centred Gram matrix instead of k least-squares fits on
    n rows (0.1 s instead of about 30 s at 130,000 x 38). Entry 0 is NaN.
    """
    n = D.shape[0]
    Z = D[:, 1:]
    mu = Z.mean(axis=0)
    C = Z.T @ Z - n * np.outer(mu, mu)
    out = np.full(D.shape[1], np.nan)
    diag = np.diag(C).copy()
    try:
        inv = np.linalg.inv(C)
        vif = np.diag(inv) * diag
        vif[~np.isfinite(vif) | (vif < 1.0 - 1e-9)] = np.inf  # singular or numerically degenerate
    except np.linalg.LinAlgError:
        vif = np.full(len(diag), np.inf)
    out[1:] = vif
    return out


def _group_splits(y: np.ndarray, groups: np.ndarray, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import GroupKFold

    splitter = GroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(len(y)), y, groups))


def _cv_auc(
    X: np.ndarray | None, y: np.ndarray, splits: list[tuple[np.ndarray, np.ndarray]], cells: np.ndarray | None = None
) -> float:
    """Mean test-fold AUC of scikit-learn's LogisticRegression (folds with one class skipped).

    ``cells``: (N,) integer id of each row's distinct row of ``X``. When given (a design of
    dummies only), each fold is fitted on one weighted row per (cell, outcome) instead of every
    response; the penalised likelihood, hence the fit, is the same, and it takes milliseconds.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    if X is None or X.shape[1] == 0:
        return float("nan")
    aucs = []
    for train, test in splits:
        if len(np.unique(y[train])) < 2 or len(np.unique(y[test])) < 2:
            continue
        model = LogisticRegression(max_iter=1000)
        if cells is None:
            model.fit(X[train], y[train])
            score = model.decision_function(X[test])
        else:
            n_cells = int(cells.max()) + 1
            first = np.full(n_cells, -1, dtype=np.int64)
            first[cells[::-1]] = np.arange(len(cells))[::-1]  # a representative row per cell
            events = np.bincount(cells[train], weights=y[train], minlength=n_cells)
            total = np.bincount(cells[train], minlength=n_cells).astype(np.float64)
            seen = total > 0
            rep = X[first[seen]]
            Xa = np.vstack([rep, rep])
            ya = np.r_[np.ones(int(seen.sum())), np.zeros(int(seen.sum()))]
            wa = np.r_[events[seen], total[seen] - events[seen]]
            nz = wa > 0
            model.fit(Xa[nz], ya[nz], sample_weight=wa[nz])
            score = model.decision_function(X[first])[cells[test]]
        aucs.append(roc_auc_score(y[test], score))
    return float(np.mean(aucs)) if aucs else float("nan")


def fit_ambiguity_model(
    features: pd.DataFrame,
    outcome: Any,
    model: Any,
    benchmark: Any,
    prompt_cluster: Any,
    *,
    null_band: tuple[float, float] = (0.9, 1.1),
    cv_folds: int = 5,
    seed: int = 0,
    columns: Sequence[str] | None = None,
    outcome_name: str = "ambiguity",
    alpha: float = 0.05,
    combined_auc: bool = False,
) -> AmbiguityModel:
    """Logistic regression of a 0/1 outcome on standardised features with fixed effects.

    Args:
        features: a frame with the feature columns (from :func:`compute_features`), aligned
            row by row with the other arguments.
        outcome: (N,) 1 = the judge said ambiguous (bool/0/1; NaN rows are dropped).
        model, benchmark: (N,) fixed-effect levels; ``None`` (or a single level) leaves that
            fixed effect out (e.g. ``model=None`` fits the pooled, between-model version).
        prompt_cluster: (N,) prompt identifier; standard errors are clustered on it.
        null_band: odds ratios per SD inside ``[lo, hi]`` are reported as negligible.
        cv_folds: folds of the cross-validated AUCs (grouped by prompt).
        seed: seed of the fold assignment.
        columns: feature columns to use; default the six correlates of :data:`CORRELATES`
            (use e.g. ``lm_log_ppl`` or ``unigram_log_ppl`` in place of ``bigram_log_ppl``).
        outcome_name: word used in verdicts ("raises ambiguity").
        alpha: level of the Holm-adjusted test and of the intervals (95 % by default).
        combined_auc: also cross-validate features + fixed effects together (``auc_combined``,
            the AUC relevant to review prioritisation); about 2-3x the time of the rest of the fit
            at 130,000 rows, so off by default (``auc_combined`` is then NaN).

    Returns:
        :class:`AmbiguityModel`.

    Raises:
        ValueError: inconsistent lengths, a non-0/1 outcome, an outcome without both values
            (after dropping constant fixed-effect levels), fewer than 2 prompt clusters, or no
            usable row.
    """
    from threadpoolctl import threadpool_limits

    # The matrices are small (n x ~40); one BLAS thread is as fast on an idle 2-core machine and
    # several times faster when another job holds a core (threads then wait on each other).
    with threadpool_limits(limits=1, user_api="blas"):
        return _fit_ambiguity_model(
            features,
            outcome,
            model,
            benchmark,
            prompt_cluster,
            null_band=null_band,
            cv_folds=cv_folds,
            seed=seed,
            columns=columns,
            outcome_name=outcome_name,
            alpha=alpha,
            combined_auc=combined_auc,
        )


def _fit_ambiguity_model(
    features: pd.DataFrame,
    outcome: Any,
    model: Any,
    benchmark: Any,
    prompt_cluster: Any,
    *,
    null_band: tuple[float, float] = (0.9, 1.1),
    cv_folds: int = 5,
    seed: int = 0,
    columns: Sequence[str] | None = None,
    outcome_name: str = "ambiguity",
    alpha: float = 0.05,
    combined_auc: bool = False,
) -> AmbiguityModel:
    clock = _Clock()
    from scipy.stats import norm
    from statsmodels.discrete.discrete_model import Logit
    from statsmodels.tools.sm_exceptions import (
        ConvergenceWarning,
        HessianInversionWarning,
        PerfectSeparationWarning,
    )

    clock.lap("imports")
    lo_band, hi_band = null_band
    if not (0 < lo_band <= 1 <= hi_band):
        raise ValueError(f"null_band must satisfy 0 < lo <= 1 <= hi; got {null_band}.")
    if cv_folds < 2:
        raise ValueError("cv_folds must be at least 2.")
    columns = list(columns) if columns is not None else [c.column for c in CORRELATES]
    absent = [c for c in columns if c not in features.columns]
    if absent:
        raise ValueError(f"features lacks the columns {absent}.")
    n_all = len(features)
    y_raw = _as_array(outcome, n_all, "outcome")
    groups_raw = _as_array(prompt_cluster, n_all, "prompt_cluster")
    fe_raw = {
        "model": _optional_array(model, n_all, "model"),
        "benchmark": _optional_array(benchmark, n_all, "benchmark"),
    }

    y_num = np.full(n_all, np.nan)
    observed = ~pd.isna(pd.Series(y_raw, dtype=object)).to_numpy()
    try:
        y_num[observed] = [float(v) for v in y_raw[observed]]
    except (TypeError, ValueError):
        y_num[:] = -1.0  # reported below
    bad = observed & ~np.isin(y_num, (0.0, 1.0))
    if bad.any():
        raise ValueError(
            f"outcome must be 0/1 (or True/False, NaN for unknown); found {y_raw[np.flatnonzero(bad)[0]]!r}."
        )

    X_raw = features[columns].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    dropped: dict[str, int] = {}
    keep = ~np.isnan(y_num)
    dropped["missing outcome"] = int((~keep).sum())
    non_coh = [i for i, c in enumerate(columns) if c != "coherence"]
    bad_x = np.zeros(n_all, dtype=bool)
    if non_coh:
        bad_x = ~np.isfinite(X_raw[:, non_coh]).all(axis=1)
    dropped["missing feature"] = int((keep & bad_x).sum())
    keep &= ~bad_x
    bad_g = pd.isna(pd.Series(groups_raw, dtype=object)).to_numpy().copy()
    for vals in fe_raw.values():
        if vals is not None:
            bad_g = bad_g | pd.isna(pd.Series(vals, dtype=object)).to_numpy()
    dropped["missing model, benchmark or prompt"] = int((keep & bad_g).sum())
    keep &= ~bad_g
    if not keep.any():
        raise ValueError("No usable row: every row lacks the outcome, a feature, or a grouping value.")
    if len(np.unique(y_num[keep])) < 2:
        only = int(y_num[keep][0])
        raise ValueError(
            f"The outcome is {only} for all {int(keep.sum())} usable responses, so nothing can be associated "
            f"with it; a regression needs both outcomes (0 and 1)."
        )

    # fixed effects in use (a single level carries no contrast)
    notes: list[str] = []
    fe_used = []
    for fe, vals in fe_raw.items():
        if vals is None:
            continue
        if pd.Series(vals[keep]).astype(str).nunique() >= 2:
            fe_used.append(fe)
        else:
            notes.append(f"only one {fe} level: the {fe} fixed effect is left out.")

    # Levels with a constant outcome are separated by their dummy (infinite ML effect) and carry
    # no information on the features: drop them, repeatedly, as fixest does. The coherence-missing
    # indicator is a dummy too and is treated the same way.
    level_effects: dict[str, dict[str, float]] = {fe: {} for fe in fe_used}
    fe_str = {fe: pd.Series(fe_raw[fe]).astype(str).to_numpy() for fe in fe_used}
    coh_col = columns.index("coherence") if "coherence" in columns else None
    coh_is_missing = ~np.isfinite(X_raw[:, coh_col]) if coh_col is not None else np.zeros(n_all, dtype=bool)
    n_sep = 0
    n_sep_coh = 0
    missing_effect = 0.0
    changed = True
    while changed:
        changed = False
        for fe in fe_used:
            s = pd.DataFrame({"lvl": fe_str[fe][keep], "y": y_num[keep]})
            rate = s.groupby("lvl")["y"].mean()
            constant = rate[(rate == 0) | (rate == 1)]
            if 0 < len(constant) < len(rate):
                for lvl, r in constant.items():
                    level_effects[fe][lvl] = -np.inf if r == 0 else np.inf
                hit = keep & np.isin(fe_str[fe], constant.index.to_numpy())
                n_sep += int(hit.sum())
                keep &= ~hit
                outcomes = "/".join(str(int(v)) for v in sorted(set(constant.to_numpy())))
                notes.append(
                    f"{fe} level(s) {sorted(constant.index.tolist())} have outcome {outcomes} for every "
                    f"response: {int(hit.sum())} rows dropped (separated by their fixed effect)."
                )
                changed = True
        miss = keep & coh_is_missing
        if miss.any() and miss.sum() < keep.sum():
            rate = float(y_num[miss].mean())
            if rate in (0.0, 1.0):
                missing_effect = -np.inf if rate == 0 else np.inf
                n_sep_coh += int(miss.sum())
                keep &= ~miss
                notes.append(
                    f"all {int(miss.sum())} responses without coherence (one sentence) have outcome "
                    f"{int(rate)}: dropped (separated by the coherence_missing indicator)."
                )
                changed = True
    dropped["fixed-effect level with constant outcome"] = n_sep
    dropped["coherence missing with constant outcome"] = n_sep_coh
    if len(np.unique(y_num[keep])) < 2:
        raise ValueError(
            "After dropping fixed-effect levels whose outcome never varies, the outcome is constant; "
            "the features cannot be associated with it within models and benchmarks."
        )
    fe_final = []
    for fe in fe_used:
        if pd.Series(fe_str[fe][keep]).nunique() >= 2:
            fe_final.append(fe)
        else:
            level_effects[fe][fe_str[fe][keep][0]] = 0.0
            notes.append(f"only one {fe} level remains after dropping: the {fe} fixed effect is left out.")
    y = y_num[keep]
    X = X_raw[keep]
    groups = pd.factorize(pd.Series(groups_raw[keep]).astype(str))[0]
    n_clusters = int(groups.max()) + 1
    if n_clusters < 2:
        raise ValueError("Cluster-robust standard errors need at least 2 distinct prompts.")

    # design: intercept, z-scored features, coherence_missing, fixed-effect dummies
    n = len(y)
    center: dict[str, float] = {}
    scale: dict[str, float] = {}
    names = ["Intercept"]
    blocks: list[np.ndarray] = [np.ones(n)]
    estimable = []
    for i, col in enumerate(columns):
        x = X[:, i]
        finite = np.isfinite(x)
        sd = float(np.std(x[finite], ddof=1)) if finite.sum() > 1 else 0.0
        if not np.isfinite(sd) or sd <= 1e-12 * max(1.0, float(np.abs(x[finite]).max(initial=0.0))):
            notes.append(f"{col} is constant in the data: not estimable.")
            continue
        mu = float(np.mean(x[finite]))
        center[col], scale[col] = mu, sd
        blocks.append(np.where(finite, (x - mu) / sd, 0.0))
        names.append(col)
        estimable.append(col)
    coh_missing = None
    use_missing = False
    if "coherence" in estimable:
        coh_missing = (~np.isfinite(X[:, columns.index("coherence")])).astype(np.float64)
        if 0 < coh_missing.sum() < n:
            blocks.append(coh_missing)
            names.append("coherence_missing")
            use_missing = True
    fe_blocks = []
    for fe in fe_final:
        vals = pd.Series(fe_str[fe][keep])
        counts = vals.value_counts()
        ref = min(counts[counts == counts.max()].index)  # most frequent level is the reference
        level_effects[fe][ref] = 0.0
        levels = sorted(set(counts.index) - {ref})
        codes = vals.map({lvl: i for i, lvl in enumerate(levels)}).fillna(-1).to_numpy(dtype=np.int64)
        block = np.zeros((n, len(levels)))
        rows_ = np.flatnonzero(codes >= 0)
        block[rows_, codes[rows_]] = 1.0
        fe_blocks.append((fe, levels, block))
        blocks.extend(block.T)
        names.extend(f"{fe}[{lvl}]" for lvl in levels)
    D = np.empty((n, len(blocks)), order="F")  # Fortran order: statsmodels' Hessian X'WX is 5x faster
    for j, b in enumerate(blocks):
        D[:, j] = b
    del blocks

    clock.lap("prepare")
    # fit
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        try:
            res = Logit(y, D).fit(disp=0, maxiter=100, cov_type="cluster", cov_kwds={"groups": groups})
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                f"The logit could not be fitted ({exc}); the design is singular, e.g. a feature "
                "is a linear combination of the fixed effects."
            ) from exc
    for w in wlist:
        if issubclass(w.category, (ConvergenceWarning, PerfectSeparationWarning, HessianInversionWarning)):
            caught.append(f"{w.category.__name__}: {w.message}")
    params = np.asarray(res.params)
    bse = np.asarray(res.bse)
    converged = bool(res.mle_retvals.get("converged", True))
    eta = D @ params
    extreme = int(np.sum(np.abs(eta) > 18.0))  # fitted probability within 1.5e-8 of 0 or 1
    huge = [names[j] for j in range(1, len(names)) if abs(params[j]) > 10.0 or not np.isfinite(bse[j])]
    separation = (not converged) or extreme > 0 or bool(huge) or any(c.startswith("PerfectSeparation") for c in caught)
    if separation:
        notes.append(
            "(quasi-)complete separation: the outcome is (almost) perfectly predicted "
            f"(converged={converged}; {extreme} rows with fitted probability within 1.5e-8 of 0 or 1; "
            f"implausibly large or non-finite terms: {huge or 'none'}); odds ratios and intervals are not meaningful."
        )
    notes.extend(caught)
    clock.lap("logit")

    zcrit = float(norm.ppf(1 - alpha / 2))
    pvals = np.asarray(res.pvalues)
    coef_table = pd.DataFrame({"term": names, "coef": params, "se": bse, "z": np.asarray(res.tvalues), "p": pvals})
    vif_all = _vif(D)
    vifs = {c: float(vif_all[names.index(c)]) for c in estimable}
    clock.lap("vif")

    rows = []
    p_est = np.array([pvals[names.index(c)] for c in estimable])
    p_holm = dict(zip(estimable, _holm(p_est), strict=True))
    corr_name = {col: name for col, (name, _) in _CORRELATE_OF.items()}
    for col in columns:
        if col not in estimable:
            rows.append(
                {
                    "correlate": corr_name.get(col, col),
                    "feature": col,
                    "odds_ratio": np.nan,
                    "ci_low": np.nan,
                    "ci_high": np.nan,
                    "p": np.nan,
                    "p_holm": np.nan,
                    "vif": np.nan,
                    "negligible": False,
                    "verdict": _VERDICT_CONSTANT,
                }
            )
            continue
        j = names.index(col)
        b, se = params[j], bse[j]
        with np.errstate(over="ignore"):
            orr = float(np.exp(b))
            lo_ci, hi_ci = float(np.exp(b - zcrit * se)), float(np.exp(b + zcrit * se))
        negligible = bool(lo_band <= orr <= hi_band)
        ph = float(p_holm[col])
        if separation:
            verdict = _VERDICT_SEPARATION
        elif negligible:
            verdict = "negligible"
        elif ph < alpha:
            verdict = f"raises {outcome_name}" if orr > 1 else f"lowers {outcome_name}"
        else:
            verdict = "not significant"
        rows.append(
            {
                "correlate": corr_name.get(col, col),
                "feature": col,
                "odds_ratio": orr,
                "ci_low": lo_ci,
                "ci_high": hi_ci,
                "p": float(pvals[j]),
                "p_holm": ph,
                "vif": vifs[col],
                "negligible": negligible,
                "verdict": verdict,
            }
        )
    table = pd.DataFrame(rows)

    # cross-validated AUCs, folds grouped by prompt; the features' design is the z-scored one
    # (z-scoring is a fold-independent affine map, and the L2 penalty is negligible at this n)
    folds = min(cv_folds, n_clusters)
    feat_cols = [names.index(c) for c in estimable] + ([names.index("coherence_missing")] if use_missing else [])
    fe_cols = [j for j, nm in enumerate(names) if "[" in nm]
    Xf = np.ascontiguousarray(D[:, feat_cols]) if feat_cols else None
    Xfe = np.ascontiguousarray(D[:, fe_cols]) if fe_cols else None
    Xboth = np.ascontiguousarray(D[:, feat_cols + fe_cols]) if combined_auc and feat_cols and fe_cols else None
    del D
    splits = _group_splits(y, groups, folds, seed)
    auc_f = _cv_auc(Xf, y, splits)
    clock.lap("auc_features")
    fe_cells = None
    if Xfe is not None:
        cell_key = np.zeros(n, dtype=np.int64)
        for fe in fe_final:
            codes, uniq = pd.factorize(fe_str[fe][keep])
            cell_key = cell_key * len(uniq) + codes
        fe_cells = pd.factorize(cell_key)[0]
    auc_fe = _cv_auc(Xfe, y, splits, cells=fe_cells)
    clock.lap("auc_fixed_effects")
    if not combined_auc:
        auc_both = float("nan")
    elif Xboth is not None:
        auc_both = _cv_auc(Xboth, y, splits)
    else:
        auc_both = auc_f if Xfe is None else auc_fe
    clock.lap("auc_combined")
    if Xfe is None:
        notes.append("no fixed effect in the model: auc_fixed_effects is undefined (NaN).")

    slopes = {c: float(params[names.index(c)]) for c in estimable}
    if use_missing:
        slopes["coherence_missing"] = float(params[names.index("coherence_missing")])
    elif np.isinf(missing_effect):
        slopes["coherence_missing"] = missing_effect
        use_missing = True
    for fe, levels, _ in fe_blocks:
        for lvl in levels:
            level_effects[fe][lvl] = float(params[names.index(f"{fe}[{lvl}]")])
    return AmbiguityModel(
        table=table,
        coefficients=coef_table,
        auc_features=auc_f,
        auc_fixed_effects=auc_fe,
        auc_combined=auc_both,
        n=int(n),
        n_events=int(y.sum()),
        n_clusters=n_clusters,
        dropped=dropped,
        fixed_effects=tuple(fe_final),
        null_band=(float(lo_band), float(hi_band)),
        outcome_name=outcome_name,
        separation=bool(separation),
        notes=notes,
        _columns=list(columns),
        _center=center,
        _scale=scale,
        _use_missing=use_missing,
        _intercept=float(params[0]),
        _slopes=slopes,
        _level_effects={fe: level_effects[fe] for fe in fe_final},
        timings=clock.laps,
    )


def fit_human_harmful_model(
    features: pd.DataFrame,
    human_harmful: Any,
    judge_ambiguous: Any,
    model: Any,
    benchmark: Any,
    prompt_cluster: Any,
    **kwargs: Any,
) -> AmbiguityModel:
    """The same regression for "human-adjudicated harmful" among the judge-ambiguous responses.

    Rows where ``judge_ambiguous`` is true and ``human_harmful`` is known (0/1) are used;
    ``kwargs`` go to :func:`fit_ambiguity_model`.
    """
    n = len(features)
    amb = pd.Series(_as_array(judge_ambiguous, n, "judge_ambiguous")).fillna(False).astype(bool).to_numpy()
    harm = _as_array(human_harmful, n, "human_harmful")
    rows = np.flatnonzero(amb)
    if len(rows) == 0:
        raise ValueError("No judge-ambiguous response: there is nothing to relate human labels to.")

    def take(v: Any) -> np.ndarray | None:
        arr = _optional_array(v, n, "grouping")
        return None if arr is None else arr[rows]

    kwargs.setdefault("outcome_name", "human-harmful")
    return fit_ambiguity_model(
        features.iloc[rows].reset_index(drop=True),
        harm[rows],
        take(model),
        take(benchmark),
        take(prompt_cluster),
        **kwargs,
    )


def compare_with_study(result: AmbiguityModel) -> pd.DataFrame:
    """Which of the study's six correlates hold here.

    Returns one row per correlate in :data:`CORRELATES` with the column that measured it (the
    default column, or an alternative such as ``lm_log_ppl`` for perplexity or ``rare_share``
    for sophistication when the fit used that one), the expected direction for that column, the
    observed odds ratio and verdict, and ``holds``: "holds" (significant after Holm, outside the
    null band, expected side), "reversed" (same, other side), "no effect" (negligible or not
    significant), "not estimable", or "not in model".
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
