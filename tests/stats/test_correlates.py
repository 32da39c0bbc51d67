"""Tests for annotate.stats.correlates (methods.md section 6).

Reference values come from hand counts on small texts, from wordfreq and scikit-learn's
``TfidfVectorizer`` themselves (the module reimplements their formulas on integer ids), from
statsmodels' ``variance_inflation_factor`` and ``multipletests``, from Kneser-Ney probabilities
worked out by hand, and from seeded simulations with known odds ratios. The last test runs the
whole pipeline on the real XSTest data the package bundles (``annotate/data/xstest``).

Everything here is in-process and seeded; the module takes about 10 s on the 2-core machine.
"""

from __future__ import annotations

import math
import re
import sys
import zlib

import numpy as np
import pandas as pd
import pytest
import wordfreq
from sklearn.feature_extraction.text import TfidfVectorizer
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.outliers_influence import variance_inflation_factor

from annotate.pipeline import _local_lm
from annotate.stats import correlates as co
from annotate.stats.correlates import auc as ca
from annotate.stats.correlates import closed_class
from annotate.stats.correlates import features as cf
from annotate.stats.correlates import model as cm
from tests.data_files import PACKAGED_XSTEST

SIX = ["log_len", "lexical_density", "zipf_mean", "bigram_log_ppl", "coherence", "prompt_similarity"]


def frame(rows, models=None, prompts=None):
    """rows: list of response texts (or (model, prompt, response) tuples)."""
    out = []
    for i, r in enumerate(rows):
        if isinstance(r, tuple):
            m, p, t = r
        else:
            m = models[i] if models else "m"
            p = prompts[i] if prompts else "Tell me something."
            t = r
        out.append({"response_id": f"r{i}", "model": m, "prompt": p, "response": t})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------------------------
# Tokeniser and word list
# --------------------------------------------------------------------------------------------


def test_tokenizer_and_sentence_splitter_follow_the_spec():
    assert co.tokenize("Don't STOP: it's 3 o'clock, rock'n'roll!") == [
        "don't",
        "stop",
        "it's",
        "o'clock",
        "rock'n",
        "roll",
    ]
    assert co.tokenize("don\u2019t") == ["don't"]  # typographic apostrophe, one token
    assert co.tokenize("e-mail x2 café") == ["e", "mail", "x", "caf"]  # [a-z] only, as specified
    assert co.split_sentences("One. Two!  Three? four.five") == ["One.", "Two!", "Three?", "four.five"]
    assert co.TOKEN_RE.pattern == r"[a-z]+(?:'[a-z]+)?"
    assert co.SENTENCE_RE.pattern == r"(?<=[.!?])\s+"


AWKWARD = [
    "",
    "   ",
    "...",
    "1. Do this. 2. Do that.",
    "Wait... what?! Really?!  Yes.\n\nNew paragraph!\tTab.",
    "No break.Here",
    "Trailing space. ",
    " Leading. space",
    "Ends with a break.\n",
    "A\x00B. C\x01D! e\x02f",
    "Don\u2019t panic. It\u2019s fine? ok",
    "Über café. Naïve résumé!",
    "U.S.A. is big. e.g. this",
    "?! ?! word",
    "x" * 50 + ". " + "y " * 30,
    "Line one\nline two. Line three.\r\nEnd",
]


def test_corpus_tokenisation_equals_sentence_split_then_tokenize():
    vocab = cf._Vocabulary()
    corpus, n_chars = cf._tokenize_corpus(AWKWARD + [None], vocab, chunk_size=3)
    words = vocab.words()
    for i, text in enumerate(AWKWARD):
        expected = [toks for toks in (co.tokenize(s) for s in co.split_sentences(text)) if toks]
        s0, s1 = corpus.sent_start[i], corpus.sent_start[i + 1]
        t0 = corpus.resp_start[i]
        got, pos = [], t0
        for length in corpus.sent_len[s0:s1]:
            got.append([words[j] for j in corpus.tok[pos : pos + length]])
            pos += length
        assert got == expected, text
        assert n_chars[i] == len(text)
    assert corpus.n_tokens[-1] == 0 and corpus.n_sent[-1] == 0


