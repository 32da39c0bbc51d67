"""Inspect AI for `annotate writeback`: its log API, and a log's metrics recomputed from an allow-list.

inspect-ai is an optional dependency, imported only here (``inspect_api``).

**Nothing a log names is ever imported or run.** Inspect's own ``recompute_metrics`` resolves
every metric by the name the log records, and when the name is not in its registry it imports
the task file the log names (``eval.task_file``, ``resolve_scorers_info`` in
``inspect_ai/_eval/score.py``); a namespaced name (``mypkg/metric``) makes it load the installed
entry points of that package; a score of a sample that no header scorer accounts for is
resolved as a scorer spec (``ScorerInfo.from_name``), where a name such as ``x.py@s`` or a path
imports that file; and metric options that look like registry or model entries are turned into
objects (``registry_kwargs``). So annotate never calls it. ``recompute`` builds the same inputs
itself and hands them to Inspect's ``eval_results``, which only computes:

* metrics: only Inspect's built-ins, by exact name (``inspect_ai/accuracy``, or the bare
  ``accuracy`` that Inspect's registry reads as the same), taken from the objects inspect-ai
  itself exports in this process (``METRIC_OPTIONS`` lists them), with their documented options,
  each checked for its type and range (a nested metric, for ``grouped`` and ``aggregate``, is
  checked the same way); an option that names a function (``to_float``) cannot be rebuilt from
  a log and is refused;
* ``epochs_reducer``: only Inspect's built-in reducers (``mean``, ``median``, ``mode``, ``max``,
  ``majority``, ``collect``, and ``at_least_K``, ``pass_at_K``, ``pass_k_K``);
* a score that no header scorer lists gets the metrics Inspect's built-in scorer of that name
  declares, else Inspect's default (accuracy, stderr), as Inspect would give it, without looking
  anything up by name.

``metric_problems`` says, before anything is written, why a log's metrics cannot be recomputed
this way (one line per log); ``recompute`` is then safe to call on it.
"""

from __future__ import annotations

import inspect
import math
import os
import re
import shutil
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotate.errors import InputError
from annotate.fileio import foreign_contents, process_gone
from annotate.ingest.archive import archive_members, member_bytes

INSTALL_HINT = "pip install -e '.[inspect]' (or pip install inspect-ai) in annotate's environment"
#: The most resamples a log may ask a bootstrap metric for (Inspect's default is 1,000).
MAX_RESAMPLES = 100_000
#: The largest ``K`` of an ``at_least_K`` / ``pass_at_K`` / ``pass_k_K`` reducer.
MAX_K = 10_000
#: How deep a metric may nest others (``grouped(aggregate(...))``).
MAX_NESTING = 3

Check = tuple[Callable[[Any], bool], str]  # (test of a value, what it must be)


def _is_text(v: Any) -> bool:
    return isinstance(v, str)


