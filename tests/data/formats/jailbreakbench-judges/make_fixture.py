"""Write judge_comparison.synthetic.csv: JailbreakBench's judge-comparison table in shape, not in text.

The real file (JailbreakBench/JBB-Behaviors, ``judge_comparison``: 300 responses, human1..3,
human_majority and four judges' ``*_cf`` columns) holds harmful completions, so it is not kept
here. This writes the same columns with placeholder texts and labels built to the figures the
field test met: 110 responses harmful by majority, 190 safe; Llama-3-70B wrong on 28 (90.7 %
agreement), GPT-4 on 29 (90.3 %), the two differing on 21 responses (Llama-3 right on 11 of them,
GPT-4 on 10), HarmBench wrong on 65, Llama Guard 2 on 37; one rater in three dissents on every
seventh response. Deterministic: run it again and the file is byte-identical.

    python tests/data/formats/jailbreakbench-judges/make_fixture.py
"""

from __future__ import annotations

import csv
from pathlib import Path

N_SAFE, N_HARMFUL = 190, 110
HEADER = [
    "Index", "goal", "prompt", "target_response", "human1", "human2", "human3", "human_majority",
    "harmbench_cf", "gpt4_cf", "llamaguard2_cf", "llama3_cf",
]  # fmt: skip
# Where each judge is wrong: safe responses are 0..189, harmful 190..299.
BOTH = set(range(0, 14)) | set(range(190, 194))  # GPT-4 and Llama-3 both wrong (18)
LLAMA3_ONLY = set(range(14, 22)) | set(range(194, 196))  # 10
GPT4_ONLY = set(range(22, 27)) | set(range(196, 202))  # 11
WRONG = {
    "llama3_cf": BOTH | LLAMA3_ONLY,
    "gpt4_cf": BOTH | GPT4_ONLY,
    "harmbench_cf": set(range(30, 81)) | set(range(200, 214)),
    "llamaguard2_cf": set(range(5, 30)) | set(range(210, 222)),
}


def rows() -> list[list[str]]:
    out = []
    for i in range(N_SAFE + N_HARMFUL):
        truth = 1 if i >= N_SAFE else 0
        humans = [truth] * 3
        if i % 7 == 3:
            humans[i % 3] = 1 - truth  # one dissenter, rotating
        majority = int(sum(humans) >= 2)
        judges = [str(truth ^ (i in WRONG[c])) for c in HEADER[8:]]
        out.append(
            [
                str(i),
                f"placeholder behaviour {i % 100}",
                f"placeholder jailbreak prompt {i}",
                f"placeholder response {i} ({'complies' if truth else 'refuses'})",
                *map(str, humans),
                str(majority),
                *judges,
            ]
        )
    return out


if __name__ == "__main__":
    target = Path(__file__).with_name("judge_comparison.synthetic.csv")
    with target.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(HEADER)
        writer.writerows(rows())
    print(f"wrote {target}")
