"""How much parsing a JSON text may build, counted before it is parsed.

A byte budget does not bound a parse: ``json.loads`` builds a Python object for every value, so
128 MiB of ``{},{},...`` becomes 45 million dicts, some 2.9 GB (``[[]],[[]],...`` is 30 times its
size in memory; real files are 2-4 times). Every JSON text annotate parses from a file it did not
write (a JSON Lines line, a document, an archive member, a field holding JSON, a Label Studio export)
is first counted here (:func:`json_values_over`, at C speed, and only when it is long enough to
exceed its bound) and refused with :func:`too_many_values` when it may hold more values than its
bound.

Base layer: standard library only.
"""

from __future__ import annotations

import re

#: What one parsed JSON text may hold, in values (keys included): a JSON Lines line, a sample of an
#: Inspect ``.eval`` archive, a field that holds JSON text (``MAX_SAMPLE_VALUES``), or a whole
#: single-document file (``MAX_DOCUMENT_VALUES``). Parsing builds a Python object for every value, up
#: to ``VALUE_MEMORY`` bytes each besides the text it holds (measured: an object of distinct keys;
#: ``{},{},...`` is 24 times its size in memory, ``[[]],[[]],...`` 30 times, real files 2-4 times), so
#: a byte budget alone does not bound a parse. ``ingest --max-values`` sets another bound for both.
MAX_SAMPLE_VALUES = 1_000_000
MAX_DOCUMENT_VALUES = 10_000_000
VALUE_MEMORY = 100


#: A JSON string, or an unterminated one to the end of the text: possessive, so every byte is read
#: once (the backtracking form took 3.3 s on 8,000 repeats of an escaped quote after one opening
#: quote, and four times longer per doubling; this one reads 30 MB of it in about a second).
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)


#: Every byte but the commas, colons and opening brackets (dropped before the fast count).
_DROPPED = bytes(b for b in range(256) if b not in b",:{[")


def _fast_count(data: bytes) -> int:
    """Commas, colons and opening brackets, plus one: at least the values of ``data``, strings and
    empty brackets included (one ``translate`` pass keeps the four, counted on a fraction of the text)."""
    kept = data.translate(None, _DROPPED)
    return kept.count(b",") + kept.count(b":") + kept.count(b"{") + kept.count(b"[") + 1


def _count(structure: bytes) -> int:
    """The values of a JSON text whose strings are cut out: commas, colons and opening brackets,
    less the empty ``{}`` / ``[]`` (their two brackets side by side), plus one."""
    found = sum(map(structure.count, (b",", b":", b"{", b"[")))
    return found - structure.count(b"{}") - structure.count(b"[]") + 1


def json_values_over(text: str | bytes, limit: int) -> int | None:
    """How many values (keys included) parsing the JSON ``text`` may build, when that is more than
    ``limit``; None when it is not.

    Every value or key but the first follows a comma, a colon or an opening bracket, and an empty
    ``{}`` or ``[]`` holds none: ``commas + colons + openings - empties + 1``, counted outside
    strings, bounds what the parser builds (and equals it for compact JSON; ``{ }`` is not seen as
    empty). Counting the first three over the whole text, strings and empties included, is a fast
    upper bound (C-speed ``translate`` and ``count``); only a text over the limit by it has its
    strings replaced by ``0`` and is counted exactly. A text of at most ``limit`` characters cannot
    hold more values than that and is not scanned at all (a ``str`` over it is counted in UTF-8).

    >>> json_values_over('[{}, {}, {}]', 3), json_values_over(b'{"a": [1, 2]}', 4), json_values_over('["a,b,c"]', 2)
    (4, 5, None)
    """
    if len(text) <= limit:
        return None
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if _fast_count(data) <= limit:
        return None
    count = _count(_JSON_STRING.sub(b"0", data))
    return count if count > limit else None


def too_many_values(count: int, limit: int, what: str = "the JSON text", advice: str | None = None) -> str:
    """The message for a JSON text that may parse to ``count`` values, more than ``limit``; ``advice``:
    what to do instead (by default: split the file, or ``ingest --max-values``)."""
    need = count * VALUE_MEMORY
    if advice is None:
        advice = (
            f"If the file is genuine, split it, or pass --max-values {_round_up(count):,} on a machine with that memory"
        )
    return (
        f"{what} holds up to {count:,} JSON values (counted from its commas, colons and brackets), more than the "
        f"{limit:,} annotate parses in one JSON text: parsing builds a Python object for each, up to about "
        f"{VALUE_MEMORY} bytes apiece, so it could take {need / 2**30:,.1f} GiB of memory. Nothing was parsed. {advice}"
    )


def _round_up(n: int) -> int:
    """``n`` rounded up to two significant digits (a value to suggest for --max-values)."""
    step = 10 ** max(len(str(n)) - 2, 0)
    return -(-n // step) * step
