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

The TF-IDF formulas are implemented on integer token ids with scipy.sparse (one global
vocabulary and global document frequencies, so the values do not depend on the chunking); the
tests check them against ``TfidfVectorizer`` itself. Texts are tokenised in chunks of
``chunk_size`` responses into compact integer arrays, so peak memory stays far below keeping
every token as a Python string.

**Association** (:func:`fit_ambiguity_model`): logistic regression of a 0/1 outcome (the judge
said "ambiguous") on the z-scored features, with model and benchmark fixed effects (dummies),
cluster-robust standard errors by prompt (statsmodels ``Logit``, ``cov_type="cluster"``). Odds
ratio per SD with a 95 % interval, Holm-adjusted p-values over the features, variance inflation
factors (statsmodels, on the full design the regression sees), and the cross-validated AUC
(scikit-learn, folds grouped by prompt) of the features alone against the fixed effects alone.
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
  constant, and counted; ``predict_proba`` gives those levels probability 0 or 1.
* The sklearn AUC models use the library's default L2 penalty (C = 1), negligible at these n.
"""

from __future__ import annotations

import math
import os
import re
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
    "TOKEN_RE",
    "SENTENCE_RE",
    "FEATURE_COLUMNS",
    "CORRELATES",
    "Correlate",
    "study_direction",
    "closed_class_words",
    "tokenize",
    "split_sentences",
    "compute_features",
    "AmbiguityModel",
    "fit_ambiguity_model",
    "fit_human_harmful_model",
    "compare_with_study",
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
    Correlate("sophistication", "zipf_mean", +1,
              "sophistication lowers ambiguity; zipf_mean is inverse sophistication, so its sign is +"),
    Correlate("perplexity", "bigram_log_ppl", +1, "less predictable replies are more often ambiguous"),
    Correlate("coherence", "coherence", -1, "more coherent replies are less often ambiguous"),
    Correlate("similarity", "prompt_similarity", -1,
              "replies closer to the prompt are less often ambiguous"),
)

#: feature column -> expected sign of its odds ratio (>1: +1, <1: -1), per the study.
study_direction: Mapping[str, int] = {c.column: c.expected_sign for c in CORRELATES}


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
    return TOKEN_RE.findall(text.lower().translate(_APOSTROPHES))


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: split on whitespace after ``.``, ``!`` or ``?``."""
    return SENTENCE_RE.split(text)