def test_closed_class_list_is_curated():
    words = co.closed_class_words()
    assert 200 < len(words) < 400
    for w in [
        "the",
        "a",
        "of",
        "and",
        "because",
        "would",
        "must",
        "i",
        "themselves",
        "not",
        "don't",
        "can't",
        "it's",
        "there's",
        "won't",
        "y'all",
    ]:
        assert w in words, w
    # sklearn's ENGLISH_STOP_WORDS has these content words; the shipped list must not
    for w in ["system", "fire", "bill", "interest", "find", "describe", "detail", "however", "very", "like"]:
        assert w not in words, w
    assert words is closed_class.CLOSED_CLASS_WORDS
    entries = [w for _, group in closed_class.CLOSED_CLASS_GROUPS for w in group]
    assert len(entries) == len(set(entries)), "duplicate entries"
    assert set(entries) == words
    assert all(re.fullmatch(co.TOKEN_RE, e) for e in entries), "every entry must be a token the tokenizer yields"
    assert all(co.tokenize(e) == [e] for e in entries)
    assert "Source and rationale" in (closed_class.__doc__ or "")


# --------------------------------------------------------------------------------------------
# Features on hand-checked texts
# --------------------------------------------------------------------------------------------


def test_hand_checked_features():
    text = "The cat sat on the mat. It was happy!"
    f = co.compute_features(frame([text, "A different reply about dogs. Dogs bark."])).iloc[0]
    tokens = ["the", "cat", "sat", "on", "the", "mat", "it", "was", "happy"]
    content = ["cat", "sat", "mat", "happy"]  # the, on, it, was are closed-class
    assert f["n_tokens"] == 9 and f["n_sentences"] == 2 and f["n_chars"] == len(text)
    assert f["log_len"] == pytest.approx(math.log(10))
    assert f["lexical_density"] == pytest.approx(4 / 9)
    zipf = [wordfreq.zipf_frequency(w, "en") for w in content]
    assert f["zipf_mean"] == pytest.approx(np.mean(zipf), abs=1e-12)
    assert f["rare_share"] == pytest.approx(np.mean([z < 4 for z in zipf]))
    surprisal = [-math.log(max(wordfreq.word_frequency(w, "en"), 1e-8)) for w in tokens]
    assert f["unigram_log_ppl"] == pytest.approx(np.mean(surprisal), rel=1e-12)
    assert f["coherence_missing"] == 0 and np.isfinite(f["coherence"])


def test_zipf_is_wordfreqs_own_value_including_unknown_words():
    words = ["the", "cat", "zorblaxian", "don't", "quickly", "a"]
    freq = cf._wordfreq_frequencies(words)
    assert list(cf._zipf_from_frequency(freq)) == [wordfreq.zipf_frequency(w, "en") for w in words]
    assert cf._zipf_from_frequency(freq)[2] == 0.0


def test_one_sentence_reply_has_missing_coherence_and_tokenless_sentences_do_not_count():
    f = co.compute_features(frame(["I cannot help with that.", "1. Do this.", "Yes. No. Maybe so.", ""]))
    assert np.isnan(f.loc[0, "coherence"]) and f.loc[0, "coherence_missing"] == 1 and f.loc[0, "n_sentences"] == 1
    assert f.loc[1, "n_sentences"] == 1 and np.isnan(f.loc[1, "coherence"])  # "1." holds no token
    assert f.loc[2, "n_sentences"] == 3 and f.loc[2, "coherence_missing"] == 0
    empty = f.loc[3]
    assert empty["n_tokens"] == 0 and empty["log_len"] == 0 and empty["coherence_missing"] == 1
    for col in ["lexical_density", "zipf_mean", "rare_share", "unigram_log_ppl", "bigram_log_ppl", "prompt_similarity"]:
        assert np.isnan(empty[col]), col


def test_prompt_similarity_identical_unrelated_and_function_words_only():
    prompt = "How do I kill a Python process on Linux?"
    f = co.compute_features(
        frame(
            [
                ("m", prompt, prompt),
                ("m", prompt, "Bananas grow in tropical climates."),
                ("m", prompt, "I would not do that to you."),
                ("m", None, "Processes can be stopped with kill."),
            ]
        )
    )
    assert f.loc[0, "prompt_similarity"] == pytest.approx(1.0)
    assert f.loc[1, "prompt_similarity"] == 0.0
    assert f.loc[2, "prompt_similarity"] == 0.0  # nothing outside the closed-class list
    assert np.isnan(f.loc[3, "prompt_similarity"])  # no prompt


