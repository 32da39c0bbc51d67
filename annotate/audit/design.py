"""design.json as types: the recorded sampling design of the rounds an audit covers.

:class:`Design` holds the rounds (:class:`RoundDesign`), each with its judge, seed, sample size,
annotators, how its reviewers were kept apart, its waves and its strata (:class:`Stratum`: N_h
and n_h per model x benchmark x stratum). ``Design.from_json`` checks a parsed design.json
(:func:`design_problems` lists what is wrong, one line per problem, with the path of the value)
and ``Design.to_json`` gives back the document as annotate writes it, key order included, so an
export's design.json is a function of the record. The statistics take the design as a frame
(``Design.strata_frame``) and the rounds whose strata are several judges' unanimity
(``Design.strata_from``): ``stats/`` never sees this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from annotate.audit.channels import channel_doc_problems
from annotate.audit.schema import listed
from annotate.columns import BLINDINGS, JUDGE_LABELS, NO_JUDGE, describe_judges, judge_of
from annotate.hazards import NO_HAZARD, hazards_of
from annotate.stats.adjudication import rules_from_record
from annotate.stats.ordering import OrderDesign
from annotate.stats.sampling import AMBIGUOUS_STRATA, ambiguous_rule, ambiguous_sample_size
from annotate.stats.scoring.domains import labels_by_domain
from annotate.stats.scoring.strata import DESIGN_STRATA_COLUMNS, stratum_key

__all__ = [
    "DESIGN_SCHEMA",
    "STRATA_FROM_RULE",
    "Design",
    "DesignError",
    "RoundDesign",
    "Stratum",
    "Wave",
    "design_problems",
]

DESIGN_SCHEMA = "annotate-design/1"
#: How an imported round's labels stand for their strata: every response (census) or those the
#: file labelled, missing at random within their stratum (given).
IMPORTED_DESIGNS = ("census", "given")
#: design.json's ``strata_rule`` of a round with ``strata_from`` whose ambiguous stratum is a census
#: (``--ambiguous all``, or routed before it existed): what its strata' judge labels mean.
STRATA_FROM_RULE = (
    "unanimity of the strata_from judges on the same response (same key, prompt and response text): "
    "harmful = every one says harmful, safe = every one says safe, ambiguous = anything else (a disagreement, "
    "an ambiguous label or no verdict), reviewed in full; judge is the judge whose rows were routed"
)
#: ... and of one whose ambiguous stratum is sampled by the round's ``ambiguous`` rule (issue #25).
STRATA_FROM_RULE_SAMPLED = STRATA_FROM_RULE.replace(
    "reviewed in full", "sampled by the round's ambiguous rule (every one when it is all)"
)


@dataclass(frozen=True)
class Stratum:
    """One stratum of one cell and wave: N_h responses, n_h of them sampled."""

    model: str
    benchmark: str
    judge_label: str
    wave: int
    population: int
    sample: int
    #: A next wave's stratum (``route --next-wave``): it samples the not-yet-sampled remainder of
    #: the stratum of wave ``of_wave`` (its ``population`` is that remainder R_h), of which earlier
    #: waves sampled ``sampled_before`` (p_h). None for a stratum of a wave's own responses.
    of_wave: int | None = None
    sampled_before: int | None = None
    #: The part of the judge label's stratum in a round routed by a field of the prompt (``route
    #: --strata-by hazard``: the hazard, ``(none)`` for responses without one); None: not cut.
    part: str | None = None

    @property
    def root_wave(self) -> int:
        """The wave whose responses this stratum's population is (its own, or the one it continues)."""
        return self.wave if self.of_wave is None else self.of_wave

    @property
    def stratum(self) -> str:
        """The stratum's key (``ambiguous``, ``safe#w2``: the judge label, the part, and the wave after the first)."""
        return stratum_key(self.judge_label, self.wave, self.part)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "benchmark": self.benchmark,
            "judge_label": self.judge_label,
            **({} if self.part is None else {"part": self.part}),
            "wave": self.wave,
            "stratum": self.stratum,
            "population": self.population,
            "sample": self.sample,
        } | ({} if self.of_wave is None else {"of_wave": self.of_wave, "sampled_before": self.sampled_before})