class _Vocabulary:
    """Global token -> int id, grown chunk by chunk."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def encode(self, tokens: list[str]) -> np.ndarray:
        if not tokens:
            return np.empty(0, dtype=np.int32)
        codes, uniques = pd.factorize(np.asarray(tokens, dtype=object))
        ids = self.ids
        mapping = np.fromiter((ids.setdefault(w, len(ids)) for w in uniques), dtype=np.int64, count=len(uniques))
        return mapping[codes].astype(np.int32)

    def words(self) -> list[str]:
        out = [""] * len(self.ids)
        for word, i in self.ids.items():
            out[i] = word
        return out


@dataclass
class _Corpus:
    """Every response as integer arrays.

    tok: (T,) token ids in order; tok_sent: (T,) global sentence index of each token;
    sent_resp: (S,) response index of each sentence; resp_start: (R + 1,) token offsets;
    sent_start: (R + 1,) sentence offsets.
    """

    tok: np.ndarray
    tok_sent: np.ndarray
    sent_resp: np.ndarray
    resp_start: np.ndarray
    sent_start: np.ndarray

    @property
    def n_resp(self) -> int:
        return len(self.resp_start) - 1

    def tok_resp(self) -> np.ndarray:
        return self.sent_resp[self.tok_sent] if len(self.tok) else np.empty(0, dtype=np.int32)


def _tokenize_corpus(texts: Sequence[Any], vocab: _Vocabulary, chunk_size: int) -> tuple[_Corpus, np.ndarray]:
    """Tokenise responses chunk by chunk; returns the corpus and ``n_chars`` per response."""
    tok_parts: list[np.ndarray] = []
    sent_len_parts: list[np.ndarray] = []
    sents_per_resp = np.zeros(len(texts), dtype=np.int64)
    n_chars = np.zeros(len(texts), dtype=np.int64)
    split = SENTENCE_RE.split
    findall = TOKEN_RE.findall
    for lo in range(0, len(texts), chunk_size):
        chunk = texts[lo:lo + chunk_size]
        tokens: list[str] = []
        sent_lens: list[int] = []
        for j, text in enumerate(chunk):
            if not isinstance(text, str):
                continue  # missing response: no token, no sentence
            n_chars[lo + j] = len(text)
            k = 0
            for sentence in split(text.lower().translate(_APOSTROPHES)):
                found = findall(sentence)
                if found:
                    tokens.extend(found)
                    sent_lens.append(len(found))
                    k += 1
            sents_per_resp[lo + j] = k
        tok_parts.append(vocab.encode(tokens))
        sent_len_parts.append(np.asarray(sent_lens, dtype=np.int64))
        del tokens, sent_lens
    tok = np.concatenate(tok_parts) if tok_parts else np.empty(0, dtype=np.int32)
    sent_lens_all = np.concatenate(sent_len_parts) if sent_len_parts else np.empty(0, dtype=np.int64)
    n_sent = len(sent_lens_all)
    tok_sent = np.repeat(np.arange(n_sent, dtype=np.int32), sent_lens_all)
    sent_resp = np.repeat(np.arange(len(texts), dtype=np.int32), sents_per_resp)
    sent_start = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(sents_per_resp, out=sent_start[1:])
    sent_tok_start = np.zeros(n_sent + 1, dtype=np.int64)
    np.cumsum(sent_lens_all, out=sent_tok_start[1:])
    resp_start = sent_tok_start[sent_start]
    return _Corpus(tok, tok_sent, sent_resp, resp_start, sent_start), n_chars


# --------------------------------------------------------------------------------------------
# Word-level lookups
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


def _per_response_mean(values: np.ndarray, resp: np.ndarray, n_resp: int, weights: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(mean, count) of ``values`` by response index; mean NaN where count is 0."""
    if weights is None:
        count = np.bincount(resp, minlength=n_resp).astype(np.float64)
        total = np.bincount(resp, weights=values, minlength=n_resp)
    else:
        count = np.bincount(resp, weights=weights, minlength=n_resp)
        total = np.bincount(resp, weights=values * weights, minlength=n_resp)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan)
    return mean, count


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

    Ids are in ``[0, n_ids)``; ``bos = n_ids`` is the start symbol (a history only).
    """

    def __init__(self, n_ids: int, discount: float = KN_DISCOUNT) -> None:
        self.n_ids = n_ids
        self.base = n_ids + 1
        self.discount = discount

    def fit(self, keys: np.ndarray) -> "_KneserNeyBigram":
        """``keys``: (N,) int64 bigram keys ``prev * base + cur`` of the training tokens."""
        d = self.discount
        uk, cnt = np.unique(keys, return_counts=True)
        prev = uk // self.base
        cur = uk % self.base
        self.keys = uk
        self.counts = cnt
        self.c_hist = np.bincount(prev, weights=cnt, minlength=self.base)
        self.n1_hist = np.bincount(prev, minlength=self.base).astype(np.float64)
        n1_cont = np.bincount(cur, minlength=self.base).astype(np.float64)
        n_bigram_types = float(len(uk))
        n_types = float(np.count_nonzero(n1_cont))
        if n_bigram_types == 0:
            self.p_cont = np.full(self.base, 1.0)  # no training data: a flat, improper fallback
        else:
            self.p_cont = (np.maximum(n1_cont - d, 0.0) + d * n_types / (n_types + 1.0)) / n_bigram_types
        return self

    def log_prob(self, keys: np.ndarray) -> np.ndarray:
        """Natural-log probability of each bigram key."""
        prev = keys // self.base
        cur = keys % self.base
        if len(self.keys):
            pos = np.searchsorted(self.keys, keys)
            pos_c = np.minimum(pos, len(self.keys) - 1)
            c = np.where(self.keys[pos_c] == keys, self.counts[pos_c], 0).astype(np.float64)
        else:
            c = np.zeros(len(keys))
        ch = self.c_hist[prev]
        pc = self.p_cont[cur]
        seen = ch > 0
        chs = np.where(seen, ch, 1.0)
        p = np.where(seen, np.maximum(c - self.discount, 0.0) / chs + self.discount * self.n1_hist[prev] / chs * pc, pc)
        return np.log(p)


def _bigram_keys(corpus: _Corpus, n_ids: int) -> np.ndarray:
    """(T,) int64 keys ``prev * (n_ids + 1) + cur``, prev = start symbol at each response start."""
    tok = corpus.tok.astype(np.int64)
    prev = np.empty_like(tok)
    if len(tok):
        prev[1:] = tok[:-1]
        starts = corpus.resp_start[:-1][np.diff(corpus.resp_start) > 0]
        prev[starts] = n_ids
    keys = prev * (n_ids + 1) + tok
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
    return np.fromiter((zlib.crc32(str(r).encode("utf-8", "surrogatepass")) & 1 for r in response_id),
                       dtype=np.int8, count=len(response_id))


def _bigram_log_ppl(corpus: _Corpus, n_ids: int, folds: np.ndarray) -> np.ndarray:
    keys = _bigram_keys(corpus, n_ids)
    tok_resp = corpus.tok_resp()
    tok_fold = folds[tok_resp] if len(tok_resp) else np.empty(0, dtype=np.int8)
    surprisal = np.empty(len(keys))
    for f in (0, 1):
        test = tok_fold == f
        if not test.any():
            continue
        lm = _KneserNeyBigram(n_ids).fit(keys[~test])
        surprisal[test] = -lm.log_prob(keys[test])
        del lm
    mean, _ = _per_response_mean(surprisal, tok_resp, corpus.n_resp)
    return mean


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
    sq = np.bincount(np.repeat(np.arange(m.shape[0]), np.diff(m.indptr)), weights=m.data**2, minlength=m.shape[0])
    norm = np.sqrt(sq)
    norm[norm == 0] = 1.0
    m.data /= np.repeat(norm, np.diff(m.indptr))


def _row_dot(a, b) -> np.ndarray:
    """Row-wise dot products of two CSR matrices of the same shape."""
    return np.asarray(a.multiply(b).sum(axis=1)).ravel()


def _coherence(corpus: _Corpus, n_ids: int, chunk_size: int) -> np.ndarray:
    """Mean TF-IDF cosine of adjacent sentences per response (NaN below 2 sentences)."""
    n_sent = len(corpus.sent_resp)
    out = np.full(corpus.n_resp, np.nan)
    if n_sent == 0:
        return out
    # pass 1: sentence-term counts by chunk of responses; document frequency over all sentences
    chunks = []
    df = np.zeros(n_ids, dtype=np.int64)
    for lo in range(0, corpus.n_resp, chunk_size):
        hi = min(lo + chunk_size, corpus.n_resp)
        s0, s1 = corpus.sent_start[lo], corpus.sent_start[hi]
        t0, t1 = corpus.resp_start[lo], corpus.resp_start[hi]
        m = _count_matrix(corpus.tok_sent[t0:t1] - s0, corpus.tok[t0:t1], int(s1 - s0), n_ids)
        df += np.bincount(m.indices, minlength=n_ids)
        chunks.append((lo, hi, s0, m))
    keep = df >= 2  # min_df=2
    idf = np.log((1.0 + n_sent) / (1.0 + df)) + 1.0
    for lo, hi, s0, m in chunks:
        m.data = np.where(keep[m.indices], (1.0 + np.log(m.data)) * idf[m.indices], 0.0)
        _l2_normalise_rows(m)
        if m.shape[0] < 2:
            continue
        cos = _row_dot(m[:-1], m[1:])
        sr = corpus.sent_resp[s0:s0 + m.shape[0]]
        same = sr[:-1] == sr[1:]
        mean, count = _per_response_mean(cos[same], sr[:-1][same] - lo, hi - lo)
        out[lo:hi] = np.where(count > 0, mean, np.nan)
    return out


def _prompt_similarity(corpus: _Corpus, prompt_corpus: _Corpus, prompt_index: np.ndarray, n_ids: int,
                       stop_ids: np.ndarray, chunk_size: int) -> np.ndarray:
    """TF-IDF cosine(prompt, response); stop words removed; idf over responses + distinct prompts."""
    stop = np.zeros(n_ids, dtype=bool)
    stop[stop_ids] = True
    n_resp, n_prompts = corpus.n_resp, prompt_corpus.n_resp

    p_tok = prompt_corpus.tok
    p_keep = ~stop[p_tok]
    pm = _count_matrix(prompt_corpus.tok_resp()[p_keep], p_tok[p_keep], n_prompts, n_ids)
    df = np.bincount(pm.indices, minlength=n_ids).astype(np.int64)
    chunks = []
    for lo in range(0, n_resp, chunk_size):
        hi = min(lo + chunk_size, n_resp)
        t0, t1 = corpus.resp_start[lo], corpus.resp_start[hi]
        tok = corpus.tok[t0:t1]
        keep = ~stop[tok]
        resp = corpus.sent_resp[corpus.tok_sent[t0:t1][keep]] - lo
        m = _count_matrix(resp, tok[keep], hi - lo, n_ids)
        df += np.bincount(m.indices, minlength=n_ids)
        chunks.append((lo, hi, m))
    idf = np.log((1.0 + n_resp + n_prompts) / (1.0 + df)) + 1.0
    pm.data = pm.data * idf[pm.indices]
    _l2_normalise_rows(pm)
    out = np.empty(n_resp)
    for lo, hi, m in chunks:
        m.data = m.data * idf[m.indices]
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


def _local_lm_log_ppl(texts: Sequence[Any], lm_dir: str | os.PathLike[str], *, batch_size: int = 8,
                      max_length: int = 1024) -> np.ndarray:
    """Mean token surprisal (nats) of each text under a causal LM read from ``lm_dir`` only."""
    path = Path(lm_dir).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"local_lm_dir {str(path)!r} is not a directory; give the folder that holds "
                                "the model's config.json and weights (nothing is downloaded).")
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"local_lm_dir {str(path)!r} has no config.json, so it is not a saved "
                                "transformers model folder.")
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
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token if tokenizer.eos_token is not None else tokenizer.unk_token
    tokenizer.padding_side = "right"
    out = np.full(len(texts), np.nan)
    clean = [t if isinstance(t, str) else "" for t in texts]
    with torch.no_grad():
        for lo in range(0, len(clean), batch_size):
            batch = clean[lo:lo + batch_size]
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
            out[lo:lo + len(batch)] = vals
    return out


# --------------------------------------------------------------------------------------------
# compute_features
# --------------------------------------------------------------------------------------------


def compute_features(frame: pd.DataFrame, *, local_lm_dir: str | os.PathLike[str] | None = None,
                     chunk_size: int = 10_000) -> pd.DataFrame:
    """Offline text features per response.

    Args:
        frame: columns ``response_id, model, prompt, response``; one row per response
            (``response_id`` unique). ``model`` defines the cross-fitting folds of the bigram
            model. A missing response counts as empty; a missing prompt gives NaN similarity.
        local_lm_dir: optional folder of a saved causal LM (transformers format); adds
            ``lm_log_ppl``. Read with ``local_files_only=True``; nothing is downloaded.
        chunk_size: responses tokenised (and TF-IDF rows built) per chunk; bounds peak memory.

    Returns:
        DataFrame, one row per response in input order: ``response_id`` and
        :data:`FEATURE_COLUMNS` (plus ``lm_log_ppl`` with ``local_lm_dir``). Per-token features
        are NaN for a response without tokens.
    """
    required = ["response_id", "model", "prompt", "response"]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"compute_features needs the columns {required}; missing: {missing}.")
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1.")
    if frame["response_id"].duplicated().any():
        dup = frame.loc[frame["response_id"].duplicated(), "response_id"].iloc[0]
        raise ValueError(f"response_id must be unique; {dup!r} appears more than once.")
    n = len(frame)
    responses = frame["response"].tolist()

    vocab = _Vocabulary()
    corpus, n_chars = _tokenize_corpus(responses, vocab, chunk_size)
    prompt_codes, prompt_uniques = pd.factorize(frame["prompt"], use_na_sentinel=True)
    prompt_corpus, _ = _tokenize_corpus(list(prompt_uniques), vocab, chunk_size)
    closed = closed_class_words()
    stop_ids = np.fromiter((vocab.ids.setdefault(w, len(vocab.ids)) for w in sorted(closed)), dtype=np.int64)
    n_ids = len(vocab.ids)
    words = vocab.words()

    tok = corpus.tok
    tok_resp = corpus.tok_resp()
    n_tokens = np.diff(corpus.resp_start).astype(np.int64)
    n_sentences = np.diff(corpus.sent_start).astype(np.int64)

    is_closed = np.zeros(n_ids, dtype=bool)
    is_closed[stop_ids] = True
    content = (~is_closed[tok]).astype(np.float64)
    n_content = np.bincount(tok_resp, weights=content, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        density = np.where(n_tokens > 0, n_content / np.maximum(n_tokens, 1), np.nan)

    freq = _wordfreq_frequencies(words)
    zipf = _zipf_from_frequency(freq)
    tok_zipf = zipf[tok]
    zipf_mean, _ = _per_response_mean(tok_zipf, tok_resp, n, weights=content)
    rare_share, _ = _per_response_mean((tok_zipf < RARE_ZIPF).astype(np.float64), tok_resp, n, weights=content)
    del tok_zipf, content
    uni_surprisal = -np.log(np.maximum(freq, UNIGRAM_FLOOR))
    unigram_log_ppl, _ = _per_response_mean(uni_surprisal[tok], tok_resp, n)
    del tok_resp

    folds = _crossfit_folds(frame["model"], frame["response_id"], n_tokens)
    bigram_log_ppl = _bigram_log_ppl(corpus, n_ids, folds)

    coherence = _coherence(corpus, n_ids, chunk_size)
    coherence_missing = np.isnan(coherence).astype(np.int8)

    similarity = _prompt_similarity(corpus, prompt_corpus, np.asarray(prompt_codes), n_ids, stop_ids, chunk_size)
    similarity[n_tokens == 0] = np.nan

    out = pd.DataFrame({
        "response_id": frame["response_id"].to_numpy(),
        "n_tokens": n_tokens,
        "n_chars": n_chars,
        "n_sentences": n_sentences,
        "log_len": np.log1p(n_tokens),
        "lexical_density": density,
        "zipf_mean": zipf_mean,
        "rare_share": rare_share,
        "unigram_log_ppl": unigram_log_ppl,
        "bigram_log_ppl": bigram_log_ppl,
        "coherence": coherence,
        "coherence_missing": coherence_missing,
        "prompt_similarity": similarity,
    })
    if local_lm_dir is not None:
        out["lm_log_ppl"] = _local_lm_log_ppl(responses, local_lm_dir)
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
    alone, fixed effects alone, and both. ``dropped``: rows left out, by reason.
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

    def predict_proba(self, features: pd.DataFrame, model: Iterable[Any] | None = None,
                      benchmark: Iterable[Any] | None = None) -> np.ndarray:
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
            miss = features["coherence"].isna().to_numpy() if "coherence" in features else features[
                "coherence_missing"].to_numpy(dtype=bool)
            eta += self._slopes["coherence_missing"] * miss
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


def _as_array(values: Any, n: int, name: str) -> np.ndarray | None:
    if values is None:
        return None
    arr = values.to_numpy() if isinstance(values, (pd.Series, pd.Index)) else np.asarray(values, dtype=object)
    if len(arr) != n:
        raise ValueError(f"{name} has {len(arr)} values but features has {n} rows.")
    return arr


def _holm(p: np.ndarray) -> np.ndarray:
    from statsmodels.stats.multitest import multipletests

    if len(p) == 0:
        return p
    return multipletests(p, method="holm")[1]


def _group_kfold_auc(X, y: np.ndarray, groups: np.ndarray, folds: int, seed: int, make_model) -> float:
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold

    if X is None:
        return float("nan")
    splitter = GroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    aucs = []
    for train, test in splitter.split(np.zeros(len(y)), y, groups):
        if len(np.unique(y[train])) < 2 or len(np.unique(y[test])) < 2:
            continue
        model = make_model().fit(X[train], y[train])
        aucs.append(roc_auc_score(y[test], model.predict_proba(X[test])[:, 1]))
    return float(np.mean(aucs)) if aucs else float("nan")


def fit_ambiguity_model(features: pd.DataFrame, outcome: Any, model: Any, benchmark: Any, prompt_cluster: Any, *,
                        null_band: tuple[float, float] = (0.9, 1.1), cv_folds: int = 5, seed: int = 0,
                        columns: Sequence[str] | None = None, outcome_name: str = "ambiguity",
                        alpha: float = 0.05) -> AmbiguityModel:
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

    Returns:
        :class:`AmbiguityModel`.

    Raises:
        ValueError: inconsistent lengths, a non-0/1 outcome, an outcome without both values
            (after dropping constant fixed-effect levels), fewer than 2 prompt clusters, or no
            usable row.
    """
    import statsmodels.api as sm
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from statsmodels.stats.outliers_influence import variance_inflation_factor
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationWarning

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
    fe_raw = {"model": _as_array(model, n_all, "model"), "benchmark": _as_array(benchmark, n_all, "benchmark")}

    y_num = pd.to_numeric(pd.Series(y_raw, dtype=object).map(lambda v: float(v) if isinstance(v, (bool, np.bool_)) else v),
                          errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isnan(y_num) & ~np.isin(y_num, (0.0, 1.0))
    if bad.any():
        raise ValueError(f"outcome must be 0/1 (or True/False); found {y_raw[np.flatnonzero(bad)[0]]!r}.")

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
    bad_g = pd.isna(pd.Series(groups_raw, dtype=object)).to_numpy()
    for fe, vals in fe_raw.items():
        if vals is not None:
            bad_g |= pd.isna(pd.Series(vals, dtype=object)).to_numpy()
    dropped["missing model, benchmark or prompt"] = int((keep & bad_g).sum())
    keep &= ~bad_g
    if not keep.any():
        raise ValueError("No usable row: every row lacks the outcome, a feature, or a grouping value.")
    if len(np.unique(y_num[keep])) < 2:
        only = int(y_num[keep][0])
        raise ValueError(
            f"The outcome is {only} for all {int(keep.sum())} usable responses, so nothing can be associated "
            f"with it; a regression needs both outcomes (0 and 1).")

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

    # drop fixed-effect levels with a constant outcome (their dummy separates them), iteratively
    level_effects: dict[str, dict[str, float]] = {fe: {} for fe in fe_used}
    fe_str = {fe: pd.Series(fe_raw[fe]).astype(str).to_numpy() for fe in fe_used}
    n_sep = 0
    changed = True
    while changed:
        changed = False
        for fe in fe_used:
            s = pd.DataFrame({"lvl": fe_str[fe][keep], "y": y_num[keep]})
            rate = s.groupby("lvl")["y"].mean()
            constant = rate[(rate == 0) | (rate == 1)]
            if len(constant) and len(constant) < len(rate):
                for lvl, r in constant.items():
                    level_effects[fe][lvl] = -np.inf if r == 0 else np.inf
                hit = keep & np.isin(fe_str[fe], constant.index.to_numpy())
                n_sep += int(hit.sum())
                keep &= ~hit
                notes.append(f"{fe} level(s) {sorted(constant.index.tolist())} have outcome "
                             f"{'/'.join(str(int(v)) for v in sorted(set(constant.to_numpy())))} for every response: "
                             "dropped (separated by their fixed effect).")
                changed = True
            elif len(constant) == len(rate):
                # every level constant: outcome constant overall, caught below
                pass
    dropped["fixed-effect level with constant outcome"] = n_sep
    if len(np.unique(y_num[keep])) < 2:
        raise ValueError("After dropping fixed-effect levels whose outcome never varies, the outcome is constant; "
                         "the features cannot be associated with it within models and benchmarks.")
    fe_final = []
    for fe in fe_used:
        if pd.Series(fe_str[fe][keep]).nunique() >= 2:
            fe_final.append(fe)
        else:
            lvl = fe_str[fe][keep][0]
            level_effects[fe][lvl] = 0.0
            notes.append(f"only one {fe} level remains after dropping: the {fe} fixed effect is left out.")
    y = y_num[keep]
    X = X_raw[keep]
    groups = pd.factorize(pd.Series(groups_raw[keep]).astype(str))[0]
    n_clusters = int(groups.max()) + 1
    if n_clusters < 2:
        raise ValueError("Cluster-robust standard errors need at least 2 distinct prompts.")

    # standardise
    center: dict[str, float] = {}
    scale: dict[str, float] = {}
    design_cols: list[np.ndarray] = [np.ones(len(y))]
    names = ["Intercept"]
    estimable = []
    for i, col in enumerate(columns):
        x = X[:, i]
        finite = np.isfinite(x)
        sd = float(np.std(x[finite], ddof=1)) if finite.sum() > 1 else 0.0
        if not np.isfinite(sd) or sd <= 0:
            notes.append(f"{col} is constant in the data: not estimable.")
            continue
        mu = float(np.mean(x[finite]))
        center[col], scale[col] = mu, sd
        z = (x - mu) / sd
        design_cols.append(np.where(finite, z, 0.0))
        names.append(col)
        estimable.append(col)
    coh_missing = None
    use_missing = False
    if "coherence" in estimable:
        coh_missing = (~np.isfinite(X[:, columns.index("coherence")])).astype(np.float64)
        if 0 < coh_missing.sum() < len(coh_missing):
            design_cols.append(coh_missing)
            names.append("coherence_missing")
            use_missing = True
    fe_blocks = []
    for fe in fe_final:
        vals = pd.Series(fe_str[fe][keep])
        counts = vals.value_counts()
        ref = sorted(counts[counts == counts.max()].index)[0]
        level_effects[fe][ref] = 0.0
        levels = sorted(set(counts.index) - {ref})
        codes = pd.Categorical(vals, categories=levels).codes
        block = np.zeros((len(y), len(levels)))
        rows = np.flatnonzero(codes >= 0)
        block[rows, codes[rows]] = 1.0
        fe_blocks.append((fe, levels, block))
        for j, lvl in enumerate(levels):
            design_cols.append(block[:, j])
            names.append(f"{fe}[{lvl}]")
    D = np.column_stack(design_cols)

    # fit
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        logit = sm.Logit(y, D)
        try:
            res = logit.fit(disp=0, maxiter=100, cov_type="cluster", cov_kwds={"groups": groups})
        except np.linalg.LinAlgError as exc:
            raise ValueError(f"The logit could not be fitted ({exc}); the design is singular, e.g. a feature "
                             "is a linear combination of the fixed effects.") from exc
    for w in wlist:
        if issubclass(w.category, (ConvergenceWarning, PerfectSeparationWarning, RuntimeWarning)) or \
                "separation" in str(w.message).lower() or "singular" in str(w.message).lower():
            caught.append(f"{w.category.__name__}: {w.message}")
    params = np.asarray(res.params)
    bse = np.asarray(res.bse)
    converged = bool(res.mle_retvals.get("converged", True))
    eta = D @ params
    extreme = int(np.sum(np.abs(eta) > 18.0))  # fitted p outside [1e-8, 1 - 1e-8]
    feat_idx = [names.index(c) for c in estimable]
    separation = (not converged) or any("separation" in c.lower() for c in caught) or extreme > 0 or \
        bool(np.any(np.abs(params[feat_idx]) > 10.0)) or not np.all(np.isfinite(bse))
    if separation:
        notes.append(
            "(quasi-)complete separation: the outcome is (almost) perfectly predicted "
            f"(converged={converged}, {extreme} rows with fitted probability beyond 1e-8 of 0 or 1); "
            "odds ratios and intervals are not meaningful.")
    notes.extend(caught)

    zcrit = float(_norm_ppf(1 - alpha / 2))
    pvals = np.asarray(res.pvalues)
    coef_table = pd.DataFrame({"term": names, "coef": params, "se": bse,
                               "z": np.asarray(res.tvalues), "p": pvals})

    # VIF on the design the regression sees
    vifs = {}
    for c in estimable:
        j = names.index(c)
        with np.errstate(divide="ignore", invalid="ignore"):
            vifs[c] = float(variance_inflation_factor(D, j))

    rows = []
    p_est = np.array([pvals[names.index(c)] for c in estimable])
    p_holm = dict(zip(estimable, _holm(p_est)))
    corr_name = {c.column: c.name for c in CORRELATES}
    for col in columns:
        if col not in estimable:
            rows.append({"correlate": corr_name.get(col, col), "feature": col, "odds_ratio": np.nan,
                         "ci_low": np.nan, "ci_high": np.nan, "p": np.nan, "p_holm": np.nan, "vif": np.nan,
                         "negligible": False, "verdict": _VERDICT_CONSTANT})
            continue
        j = names.index(col)
        b, se = params[j], bse[j]
        orr = math.exp(b)
        lo_ci, hi_ci = math.exp(b - zcrit * se), math.exp(b + zcrit * se)
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
        rows.append({"correlate": corr_name.get(col, col), "feature": col, "odds_ratio": orr, "ci_low": lo_ci,
                     "ci_high": hi_ci, "p": float(pvals[j]), "p_holm": ph, "vif": vifs[col],
                     "negligible": negligible, "verdict": verdict})
    table = pd.DataFrame(rows)

    # cross-validated AUCs, folds grouped by prompt
    folds = min(cv_folds, n_clusters)
    Xf = X[:, [columns.index(c) for c in estimable]]
    if use_missing:
        Xf = np.column_stack([Xf, coh_missing])
    if "coherence" in estimable:
        j = estimable.index("coherence")
        col_vals = Xf[:, j]
        col_vals[~np.isfinite(col_vals)] = center["coherence"]  # fold-independent constant; z = 0
    Xfe = np.column_stack([b for _, _, b in fe_blocks]) if fe_blocks else None

    def make_scaled():
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))

    def make_plain():
        return LogisticRegression(max_iter=1000)

    auc_f = _group_kfold_auc(Xf, y, groups, folds, seed, make_scaled) if Xf.shape[1] else float("nan")
    auc_fe = _group_kfold_auc(Xfe, y, groups, folds, seed, make_plain)
    Xboth = Xf if Xfe is None else np.column_stack([Xf, Xfe])
    auc_both = _group_kfold_auc(Xboth, y, groups, folds, seed, make_scaled) if Xboth.shape[1] else float("nan")
    if Xfe is None:
        notes.append("no fixed effect in the model: auc_fixed_effects is undefined (NaN).")

    slopes = {c: float(params[names.index(c)]) for c in estimable}
    if use_missing:
        slopes["coherence_missing"] = float(params[names.index("coherence_missing")])
    for fe, levels, _ in fe_blocks:
        for lvl in levels:
            level_effects[fe][lvl] = float(params[names.index(f"{fe}[{lvl}]")])
    return AmbiguityModel(
        table=table, coefficients=coef_table, auc_features=auc_f, auc_fixed_effects=auc_fe, auc_combined=auc_both,
        n=int(len(y)), n_events=int(y.sum()), n_clusters=n_clusters, dropped=dropped,
        fixed_effects=tuple(fe_final), null_band=(float(lo_band), float(hi_band)), outcome_name=outcome_name,
        separation=bool(separation), notes=notes, _columns=list(columns), _center=center, _scale=scale,
        _use_missing=use_missing, _intercept=float(params[0]), _slopes=slopes,
        _level_effects={fe: level_effects[fe] for fe in fe_final},
    )


