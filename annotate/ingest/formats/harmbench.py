"""HarmBench completions / classifier results (``generate_completions.py`` / ``evaluate_completions.py``).

Shape: ``{behavior_id: [{"test_case": str, "generation": str, "label"?: 1 | 0 | -1}, ...]}``.
The completions file has no ``label`` (its records come through with verdict None, i.e.
"missing"); the results file adds the HarmBench classifier's ``label``.

Choices:

* model: ``--model``, else the file name, since HarmBench keeps the model only there
  (``results/<model>.json``). The ``.json`` extension is removed, and so is a trailing
  ``.derived`` (the marker on the repository's example files). Other dots are kept, so
  ``qwen2.5_7b.json`` stays ``qwen2.5_7b``.
* benchmark: ``--benchmark``, else ``harmbench/<METHOD>`` when the file sits where HarmBench's
  pipeline (``scripts/run_pipeline.py``) writes it:
  ``<base>/<METHOD>/<experiment>/{results,completions}/[<N>_tokens/]<model>.json``, where
  ``<METHOD>`` is the attack's class name (``GCG``, ``DirectRequest``, ``EnsembleGCG``, ...).
  The attack is in no other place: each attack writes its own test cases for the same
  behaviours, so two attacks on one model must not share a key. The layout is recognised when
  ``<METHOD>`` is one of HarmBench's methods (``KNOWN_METHODS``) or the experiment folder holds
  the ``test_cases/`` folder the pipeline writes beside the results (another method of yours).
  The experiment is part of the name too (``harmbench/<METHOD>/<experiment>``) unless it is
  ``default`` or the model's own name (the pipeline's two generic experiment names), since two
  experiments of one method are different test-case sets (``EnsembleGCG`` runs both GCG-Multi
  and GCG-Transfer). Elsewhere the benchmark is ``harmbench``. meta keeps ``method``,
  ``experiment`` and a ``<N>_tokens`` folder as ``max_new_tokens``. A method or experiment
  folder whose name holds a control or invisible character refuses the file (``layout_problem``:
  such a folder would otherwise fall back to ``harmbench``, silently), unless ``--benchmark``.
* judge ``harmbench-classifier`` (``--judge`` overrides).
* prompt_id = behavior_id, epoch = the index in the behaviour's list (several test cases per
  behaviour are kept apart this way), prompt = test_case, response = generation.
* verdict = the label as text (``"1"``, ``"0"``, ``"-1"``; an integral float such as ``1.0``
  reads as ``"1"``); a ``null`` or absent label gives verdict None.
* ``advbench_label`` (from ``--include_advbench_metric``) goes into meta.
* line = the 1-based item counter over the whole file (the file is one JSON document).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.ingest.records import MAX_DOCUMENT_BYTES, Item, Problem, ReadContext, Record, load_json_object

NAME = "harmbench"
DESCRIPTION = "HarmBench completions/results JSON: {behavior_id: [{test_case, generation, label?}]}"

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {"1": "harmful", "0": "safe", "-1": "unparsed"},
    "unknown": "error",
}

_DEFAULT_JUDGE = "harmbench-classifier"
#: HarmBench's red-teaming methods: the class names its pipeline uses as folder names
#: (baselines/, configs/method_configs/) and the proper names of configs/pipeline_configs/run_pipeline.yaml.
KNOWN_METHODS = frozenset(
    {
        "AutoDAN",
        "AutoPrompt",
        "DirectRequest",
        "EnsembleGCG",
        "FewShot",
        "GBDA",
        "GCG",
        "HumanJailbreaks",
        "MultiModalDirectRequest",
        "MultiModalPGD",
        "MultiModalPGDBlankImage",
        "MultiModalPGDPatch",
        "MultiModalRenderText",
        "PAIR",
        "PAP",
        "PEZ",
        "TAP",
        "UAT",
        "ZeroShot",
        "GCG-Multi",
        "GCG-Transfer",
        "PAP-top5",
        "TAP-Transfer",
    }
)
#: The folders of an experiment that hold one JSON file per model.
RESULT_FOLDERS = ("results", "completions")
#: The pipeline's experiment names that say nothing about the test cases beyond the method.
_GENERIC_EXPERIMENTS = ("default",)
_TOKENS_RE = re.compile(r"^\d+_tokens$")
# The document opens with a behaviour id whose value is a list of objects.
_HEAD_RE = re.compile(rb'^\s*\{\s*"(?:[^"\\]|\\.)*"\s*:\s*\[\s*\{')


def sniff(path: Path, head: bytes) -> bool:
    """A ``.json`` file that opens ``{"<id>": [{`` and mentions test_case and generation."""
    if path.suffix.lower() != ".json":
        return False
    head = head.removeprefix(b"\xef\xbb\xbf")
    return bool(_HEAD_RE.match(head)) and b'"test_case"' in head and b'"generation"' in head


def model_from_filename(path: Path) -> str:
    """``results/llama2_7b.json`` -> ``llama2_7b``; ``x.derived.json`` -> ``x``."""
    name = path.name
    if name.lower().endswith(".json"):
        name = name[: -len(".json")]
    return name.removesuffix(".derived")


def pipeline_layout(path: Path) -> dict[str, str] | None:
    """Method and experiment of a file in HarmBench's pipeline layout, or None (see the module doc).

    ``results/GCG/llama2_7b/results/llama2_7b.json`` -> ``{"method": "GCG", "experiment":
    "llama2_7b"}``; a ``<N>_tokens`` folder (``--max_new_tokens`` other than 512) adds
    ``max_new_tokens``. The path is made absolute first, so a relative path works from any folder.
    """
    parts = Path(os.path.abspath(path)).parts
    i = len(parts) - 2  # the file's folder
    layout: dict[str, str] = {}
    if i >= 0 and _TOKENS_RE.match(parts[i]):
        layout["max_new_tokens"] = parts[i].removesuffix("_tokens")
        i -= 1
    if i < 3 or parts[i] not in RESULT_FOLDERS:
        return None
    method, experiment = parts[i - 2], parts[i - 1]
    if method not in KNOWN_METHODS and not os.path.isdir(os.path.join(*parts[:i], "test_cases")):
        return None
    return {"method": method, "experiment": experiment, **layout}


def layout_problem(path: Path) -> str | None:
    """Why the path of a file in HarmBench's results layout cannot name its benchmark, or None.

    A method or experiment folder whose name holds a control or invisible character (an escape
    sequence, a carriage return, U+202E) cannot become ``harmbench/<METHOD>``: such a name is
    refused, never escaped or dropped (an escaped name would be one the folder does not have, and
    falling back to ``harmbench`` would merge the attack with every other one).
    """
    parts = Path(os.path.abspath(path)).parts
    i = len(parts) - 2
    if i >= 0 and _TOKENS_RE.match(parts[i]):
        i -= 1
    if i < 3 or parts[i] not in RESULT_FOLDERS:
        return None
    for what, name in (("method", parts[i - 2]), ("experiment", parts[i - 1])):
        if not name.isprintable():
            bad = next(c for c in name if not c.isprintable())
            return (
                f"the {what} folder {ascii(name)} holds a control or invisible character ({ascii(bad)}), and in "
                "HarmBench's layout (<METHOD>/<experiment>/results/<model>.json) the folders name the benchmark "
                "(harmbench/<METHOD>): rename the folder, or pass --benchmark NAME"
            )
    return None


def benchmark_name(layout: dict[str, str] | None, model: str) -> str:
    """``harmbench/<METHOD>[/<experiment>]`` for a file in the pipeline layout, else ``harmbench``."""
    if layout is None:
        return "harmbench"
    name = f"harmbench/{layout['method']}"
    if layout["experiment"] not in (*_GENERIC_EXPERIMENTS, model):
        name += f"/{layout['experiment']}"
    return name


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    """Yield one Record per (behaviour, test case)."""
    problem = layout_problem(path) if ctx.benchmark is None else None
    if problem is not None:  # before the file is read
        yield Problem(1, problem, fatal=True)
        return
    data = load_json_object(path, ctx, "a JSON object {behavior_id: [records]}", max_bytes=MAX_DOCUMENT_BYTES)
    if isinstance(data, Problem):
        yield data
        return

    layout = pipeline_layout(path)
    model = ctx.model or model_from_filename(path)
    benchmark = ctx.benchmark or benchmark_name(layout, model_from_filename(path))
    judge = ctx.judge or _DEFAULT_JUDGE
    run_meta: dict[str, Any] = dict(layout) if layout else {}
    counter = 0
    for behavior_id, items in data.items():
        if not isinstance(items, list):
            counter += 1
            yield Problem(counter, f"behaviour {behavior_id!r}: expected a list of records, got {_type(items)}")
            continue
        for index, item in enumerate(items):
            counter += 1
            yield _item(item, counter, behavior_id, index, model, benchmark, judge, run_meta)


def _item(
    item: Any,
    line: int,
    behavior_id: str,
    index: int,
    model: str,
    benchmark: str,
    judge: str,
    run_meta: dict[str, Any],
) -> Item:
    where = f"behaviour {behavior_id!r} record {index}"
    if not isinstance(item, dict):
        return Problem(line, f"{where}: expected an object, got {_type(item)}")
    for key in ("test_case", "generation"):
        if key not in item:
            return Problem(line, f"{where}: missing field {key!r}")
        if not isinstance(item[key], str):
            return Problem(line, f"{where}: field {key!r} must be a string, got {_type(item[key])}")
    label = item.get("label")
    if label is None:
        verdict = None
    elif isinstance(label, bool):
        verdict = "true" if label else "false"
    elif isinstance(label, int):
        verdict = str(label)
    elif isinstance(label, float) and label.is_integer():
        verdict = str(int(label))
    elif isinstance(label, (str, float)):
        verdict = str(label)
    else:
        return Problem(line, f"{where}: field 'label' must be 1, 0 or -1, got {_type(label)}")
    meta = dict(run_meta)
    if "advbench_label" in item:
        meta["advbench_label"] = item["advbench_label"]
    return Record(
        line=line,
        model=model,
        benchmark=benchmark,
        prompt_id=str(behavior_id),
        prompt=item["test_case"],
        response=item["generation"],
        judge=judge,
        verdict=verdict,
        epoch=index,
        meta=meta or None,
    )


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