def pooled_strata(strata: Sequence[Stratum]) -> list[tuple[Stratum, int]]:
    """The strata the estimators see (docs/methods.md 4.9), each with its sample size t_h.

    A stratum and the next waves drawn from its remainder form a chain (same cell, judge label and
    root wave). The waves of a chain are pooled: the estimators take the root stratum (its key,
    its population N_h) with every wave's items, t_h = n_0 + n_1 + ..., a simple random sample of
    t_h from N_h (the union of the waves is a prefix of the stratum's hash order). The next waves'
    own strata (``of_wave``) stay on record with their draw-time R_h and n_h, and are not
    estimation strata. A stratum without next waves is itself with its own n_h.
    """
    extra: dict[tuple[str, str, str, str | None, int], int] = {}
    for s in strata:
        if s.of_wave is not None:
            key = (s.model, s.benchmark, s.judge_label, s.part, s.of_wave)
            extra[key] = extra.get(key, 0) + s.sample
    return [
        (s, s.sample + extra.get((s.model, s.benchmark, s.judge_label, s.part, s.wave), 0))
        for s in strata
        if s.of_wave is None
    ]


def pooled_keys(strata: Sequence[Stratum]) -> dict[str, str]:
    """A next wave's stratum key -> its root stratum's key (labels of its items are estimated there)."""
    return {s.stratum: stratum_key(s.judge_label, s.of_wave, s.part) for s in strata if s.of_wave is not None}


@dataclass(frozen=True)
class Wave:
    """One routing of a round: the responses ingested up to ``max_response_id`` not yet in it."""

    wave: int
    max_response_id: int
    routed_at: str

    def to_json(self) -> dict[str, Any]:
        return {"wave": self.wave, "max_response_id": self.max_response_id, "routed_at": self.routed_at}


@dataclass(frozen=True)
class RoundDesign:
    """One round's recorded design."""

    round: str
    judge: str
    seed: int
    clear_per_cell: int
    annotators: tuple[str, ...]
    strata: tuple[Stratum, ...]
    waves: tuple[Wave, ...] = ()
    label_config_sha256: str | None = None
    #: The judges whose unanimity made the strata (``route --strata-from``); None: the judge's own labels.
    strata_from: tuple[str, ...] | None = None
    #: How the reviewers were kept apart (``columns.BLINDINGS``); None in designs written before it.
    blinding: str | None = None
    #: The rules of the round's latest adjudication (``stats.adjudication.rules_record``): None when
    #: never adjudicated, or in designs written before annotate-export/5.
    adjudication: Mapping[str, Any] | None = None
    #: Whether the design records ``adjudication`` at all (annotate-export/5 on, null included).
    records_adjudication: bool = False
    #: A round across suites: each benchmark's routing judge ({benchmark: judge}; annotate-export/6
    #: on); ``judge`` then reads "B1=J1, B2=J2". None: ``judge`` for every benchmark.
    judges: Mapping[str, str] | None = None
    #: How the round sampled each cell's ambiguous stratum (``route --ambiguous``: "all", "50",
    #: "0.2"); None in designs of rounds routed before it was recorded (a census).
    ambiguous: str | None = None
    #: How the reviewers' tasks were ordered (``stats.ordering.OrderDesign.to_record``); None: routed
    #: before orders were recorded (an independent order no export can re-derive).
    order: Mapping[str, Any] | None = None
    #: Whether the design records ``order`` at all (annotate-export/8 on, null included).
    records_order: bool = False
    #: A round of labels a team already had (``annotate import-labels``): how it came in (the file's
    #: name and sha256, its design ``census`` or ``given``, the column and value maps). None: a
    #: round annotate routed (only imported rounds carry the key, so every other design is unchanged).
    origin: Mapping[str, Any] | None = None
    #: How the round's labels arrived (``annotate.audit.channels``: per channel, answers per person,
    #: blinding, files); None in designs written before annotate-export/13.
    channels: Mapping[str, Any] | None = None
    #: N_hd: how many responses of each estimation stratum's population carry each hazard (rows of
    #: ``model, benchmark, stratum, hazard, population``; an item of two hazards counted in each, one
    #: without any under ``(none)``), recorded since annotate-export/16 when the population has hazards,
    #: so that the per-hazard scores and grades re-derive from the export. None: not recorded.
    hazard_population: tuple[Mapping[str, Any], ...] | None = None

    @property
    def imported(self) -> bool:
        return bool(self.origin and self.origin.get("imported"))

    def judge_for(self, benchmark: str) -> str | None:
        """The routing judge of one benchmark (None: a benchmark this round across suites did not route)."""
        return judge_of(self.judge, None if self.judges is None else dict(self.judges), benchmark)

    @property
    def strata_by(self) -> str | None:
        """What the round's strata are cut by beyond the judge label (``route --strata-by``): ``hazard`` or None."""
        return "hazard" if any(s.part is not None for s in self.strata) else None

    @property
    def routing_judges(self) -> list[str]:
        """Every judge whose rows the round routed, sorted."""
        return sorted(set(self.judges.values())) if self.judges is not None else [self.judge]

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"round": self.round, "judge": self.judge}
        if self.judges is not None:
            doc["judges"] = dict(sorted(self.judges.items()))  # said only for rounds across suites
        if self.strata_from is not None:
            # Said only for such rounds: every other round's design stays as it was.
            rule = STRATA_FROM_RULE if self.ambiguous in (None, "all") else STRATA_FROM_RULE_SAMPLED
            doc |= {"strata_from": list(self.strata_from), "strata_rule": rule}
        if self.strata_by is not None:  # said only for such rounds (each stratum names its part)
            doc["strata_by"] = self.strata_by
        doc |= {"seed": self.seed, "clear_per_cell": self.clear_per_cell}
        if self.ambiguous is not None:  # said only for rounds that recorded it
            doc["ambiguous"] = self.ambiguous
        doc["annotators"] = list(self.annotators)
        if self.records_order:
            doc["order"] = None if self.order is None else dict(self.order)
        if self.blinding is not None:
            doc["blinding"] = self.blinding
        if self.records_adjudication:
            doc["adjudication"] = None if self.adjudication is None else dict(self.adjudication)
        if self.origin is not None:
            doc["origin"] = dict(self.origin)
        if self.channels is not None:
            doc["channels"] = {c: dict(e) for c, e in self.channels.items()}
        doc |= {
            "label_config_sha256": self.label_config_sha256,
            "waves": [w.to_json() for w in self.waves],
            "strata": [s.to_json() for s in self.strata],
        }
        if self.hazard_population is not None:  # said only for such rounds (annotate-export/16 on)
            doc["hazard_population"] = [dict(row) for row in self.hazard_population]
        return doc


