"""Parquet read in bounded memory: what a file decodes to is bounded before any of its rows is decoded.

A Parquet file can be far smaller than what it decodes to: a page compressed a thousandfold, or a
dictionary page whose one long entry every row points to (20 KB on disk, 4 GB in memory and in
the store). :func:`plan` bounds what the file decodes to before a row is read, from what the file
declares and from its dictionaries alone:

* the footer: every column chunk's uncompressed size, plus ``VALUE_BYTES`` for each value it
  declares (row-count bombs: a billion nulls from a tiny run-length page);
* every text (``BYTE_ARRAY``) column chunk with a dictionary page decodes to at most its
  uncompressed size plus its value count times its longest dictionary entry. The dictionaries
  are read alone: one row of each row group in dictionary form (its dictionary pages and first
  data pages, whose sizes the footer declared), never expanded. A ``DELTA_BYTE_ARRAY`` chunk
  (values that share prefixes) counts its uncompressed size per value;
* the sum over the file must not exceed :func:`decoded_bound` (``MAX_EXPANSION`` times the file's
  size, at least ``DECODED_FLOOR``), or the file is refused before any row is decoded.

Rows are then read row group by row group (:func:`batches`), in batches small enough that the
dictionary values of their top-level columns expand to at most ``BATCH_BYTES``, and made Python
rows at most ``max_values`` values at a time (:func:`python_rows`: a row holding more is refused,
not built).

What it cannot see: the page headers themselves (pyarrow exposes only the footer), so a file
whose footer understates a chunk's uncompressed size is bounded by what the footer says, not by
what the pages make pyarrow allocate; and a repeated (list) column's values per row, so a batch
of rows holding long lists of one dictionary entry is bounded only by the whole file's bound.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: A Parquet file may decode to ``MAX_EXPANSION`` times its size, or ``DECODED_FLOOR`` if that is more.
MAX_EXPANSION = 100
DECODED_FLOOR = 256 * 2**20
#: Dictionary values a batch may expand to, and the largest batch (rows).
BATCH_BYTES = 64 * 2**20
BATCH_ROWS = 8192
#: Bytes counted for every value besides its text (offsets, indices, numbers).
VALUE_BYTES = 8


def decoded_bound(size: int) -> int:
    """What a Parquet file of ``size`` bytes may decode to (text and values).

    >>> decoded_bound(10_000) == DECODED_FLOOR, decoded_bound(2**30) == 100 * 2**30
    (True, True)
    """
    return max(DECODED_FLOOR, MAX_EXPANSION * size)


@dataclass(frozen=True)
class Plan:
    """How to read a Parquet file: the rows per batch of each row group, and what it decodes to at most."""

    batch_rows: tuple[int, ...]
    decoded: int


def plan(parquet_file: Any, source: Any, size: int) -> Plan | str:
    """The plan for reading ``parquet_file`` (a ``pyarrow.parquet.ParquetFile`` on ``source``, a
    binary file of ``size`` bytes), or why it is refused: it would decode to more than its bound.

    Raises what pyarrow raises for a damaged file (the caller reports it).
    """
    import pyarrow.parquet as pq

    metadata = parquet_file.metadata
    schema = parquet_file.schema
    bound = decoded_bound(size)
    declared = 0
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        for j in range(group.num_columns):
            chunk = group.column(j)
            declared += max(chunk.total_uncompressed_size, 0) + VALUE_BYTES * max(chunk.num_values, 0)
    if declared > bound:
        return refusal(size, bound, f"its footer declares {mib(declared)} of data")
    text = [i for i in range(len(schema)) if schema.column(i).physical_type == "BYTE_ARRAY"]
    with_dictionary = {
        j for i in range(metadata.num_row_groups) for j in text if metadata.row_group(i).column(j).has_dictionary_page
    }
    dictionaries = None
    if with_dictionary:
        dictionaries = pq.ParquetFile(
            source, metadata=metadata, read_dictionary=[schema.column(j).path for j in sorted(with_dictionary)]
        )
    total = 0
    batch_rows = []
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        longest = _longest_entries(dictionaries, i, with_dictionary) if dictionaries is not None else {}
        per_row = 0  # the most a row's top-level dictionary values expand to
        for j in range(group.num_columns):
            chunk = group.column(j)
            values, stored = max(chunk.num_values, 0), max(chunk.total_uncompressed_size, 0)
            total += stored + VALUE_BYTES * values
            if j not in text:
                continue
            if chunk.has_dictionary_page:
                entry = longest.get(j, stored)  # not read as a dictionary: any value may be the whole chunk
                total += values * entry
                if schema.column(j).max_repetition_level == 0:
                    per_row += entry
            elif "DELTA_BYTE_ARRAY" in chunk.encodings:
                total += values * stored
        if total > bound:
            return refusal(size, bound, f"its first {i + 1:,} row group(s) may decode to {mib(total)}")
        batch_rows.append(max(1, min(BATCH_ROWS, BATCH_BYTES // max(per_row, 1))))
    return Plan(tuple(batch_rows), total)


def batches(parquet_file: Any, reading: Plan) -> Iterator[Any]:
    """The file's record batches, row group by row group, each of its plan's size."""
    for i, rows in enumerate(reading.batch_rows):
        yield from parquet_file.iter_batches(batch_size=rows, row_groups=[i])


def python_rows(batch: Any, max_values: int) -> Iterator[dict[str, Any] | str]:
    """A record batch's rows as Python dicts, built at most ``max_values`` values at a time; a row
    that alone holds more values is not built: the message saying so stands in its place.

    ``to_pylist`` builds a Python object for every value (about 60 bytes apiece, against Arrow's 8):
    a batch of a few rows holding long lists would otherwise be built whole. The values of a slice
    of rows are counted in Arrow first (:func:`arrow_values`, nothing converted); a slice over the
    bound is halved until it fits.
    """
    if batch.num_rows == 0:
        return
    count = sum(arrow_values(column) for column in batch.columns)
    if count <= max_values:
        yield from batch.to_pylist()
    elif batch.num_rows == 1:
        yield (
            f"the row holds {count:,} values (its lists and their items, counted before they are built), more "
            f"than the {max_values:,} annotate builds in one row: each becomes a Python object of up to about "
            f"100 bytes. If the data is genuine, pass --max-values {count:,} on a machine with the memory for it"
        )
    else:
        half = batch.num_rows // 2
        yield from python_rows(batch.slice(0, half), max_values)
        yield from python_rows(batch.slice(half), max_values)


def arrow_values(array: Any) -> int:
    """The Python objects ``array.to_pylist()`` builds, at most: one per slot, plus the values of its
    lists, structs (keys included, as in a JSON text) and maps, recursively (counted on the array's
    own slice, nothing converted)."""
    import pyarrow as pa

    kind = array.type
    count = len(array)
    if pa.types.is_struct(kind):  # a dict per row: its keys, and its values
        count += kind.num_fields * len(array) + sum(arrow_values(child) for child in array.flatten())
    elif pa.types.is_map(kind):  # a list of (key, value) tuples per row; keys/items ignore the slice
        if len(array):
            start, end = array.offsets[0].as_py(), array.offsets[-1].as_py()
            count += end - start
            count += arrow_values(array.keys.slice(start, end - start))
            count += arrow_values(array.items.slice(start, end - start))
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        count += arrow_values(array.flatten())
    return count


def _longest_entries(dictionaries: Any, group: int, columns: set[int]) -> dict[int, int]:
    """Leaf column index -> the longest entry (bytes) of its dictionary in row group ``group``, for
    the text columns in ``columns`` read in dictionary form (one row: nothing is expanded)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    first = next(dictionaries.iter_batches(batch_size=1, row_groups=[group]), None)
    if first is None:
        return {}
    leaves: list[Any] = []
    for column in first.columns:
        _leaves(column, leaves)
    if len(leaves) != dictionaries.metadata.num_columns:  # not one leaf per Parquet column: unmatched
        return {}  # every entry may then be as long as its chunk (the caller's bound), never less
    longest: dict[int, int] = {}
    for j, leaf in enumerate(leaves):
        if j in columns and pa.types.is_dictionary(leaf.type) and _is_text(leaf.type.value_type):
            lengths = pc.call_function("binary_length", [leaf.dictionary])
            longest[j] = int(pc.call_function("max", [lengths]).as_py() or 0) if len(lengths) else 0
    return longest


def _leaves(array: Any, out: list[Any]) -> None:
    """The leaf arrays of a pyarrow array, depth first: the order of the Parquet leaf columns."""
    import pyarrow as pa

    kind = array.type
    if pa.types.is_struct(kind):
        for k in range(kind.num_fields):
            _leaves(array.field(k), out)
    elif pa.types.is_map(kind):
        _leaves(array.keys, out)
        _leaves(array.items, out)
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        _leaves(array.values, out)
    else:
        out.append(array)


def _is_text(kind: Any) -> bool:
    import pyarrow as pa

    return bool(
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
    )


def mib(n: int) -> str:
    """A size for a message."""
    return f"{n / 2**20:,.1f} MiB" if n < 2**30 else f"{n / 2**30:,.1f} GiB"


def refusal(size: int, bound: int, what: str) -> str:
    """Why a Parquet file of ``size`` bytes is refused: ``what`` it decodes to exceeds ``bound``."""
    return (
        f"the file is {size:,} bytes and {what}, more than annotate reads from a Parquet file of this size "
        f"({mib(bound)}: {MAX_EXPANSION} times its size, at least {mib(DECODED_FLOOR)}): compression or "
        "dictionary encoding repeats values far beyond what real tables do, so it is refused before its rows "
        "are decoded. If the data is real, write it without dictionary encoding "
        "(pyarrow.parquet.write_table(..., use_dictionary=False)) or as JSON Lines"
    )