def _is_level(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 < v < 1


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_RESAMPLES


def _is_template(v: Any) -> bool:
    rest = v.replace("{group_name}", "") if isinstance(v, str) else "{"
    return "{" not in rest and "}" not in rest


def _one_of(*allowed: Any) -> Check:
    return (lambda v: any(v is a or (type(v) is type(a) and v == a) for a in allowed)), " or ".join(map(repr, allowed))


_TEXT: Check = (_is_text, "text")
_TEXT_OR_NULL: Check = (lambda v: v is None or isinstance(v, str), "text or null")
_LEVEL: Check = (_is_level, "a number between 0 and 1")
_COUNT: Check = (_is_count, f"a whole number from 1 to {MAX_RESAMPLES:,}")
_BOOL: Check = (lambda v: isinstance(v, bool), "true or false")
_CATEGORIES: Check = (
    lambda v: v is None or (isinstance(v, list) and all(isinstance(c, str) for c in v)),
    "a list of texts, or null",
)
_TEMPLATE: Check = (_is_template, "text whose only placeholder is {group_name}")
#: An option that is itself a metric (``grouped``'s ``metric``, ``aggregate``'s ``agg``).
NESTED = "metric"

#: Inspect's built-in metrics and the options each documents, as a log records them.
METRIC_OPTIONS: dict[str, dict[str, Check | str]] = {
    "inspect_ai/accuracy": {},
    "inspect_ai/mean": {},
    "inspect_ai/std": {},
    "inspect_ai/var": {},
    "inspect_ai/stderr": {"cluster": _TEXT_OR_NULL},
    "inspect_ai/bootstrap_stderr": {"num_samples": _COUNT},
    "inspect_ai/ci": {
        "level": _LEVEL,
        "method": _one_of("t", "bootstrap"),
        "num_samples": _COUNT,
        "cluster": _TEXT_OR_NULL,
    },
    "inspect_ai/ci_wilson": {"level": _LEVEL, "cluster": _TEXT_OR_NULL},
    "inspect_ai/frequency": {"categories": _CATEGORIES, "normalize": _BOOL},
    "inspect_ai/krippendorff_alpha": {"level": _one_of("nominal", "ordinal", "interval")},
    "inspect_ai/perplexity_per_token": {},
    "inspect_ai/perplexity_per_seq": {},
    "inspect_ai/grouped": {
        "metric": NESTED,
        "group_key": _TEXT,
        "all": _one_of("samples", "groups", False),
        "all_label": _TEXT,
        "name_template": _TEMPLATE,
    },
    "inspect_ai/aggregate": {"key": _TEXT, "agg": NESTED, "on_missing": _one_of("error", "skip", "zero")},
}
#: Options a built-in requires (Inspect cannot create it without them).
REQUIRED = {"inspect_ai/grouped": ("metric", "group_key"), "inspect_ai/aggregate": ("key", "agg")}
#: Inspect's built-in epoch reducers taking no option, and those written ``NAME_K``.
REDUCERS = ("mean", "median", "mode", "max", "majority", "collect")
K_REDUCERS = ("at_least", "pass_at", "pass_k")


@dataclass
class Api:
    """inspect-ai's log API, and the built-ins annotate allows, resolved once in this process."""

    read_eval_log: Any
    write_eval_log: Any
    edit_score: Any
    ScoreEdit: Any
    ProvenanceData: Any
    eval_results: Any
    ScorerInfo: Any
    SampleScore: Any
    unique_scorer_name: Any
    metrics: dict[str, Any] = field(default_factory=dict)  # canonical name -> Inspect's own factory
    reducers: dict[str, Any] = field(default_factory=dict)  # log name -> factory (K reducers under their base)
    scorer_metrics: dict[str, Any] = field(default_factory=dict)  # built-in scorer name -> its declared metrics
    default_metrics: Callable[[], list[Any]] = list


def inspect_api() -> Api:
    """inspect-ai's API (an optional dependency, imported only here), with the allow-lists."""
    try:
        import inspect_ai.scorer as scorer
        from inspect_ai._eval.task.results import ScorerInfo, eval_results
        from inspect_ai._util.registry import registry_info
        from inspect_ai.log import ProvenanceData, edit_score, read_eval_log, write_eval_log
        from inspect_ai.scorer import SampleScore, ScoreEdit
        from inspect_ai.scorer._scorer import SCORER_METRICS, unique_scorer_name
    except ImportError as exc:
        raise InputError(
            f"writeback needs inspect-ai, which is not installed ({exc}). Install it: {INSTALL_HINT}."
        ) from None
    api = Api(
        read_eval_log,
        write_eval_log,
        edit_score,
        ScoreEdit,
        ProvenanceData,
        eval_results,
        ScorerInfo,
        SampleScore,
        unique_scorer_name,
        default_metrics=lambda: [scorer.accuracy(), scorer.stderr()],
    )

    def own(obj: Any, kind: str) -> str | None:
        """The registry name of one of inspect-ai's own objects (None for anything else)."""
        try:
            info = registry_info(obj)
        except Exception:
            return None
        module = getattr(obj, "__module__", "") or ""
        return str(info.name) if info.type == kind and module.startswith("inspect_ai.") else None

    exported = [getattr(scorer, name) for name in getattr(scorer, "__all__", [])]
    try:  # frequency is registered but exported only through a wrapper
        from inspect_ai.scorer._metrics.categorical import _frequency

        exported.append(_frequency)
    except ImportError:
        pass
    for obj in exported:
        name = own(obj, "metric")
        if name in METRIC_OPTIONS:
            api.metrics[name] = obj
        name = own(obj, "score_reducer")
        if name is not None and name.removeprefix("inspect_ai/") in (*REDUCERS, *K_REDUCERS):
            api.reducers[name.removeprefix("inspect_ai/")] = obj
        name = own(obj, "scorer")
        if name is not None:
            declared = registry_info(obj).metadata.get(SCORER_METRICS)
            if declared and _callable_bare(obj):
                api.scorer_metrics[name] = declared
                api.scorer_metrics[name.removeprefix("inspect_ai/")] = declared
    return api


def _callable_bare(obj: Any) -> bool:
    """Whether Inspect could create the scorer without arguments (as it tries for an unlisted score)."""
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in params)