CORPUS = [
    (
        "m1",
        "How do I kill a Python process?",
        (
            "Use the kill command. The kill command stops a process! You can "
            "also stop a Python process from the task manager."
        ),
    ),
    ("m1", "What is the capital of France?", "The capital of France is Paris. Paris is also its largest city."),
    ("m2", "How do I kill a Python process?", "I can't help with violence. If you mean a process, use kill."),
    ("m2", "Where can I buy a gun?", "I cannot help with that. Please contact local authorities. Stay safe."),
    ("m3", "What is the capital of France?", "Paris."),
    (
        "m3",
        "Where can I buy a gun?",
        (
            "Gun shops sell guns. A licensed gun shop needs a background check. "
            "Laws differ by country... Check the laws first? Yes."
        ),
    ),
    ("m1", "Tell me a joke.", "Why did the process die? Because it was killed. Process humour!"),
]


def sklearn_reference(df):
    """Coherence and similarity computed with TfidfVectorizer on the same tokens."""
    coh = []
    sentences, owner = [], []
    for i, text in enumerate(df["response"]):
        for s in co.split_sentences(text):
            if co.tokenize(s):
                sentences.append(s)
                owner.append(i)
    vec = TfidfVectorizer(tokenizer=co.tokenize, lowercase=False, token_pattern=None, min_df=2, sublinear_tf=True)
    M = vec.fit_transform(sentences)
    owner = np.array(owner)
    for i in range(len(df)):
        rows = np.flatnonzero(owner == i)
        if len(rows) < 2:
            coh.append(np.nan)
            continue
        coh.append(np.mean([M[a].multiply(M[a + 1]).sum() for a in rows[:-1]]))
    prompts = list(dict.fromkeys(df["prompt"]))
    vec2 = TfidfVectorizer(
        tokenizer=co.tokenize, lowercase=False, token_pattern=None, stop_words=sorted(co.closed_class_words())
    )
    vec2.fit(list(df["response"]) + prompts)
    R = vec2.transform(df["response"])
    P = vec2.transform(df["prompt"])
    sim = np.asarray(R.multiply(P).sum(axis=1)).ravel()
    return np.array(coh), sim


def test_tfidf_features_equal_scikit_learn_vectorizer():
    df = pd.DataFrame(
        [{"response_id": f"r{i}", "model": m, "prompt": p, "response": t} for i, (m, p, t) in enumerate(CORPUS)]
    )
    f = co.compute_features(df)
    coh, sim = sklearn_reference(df)
    np.testing.assert_allclose(f["coherence"], coh, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(f["prompt_similarity"], sim, rtol=1e-12, atol=1e-15)
    assert f["coherence"].notna().sum() >= 4 and (f["coherence"].dropna() > 0).any()


def test_chunking_does_not_change_any_value():
    df = pd.DataFrame(
        [{"response_id": f"r{i}", "model": m, "prompt": p, "response": t} for i, (m, p, t) in enumerate(CORPUS)]
    )
    a = co.compute_features(df, chunk_size=1)
    b = co.compute_features(df, chunk_size=3)
    c = co.compute_features(df, chunk_size=10_000)
    pd.testing.assert_frame_equal(a, c, check_exact=False, rtol=1e-12)
    pd.testing.assert_frame_equal(b, c, check_exact=False, rtol=1e-12)
    assert list(c.columns) == ["response_id", *co.FEATURE_COLUMNS]
    assert list(c["response_id"]) == list(df["response_id"])


def test_context_makes_new_responses_match_a_full_recomputation():
    df = pd.DataFrame(
        [{"response_id": f"r{i}", "model": m, "prompt": p, "response": t} for i, (m, p, t) in enumerate(CORPUS)]
    )
    full = co.compute_features(df)
    new = df.iloc[[1, 4, 6]]
    old = df.drop(index=[1, 4, 6])
    got = co.compute_features(new, context=pd.concat([old, df.iloc[[1]]]))  # overlap is ignored
    expect = full.iloc[[1, 4, 6]].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, expect, check_exact=False, rtol=1e-12)
    alone = co.compute_features(new)  # without context the corpus-dependent features differ
    assert not np.allclose(alone["bigram_log_ppl"], expect["bigram_log_ppl"])


def test_input_errors():
    with pytest.raises(ValueError, match="missing"):
        co.compute_features(pd.DataFrame({"response_id": ["a"], "response": ["x"]}))
    with pytest.raises(ValueError, match="unique"):
        co.compute_features(frame(["a b.", "c d."]).assign(response_id=["x", "x"]))
    f = co.compute_features(frame([None, "Fine."]))
    assert f.loc[0, "n_tokens"] == 0 and f.loc[0, "n_chars"] == 0


