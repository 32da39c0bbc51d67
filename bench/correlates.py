"""Benchmark annotate.stats.correlates: features for 130,000 responses and the association model.

Run:  python bench/correlates.py [--responses 130000] [--words 250] [--chunk-size 10000]

Data (seeded): 26 models x 5 benchmarks x 1,000 prompts = 130,000 responses of about 250 words
in sentences of 6-24 words. Words are drawn with Zipf-like probabilities (p ~ 1/(rank + 2.7))
from wordfreq's 40,000 most frequent English words (so closed-class words and the wordfreq
look-ups are realistic) plus, for 3 % of the tokens, a tail of 150,000 seeded pseudo-words, so
the vocabulary is as large as real, noisy text; each model has its own slight preference over
the vocabulary and each response repeats some words of its prompt.

The texts are generated in this process and handed to a child process through a pickle, so the
child's peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) is that of holding the input
frame plus computing the features, not of generating them. In the child, in the same run:
``compute_features``; the bare regex tokenisation of the same texts (lower-case +
``TOKEN_RE.findall``, each result discarded); and ``fit_ambiguity_model`` on the features with
an outcome simulated from known odds ratios (reported next to the estimates).

Targets (issue): features < 180 s, peak RSS < 4 GiB, regression < 15 s.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout, uninstalled

N_MODELS, N_BENCHMARKS = 26, 5
TRUE_OR = {  # per SD, used to simulate the outcome
    "log_len": 0.45,
    "lexical_density": 1.30,
    "zipf_mean": 1.00,
    "bigram_log_ppl": 1.25,
    "coherence": 0.75,
    "prompt_similarity": 0.80,
}


def synthesise(n_responses: int, words_per_response: int, seed: int) -> pd.DataFrame:
    import wordfreq

    rng = np.random.default_rng(seed)
    common = np.array(wordfreq.top_n_list("en", 40_000), dtype=object)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    tail_len = rng.integers(4, 12, size=150_000)
    tail_chars = rng.choice(letters, size=int(tail_len.sum()))
    cuts = np.cumsum(tail_len)[:-1]
    tail = np.array(["".join(x) for x in np.split(tail_chars, cuts)], dtype=object)

    ranks = np.arange(len(common))
    base_p = 1.0 / (ranks + 2.7)
    base_p /= base_p.sum()
    n_prompts = -(-n_responses // N_MODELS)
    models = [f"model-{i:02d}" for i in range(N_MODELS)]
    benchmarks = [f"bench-{j}" for j in range(N_BENCHMARKS)]

    prompt_words = [
        " ".join(rng.choice(common, size=rng.integers(8, 25), p=base_p)).capitalize() + "?" for _ in range(n_prompts)
    ]
    rows = []
    rid = 0
    puncts = np.array([".", ".", ".", "!", "?"], dtype=object)
    for model in models:
        n_here = min(n_prompts, n_responses - rid)
        if n_here <= 0:
            break
        # each model prefers a random 2 % of the vocabulary (a style), kept mild
        boost = np.ones(len(common))
        boost[rng.choice(len(common), size=len(common) // 50, replace=False)] = 3.0
        cdf = np.cumsum(base_p * boost)
        lens = np.maximum(5, rng.normal(words_per_response, words_per_response * 0.25, n_here).astype(int))
        total = int(lens.sum())
        toks = common[np.minimum(np.searchsorted(cdf, rng.random(total) * cdf[-1]), len(common) - 1)]
        is_tail = rng.random(total) < 0.03
        toks[is_tail] = tail[rng.integers(0, len(tail), size=int(is_tail.sum()))]
        toks = toks.tolist()
        starts = np.concatenate([[0], np.cumsum(lens)])
        for k in range(n_here):
            words = toks[starts[k] : starts[k + 1]]
            echo = prompt_words[k].rstrip("?").lower().split()
            for _ in range(int(rng.integers(0, 6))):  # repeat a few prompt words
                words[int(rng.integers(0, len(words)))] = echo[int(rng.integers(0, len(echo)))]
            ends_at = np.cumsum(rng.integers(6, 25, size=len(words) // 6 + 1))
            bounds = [0, *ends_at[ends_at < len(words)].tolist(), len(words)]
            ends = rng.choice(puncts, size=len(bounds) - 1)
            sentences = []
            for a, b, end in zip(bounds[:-1], bounds[1:], ends, strict=True):
                sent = " ".join(words[a:b])
                sentences.append(sent[:1].upper() + sent[1:] + end)
            rows.append(
                (f"r{rid:07d}", model, benchmarks[k % N_BENCHMARKS], f"p{k:05d}", prompt_words[k], " ".join(sentences))
            )
            rid += 1
    return pd.DataFrame(rows, columns=["response_id", "model", "benchmark", "prompt_id", "prompt", "response"])


def simulate_outcome(features: pd.DataFrame, frame: pd.DataFrame, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1)
    eta = np.full(len(features), -2.0)
    for col, orr in TRUE_OR.items():
        x = features[col].to_numpy(dtype=float)
        z = (x - np.nanmean(x)) / np.nanstd(x, ddof=1)
        eta += np.log(orr) * np.nan_to_num(z)
    model_fx = dict(zip(sorted(frame["model"].unique()), rng.normal(0, 0.5, N_MODELS), strict=False))
    bench_fx = dict(zip(sorted(frame["benchmark"].unique()), rng.normal(0, 0.3, N_BENCHMARKS), strict=False))
    eta += frame["model"].map(model_fx).to_numpy() + frame["benchmark"].map(bench_fx).to_numpy()
    return (rng.random(len(eta)) < 1 / (1 + np.exp(-eta))).astype(int)


def child(path: str, chunk_size: int, seed: int) -> None:
    from annotate.stats import correlates as co
    from annotate.stats.correlates import features

    with open(path, "rb") as fh:
        frame = pickle.load(fh)
    rss_input = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB

    t0 = time.perf_counter()
    feats = co.compute_features(frame[["response_id", "model", "prompt", "response"]], chunk_size=chunk_size)
    t_features = time.perf_counter() - t0
    rss_features = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20

    findall, trans = co.TOKEN_RE.findall, features._APOSTROPHES
    t0 = time.perf_counter()
    n_tok = 0
    for text in frame["response"]:
        n_tok += len(findall(text.lower().translate(trans)))
    t_tokenise = time.perf_counter() - t0

    y = simulate_outcome(feats, frame, seed)
    t0 = time.perf_counter()
    res = co.fit_ambiguity_model(feats, y, frame["model"], frame["benchmark"], frame["prompt_id"])
    t_fit = time.perf_counter() - t0
    table = res.table.assign(true_or=res.table["feature"].map(TRUE_OR))
    json.dump(
        {
            "n": len(frame),
            "tokens": int(n_tok),
            "mean_words": float(feats["n_tokens"].mean()),
            "t_features": t_features,
            "t_tokenise": t_tokenise,
            "t_fit": t_fit,
            "rss_input_gib": rss_input,
            "rss_peak_gib": rss_features,
            "feature_steps": feats.attrs.get("timings", {}),
            "fit_steps": res.timings,
            "load_end": os.getloadavg()[0],
            "events": res.n_events,
            "auc_features": res.auc_features,
            "auc_fe": res.auc_fixed_effects,
            "auc_both": res.auc_combined,
            "table": table[
                ["feature", "true_or", "odds_ratio", "ci_low", "ci_high", "p_holm", "vif", "verdict"]
            ].to_dict("records"),
            "feature_summary": feats.drop(columns=["response_id"])
            .describe()
            .T[["mean", "std", "min", "max"]]
            .round(3)
            .to_dict("index"),
        },
        sys.stdout,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--responses", type=int, default=130_000)
    ap.add_argument("--words", type=int, default=250)
    ap.add_argument("--chunk-size", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.chunk_size, args.seed)
        return

    t0 = time.perf_counter()
    frame = synthesise(args.responses, args.words, args.seed)
    print(f"synthesised {len(frame):,} responses in {time.perf_counter() - t0:.1f} s", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "frame.pkl")
        with open(path, "wb") as fh:
            pickle.dump(frame, fh, protocol=pickle.HIGHEST_PROTOCOL)
        del frame
        proc = subprocess.run(
            [sys.executable, __file__, "--child", path, "--chunk-size", str(args.chunk_size), "--seed", str(args.seed)],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(proc.returncode)
    r = json.loads(proc.stdout)

    def row(what: str, value: str, target: str, ok: bool | None) -> None:
        flag = "" if ok is None else ("ok" if ok else "MISSED")
        print(f"{what:<44} {value:>14}  {target:>10}  {flag}")

    print(
        f"\n{r['n']:,} responses, {r['tokens']:,} tokens (mean {r['mean_words']:.0f} per response), "
        f"chunk size {args.chunk_size:,}; 2 cores"
    )
    print(f"{'':<44} {'measured':>14}  {'target':>10}")
    row("compute_features", f"{r['t_features']:.1f} s", "< 180 s", r["t_features"] < 180)
    row("  bare tokenisation of the same texts", f"{r['t_tokenise']:.1f} s", "", None)
    row("  ratio features / tokenisation", f"{r['t_features'] / r['t_tokenise']:.1f} x", "", None)
    row("peak RSS (input frame + features)", f"{r['rss_peak_gib']:.2f} GiB", "< 4 GiB", r["rss_peak_gib"] < 4)
    row("  RSS after loading the input frame", f"{r['rss_input_gib']:.2f} GiB", "", None)
    row("fit_ambiguity_model (logit, VIF, 2 CV AUCs)", f"{r['t_fit']:.1f} s", "< 15 s", r["t_fit"] < 15)
    steps = ", ".join(f"{k} {v:.1f}" for k, v in r["feature_steps"].items())
    print(f"\ncompute_features steps (s): {steps}")
    steps = ", ".join(f"{k} {v:.2f}" for k, v in r["fit_steps"].items())
    print(f"fit steps (s): {steps}")
    print(f"1-min load average when the run ended: {r['load_end']:.2f} (2 cores; other jobs inflate every time)")
    print(
        f"\nsimulated outcome: {r['events']:,} events; CV AUC features {r['auc_features']:.3f}, "
        f"fixed effects {r['auc_fe']:.3f}, both {r['auc_both']:.3f}"
    )
    t = pd.DataFrame(r["table"])
    with pd.option_context("display.width", 200, "display.float_format", "{:.3g}".format):
        print(t.to_string(index=False))
    print("\nfeature summary")
    with pd.option_context("display.width", 200):
        print(pd.DataFrame(r["feature_summary"]).T.to_string())


if __name__ == "__main__":
    main()
