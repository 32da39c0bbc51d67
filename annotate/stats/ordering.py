"""In which order each reviewer sees a round's tasks: a recorded, seeded design (pure).

Every reviewer of a round gets every item, in a project of their own. The order matters twice:
for order effects (fatigue, drift, anchoring on what came before), which a random order per
reviewer keeps apart from the items, and for time, because a round is labelled over days, a
few tasks at a time, and an item can be settled only when every routed vote is in.

* ``blocks`` (the default): one shared seeded order of the round's items is cut into blocks of
  ``block_size`` consecutive items; each reviewer works through the blocks in that shared order
  and through the items of a block in an order of their own (a seeded shuffle per reviewer).
  After k labels each, every reviewer has covered the same floor(k / B) blocks, so at least
  B * floor(k / B) of those k items carry every vote (and of the block under way, j items of B
  seen by each of r reviewers share about j^r / B^(r-1) of them). Order effects stay
  randomised: the shared order is a random permutation of the items, so an item's position is
  independent of the item, and within a block the reviewers' orders are independent; what the
  design gives up is that two reviewers see an item at positions at most B - 1 apart.
* ``independent``: a seeded shuffle of the whole round per reviewer. Items complete only when
  the slowest reviewer reaches them: after k labels each of N items, two reviewers share about
  k^2 / N of their k (docs/methods.md 4.10).

Items of a later wave come after those of earlier waves (a wave is routed after the earlier
ones were sent). With ambiguity priorities (``route --prioritize``) the shared order (blocks) or
each reviewer's order (independent) puts the most likely ambiguous items first, the seeded draws
breaking ties. Every draw is :func:`annotate.stats.sampling.stable_uniform` of the round's seed
and the item's public key, so the order is re-derived from an export's files alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.stats.sampling import stable_uniform

__all__ = [
    "BLOCKS",
    "DEFAULT_BLOCK_SIZE",
    "INDEPENDENT",
    "ORDER_DESIGNS",
    "OrderDesign",
    "complete_after",
    "item_key",
    "review_order",
]

BLOCKS = "blocks"
INDEPENDENT = "independent"
ORDER_DESIGNS = (BLOCKS, INDEPENDENT)
#: Ten tasks: a sitting of a few minutes, so items complete a sitting at a time, while each
#: reviewer's order within it is their own.
DEFAULT_BLOCK_SIZE = 10
#: The largest block size a design may record (larger blocks are an independent order in effect).
MAX_BLOCK_SIZE = 100_000


@dataclass(frozen=True)
class OrderDesign:
    """How a round orders its reviewers' tasks (recorded in design.json as the round's ``order``).

    Attributes
    ----------
    design : {"blocks", "independent"}
    block_size : int or None
        Items per block (``blocks``); None for ``independent``.

    Examples
    --------
    >>> OrderDesign().to_record()
    {'design': 'blocks', 'block_size': 10}
    >>> OrderDesign.from_record({"design": "independent", "block_size": None})
    OrderDesign(design='independent', block_size=None)
    >>> OrderDesign("blocks", 0)
    Traceback (most recent call last):
    ...
    ValueError: the order's block_size must be a whole number from 1 to 100000 (blocks), not 0
    """

    design: str = BLOCKS
    block_size: int | None = DEFAULT_BLOCK_SIZE

    def __post_init__(self) -> None:
        if self.design not in ORDER_DESIGNS:
            raise ValueError(f"the order's design must be one of {', '.join(ORDER_DESIGNS)}, not {self.design!r}")
        if self.design == BLOCKS:
            size = self.block_size
            if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_BLOCK_SIZE:
                raise ValueError(
                    f"the order's block_size must be a whole number from 1 to {MAX_BLOCK_SIZE} (blocks), not {size!r}"
                )
        elif self.block_size is not None:
            raise ValueError("an independent order has no block_size")

    def to_record(self) -> dict[str, Any]:
        return {"design": self.design, "block_size": self.block_size}

    @classmethod
    def from_record(cls, doc: Any) -> OrderDesign:
        """The design of a record (:meth:`to_record`); ``ValueError`` says what is malformed."""
        if not isinstance(doc, Mapping) or set(doc) != {"design", "block_size"}:
            raise ValueError("the order must be an object with design and block_size")
        return cls(doc["design"], doc["block_size"])

    def describe(self) -> str:
        if self.design == BLOCKS:
            return f"blocks of {self.block_size} in one shared seeded order, shuffled within each block per reviewer"
        return "an independent seeded order per reviewer"


def item_key(model: Any, benchmark: Any, prompt_id: Any, epoch: Any) -> str:
    """The public key of a reviewed response that the order's draws hash (as labels.csv names it).

    >>> item_key("m", "b", "p1", 1) == item_key("m", "b", "p1", "1")
    True
    """
    return "\x1f".join((str(model), str(benchmark), str(prompt_id), str(int(epoch))))


def review_order(
    seed: int,
    annotator: str,
    keys: Sequence[str],
    waves: Sequence[int] | NDArray[np.integer[Any]],
    design: OrderDesign,
    priority: Sequence[float] | NDArray[np.floating[Any]] | None = None,
) -> tuple[NDArray[np.intp], NDArray[np.int64]]:
    """One reviewer's order of a round's items, and each item's block.

    Parameters
    ----------
    seed : int
        The round's seed.
    annotator : str
        The reviewer's pseudonym.
    keys : sequence of str, length N
        Each item's public key (:func:`item_key`), all different.
    waves : sequence of int, length N
        Each item's wave: earlier waves come first.
    design : OrderDesign
    priority : sequence of float, length N, optional
        Higher first (``route --prioritize``); NaN (no priority) after every number.

    Returns
    -------
    order : ndarray of intp, shape (N,)
        Positions into ``keys``, in the order the reviewer sees them.
    block : ndarray of int64, shape (N,)
        Each item's block, 1, 2, ... in the shared order (``blocks``; blocks never span two
        waves), 0 for every item of an ``independent`` order.

    Notes
    -----
    Shared key of an item: ``u = stable_uniform(seed, "order" + US + key)``; reviewer key:
    ``v = stable_uniform(seed, annotator + US + key)`` (US = the unit separator ``\\x1f``).
    ``blocks``: sort by (wave, -priority, u), cut each wave into consecutive blocks of B, then
    sort by (block, v). ``independent``: sort by (wave, -priority, v).

    Examples
    --------
    Two reviewers, eight items in blocks of 4: each sees the same two blocks in the same order,
    the items of a block in an order of their own.

    >>> keys = [f"k{i}" for i in range(8)]
    >>> design = OrderDesign("blocks", 4)
    >>> a, block_a = review_order(7, "A1", keys, [1] * 8, design)
    >>> b, block_b = review_order(7, "A2", keys, [1] * 8, design)
    >>> set(a[:4].tolist()) == set(b[:4].tolist()), a[:4].tolist() == b[:4].tolist()
    (True, False)
    >>> sorted(block_a.tolist()), bool((block_a == block_b).all())
    ([1, 1, 1, 1, 2, 2, 2, 2], True)
    """
    n = len(keys)
    key = pd.Series(list(keys), dtype=object).astype(str)
    wave = np.asarray(waves, dtype=np.int64)
    if len(wave) != n:
        raise ValueError("keys and waves must have the same length")
    rank: NDArray[np.float64]
    if priority is None:
        rank = np.zeros(n)
    else:
        p = np.asarray(priority, dtype=np.float64)
        if len(p) != n:
            raise ValueError("keys and priority must have the same length")
        rank = np.where(np.isnan(p), np.inf, -p).astype(np.float64)  # higher first, no priority last
    own = stable_uniform(seed, annotator + "\x1f" + key)
    if design.design == INDEPENDENT:
        return np.lexsort((own, rank, wave)).astype(np.intp), np.zeros(n, dtype=np.int64)
    shared = stable_uniform(seed, "order\x1f" + key)
    first = np.lexsort((shared, rank, wave))
    size = int(design.block_size or 1)
    block_of_sorted = np.empty(n, dtype=np.int64)
    next_block = 1
    for w in np.unique(wave[first]):  # in wave order: the sort put earlier waves first
        at = np.flatnonzero(wave[first] == w)
        block_of_sorted[at] = next_block + np.arange(len(at)) // size
        next_block = int(block_of_sorted[at].max()) + 1 if len(at) else next_block
    block = np.empty(n, dtype=np.int64)
    block[first] = block_of_sorted
    return np.lexsort((own, block)).astype(np.intp), block


def complete_after(orders: Mapping[str, NDArray[np.intp]], k: int) -> int:
    """How many items carry every reviewer's vote when each reviewer has labelled their first ``k``.

    >>> complete_after({"A1": np.array([0, 1, 2]), "A2": np.array([1, 2, 0])}, 2)
    1
    """
    seen = [set(order[:k].tolist()) for order in orders.values()]
    return len(set.intersection(*seen)) if seen else 0