def _norm_ppf(q: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(q))


def fit_human_harmful_model(features: pd.DataFrame, human_harmful: Any, judge_ambiguous: Any, model: Any,
                            benchmark: Any, prompt_cluster: Any, **kwargs: Any) -> AmbiguityModel:
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

    def take(v):
        return None if v is None else _as_array(v, n, "grouping")[rows]

    kwargs.setdefault("outcome_name", "human-harmful")
    return fit_ambiguity_model(features.iloc[rows].reset_index(drop=True), harm[rows], take(model), take(benchmark),
                               take(prompt_cluster), **kwargs)


def compare_with_study(result: AmbiguityModel) -> pd.DataFrame:
    """Which of the study's six correlates hold here.

    Returns one row per correlate in :data:`CORRELATES` with the expected direction, the
    observed odds ratio and verdict, and ``holds``: "holds" (significant after Holm, outside the
    null band, expected side), "reversed" (same, other side), "no effect" (negligible or not
    significant), "not estimable", or "not in model" (its column was not fitted).
    """
    rows = []
    by_feature = result.table.set_index("feature")
    for c in CORRELATES:
        expected = "raises" if c.expected_sign > 0 else "lowers"
        if c.column not in by_feature.index:
            rows.append({"correlate": c.name, "feature": c.column, "expected": f"{expected} {result.outcome_name}",
                         "odds_ratio": np.nan, "verdict": "", "holds": "not in model"})
            continue
        r = by_feature.loc[c.column]
        verdict = r["verdict"]
        if verdict.startswith("raises") or verdict.startswith("lowers"):
            observed = +1 if r["odds_ratio"] > 1 else -1
            holds = "holds" if observed == c.expected_sign else "reversed"
        elif verdict in ("negligible", "not significant"):
            holds = "no effect"
        else:
            holds = "not estimable"
        rows.append({"correlate": c.name, "feature": c.column, "expected": f"{expected} {result.outcome_name}",
                     "odds_ratio": r["odds_ratio"], "verdict": verdict, "holds": holds})
    return pd.DataFrame(rows)