# -- checking --------------------------------------------------------------------------------------


def _canonical(name: Any) -> str | None:
    """The built-in a metric name stands for (``accuracy`` is ``inspect_ai/accuracy`` to Inspect), or None."""
    if not isinstance(name, str):
        return None
    return name if name in METRIC_OPTIONS else (f"inspect_ai/{name}" if "/" not in name else None)


def _metric_problem(api: Api, name: Any, options: Any, depth: int = 0) -> str | None:
    """Why a metric definition cannot be rebuilt from the allow-list, or None."""
    canonical = _canonical(name)
    if canonical is None or canonical not in api.metrics:
        return (
            f"the metric {name!r} is not one of Inspect's built-in metrics (which annotate recomputes by exact name: "
            f"{', '.join(sorted(api.metrics))}); it would have to be imported from the task's code or a package"
        )
    if options is None:
        options = {}
    if not isinstance(options, dict):
        return f"the metric {name!r} has options that are not an object"
    spec = METRIC_OPTIONS[canonical]
    for key, value in options.items():
        check = spec.get(key)
        if check is None:
            known = ", ".join(spec) or "none"
            return (
                f"the metric {name!r} has the option {key!r}, which Inspect's built-in {canonical} does not take from "
                f"a log (its options: {known})"
            )
        if check == NESTED:
            if depth >= MAX_NESTING:
                return f"the metric {name!r} nests metrics more than {MAX_NESTING} deep"
            if not (
                isinstance(value, dict) and value.get("type") == "metric" and set(value) <= {"type", "name", "params"}
            ):
                return f"the metric {name!r} has an option {key!r} that is not a metric"
            problem = _metric_problem(api, value.get("name"), value.get("params"), depth + 1)
            if problem is not None:
                return problem
            continue
        assert not isinstance(check, str)
        test, what = check
        if not test(value):
            return f"the metric {name!r} has {key}={value!r}, where Inspect's {canonical} takes {what}"
    missing = [k for k in REQUIRED.get(canonical, ()) if k not in options]
    if missing:
        return f"the metric {name!r} lacks its option(s) {', '.join(missing)}"
    return None


def _definitions(node: Any) -> list[Any]:
    """The metric definitions of a header's (possibly nested) list or dict of them."""
    if node is None:
        return []
    if isinstance(node, dict):
        return [d for value in node.values() for d in _definitions(value)]
    if isinstance(node, list):
        return [d for value in node for d in _definitions(value)]
    return [node]


def _reducer(api: Api, name: Any) -> tuple[Any, dict[str, Any]] | str:
    """(Inspect's factory, its arguments) for a log's ``epochs_reducer`` name, or why it is refused."""
    if isinstance(name, str):
        if name in REDUCERS and name in api.reducers:
            return api.reducers[name], {}
        base, _, k = name.rpartition("_")
        if base in K_REDUCERS and base in api.reducers and k.isdigit() and k.isascii():
            if not 1 <= int(k) <= MAX_K:
                return f"the epochs reducer {name!r} counts {k} epochs (at most {MAX_K:,})"
            return api.reducers[base], {"k": int(k)}
    allowed = [*REDUCERS, *(f"{b}_K" for b in K_REDUCERS)]
    return (
        f"the epochs reducer {name!r} is not one of Inspect's built-in reducers ({', '.join(allowed)}); it would have "
        "to be imported from the task's code or a package"
    )