@dataclass(frozen=True)
class Design:
    """The rounds of an audit, the rubrics their responses were read with, the label config's hash."""

    rounds: tuple[RoundDesign, ...]
    rubrics: tuple[Any, ...] = ()
    label_config_sha256: str | None = None
    schema: str = DESIGN_SCHEMA
    #: Keys of the document this version does not know, kept as read (``to_json`` writes them back).
    extra: Mapping[str, Any] = field(default_factory=dict)

    # -- views ----------------------------------------------------------------------------
    def round(self, name: str) -> RoundDesign:
        return next(r for r in self.rounds if r.round == name)

    @property
    def round_names(self) -> list[str]:
        return [r.round for r in self.rounds]

    def annotators_by_round(self) -> dict[str, list[str]]:
        return {r.round: list(r.annotators) for r in self.rounds}

    def strata_from(self) -> dict[str, list[str]]:
        """The rounds whose strata are several judges' unanimity, with those judges."""
        return {r.round: list(r.strata_from) for r in self.rounds if r.strata_from is not None}

    def strata_frame(self) -> pd.DataFrame:
        """One row per estimation stratum of every round (``stats.scoring.strata.DESIGN_STRATA_COLUMNS``).

        A stratum with next waves is one row with every wave's items (:func:`pooled_strata`): give the
        estimators ``labels`` through :meth:`pooled`.
        """
        rows = [
            (r.round, s.model, s.benchmark, s.judge_label, s.wave, s.stratum, s.population, sample, r.judge != NO_JUDGE)
            for r in self.rounds
            for s, sample in pooled_strata(r.strata)
        ]
        # ``judged``: False for a round of responses no judge labelled (its judge-only treatments are not estimable).
        return pd.DataFrame(rows, columns=[*DESIGN_STRATA_COLUMNS, "judged"])

    def hazard_population(self) -> pd.DataFrame | None:
        """N_hd of every round that records it (``round, model, benchmark, stratum, domain, population``,
        as ``audit.scores.domain_scores_of`` takes it); None when no round does."""
        rows = [
            (r.round, h["model"], h["benchmark"], h["stratum"], h["hazard"], h["population"])
            for r in self.rounds
            for h in r.hazard_population or ()
        ]
        if not any(r.hazard_population is not None for r in self.rounds):
            return None
        return pd.DataFrame(rows, columns=["round", "model", "benchmark", "stratum", "domain", "population"])

    def hazard_label_problems(self, labels: pd.DataFrame) -> list[str]:
        """labels.csv against ``hazard_population``: the routed items of a hazard in a stratum (read from
        labels.csv's own ``hazard``) are at most the N_hd recorded for it. Empty when nothing is recorded."""
        population = self.hazard_population()
        if population is None or not len(labels):
            return []
        counted = [r.round for r in self.rounds if r.hazard_population is not None]
        mine = labels_by_domain(self.pooled(labels[labels["round"].isin(counted)]), "hazard")
        key = ["round", "model", "benchmark", "stratum", "domain"]
        routed = mine.groupby(key).size().rename("routed").reset_index()
        both = routed.merge(population, on=key, how="left").fillna({"population": 0})
        over = both[both["routed"] > both["population"]]
        found = [
            f"labels.csv: round {r['round']}, {r['model']} x {r['benchmark']} x {r['stratum']}: {r['routed']} routed "
            f"item(s) of hazard {r['domain']!r}, but design.json's hazard_population counts {int(r['population'])} "
            "in that stratum."
            for r in over.to_dict("records")
        ]
        out: list[str] = []
        listed(out, found, "strata whose routed items of a hazard exceed its count")
        return out

    def pooled(self, labels: pd.DataFrame) -> pd.DataFrame:
        """``labels`` (round, stratum, ...) with each next wave's items in their root stratum (4.9).

        The same frame when no round has a next wave (every stratum is its own).
        """
        moves = {r.round: pooled_keys(r.strata) for r in self.rounds}
        if not any(moves.values()) or not len(labels):
            return labels
        stratum = [
            moves.get(str(rnd), {}).get(str(k), k) for rnd, k in zip(labels["round"], labels["stratum"], strict=True)
        ]
        return labels.assign(stratum=stratum)

    # -- the document ----------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "rounds": [r.to_json() for r in self.rounds],
            "rubrics": list(self.rubrics),
            "label_config_sha256": self.label_config_sha256,
            **self.extra,
        }

    @classmethod
    def from_json(cls, doc: Any) -> Design:
        """A parsed design.json as a Design; ``ValueError`` with every problem when it is not one."""
        problems = design_problems(doc)
        if problems:
            raise DesignError(problems)
        rounds = tuple(
            RoundDesign(
                round=r["round"],
                judge=r["judge"],
                seed=r["seed"],
                clear_per_cell=r["clear_per_cell"],
                annotators=tuple(r["annotators"]),
                strata=tuple(
                    Stratum(
                        s["model"],
                        s["benchmark"],
                        s["judge_label"],
                        s["wave"],
                        s["population"],
                        s["sample"],
                        s.get("of_wave"),
                        s.get("sampled_before"),
                        s.get("part"),
                    )
                    for s in r["strata"]
                ),
                waves=tuple(
                    Wave(int(w["wave"]), int(w["max_response_id"]), str(w["routed_at"]))
                    for w in r.get("waves") or []
                    if isinstance(w, dict) and all(k in w for k in ("wave", "max_response_id", "routed_at"))
                ),
                label_config_sha256=r.get("label_config_sha256"),
                strata_from=tuple(r["strata_from"]) if r.get("strata_from") else None,
                blinding=r.get("blinding"),
                adjudication=r.get("adjudication"),
                records_adjudication="adjudication" in r,
                judges=dict(r["judges"]) if r.get("judges") is not None else None,
                ambiguous=r.get("ambiguous"),
                order=r.get("order"),
                records_order="order" in r,
                origin=r.get("origin"),
                channels=r.get("channels"),
                hazard_population=(
                    tuple(dict(h) for h in r["hazard_population"]) if r.get("hazard_population") is not None else None
                ),
            )
            for r in doc["rounds"]
        )
        known = {"schema", "rounds", "rubrics", "label_config_sha256"}
        return cls(
            rounds=rounds,
            rubrics=tuple(doc.get("rubrics", [])),
            label_config_sha256=doc.get("label_config_sha256"),
            schema=str(doc.get("schema", DESIGN_SCHEMA)),
            extra={k: v for k, v in doc.items() if k not in known},
        )