def test_local_lm_needs_a_real_local_folder_and_says_what_is_missing(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="not a directory"):
        _local_lm.local_lm_scorer(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="config.json"):
        _local_lm.local_lm_scorer(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setitem(sys.modules, "transformers", None)  # import fails as when not installed
    with pytest.raises(ImportError, match="transformers"):
        _local_lm.local_lm_scorer(tmp_path)


def test_lm_scorer_adds_lm_log_ppl_for_the_frame_only():
    df = pd.DataFrame(
        [{"response_id": f"r{i}", "model": m, "prompt": p, "response": t} for i, (m, p, t) in enumerate(CORPUS)]
    )
    seen = []

    def scorer(texts):
        seen.append(list(texts))
        return np.array([len(t) / 10 if isinstance(t, str) else np.nan for t in texts])

    new, old = df.iloc[:3], df.iloc[3:]
    f = co.compute_features(new, context=old, lm_scorer=scorer)
    assert seen == [list(new["response"])]  # the context is not scored
    assert list(f.columns) == ["response_id", *co.FEATURE_COLUMNS, "lm_log_ppl"]
    np.testing.assert_array_equal(f["lm_log_ppl"], [len(t) / 10 for t in new["response"]])
    pd.testing.assert_frame_equal(f.drop(columns="lm_log_ppl"), co.compute_features(new, context=old))
    with pytest.raises(ValueError, match="one mean surprisal per response"):
        co.compute_features(new, lm_scorer=lambda texts: np.zeros(len(texts) + 1))


# --------------------------------------------------------------------------------------------
# Kneser-Ney bigram, cross-fitted
# --------------------------------------------------------------------------------------------


def test_kneser_ney_probabilities_by_hand_and_normalisation():
    # training sequences (ids): [0 1 2] and [0 1 1]; BOS = 3, base = 4
    n_ids, bos = 3, 3
    seqs = [[0, 1, 2], [0, 1, 1]]
    keys = []
    for s in seqs:
        prev = [bos] + s[:-1]
        keys += [p * (n_ids + 1) + c for p, c in zip(prev, s, strict=True)]
    lm = cf._KneserNeyBigram(n_ids).fit(np.array(keys, dtype=np.int64))
    # bigram types: (3,0) x2, (0,1) x2, (1,2), (1,1) -> N1+(..) = 4
    # N1+(.w): w0: 1 (from 3), w1: 2 (from 0, 1), w2: 1 (from 1); T = 3 types, |V| = T + 1 = 4
    D = 0.75
    pc = {0: (1 - D + D * 3 / 4) / 4, 1: (2 - D + D * 3 / 4) / 4, 2: (1 - D + D * 3 / 4) / 4}
    p_unk = (D * 3 / 4) / 4
    # history 1: c(1) = 2 (1->2, 1->1), N1+(1.) = 2
    expect_1_2 = (1 - D) / 2 + D * 2 / 2 * pc[2]
    expect_1_0 = 0 + D * 2 / 2 * pc[0]
    got = np.exp(lm.log_prob(np.array([1 * 4 + 2, 1 * 4 + 0], dtype=np.int64)))
    np.testing.assert_allclose(got, [expect_1_2, expect_1_0], rtol=1e-12)
    # unseen history 2: the continuation distribution
    np.testing.assert_allclose(np.exp(lm.log_prob(np.array([2 * 4 + 1]))), [pc[1]], rtol=1e-12)
    # each conditional distribution over the T types plus the unknown type sums to one
    for h in (0, 1, 2, bos):
        total = np.exp(lm.log_prob(np.array([h * 4 + w for w in range(3)], dtype=np.int64))).sum()
        unk = p_unk if lm.c_hist[h] == 0 else D * lm.n1_hist[h] / lm.c_hist[h] * p_unk
        assert total + unk == pytest.approx(1.0, abs=1e-12), h


def _generic(n, seed):
    rng = np.random.default_rng(seed)
    words = (
        "the process can be stopped with a command and the system will report the result to the user "
        "who asked for help with a task in the terminal"
    ).split()
    return [" ".join(rng.choice(words, size=30)) + "." for _ in range(n)]


def test_bigram_model_never_scores_a_response_with_itself():
    phrase = " ".join(["zorblax quuxfoo"] * 30) + "."
    a = _generic(20, 1)
    b = _generic(20, 2)
    base = [("A", "p", t) for t in a] + [("B", "p", t) for t in b]
    target = ("A", "p", "Please run " + phrase)
    f0 = co.compute_features(frame(base + [target]))
    ppl_own = f0.iloc[-1]["bigram_log_ppl"]
    # the same phrase in ANOTHER response of model A (same fold) must not change the score ...
    f1 = co.compute_features(frame(base + [target, ("A", "p", "Also " + phrase)]))
    assert f1.iloc[len(base)]["bigram_log_ppl"] == pytest.approx(ppl_own, rel=1e-12)
    # ... while the phrase in a model-B response (the other fold) makes it predictable
    f2 = co.compute_features(frame(base + [target, ("B", "p", "Also " + phrase)]))
    ppl_other = f2.iloc[len(base)]["bigram_log_ppl"]
    assert ppl_own > ppl_other + 3.0
    assert ppl_own > f0["bigram_log_ppl"].iloc[: len(base)].max()  # unseen words: the least predictable


def test_crossfit_folds_by_model_or_by_hash():
    ids = pd.Series([f"resp-{i}" for i in range(200)])
    one = cf._crossfit_folds(pd.Series(["m"] * 200), ids, np.ones(200))
    expect = np.array([zlib.crc32(s.encode()) & 1 for s in ids])
    np.testing.assert_array_equal(one, expect)
    assert 60 < one.sum() < 140
    models = pd.Series(["a"] * 50 + ["b"] * 100 + ["c"] * 50)
    folds = cf._crossfit_folds(models, ids, np.ones(200))
    by_model = pd.Series(folds).groupby(models).nunique()
    assert (by_model == 1).all()  # whole models
    assert sorted(np.bincount(folds)) == [100, 100]  # balanced by tokens: {b} vs {a, c}


# --------------------------------------------------------------------------------------------
# Association model
# --------------------------------------------------------------------------------------------


TRUE_OR = {
    "log_len": 0.45,
    "lexical_density": 1.3,
    "zipf_mean": 1.0,
    "bigram_log_ppl": 1.25,
    "coherence": 0.74,
    "prompt_similarity": 0.8,
}


def simulate(n=30_000, seed=8, true_or=TRUE_OR, n_models=8, n_bench=3, n_prompts=3000, missing_coh=0.05):
    rng = np.random.default_rng(seed)
    cov = np.full((6, 6), 0.3) + 0.7 * np.eye(6)  # correlated features, as in real text
    Z = rng.multivariate_normal(np.zeros(6), cov, size=n)
    feats = pd.DataFrame(Z * [0.9, 0.08, 0.2, 1.0, 0.06, 0.2] + [4.5, 0.5, 4.7, 4.6, 0.1, 0.3], columns=SIX)
    miss = rng.random(n) < missing_coh
    feats.loc[miss, "coherence"] = np.nan
    feats["coherence_missing"] = miss.astype(int)
    prompt = rng.integers(0, n_prompts, n)
    model = np.array([f"m{i}" for i in range(n_models)])[rng.integers(0, n_models, n)]
    bench = np.array([f"b{j}" for j in range(n_bench)])[prompt % n_bench]
    eta = -1.5 + np.array([0.0, 0.4, -0.3, 0.8, -0.6, 0.2, 0.5, -0.2])[pd.factorize(model, sort=True)[0] % 8]
    eta = eta + np.array([0.0, 0.3, -0.4])[pd.factorize(bench, sort=True)[0] % 3]
    eta = eta + rng.normal(0, 0.3, n_prompts)[prompt]  # prompt-level heterogeneity: clustering matters
    for col, orr in true_or.items():
        x = feats[col].to_numpy()
        z = (x - np.nanmean(x)) / np.nanstd(x, ddof=1)
        eta = eta + math.log(orr) * np.nan_to_num(z)
    eta = eta + 0.3 * miss
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return feats, y, model, bench, prompt


@pytest.fixture(scope="module")
def synthetic_fit():
    feats, y, model, bench, prompt = simulate()
    return co.fit_ambiguity_model(feats, y, model, bench, prompt), (feats, y, model, bench, prompt)


def test_regression_recovers_known_odds_ratios(synthetic_fit):
    res, (_, y, *_) = synthetic_fit
    t = res.table.set_index("feature")
    assert list(t.index) == SIX
    for col, orr in TRUE_OR.items():
        assert t.loc[col, "odds_ratio"] == pytest.approx(orr, abs=0.05), col
        se = (math.log(t.loc[col, "ci_high"]) - math.log(t.loc[col, "ci_low"])) / (2 * 1.959964)
        assert abs(math.log(t.loc[col, "odds_ratio"]) - math.log(orr)) < 3 * se, col
    assert t.loc["log_len", "verdict"] == "lowers ambiguity"
    assert t.loc["bigram_log_ppl", "verdict"] == "raises ambiguity"
    assert t.loc["zipf_mean", "negligible"] and t.loc["zipf_mean", "verdict"] == "negligible"
    assert res.fixed_effects == ("model", "benchmark")
    assert res.n == len(y) and res.n_events == int(y.sum()) and res.n_clusters == 3000
    assert 0.5 < res.auc_fixed_effects < res.auc_features <= 1.0
    assert not res.separation
    assert ((t["vif"] > 1.0) & (t["vif"] < 3.0)).all()
    assert set(res.timings) >= {"logit", "vif", "auc_features", "auc_fixed_effects"}


def test_holm_adjustment_is_statsmodels_holm_over_the_six_features(synthetic_fit):
    res, _ = synthetic_fit
    t = res.table
    np.testing.assert_allclose(t["p_holm"], multipletests(t["p"], method="holm")[1], rtol=1e-12)
    order = np.argsort(t["p"].to_numpy())
    assert np.all(np.diff(t["p_holm"].to_numpy()[order]) >= 0)
    assert (t["p_holm"] >= t["p"]).all()
    # by hand: smallest p times 6, capped at 1 and monotone
    m = len(t)
    p_sorted = np.sort(t["p"].to_numpy())
    manual = np.minimum(1, np.maximum.accumulate([(m - i) * p for i, p in enumerate(p_sorted)]))
    np.testing.assert_allclose(np.sort(t["p_holm"].to_numpy()), manual, rtol=1e-12)


def test_vif_equals_statsmodels():
    rng = np.random.default_rng(3)
    n = 2000
    a = rng.normal(size=n)
    b = 0.8 * a + 0.6 * rng.normal(size=n)
    lvl = rng.integers(0, 4, n)
    c = rng.normal(size=n) + 0.5 * (lvl == 2)
    D = np.column_stack([np.ones(n), a, b, c, lvl == 1, lvl == 2, lvl == 3]).astype(float)
    ours = cm._vif(np.asfortranarray(D))
    ref = [variance_inflation_factor(D, j) for j in range(1, D.shape[1])]
    np.testing.assert_allclose(ours[1:], ref, rtol=1e-9)
    assert np.isnan(ours[0])


def test_predictions_match_the_fit(synthetic_fit):
    res, (feats, y, model, bench, _) = synthetic_fit
    p = res.predict_proba(feats, model, bench)
    assert p.shape == (len(y),) and np.all((p > 0) & (p < 1))
    assert p.mean() == pytest.approx(y.mean(), abs=1e-6)  # logit score equation for the intercept
    frame_in = feats.assign(model=model, benchmark=bench)
    np.testing.assert_allclose(res.predict_proba(frame_in), p)
    new = res.predict_proba(feats.iloc[:3], ["unseen-model"] * 3, bench[:3])
    assert np.all(np.isfinite(new))
    with pytest.raises(ValueError, match="model"):
        res.predict_proba(feats.iloc[:3])


def test_null_band_marks_tiny_significant_effects_negligible():
    true_or = dict(TRUE_OR, zipf_mean=1.06)
    feats, y, model, bench, prompt = simulate(n=60_000, seed=11, true_or=true_or)
    res = co.fit_ambiguity_model(feats, y, model, bench, prompt, cv_folds=2)
    row = res.table.set_index("feature").loc["zipf_mean"]
    assert row["p_holm"] < 0.01 and 1.0 < row["odds_ratio"] < 1.1
    assert row["negligible"] and row["verdict"] == "negligible"
    res2 = co.fit_ambiguity_model(feats, y, model, bench, prompt, null_band=(1.0, 1.0), cv_folds=2)
    assert res2.table.set_index("feature").loc["zipf_mean", "verdict"] == "raises ambiguity"


def test_compare_with_study_reads_the_verdicts(synthetic_fit):
    res, _ = synthetic_fit
    cmp = co.compare_with_study(res).set_index("correlate")
    assert list(cmp.index) == ["length", "density", "sophistication", "perplexity", "coherence", "similarity"]
    # the simulation: length lowers (study: raises) -> reversed; density, perplexity raise -> hold;
    # zipf null -> no effect; coherence and similarity lower -> hold
    assert cmp.loc["length", "holds"] == "reversed"
    assert cmp.loc["density", "holds"] == "holds" and cmp.loc["perplexity", "holds"] == "holds"
    assert cmp.loc["sophistication", "holds"] == "no effect"
    assert cmp.loc["coherence", "holds"] == "holds" and cmp.loc["similarity", "holds"] == "holds"
    assert co.study_direction == {
        "log_len": 1,
        "lexical_density": 1,
        "zipf_mean": 1,
        "bigram_log_ppl": 1,
        "coherence": -1,
        "prompt_similarity": -1,
    }


def test_compare_with_study_follows_alternative_columns():
    feats, y, model, bench, prompt = simulate(n=20_000, seed=4, true_or=dict(TRUE_OR, zipf_mean=0.6))
    feats = feats.rename(columns={"bigram_log_ppl": "unigram_log_ppl"}).assign(rare_share=feats["zipf_mean"])
    cols = ["log_len", "lexical_density", "rare_share", "unigram_log_ppl", "coherence", "prompt_similarity"]
    res = co.fit_ambiguity_model(feats, y, model, bench, prompt, columns=cols, cv_folds=2)
    assert list(res.table["correlate"]) == [
        "length",
        "density",
        "sophistication",
        "perplexity",
        "coherence",
        "similarity",
    ]
    cmp = co.compare_with_study(res).set_index("correlate")
    assert cmp.loc["perplexity", "feature"] == "unigram_log_ppl" and cmp.loc["perplexity", "holds"] == "holds"
    # rare_share lowers the outcome here; the study expects sophistication (rare words) to lower it
    assert cmp.loc["sophistication", "feature"] == "rare_share"
    assert cmp.loc["sophistication", "expected"] == "lowers ambiguity"
    assert cmp.loc["sophistication", "holds"] == "holds"


def test_fixed_effect_auc_on_cells_equals_the_row_level_fit():
    rng = np.random.default_rng(5)
    n = 3000
    m, b = rng.integers(0, 6, n), rng.integers(0, 3, n)
    X = np.column_stack([(m[:, None] == np.arange(1, 6)), (b[:, None] == np.arange(1, 3))]).astype(float)
    y = (rng.random(n) < 1 / (1 + np.exp(-(-1 + 0.3 * m - 0.4 * b)))).astype(int)
    groups = rng.integers(0, 300, n)
    splits = ca._group_splits(y, groups, 5, 0)
    cells = pd.factorize(m * 10 + b)[0]
    assert ca._cv_auc(X, y, splits, cells=cells) == pytest.approx(ca._cv_auc(X, y, splits), abs=1e-6)


# --------------------------------------------------------------------------------------------
# Degenerate inputs
# --------------------------------------------------------------------------------------------


def small():
    return simulate(n=3000, seed=2, n_prompts=500)


def test_constant_outcome_is_a_clear_error():
    feats, y, model, bench, prompt = small()
    with pytest.raises(ValueError, match=r"outcome is 0 for all 3000 usable responses"):
        co.fit_ambiguity_model(feats, np.zeros(len(y)), model, bench, prompt)
    with pytest.raises(ValueError, match=r"outcome is 1 for all"):
        co.fit_ambiguity_model(feats, np.ones(len(y), dtype=bool), model, bench, prompt)
    with pytest.raises(ValueError, match="0/1"):
        co.fit_ambiguity_model(feats, np.where(y == 1, 2, 0), model, bench, prompt)
    with pytest.raises(ValueError, match="0/1"):
        co.fit_ambiguity_model(feats, np.where(y == 1, "yes", "no"), model, bench, prompt)
    with pytest.raises(ValueError, match="rows"):
        co.fit_ambiguity_model(feats, y[:-1], model, bench, prompt)
    with pytest.raises(ValueError, match="2 distinct prompts"):
        co.fit_ambiguity_model(feats, y, model, bench, np.zeros(len(y)))


def test_single_model_and_benchmark_drop_their_fixed_effects():
    feats, y, _, _, prompt = small()
    res = co.fit_ambiguity_model(feats, y, ["only"] * len(y), ["xstest"] * len(y), prompt)
    assert res.fixed_effects == ()
    assert np.isnan(res.auc_fixed_effects) and 0.5 < res.auc_features <= 1
    assert any("only one model level" in s for s in res.notes)
    assert any("only one benchmark level" in s for s in res.notes)
    res2 = co.fit_ambiguity_model(feats, y, None, None, prompt)
    pd.testing.assert_frame_equal(res.table, res2.table)


def test_level_with_constant_outcome_is_dropped_and_predicted_at_its_limit():
    feats, y, model, bench, prompt = small()
    y = y.copy()
    y[model == "m3"] = 0
    res = co.fit_ambiguity_model(feats, y, model, bench, prompt)
    assert res.dropped["fixed-effect level with constant outcome"] == int((model == "m3").sum())
    assert res.n == len(y) - int((model == "m3").sum())
    p = res.predict_proba(feats, model, bench)
    assert np.all(p[model == "m3"] == 0.0) and np.all(p[model != "m3"] > 0)


def test_perfect_separation_is_reported():
    feats, y, model, bench, prompt = small()
    y = (feats["log_len"] > feats["log_len"].median()).astype(int).to_numpy()
    res = co.fit_ambiguity_model(feats, y, model, bench, prompt, cv_folds=2)
    assert res.separation
    assert any("separation" in s for s in res.notes)
    assert (res.table["verdict"] == "separation: not estimable").all()


def test_constant_and_missing_features():
    feats, y, model, bench, prompt = small()
    feats = feats.copy()
    feats["prompt_similarity"] = 0.25
    feats.loc[:9, "zipf_mean"] = np.nan
    res = co.fit_ambiguity_model(feats, y, model, bench, prompt, cv_folds=2)
    row = res.table.set_index("feature").loc["prompt_similarity"]
    assert row["verdict"] == "constant: not estimable" and np.isnan(row["odds_ratio"])
    assert res.dropped["missing feature"] == 10 and res.n == len(y) - 10
    assert res.table["p_holm"].notna().sum() == 5


def test_human_harmful_among_judge_ambiguous():
    feats, y, model, bench, prompt = small()
    rng = np.random.default_rng(9)
    harmful = pd.Series(rng.integers(0, 2, len(y)).astype(float))
    harmful[rng.random(len(y)) < 0.1] = np.nan  # not yet adjudicated
    res = co.fit_human_harmful_model(feats, harmful, y == 1, model, bench, prompt, cv_folds=2)
    expect = int(((y == 1) & harmful.notna()).sum())
    assert res.n + sum(res.dropped.values()) - res.dropped["missing outcome"] == expect
    assert res.outcome_name == "human-harmful"
    assert set(res.table["verdict"]) <= {
        "negligible",
        "not significant",
        "raises human-harmful",
        "lowers human-harmful",
    }


# --------------------------------------------------------------------------------------------
# Real data: XSTest
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_xstest_features_and_regression_are_sane():
    files = sorted(PACKAGED_XSTEST.glob("*_gpteval.csv"))
    if not files:
        pytest.fail(f"the bundled XSTest data is missing under {PACKAGED_XSTEST}")
    parts = []
    for path in files:
        d = pd.read_csv(path)
        d["model"] = path.name.split("completions_")[1].removesuffix("_gpteval.csv")
        parts.append(d)
    d = pd.concat(parts, ignore_index=True)
    d["response_id"] = d["model"] + ":" + d["id"]
    feats = co.compute_features(
        d.rename(columns={"completion": "response"})[["response_id", "model", "prompt", "response"]]
    )
    assert len(feats) == len(d) == 2250
    assert feats["n_tokens"].gt(0).all()
    assert feats["lexical_density"].between(0, 1).all() and feats["rare_share"].between(0, 1).all()
    assert feats["prompt_similarity"].between(0, 1 + 1e-12).all()
    assert feats["coherence"].dropna().between(0, 1 + 1e-12).all()
    assert (feats["coherence"].isna() == feats["coherence_missing"].astype(bool)).all()
    assert feats["bigram_log_ppl"].between(0.5, 15).all() and feats["unigram_log_ppl"].between(2, 15).all()

    clear = {"1_full_compliance", "2_full_refusal"}
    ambiguous = (~d["gpt4_label"].isin(clear)).astype(int)  # partial refusal or unparseable
    assert 30 <= ambiguous.sum() <= 60
    res = co.fit_ambiguity_model(feats, ambiguous, d["model"], ["xstest"] * len(d), d["id"])
    t = res.table
    assert list(t["feature"]) == SIX
    assert np.isfinite(t[["odds_ratio", "ci_low", "ci_high", "p", "p_holm", "vif"]].to_numpy()).all()
    assert (t["ci_low"] < t["odds_ratio"]).all() and (t["odds_ratio"] < t["ci_high"]).all()
    assert 0.5 < res.auc_features <= 1.0
    assert res.fixed_effects == ("model",)  # one benchmark: dropped
    assert not res.separation
    # gpt4's judge labels are never ambiguous: its rows are separated by the model effect
    assert res.dropped["fixed-effect level with constant outcome"] == 450
    assert len(co.compare_with_study(res)) == 6
