"""Hazard categories: the codes an item is stored under, and the hazard it counts for (pure).

A stored response may carry the hazards of its prompt (``response.hazard``, schema v16): one or
more codes, sorted and joined by ``;`` (``"ncr;vcr"``). A code is MLCommons AILuminate's uid
when the value names one of its hazards (the uid, its name, an alias, any case:
``annotate/data/hazards/ailuminate.toml``), else the value of a mapping table (HarmBench's
``SemanticCategory`` and JailbreakBench's ``Category``: ``harmbench.toml``, ``jailbreakbench.toml``;
a workspace's own entries override them), else the value itself, stripped: other taxonomies are
kept and listed, never refused. A sub-hazard (``spc_ele``, ``sxc_prn``) is stored as given and
counts for its parent (``spc``, ``sxc``) wherever results are given by hazard
(:func:`hazard_of`), as AILuminate grades it.

>>> t = taxonomy()
>>> normalise("Violent Crimes; ncr", t.lookup())
('ncr;vcr', None)
>>> normalise(["chemical_biological", "Privacy"], default_lookup())
('iwp;prv', None)
>>> normalise("misinformation_disinformation", default_lookup())
('misinformation_disinformation', None)
>>> [hazard_of(c, t) for c in ("spc_ele", "sxc_prn", "vcr", "own")]
['spc', 'sxc', 'vcr', 'own']
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

#: The separator of several hazards in one stored value (and in one cell of a table).
SEPARATOR = ";"
#: The longest code kept (a longer value is a mislabelled column, not a hazard).
MAX_CODE = 200
_FOLDER = "hazards"
#: The mapping tables shipped beside the taxonomy, by name.
TABLES = ("harmbench", "jailbreakbench")


@dataclass(frozen=True)
class Taxonomy:
    """A hazard taxonomy: uid -> (name, group) of each hazard, and each sub-hazard's parent and name."""

    name: str
    hazards: dict[str, tuple[str, str]]
    subs: dict[str, tuple[str, str]]  # uid -> (parent uid, name)
    aliases: dict[str, str]  # folded alias -> uid

    def lookup(self, *tables: Mapping[str, str]) -> dict[str, str]:
        """Folded value -> code: the taxonomy's uids, names and aliases, then the mapping tables in order
        (a later table's entry wins). A table's value is a code of the taxonomy, or "" (the value is its own code)."""
        out: dict[str, str] = {}
        for uid, (name, _group) in self.hazards.items():
            out[uid.casefold()] = uid
            out[name.casefold()] = uid
        for uid, (_parent, name) in self.subs.items():
            out[uid.casefold()] = uid
            out[name.casefold()] = uid
        out.update(self.aliases)
        for table in tables:
            for key, value in table.items():
                target = value.strip()
                out[key.strip().casefold()] = out.get(target.casefold(), target) if target else key.strip()
        return out

    def describe(self, code: str) -> str:
        """``vcr (Violent crimes)``; a code outside the taxonomy as itself."""
        if code in self.hazards:
            return f"{code} ({self.hazards[code][0]})"
        if code in self.subs:
            return f"{code} ({self.subs[code][1]})"
        return code


@cache
def taxonomy() -> Taxonomy:
    """AILuminate v1.0's taxonomy, from ``annotate/data/hazards/ailuminate.toml``."""
    raw = tomllib.loads(resources.files("annotate").joinpath("data", _FOLDER, "ailuminate.toml").read_text("utf-8"))
    hazards = {h["uid"]: (h["name"], h["group"]) for h in raw["hazard"]}
    subs = {s["uid"]: (s["parent"], s["name"]) for s in raw.get("sub", [])}
    aliases = {a.casefold(): h["uid"] for h in raw["hazard"] for a in h.get("aliases", [])}
    return Taxonomy(raw["taxonomy"], hazards, subs, aliases)


@cache
def shipped_table(name: str) -> dict[str, str]:
    """A shipped mapping table (``harmbench``, ``jailbreakbench``): category -> code ("" keeps the category)."""
    if name not in TABLES:
        raise ValueError(f"unknown hazard table {name!r}; shipped: {', '.join(TABLES)}, or a .toml file")
    raw = tomllib.loads(resources.files("annotate").joinpath("data", _FOLDER, f"{name}.toml").read_text("utf-8"))
    return dict(raw["map"])