class DesignError(ValueError):
    """design.json is not a design: ``problems`` lists why, one line each."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


def design_problems(doc: Any) -> list[str]:
    """Problems of design.json's structure (empty when the design is well formed).

    Every round needs a name, a judge, whole-number seed and clear_per_cell, a list of annotator
    pseudonyms and strata whose judge label, wave, stratum key, population N_h and sample n_h
    (0 <= n_h <= N_h) are consistent; ``strata_from``, when given, a list of judge names;
    ``blinding``, when given, one of ``columns.BLINDINGS``.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("rounds"), list):
        return ["design.json: the document must be an object with a list of rounds."]
    problems: list[str] = []
    if not isinstance(doc.get("rubrics", []), list):
        problems.append("design.json: rubrics must be a list.")
    names: set[str] = set()
    for i, rnd in enumerate(doc["rounds"]):
        where = f"design.json: rounds[{i}]"
        if not isinstance(rnd, dict):
            problems.append(f"{where} must be an object.")
            continue
        if not isinstance(rnd.get("round"), str) or not isinstance(rnd.get("judge"), str):
            problems.append(f"{where} needs text fields round and judge.")
            continue
        if rnd["round"] in names:
            problems.append(f"{where}: round {rnd['round']!r} appears twice.")
        names.add(rnd["round"])
        problems += _round_problems(rnd, where)
    return problems


