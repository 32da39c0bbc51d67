"""Offline text features per response (docs/methods.md section 6): :func:`compute_features`.

Pure: numpy, pandas, scipy.sparse and ``wordfreq`` (which reads its own packaged frequency
tables); no other file, no network and no environment access.
One row per response, all computed offline:

* tokeniser: lower-case, regex ``[a-z]+(?:'[a-z]+)?``; sentences split on ``(?<=[.!?])\\s+``.
  One pre-step before the regex: the typographic apostrophe U+2019 (and U+02BC) becomes ``'``,
  so ``don’t`` is one token like ``don't`` instead of the two content tokens ``don`` + ``t``.
  Tokens never straddle a sentence break (the break is whitespace), so the response's tokens
  are exactly its sentences' tokens in order. Sentences without any token ("1." in a numbered
  list) are not counted as sentences.
* ``n_tokens``, ``n_chars``, ``n_sentences``; ``log_len = log(1 + n_tokens)``.
* ``lexical_density`` (Ure 1971): tokens not in the shipped closed-class list
  (:data:`annotate.stats.correlates.closed_class.CLOSED_CLASS_WORDS`) / tokens.
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
* optional ``lm_log_ppl``: mean token surprisal under a causal language model, from a scorer the
  caller passes (``lm_scorer``). Loading such a model reads files and sets environment
  variables, so it lives outside the statistics layer (``annotate.pipeline._local_lm``).

Implementation: texts are tokenised in chunks of ``chunk_size`` responses into one int32 array
of token ids (one global vocabulary) plus sentence lengths, so no per-token Python object
outlives its chunk; every feature is then computed with numpy/scipy.sparse, again chunk by chunk
where temporaries scale with the tokens. The TF-IDF formulas run on the token ids with global
document frequencies, so no value depends on the chunking; the tests check them against
``TfidfVectorizer`` itself. The bigram model finds the distinct bigrams once (hash
factorisation) with their count per fold and evaluates both fold models on that table. Measured
on the 2-core machine: about 1 min and 2.3 GiB peak for 130,000 responses of 250 words
(``bench/correlates.py``).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.stats.correlates._clock import Clock
from annotate.stats.correlates.closed_class import closed_class_words

if TYPE_CHECKING:
    from scipy import sparse

__all__ = [
    "FEATURE_COLUMNS",
    "KN_DISCOUNT",
    "RARE_ZIPF",
    "SENTENCE_RE",
    "TOKEN_RE",
    "UNIGRAM_FLOOR",
    "LMScorer",
    "compute_features",
    "split_sentences",
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


# --------------------------------------------------------------------------------------------
# Tokenisation
# --------------------------------------------------------------------------------------------


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` (docs/methods.md section 6).

    The text is lower-cased, the typographic apostrophes U+2019 and U+02BC become ``'``, and
    the tokens are the matches of :data:`TOKEN_RE`, ``[a-z]+(?:'[a-z]+)?``: letters a-z only,
    with at most one inner apostrophe each.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    list of str
        The tokens in order; digits, punctuation and letters outside a-z separate tokens.

    Examples
    --------
    >>> tokenize("Don\u2019t STOP: it's 3 o'clock!")
    ["don't", 'stop', "it's", "o'clock"]
    >>> tokenize("e-mail caf\u00e9")
    ['e', 'mail', 'caf']
    """
    return TOKEN_RE.findall(_normalise(text))


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: split on whitespace after ``.``, ``!`` or ``?``.

    The split is :data:`SENTENCE_RE`, ``(?<=[.!?])\\s+``; the whitespace run is dropped, the
    punctuation stays with its sentence. A full stop without whitespace after it does not split.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    list of str
        The sentences in order (``[text]`` when there is no break).

    Examples
    --------
    >>> split_sentences("One. Two!  Three? four.five")
    ['One.', 'Two!', 'Three?', 'four.five']
    """
    return SENTENCE_RE.split(text)


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
    """Lower-case ``text`` and turn the typographic apostrophes U+2019 and U+02BC into ``'``."""
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
    """(V,) float64 wordfreq English frequency of each of the V words (0.0 when unknown), one call per type."""
    try:
        import wordfreq
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "annotate's ambiguity features need the 'wordfreq' package (pip install 'annotate[diagnostics]')."
        ) from exc
    freq = wordfreq.word_frequency
    return np.fromiter((freq(w, "en") for w in words), dtype=np.float64, count=len(words))