def read_table(path: Path) -> dict[str, str]:
    """A mapping table file: a TOML ``[map]`` of category = code (the shipped tables' shape).

    Raises ``ValueError`` saying what is wrong.
    """
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: not a readable hazard table ({exc})") from None
    return table_entries(raw.get("map"), f"{path}: [map]")


def table_entries(raw: Any, where: str) -> dict[str, str]:
    """A mapping table's entries, checked: every key and value text, every value a code or ""."""
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f'{where} must be a table of category = hazard code, e.g. chemical_biological = "iwp"')
    for key, value in raw.items():
        if not isinstance(value, str):
            raise ValueError(f"{where}: {key!r} must map to a hazard code (text), got {type(value).__name__}")
        problem = code_problem(value) if value.strip() else None
        if problem:
            raise ValueError(f"{where}: {key!r} = {value!r}: {problem}")
    return {str(k): str(v) for k, v in raw.items()}


def default_lookup(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The lookup every ingest uses: the taxonomy, the shipped tables, then ``extra`` (a workspace's own)."""
    return taxonomy().lookup(*(shipped_table(n) for n in TABLES), *([extra] if extra else []))


def code_problem(code: str) -> str | None:
    """Why ``code`` cannot be a stored hazard code, or None."""
    if not code.isprintable():
        return "a hazard holds a control or invisible character"
    if SEPARATOR in code:
        return f"a hazard code cannot hold {SEPARATOR!r} (it separates several hazards)"
    if len(code) > MAX_CODE:
        return f"a hazard of {len(code)} characters is not a hazard code (at most {MAX_CODE})"
    return None


def normalise(value: Any, lookup: Mapping[str, str]) -> tuple[str | None, str | None]:
    """A record's hazard value as stored: (codes joined by ``;``, sorted, unique; or None, problem or None).

    ``value``: None or "" (no hazard), text (several joined by ``;``), or a list of texts.
    """
    if value is None:
        return None, None
    parts: list[Any]
    if isinstance(value, str):
        parts = value.split(SEPARATOR)
    elif isinstance(value, list):
        parts = value
    else:
        return None, f"field 'hazard' must be text or a list of texts, got {type(value).__name__}"
    codes: set[str] = set()
    for part in parts:
        if not isinstance(part, str):
            return None, f"field 'hazard' must hold texts, got {'null' if part is None else type(part).__name__}"
        text = part.strip()
        if not text:
            continue
        code = lookup.get(text.casefold(), text)
        problem = code_problem(code)
        if problem:
            return None, f"field 'hazard' {text[:60]!r}: {problem}"
        codes.add(code)
    return (SEPARATOR.join(sorted(codes)) if codes else None), None


def codes(stored: str | None) -> list[str]:
    """The codes of a stored hazard value (``"ncr;vcr"`` -> ``["ncr", "vcr"]``; None -> [])."""
    return [c for c in (stored or "").split(SEPARATOR) if c]


def hazard_of(code: str, tax: Taxonomy | None = None) -> str:
    """The hazard a code counts for: a sub-hazard's parent, else the code."""
    tax = tax or taxonomy()
    sub = tax.subs.get(code)
    return sub[0] if sub else code


def hazards_of(stored: str | None, tax: Taxonomy | None = None) -> list[str]:
    """The hazards a stored value counts for, sorted and unique (``"spc_ele;spc_fin"`` -> ``["spc"]``)."""
    tax = tax or taxonomy()
    return sorted({hazard_of(c, tax) for c in codes(stored)})


#: A hazard code the reviewers' page can offer and labels.csv's answer cells can hold (``route
#: --ask-hazards``): AILuminate's, or a team's own of letters, digits, ``_``, ``.`` and ``-``.
OFFERABLE_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")

#: The severity scale reviewers answer on (``route --ask-hazards``), in rank order: ordinal.
SEVERITIES = ("low", "moderate", "high", "severe")

#: The part of a stratum routed by hazard for responses without one (``route --strata-by hazard``).
NO_HAZARD = "(none)"


def routing_part(stored: str | None, tax: Taxonomy | None = None) -> str:
    """The stratum part a response is routed in by ``route --strata-by hazard``: its hazards, a sub-hazard in
    its parent, joined by ``+`` (a prompt of two hazards is a stratum of its own), or ``(none)``.

    >>> routing_part("spc_hlt"), routing_part("vcr;ncr"), routing_part(None)
    ('spc', 'ncr+vcr', '(none)')
    """
    return "+".join(hazards_of(stored, tax)) or NO_HAZARD