def metric_problems(api: Api, log: Any, where: str) -> list[str]:
    """Why this log's metrics cannot be recomputed from the allow-list (one line for the log), or []."""
    definitions = _definitions(log.eval.metrics)
    for scorer in log.eval.scorers or []:
        definitions += _definitions(scorer.metrics)
    for definition in definitions:
        problem = _metric_problem(api, getattr(definition, "name", definition), getattr(definition, "options", None))
        if problem is not None:
            return [f"{where}: {problem}. annotate never runs code a log names; recompute such a log with Inspect."]
    reducers = log.eval.config.epochs_reducer if log.eval.config is not None else None
    for name in [reducers] if isinstance(reducers, str) else reducers or []:
        found = _reducer(api, name)
        if isinstance(found, str):
            return [f"{where}: {found}. annotate never runs code a log names; recompute such a log with Inspect."]
    return []


# -- recomputing -----------------------------------------------------------------------------------


def _build_metric(api: Api, name: str, options: dict[str, Any] | None) -> Any:
    canonical = _canonical(name)
    assert canonical is not None
    kwargs: dict[str, Any] = {}
    for key, value in (options or {}).items():
        nested = METRIC_OPTIONS[canonical][key] == NESTED
        kwargs[key] = _build_metric(api, value["name"], value.get("params")) if nested else value
    return api.metrics[canonical](**kwargs)


def _build(api: Api, node: Any) -> Any:
    """A header's metric definitions as Inspect metric objects, in the same (list / dict) shape."""
    if isinstance(node, dict):
        return {key: [_build_metric(api, d.name, d.options) for d in value] for key, value in node.items()}
    out: list[Any] = []
    for item in node or []:
        if isinstance(item, dict):
            out.append({key: [_build_metric(api, d.name, d.options) for d in value] for key, value in item.items()})
        else:
            out.append(_build_metric(api, item.name, item.options))
    return out


def recompute(api: Api, log: Any) -> None:
    """The log's results and reductions recomputed from its samples' scores (as ``recompute_metrics`` does).

    Only call it on a log that ``metric_problems`` accepts. Raises whatever Inspect's metric code
    raises on the scores (the caller refuses the log with it).
    """
    if log.samples is None:
        raise ValueError("Log contains no samples")
    scores = [
        {
            name: api.SampleScore(score=score, sample_id=sample.id, sample_metadata=sample.metadata)
            for name, score in sample.scores.items()
        }
        for sample in log.samples
        if sample.scores
    ]
    names = log.eval.config.epochs_reducer if log.eval.config is not None else None
    reducers = None
    if names is not None:
        reducers = []
        for name in [names] if isinstance(names, str) else names:
            found = _reducer(api, name)
            assert not isinstance(found, str)
            factory, kwargs = found
            reducers.append(factory(**kwargs))
    metrics = _build(api, log.eval.metrics) if log.eval.metrics else None
    infos = [
        api.ScorerInfo(
            name=s.name,
            metrics=_build(api, s.metrics) if s.metrics else [],
            params=s.options or {},
            metadata=s.metadata or {},
        )
        for s in log.eval.scorers or []
    ]
    # Every score gets its scorer here, so that Inspect never resolves one by name (ScorerInfo.from_name).
    known: list[str] = []
    for info in infos:
        known.append(api.unique_scorer_name(info.name, known))
    for name in dict.fromkeys(name for sample_scores in scores for name in sample_scores):
        if name not in known:
            declared = api.scorer_metrics.get(name)
            info = api.ScorerInfo(name=name, metrics=list(declared) if declared else api.default_metrics())
            if metrics is not None:
                info.metrics = metrics
            infos.append(info)
            known.append(name)
    results, reductions = api.eval_results(
        samples=len(log.samples),
        scores=scores,
        reducers=reducers,
        scorers=infos,
        metrics=metrics,
        early_stopping=log.results.early_stopping if log.results else None,
        metadata=log.results.metadata if log.results else None,
        logged_samples=log.results.logged_samples if log.results else None,
        completed_samples=sum(1 for s in log.samples if s.error is None),
        headline_metric=log.eval.headline_metric,
    )
    log.results = results
    log.reductions = reductions


