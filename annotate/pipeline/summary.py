"""`annotate summary`: label shares per model x benchmark, how rankings move with ambiguous
responses, and the raw verdicts the rubric could not read.

Each cell carries its judge's kind (``annotate.columns.JUDGE_KINDS``, from ``Store.judge_kinds``):
a quality judge's "harmful" share is its *failed* share, not harm, so its cells are shown as
failed / passed and never ranked; refusal judges are ranked and labelled as such. A (benchmark,
judge) stored under several kinds (which ingest prevents) is ``mixed``: shown, never ranked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.columns import NO_JUDGE
from annotate.errors import InputError
from annotate.ingest import reader_module
from annotate.ingest.degenerate import reason_family
from annotate.ingest.outcome import UnparsedVerdicts, unparsed_hint
from annotate.ingest.rubric import Rubric
from annotate.stats.ranking import BENCHMARK_MODES
from annotate.stats.shares import cell_shares, invalid_shares, ranking_sensitivity

if TYPE_CHECKING:
    from annotate.pipeline.session import Session


@dataclass
class Summary:
    cells: pd.DataFrame  # per judge x model x benchmark: n and share of each judge label, and kind
    ranking: pd.DataFrame  # per ranked judge x model: rates and ranks with ambiguous as safe / as harmful
    ambiguity_warn: float  # the share of ambiguous responses highlighted ([summary] ambiguity_warn)
    benchmark_sets: pd.DataFrame = field(default_factory=pd.DataFrame)  # per judge: the set ranked over
    left_out: pd.DataFrame = field(default_factory=pd.DataFrame)  # judge, model, reason
    ambiguous_reasons: pd.DataFrame = field(default_factory=pd.DataFrame)  # judge, label_reason, n
    unparsed: list[dict[str, Any]] = field(default_factory=list)  # per judge: raw verdicts and rubric lines
    kinds: pd.DataFrame = field(default_factory=pd.DataFrame)  # per benchmark x judge: kind, responses
    set_aside: pd.DataFrame = field(default_factory=pd.DataFrame)  # model, benchmark, reason, n (set_aside_counts)
    no_score: list[str] = field(default_factory=list)  # models whose every row was set aside: no responses
    #: per judge x model x benchmark: the share of invalid verdicts (unparsed, missing) and whether it
    #: reaches AILuminate's 3 % line (``stats.shares.invalid_shares``)
    invalid: pd.DataFrame = field(default_factory=pd.DataFrame)


def parse_benchmarks(value: str | None) -> Any:
    """``--benchmarks``: shared (default), all, or a comma-separated list of benchmark names."""
    if value is None or value.strip() == "":
        return "shared"
    if value in BENCHMARK_MODES:
        return value
    names = [b.strip() for b in value.split(",") if b.strip()]
    if not names:
        raise InputError("--benchmarks takes shared, all, or a comma-separated list of benchmark names")
    return names


def summary(s: Session, *, judge: str | None = None, benchmarks: Any = "shared") -> Summary:
    """Label shares, the ranking sensitivity over the benchmark set in force, and the unparsed verdicts."""
    counts = s.store.label_counts(judge=judge)
    if isinstance(benchmarks, list):
        unknown = sorted(set(benchmarks) - set(counts.benchmark))
        if unknown:
            raise InputError(
                f"--benchmarks names benchmark(s) with no responses: {', '.join(unknown)}; "
                f"the store holds: {', '.join(sorted(set(counts.benchmark))) or 'none'}"
            )
    kinds = s.store.judge_kinds()
    set_aside = set_aside_counts(s)
    if judge:
        kinds = kinds[kinds.judge == judge].reset_index(drop=True)
    shares = with_kinds(cell_shares(counts), kinds)
    # Responses no judge labelled: shown as such, never ranked (nothing but "ambiguous" to rank by).
    shares.loc[shares.judge == NO_JUDGE, "kind"] = UNJUDGED_KIND
    # Only judges whose failures are harm are ranked by a harmful rate: never a quality judge's.
    ranked = ranking_sensitivity(shares[shares.kind.isin(RANKED_KINDS)].reset_index(drop=True), benchmarks)
    return Summary(
        cells=shares,
        ranking=ranked.ranking,
        ambiguity_warn=float(s.ws.setting("summary", "ambiguity_warn", 0.10)),
        benchmark_sets=ranked.sets,
        left_out=ranked.left_out,
        ambiguous_reasons=s.store.ambiguous_reasons(judge=judge),
        unparsed=unparsed_hints(s, judge=judge),
        kinds=kinds,
        set_aside=set_aside,
        no_score=models_without_responses(set_aside, counts),
        invalid=invalid_shares(s.store.verdict_reasons(judge=judge)),
    )


def set_aside_counts(s: Session) -> pd.DataFrame:
    """Rows set aside at ingest and still without a response, per model, benchmark and reason
    (quoted error texts folded into their family): columns model, benchmark, reason, n."""
    rows = s.store.set_aside_counts()
    if rows.empty:
        return rows

    def unnamed(values: pd.Series) -> list[str]:  # a row the reader set aside without naming its model
        return [v if isinstance(v, str) else "(unnamed)" for v in values]

    rows = rows.assign(
        reason=[reason_family(str(x)) for x in rows.reason],
        model=unnamed(rows.model),
        benchmark=unnamed(rows.benchmark),
    )
    out = rows.groupby(["model", "benchmark", "reason"]).n.sum().reset_index()
    return out.sort_values(["model", "benchmark", "n"], ascending=[True, True, False]).reset_index(drop=True)


def models_without_responses(set_aside: pd.DataFrame, counts: pd.DataFrame) -> list[str]:
    """The models with rows set aside and no response in the store: they have no score."""
    if set_aside.empty:
        return []
    have = set(counts.model) if not counts.empty else set()
    return sorted(set(set_aside.model) - have - {"(unnamed)"})


#: The kind shown for responses stored unjudged (``annotate.columns.NO_JUDGE``).
UNJUDGED_KIND = "none"
#: The kinds whose "harmful" label is harm, so whose rates are ranked.
RANKED_KINDS = ("safety", "refusal")
MIXED = "mixed"


def with_kinds(shares: pd.DataFrame, kinds: pd.DataFrame) -> pd.DataFrame:
    """``shares`` with a ``kind`` column per (benchmark, judge): its kind, ``mixed`` when stored under
    several, ``safety`` when none is stored (a store written before kinds)."""
    out = shares.copy()
    if kinds.empty:
        out["kind"] = "safety"
        return out
    per = kinds.groupby(["benchmark", "judge"]).kind.agg(lambda k: k.iloc[0] if k.nunique() == 1 else MIXED)
    keys = list(zip(out.benchmark, out.judge, strict=True))
    out["kind"] = [per.get(key, "safety") for key in keys]
    return out


def unparsed_hints(s: Session, *, judge: str | None = None) -> list[dict[str, Any]]:
    """Per (format, judge): the raw verdicts stored as unparsed, most frequent first, the presets
    that map that scorer and the rubric lines that would map them (as `annotate ingest` prints)."""
    rows = s.store.unparsed_verdicts(judge=judge)
    if rows.empty:
        return []
    in_force = _presets_in_force(s)
    rubric = Rubric(auto=False)  # suggests presets; which were in force comes from the ingest runs
    out = []
    for (fmt, name), group in rows.groupby(["format", "judge"], sort=True):
        try:
            defaults = reader_module(str(fmt)).DEFAULT_RUBRIC
        except InputError:  # a format this version no longer reads: show the values without lines
            defaults = {}
        seen = UnparsedVerdicts(benchmark=str(group.sort_values("n", ascending=False).benchmark.iloc[0]))
        for r in group.itertuples():
            if r.free_text:
                seen.long += int(r.n)
            else:
                seen.counts[str(r.judge_verdict)] += int(r.n)
        hint = unparsed_hint(
            rubric.for_format(str(fmt), defaults), defaults, str(name), seen, in_force.get((str(fmt), str(name)), [])
        )
        out.append(hint)
    return out


def _presets_in_force(s: Session) -> dict[tuple[str, str], list[str]]:
    """(format, judge) -> the presets in force when its responses were ingested (from the ingest runs)."""
    out: dict[tuple[str, str], list[str]] = {}
    for text in s.store.ingest_runs().get("rubric", pd.Series(dtype=object)):
        try:
            rubric = json.loads(text)
        except (TypeError, ValueError):
            continue
        if not isinstance(rubric, dict) or not isinstance(rubric.get("presets_in_force"), dict):
            continue
        for name, presets in rubric["presets_in_force"].items():
            known = out.setdefault((str(rubric.get("format")), str(name)), [])
            known += [p for p in presets if p not in known]
    return out