def _round_problems(rnd: dict[str, Any], where: str) -> list[str]:
    problems: list[str] = []
    for field_name in ("seed", "clear_per_cell"):
        if isinstance(rnd.get(field_name), bool) or not isinstance(rnd.get(field_name), int):
            problems.append(f"{where}.{field_name} must be a whole number.")
    if "blinding" in rnd and rnd["blinding"] not in BLINDINGS:
        problems.append(f"{where}.blinding must be one of {', '.join(map(repr, BLINDINGS))}.")
    order = rnd.get("order")
    if order is not None:
        try:
            OrderDesign.from_record(order)
        except ValueError as exc:
            problems.append(f"{where}.order: {exc}.")
    rules = rnd.get("adjudication")
    if rules is not None:
        try:
            rules_from_record(rules)
        except ValueError as exc:
            problems.append(f"{where}.adjudication: {exc}.")
    rule: int | float | None = None
    rule_ok = "ambiguous" in rnd
    if rule_ok:
        try:
            if not isinstance(rnd["ambiguous"], str):
                raise ValueError(rnd["ambiguous"])
            rule = ambiguous_rule(rnd["ambiguous"])
        except ValueError:
            problems.append(f"{where}.ambiguous must be all, a whole number or a fraction, as text.")
            rule_ok = False
    per_benchmark = rnd.get("judges")
    if per_benchmark is not None and (
        not isinstance(per_benchmark, dict)
        or not per_benchmark
        or not all(isinstance(b, str) and b and isinstance(j, str) and j for b, j in per_benchmark.items())
    ):
        problems.append(f"{where}.judges must be an object of benchmark: judge names.")
    elif per_benchmark is not None and rnd.get("judge") != describe_judges(per_benchmark):
        problems.append(
            f"{where}.judge {rnd.get('judge')!r} must read {describe_judges(per_benchmark)!r} (its judges)."
        )
    judges = rnd.get("strata_from")
    if judges is not None and (not isinstance(judges, list) or not all(isinstance(j, str) and j for j in judges)):
        problems.append(f"{where}.strata_from must be a list of judge names.")
    annotators = rnd.get("annotators")
    if not isinstance(annotators, list) or not all(isinstance(a, str) and a for a in annotators):
        problems.append(f"{where}.annotators must be a list of pseudonyms.")
    elif len(set(annotators)) != len(annotators):
        problems.append(f"{where}.annotators lists a pseudonym twice.")
    origin = rnd.get("origin")
    imported = isinstance(origin, dict) and origin.get("imported") is True
    if origin is not None and not (imported and origin.get("design") in IMPORTED_DESIGNS):
        problems.append(
            f"{where}.origin must say imported: true and a design of {', '.join(map(repr, IMPORTED_DESIGNS))}."
        )
    if "channels" in rnd:
        problems += channel_doc_problems(where, rnd["channels"])
    strata = rnd.get("strata")
    if not isinstance(strata, list):
        return [*problems, f"{where}.strata must be a list."]
    found: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    chains: dict[tuple[str, str, str, int, str | None], list[dict[str, Any]]] = {}
    for j, s in enumerate(strata):
        at = f"{where}.strata[{j}]"
        if not isinstance(s, dict):
            found.append(f"{at} must be an object.")
            continue
        if not all(isinstance(s.get(k), str) for k in ("model", "benchmark", "judge_label", "stratum")):
            found.append(f"{at} needs text fields model, benchmark, judge_label and stratum.")
            continue
        if any(isinstance(s.get(k), bool) or not isinstance(s.get(k), int) for k in ("wave", "population", "sample")):
            found.append(f"{at}: wave, population and sample must be whole numbers.")
            continue
        wave: int = s["wave"]
        if "part" in s and not (isinstance(s["part"], str) and s["part"]):
            found.append(f"{at}.part must be text (the hazard a round routed by hazard cut the stratum by).")
            continue
        if s["judge_label"] not in JUDGE_LABELS:
            found.append(f"{at}.judge_label {s['judge_label']!r} is not one of {', '.join(JUDGE_LABELS)}.")
        nxt = False
        if imported:
            # An imported round has one wave, 0, and its strata are the judge's labels on what the
            # file labelled: each stratum's sample is what the file labelled of it (a census: all).
            if wave != 0 or s["stratum"] != stratum_key(s["judge_label"], 0, s.get("part")):
                found.append(f"{at}.stratum {s['stratum']!r} is not an imported round's (wave 0).")
        else:
            if wave < 1 or s["stratum"] != stratum_key(s["judge_label"], wave, s.get("part")):
                found.append(f"{at}.stratum {s['stratum']!r} does not match its judge label and wave.")
            nxt = s.get("of_wave") is not None or s.get("sampled_before") is not None
            if nxt and not all(
                isinstance(s.get(k), int) and not isinstance(s.get(k), bool) for k in ("of_wave", "sampled_before")
            ):
                found.append(f"{at}: of_wave and sampled_before must both be whole numbers (a next wave's stratum).")
                continue
            if nxt and not 1 <= s["of_wave"] < wave:
                found.append(f"{at}: of_wave {s['of_wave']} must be an earlier wave than {wave}.")
            if nxt:
                key4 = (s["model"], s["benchmark"], s["judge_label"], s["of_wave"], s.get("part"))
                chains.setdefault(key4, []).append(s)
        if not 0 <= s["sample"] <= s["population"]:
            found.append(f"{at}: sample {s['sample']} is not between 0 and its population {s['population']}.")
        elif imported:
            if isinstance(origin, dict) and origin.get("design") == "census" and s["sample"] != s["population"]:
                found.append(f"{at}: sample {s['sample']} of {s['population']} in a census.")
        elif rule_ok and not nxt and isinstance(rnd.get("clear_per_cell"), int):
            # The round's rules re-derive every stratum's sample size from its population.
            if s["judge_label"] in AMBIGUOUS_STRATA:
                want = int(ambiguous_sample_size(np.array([s["population"]]), rule)[0])
                how = f"--ambiguous {rnd['ambiguous']}"
            else:
                want, how = min(s["population"], rnd["clear_per_cell"]), f"clear_per_cell {rnd['clear_per_cell']}"
            if s["sample"] != want:
                found.append(f"{at}: sample {s['sample']} of {s['population']}; the round's {how} gives {want}.")
        key = (s["model"], s["benchmark"], s["stratum"])
        if key in seen:
            found.append(f"{at}: {key[0]} x {key[1]} x {key[2]} appears twice.")
        seen.add(key)
    # A next wave's strata re-derive from their chain: p_h = the samples of the earlier members,
    # R_h = the root stratum's population less p_h (docs/methods.md 4.9).
    roots = {
        (s["model"], s["benchmark"], s["judge_label"], s["wave"], s.get("part")): s
        for s in strata
        if isinstance(s, dict) and s.get("of_wave") is None and isinstance(s.get("wave"), int)
    }
    for (model, bench, label, root_wave, part), members in chains.items():
        root = roots.get((model, bench, label, root_wave, part))
        what = f"{where}: {model} x {bench}, {label} of wave {root_wave}"
        if root is None:
            found.append(f"{what}: a next wave draws from a stratum design.json does not have.")
            continue
        before = int(root["sample"])
        for member in sorted(members, key=lambda m: int(m["wave"])):
            if member["sampled_before"] != before or member["population"] != int(root["population"]) - before:
                found.append(
                    f"{what}, next wave {member['wave']}: sampled_before {member['sampled_before']} and population "
                    f"{member['population']}; the earlier waves give {before} and {int(root['population']) - before}."
                )
            before += int(member["sample"])
    listed(problems, found, "problems in the strata")
    if "hazard_population" in rnd:
        problems += _hazard_population_problems(rnd["hazard_population"], strata, where)
    if isinstance(per_benchmark, dict) and per_benchmark:
        unjudged = sorted({s["benchmark"] for s in strata if isinstance(s, dict)} - set(per_benchmark), key=str)
        if unjudged:
            problems.append(
                f"{where}: strata of benchmark(s) {', '.join(map(str, unjudged))} without a judge in judges."
            )
    return problems