def _zipf_from_frequency(freq: np.ndarray) -> np.ndarray:
    """(V,) wordfreq.zipf_frequency from (V,) word_frequency: ``round(log10(f) + 9, 2)``, 0.0 for f = 0."""
    with np.errstate(divide="ignore"):
        z = np.round(np.log10(freq) + 9.0, 2)
    return np.where(freq > 0, z, 0.0)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Elementwise ``num / den`` where ``den > 0``, NaN elsewhere (same shape)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _word_features(
    corpus: _Corpus, is_closed: np.ndarray, zipf: np.ndarray, surprisal: np.ndarray, chunk_size: int
) -> dict[str, np.ndarray]:
    """Density, sophistication and unigram surprisal per text, in chunks of texts.

    ``is_closed``, ``zipf`` and ``surprisal`` are (V,) per vocabulary id. For text ``i`` with
    ``n_i`` tokens, of which the ``c_i`` content tokens (not closed-class) have Zipf values
    ``z``: lexical_density ``c_i / n_i``; zipf_mean ``mean(z)``; rare_share ``mean(z < 4)``;
    unigram_log_ppl ``mean`` of ``surprisal`` over all ``n_i`` tokens. Returns (R,) float64
    arrays by name; NaN where the denominator is 0.
    """
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
    """(R,) int8 fold 0/1 per response: whole models balanced by token count, or a CRC-32 hash of the id.

    With two or more models, models are taken by decreasing token count (ties by name) and each
    goes to the fold with fewer tokens so far (fold 0 on a tie). With one model, the fold is
    ``crc32(str(response_id)) & 1``.
    """
    levels = model.astype("string").fillna("<NA>")
    if levels.nunique() >= 2:
        load = pd.Series(n_tokens, index=levels.index).groupby(levels.to_numpy()).sum()
        order = sorted(load.items(), key=lambda kv: (-kv[1], kv[0]))
        fold_of: dict[Any, int] = {}  # keys: the model names (str)
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
    """(R,) cross-fitted KN bigram surprisal per text: fold f is scored by the model of fold 1 - f.

    ``bigram_log_ppl_i = -(1/n_i) sum_t ln P_{1-f_i}(w_t | w_{t-1})`` (NaN for ``n_i = 0``).

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


def _count_matrix(rows: np.ndarray, cols: np.ndarray, n_rows: int, n_cols: int) -> sparse.csr_matrix:
    """(n_rows, n_cols) CSR term counts (float64): entry (r, c) = number of i with rows[i] = r and
    cols[i] = c; duplicates summed, indices sorted."""
    from scipy import sparse

    m = sparse.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(n_rows, n_cols))
    m.sum_duplicates()
    return m


def _l2_normalise_rows(m: sparse.csr_matrix) -> None:
    """Divide each row of CSR ``m`` by its L2 norm, in place (all-zero rows stay zero)."""
    counts = np.diff(m.indptr)
    sq = np.bincount(np.repeat(np.arange(m.shape[0]), counts), weights=m.data**2, minlength=m.shape[0])
    norm = np.sqrt(sq)
    norm[norm == 0] = 1.0
    m.data /= np.repeat(norm, counts)


def _row_dot(a: sparse.csr_matrix, b: sparse.csr_matrix) -> np.ndarray:
    """(N,) row-wise dot products ``sum_j a[i, j] * b[i, j]`` of two (N, V) CSR matrices."""
    return np.asarray(a.multiply(b).sum(axis=1)).ravel()


def _coherence(corpus: _Corpus, n_ids: int, chunk_size: int) -> np.ndarray:
    """(R,) mean TF-IDF cosine of adjacent sentences per text (NaN below 2 sentences).

    Over all ``S`` sentences: ``idf_w = ln((1 + S) / (1 + df_w)) + 1``, weight ``(1 + ln tf) idf_w``
    for terms with ``df_w >= 2`` (0 otherwise), rows L2-normalised; coherence_i is the mean of
    the dot products of sentence ``j`` and ``j + 1`` of text ``i``.
    """
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
    """(R,) TF-IDF cosine(prompt, response); stop words removed; idf over responses + distinct prompts.

    With ``R`` responses and ``P`` distinct prompts as documents: ``idf_w = ln((1 + R + P) /
    (1 + df_w)) + 1``, weight ``tf * idf_w``, rows L2-normalised; the value is the dot product
    of the response's row and its prompt's row (``prompt_index`` (R,), -1 = no prompt: NaN).
    """
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
# compute_features
# --------------------------------------------------------------------------------------------


#: What :func:`compute_features` accepts as ``lm_scorer``: a callable that maps (R,) texts (str,
#: or None/NaN for a missing response) to an (R,) float array of each text's mean token surprisal
#: in nats under a language model (NaN where undefined). ``annotate.pipeline._local_lm`` builds
#: one from a locally saved causal LM.
LMScorer = Callable[[Sequence[Any]], np.ndarray]


def compute_features(
    frame: pd.DataFrame,
    *,
    context: pd.DataFrame | None = None,
    lm_scorer: LMScorer | None = None,
    chunk_size: int = 10_000,
) -> pd.DataFrame:
    """Offline text features per response (the module docstring defines each one).

    With ``R`` responses, ``n_i`` tokens and ``s_i`` sentences in response ``i``, of which
    ``c_i`` content tokens (not closed-class): ``log_len = ln(1 + n_i)``,
    ``lexical_density = c_i / n_i``, ``zipf_mean`` = mean Zipf frequency of the content tokens,
    ``rare_share`` = share of content tokens with Zipf < 4, ``unigram_log_ppl =
    -(1/n_i) sum ln max(p(w), 1e-8)``, ``bigram_log_ppl = -(1/n_i) sum ln P_KN(w_t | w_{t-1})``
    (cross-fitted), ``coherence`` = mean over the ``s_i - 1`` adjacent pairs of the TF-IDF
    cosine, ``prompt_similarity`` = TF-IDF cosine of prompt and response.

    Parameters
    ----------
    frame : DataFrame, (R, >= 4)
        Columns ``response_id, model, prompt, response``; one row per response
        (``response_id`` unique). ``model`` defines the cross-fitting folds of the bigram
        model. A missing response counts as empty; a missing prompt gives NaN similarity.
    context : DataFrame, (C, >= 4), optional
        Responses already featurised and stored (same columns). Three features depend on the
        corpus, not only on the text: the bigram model, and the idf (and min_df) of coherence
        and prompt similarity. When only new responses are computed, pass the stored ones here
        so that the corpus is the whole collection: they are tokenised and used for those
        estimates but get no output row (rows whose ``response_id`` is also in ``frame`` are
        ignored). Stored rows are left as they were.
    lm_scorer : callable, optional
        An :data:`LMScorer`: (R,) texts -> (R,) mean surprisal per text. Called once with the
        responses of ``frame`` (not of ``context``); its result becomes ``lm_log_ppl``.
    chunk_size : int, default 10,000
        Responses tokenised (and TF-IDF rows built) per chunk; bounds peak memory.

    Returns
    -------
    DataFrame, (R, 13) or (R, 14)
        One row per response of ``frame`` in input order: ``response_id`` and
        :data:`FEATURE_COLUMNS` (plus ``lm_log_ppl`` with ``lm_scorer``). Per-token features
        are NaN for a response without tokens. ``attrs["timings"]``: seconds per step.

    Raises
    ------
    ValueError
        A required column is missing, ``response_id`` repeats, ``chunk_size < 1``, or the
        scorer's result does not have one value per response.

    Examples
    --------
    "The", "on", "the", "It" and "was" are closed-class words, so 4 of the 9 tokens are content
    words (cat, sat, mat, happy):

    >>> import pandas as pd
    >>> reply = "The cat sat on the mat. It was happy!"
    >>> f = compute_features(
    ...     pd.DataFrame({"response_id": ["r1"], "model": ["m"], "prompt": ["Cats?"], "response": [reply]})
    ... )
    >>> int(f.loc[0, "n_tokens"]), int(f.loc[0, "n_sentences"]), int(f.loc[0, "n_chars"])
    (9, 2, 37)
    >>> round(float(f.loc[0, "lexical_density"]), 6) == round(4 / 9, 6)
    True
    """
    _check_frames(frame, context)
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1.")
    n_out = len(frame)
    out_frame = frame
    frame = _with_context(frame, context)
    n = len(frame)
    responses = frame["response"].tolist()
    clock = Clock()

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
    if lm_scorer is not None:
        out["lm_log_ppl"] = _lm_log_ppl(lm_scorer, out_frame["response"].tolist())
        clock.lap("local LM")
    out.attrs["timings"] = clock.laps  # seconds per step, for benchmarks
    return out


_REQUIRED = ["response_id", "model", "prompt", "response"]


def _check_frames(frame: pd.DataFrame, context: pd.DataFrame | None) -> None:
    """ValueError unless ``frame`` (and ``context``) hold the required columns."""
    for name, df in (("frame", frame), ("context", context)):
        if df is None:
            continue
        missing = [c for c in _REQUIRED if c not in df.columns]
        if missing:
            raise ValueError(f"compute_features needs the columns {_REQUIRED} in {name}; missing: {missing}.")


def _with_context(frame: pd.DataFrame, context: pd.DataFrame | None) -> pd.DataFrame:
    """The corpus the features are estimated on: ``frame`` (``response_id`` unique, else
    ValueError), then the responses of ``context`` not in it (the first of each id)."""
    if frame["response_id"].duplicated().any():
        dup = frame.loc[frame["response_id"].duplicated(), "response_id"].iloc[0]
        raise ValueError(f"response_id must be unique; {dup!r} appears more than once.")
    if context is None or not len(context):
        return frame
    extra = context.loc[~context["response_id"].isin(frame["response_id"]), _REQUIRED]
    extra = extra.drop_duplicates("response_id")
    return pd.concat([frame[_REQUIRED], extra], ignore_index=True)


def _lm_log_ppl(lm_scorer: LMScorer, texts: list[Any]) -> np.ndarray:
    """(R,) float64 result of ``lm_scorer(texts)``; raises unless it has one value per text."""
    values = np.asarray(lm_scorer(texts), dtype=np.float64)
    if values.shape != (len(texts),):
        raise ValueError(
            f"lm_scorer returned an array of shape {values.shape} for {len(texts)} responses; "
            "it must return one mean surprisal per response."
        )
    return values
