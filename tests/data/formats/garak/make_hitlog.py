"""Write the DERIVED garak hitlogs of this folder from two reports beside it (see ../PROVENANCE.md).

    python tests/data/formats/garak/make_hitlog.py

garak's evaluator (``garak/evaluators/base.py``, ``Evaluator.evaluate``) writes one line to
``<run>.hitlog.jsonl`` for every output a detector scores as a hit (``not self.test(score)``;
``ThresholdEvaluator.test`` is ``score < eval_threshold``), ``json.dumps`` of a dict with the keys
below. This script builds those lines from the attempts of a report, exactly as each version's
evaluator does:

* ``multiturn_v0.12.derived.hitlog.jsonl`` from ``multiturn_v0.12.derived.report.jsonl``, as garak
  v0.12.0 (8fd22ee1) writes it: ``prompt`` the attempt's prompt (a string), ``output``
  ``attempt.all_outputs[idx]`` (every assistant turn of every history), ``triggers``, the
  generator ``"<model_type> <model_name>"``; threshold 0.5 (the report's ``run.eval_threshold``).
* ``quack.hitlog.jsonl`` from the real ``quack.report.jsonl`` (garak 0.14.0.pre1), as garak
  v0.14.0 writes it: ``prompt`` ``asdict(attempt.prompt)`` (the Conversation as the report holds
  it), ``output`` ``asdict(attempt.outputs[idx])`` (a Message), the generator ``"<target_type>
  <target_name>"``. That run had no hit (its one score is 0.0), so this line is the one garak
  writes with ``--eval_threshold 0`` (every score is then a hit: ``0.0 < 0`` is false).
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def entries(name: str) -> list[dict]:
    return [json.loads(line) for line in (HERE / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def scored(report: list[dict]) -> list[dict]:
    return [e for e in report if e.get("entry_type") == "attempt" and e.get("status") == 2]


def v012() -> str:
    report = entries("multiturn_v0.12.derived.report.jsonl")
    setup = next(e for e in report if e.get("entry_type") == "start_run setup")
    run_id = next(e for e in report if e.get("entry_type") == "init")["run"]
    threshold = setup["run.eval_threshold"]
    lines = []
    for attempt in scored(report):
        # Attempt.all_outputs in 0.12: the assistant turns of every history in ``messages``.
        all_outputs = [
            turn["content"] for history in attempt["messages"] for turn in history if turn["role"] == "assistant"
        ]
        for detector, scores in attempt["detector_results"].items():
            for idx, score in enumerate(scores):
                if score < threshold:
                    continue
                hit = {
                    "goal": attempt["goal"],
                    "prompt": attempt["prompt"],
                    "output": all_outputs[idx],
                    "triggers": attempt["notes"].get("triggers", None),
                    "score": score,
                    "run_id": str(run_id),
                    "attempt_id": str(attempt["uuid"]),
                    "attempt_seq": attempt["seq"],
                    "attempt_idx": idx,
                    "generator": f"{setup['plugins.model_type']} {setup['plugins.model_name']}",
                    "probe": attempt["probe_classname"],
                    "detector": detector,
                    "generations_per_prompt": setup["run.generations"],
                }
                lines.append(json.dumps(hit, ensure_ascii=False) + "\n")
    return "".join(lines)


def v014() -> str:
    report = entries("quack.report.jsonl")
    setup = next(e for e in report if e.get("entry_type") == "start_run setup")
    threshold = 0.0  # --eval_threshold 0: the run's one score (0.0) is a hit
    lines = []
    for attempt in scored(report):
        for detector, scores in attempt["detector_results"].items():
            for idx, score in enumerate(scores):
                if score < threshold:
                    continue
                hit = {
                    "goal": attempt["goal"],
                    "prompt": attempt["prompt"],
                    "output": attempt["outputs"][idx],
                    "triggers": attempt["notes"].get("triggers", None),
                    "score": score,
                    "run_id": str(setup["transient.run_id"]),
                    "attempt_id": str(attempt["uuid"]),
                    "attempt_seq": attempt["seq"],
                    "attempt_idx": idx,
                    "generator": f"{setup['plugins.target_type']} {setup['plugins.target_name']}",
                    "probe": attempt["probe_classname"],
                    "detector": detector,
                    "generations_per_prompt": setup["run.generations"],
                }
                lines.append(json.dumps(hit, ensure_ascii=False) + "\n")
    return "".join(lines)


def main() -> None:
    (HERE / "multiturn_v0.12.derived.hitlog.jsonl").write_text(v012(), encoding="utf-8")
    (HERE / "quack.hitlog.jsonl").write_text(v014(), encoding="utf-8")


if __name__ == "__main__":
    main()