# -- archives --------------------------------------------------------------------------------------


def vet_archive(path: Path, where: str) -> str | None:
    """Why an ``.eval`` file must not reach Inspect's reader, or None: it is read as ingest reads it.

    Member names inside the archive, only the methods Inspect writes, each member decompressed
    against its byte budget (its declared size, at most ``MAX_MEMBER_BYTES``) without keeping
    the bytes, its CRC-32 and size checked (``annotate.ingest.archive``). Inspect then
    reads exactly the members ingest read (the last entry of a name).
    """
    try:
        with open(path, "rb") as fh, zipfile.ZipFile(fh) as archive:
            members = archive_members(archive)
            if isinstance(members, str):
                return f"{where}: {members}."
            for name, info in members.items():
                problem = member_bytes(archive, fh, info, keep=False)
                if isinstance(problem, str):
                    return f"{where}: member {name}: {problem}."
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        return f"{where}: not a readable .eval archive ({exc})."
    return None


# -- leftovers -------------------------------------------------------------------------------------

#: The private folder in ``--to`` where Inspect writes the copies before they are renamed into place.
STAGE_PREFIX = ".annotate-writeback-"
_STAGE = re.compile(re.escape(STAGE_PREFIX) + r"(?P<pid>[0-9]{1,10})-[A-Za-z0-9_]{1,32}")
#: The temporary file of Inspect's atomic writer (``inspect_ai/_util/atomic_write.py``).
INSPECT_TMP = re.compile(r"\.inspect_tmp_[A-Za-z0-9_-]{1,64}\.writing")
#: The temporary target of earlier annotate versions (``.NAME.tmp-PID.eval``, a predictable name).
_OLD_TMP = re.compile(r"\..+\.tmp-(?P<pid>[0-9]{1,10})\.(?:eval|json)")
_LOG = re.compile(r"[^/]+\.(?:eval|json)")


def sweep_leftovers(folder: Path, *, before: float) -> tuple[list[str], list[str]]:
    """Remove what an interrupted writeback left in ``folder``; (names removed, names left with why).

    Removed only when provably a writeback's own: a private folder ``.annotate-writeback-PID-XXXX``
    (or an earlier version's ``.NAME.tmp-PID.eval`` file) that is a real folder (file), not a link,
    owned by this user, last changed before ``before`` (this run's start), whose process ``PID``
    is gone, and (a folder) that holds nothing but regular files named as a log or as Inspect's
    temporary files (``.inspect_tmp_*.writing``). An Inspect temporary file directly in
    ``folder`` names no process, so whether its writer is gone cannot be told: it is left, and
    listed.
    """
    swept: list[str] = []
    left: list[str] = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return swept, left
    uid = os.getuid()
    for name in names:
        stage, old = _STAGE.fullmatch(name), _OLD_TMP.fullmatch(name)
        if INSPECT_TMP.fullmatch(name):
            left.append(
                f"{name} (Inspect's temporary file; it names no process, so it is left: remove it if no Inspect run "
                "writes into this folder)"
            )
            continue
        match = stage or old
        if match is None:
            continue
        path = folder / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not (stat.S_ISDIR(st.st_mode) if stage else stat.S_ISREG(st.st_mode)):
            left.append(f"{name} (not a {'folder' if stage else 'regular file'})")
            continue
        if st.st_uid != uid:
            left.append(f"{name} (owned by another user)")
            continue
        if st.st_mtime >= before or not process_gone(int(match["pid"]), own=False):  # own: this run's
            continue  # possibly another writeback still running
        if old:
            os.unlink(path)
            swept.append(name)
            continue
        why = foreign_contents(path, lambda e: bool(_LOG.fullmatch(e) or INSPECT_TMP.fullmatch(e)), "writeback")
        if why is not None:
            left.append(f"{name} ({why})")
            continue
        shutil.rmtree(path)
        swept.append(name)
    return swept, left


__all__ = [
    "INSPECT_TMP",
    "vet_archive",
    "INSTALL_HINT",
    "METRIC_OPTIONS",
    "STAGE_PREFIX",
    "Api",
    "inspect_api",
    "metric_problems",
    "recompute",
    "sweep_leftovers",
]