#: At most this many rows of a round's hazard_population (strata x hazards; the study's scale is ~5,000),
#: and this many distinct hazards (each costs a scoring run when the export is graded).
MAX_HAZARD_ROWS = 100_000
MAX_HAZARDS = 200


def _hazard_population_problems(rows: Any, strata: list[Any], where: str) -> list[str]:
    """Problems of a round's ``hazard_population`` (N_hd) against its strata.

    Each row names an estimation stratum of the round (not a next wave's), a hazard at most once per
    stratum, and a count 0 <= N_hd <= N_h; every response is counted at least once (those without a
    hazard under ``(none)``), so a stratum's counts sum to at least N_h.
    """
    at = f"{where}.hazard_population"
    if not isinstance(rows, list) or len(rows) > MAX_HAZARD_ROWS:
        return [f"{at} must be a list of at most {MAX_HAZARD_ROWS:,} rows."]
    own = {
        (s["model"], s["benchmark"], s["stratum"]): s["population"]
        for s in strata
        if isinstance(s, dict)
        and s.get("of_wave") is None
        and all(isinstance(s.get(k), str) for k in ("model", "benchmark", "stratum"))
        and isinstance(s.get("population"), int)
        and not isinstance(s.get("population"), bool)
    }
    found: list[str] = []
    names: set[str] = set()
    seen: set[tuple[str, str, str, str]] = set()
    sums: dict[tuple[str, str, str], int] = {}
    for i, row in enumerate(rows):
        here = f"{at}[{i}]"
        if not isinstance(row, dict) or not all(
            isinstance(row.get(k), str) and row.get(k) for k in ("model", "benchmark", "stratum", "hazard")
        ):
            found.append(f"{here} needs text fields model, benchmark, stratum and hazard.")
            continue
        n = row.get("population")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            found.append(f"{here}.population must be a whole number, 0 or more.")
            continue
        if row["hazard"] != NO_HAZARD and hazards_of(row["hazard"]) != [row["hazard"]]:
            found.append(
                f"{here}.hazard {row['hazard'][:40]!r} is not a hazard's code (a sub-hazard counts for its parent)."
            )
            continue
        names.add(row["hazard"])
        key = (row["model"], row["benchmark"], row["stratum"])
        if key not in own:
            found.append(f"{here}: {key[0]} x {key[1]} x {key[2]} is not an estimation stratum of the round.")
            continue
        if (*key, row["hazard"]) in seen:
            found.append(f"{here}: hazard {row['hazard']!r} of {key[0]} x {key[1]} x {key[2]} appears twice.")
        seen.add((*key, row["hazard"]))
        if n > own[key]:
            found.append(f"{here}: {n} responses of {row['hazard']!r} in a stratum of {own[key]}.")
        sums[key] = sums.get(key, 0) + n
    if len(names) > MAX_HAZARDS:
        found.append(f"{at} names {len(names):,} hazards; at most {MAX_HAZARDS} are read.")
    short = [k for k, n in own.items() if n > 0 and sums.get(k, 0) < n]
    found += [
        f"{at}: stratum {k[0]} x {k[1]} x {k[2]} counts {sums.get(k, 0)} responses over its hazards, fewer than its "
        f"{own[k]} (every response is counted, those without a hazard under '(none)')."
        for k in short
    ]
    out: list[str] = []
    listed(out, found, "problems in hazard_population")
    return out
