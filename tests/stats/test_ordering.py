"""The reviewers' task orders (``annotate.stats.ordering``): what each design promises, checked.

Blocks: every reviewer takes the same blocks in the same order, and within a block an order of
their own; after k labels each, B * floor(k / B) items are complete and the block under way adds
the hypergeometric overlap (j^2 / B for two reviewers with j items of it each). Independent: each
reviewer's order is a uniform permutation, so two reviewers share k^2 / N of their first k on
average. Both: waves in order, priorities first, and nothing depends on the order of the input.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.stats.ordering import (
    BLOCKS,
    INDEPENDENT,
    OrderDesign,
    complete_after,
    item_key,
    review_order,
)

BLOCK10 = OrderDesign(BLOCKS, 10)
FREE = OrderDesign(INDEPENDENT, None)


def _keys(n: int) -> list[str]:
    return [item_key("m", "b", f"p{i}", 0) for i in range(n)]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 120),
    size=st.integers(1, 25),
    seed=st.integers(0, 2**31),
    waves=st.lists(st.integers(1, 3), min_size=120, max_size=120),
)
def test_each_reviewer_sees_the_same_blocks_in_the_same_order(n, size, seed, waves):
    keys, wave = _keys(n), np.array(waves[:n])
    design = OrderDesign(BLOCKS, size)
    a, block_a = review_order(seed, "A1", keys, wave, design)
    b, block_b = review_order(seed, "A2", keys, wave, design)
    assert sorted(a.tolist()) == sorted(b.tolist()) == list(range(n))  # a permutation
    assert (block_a == block_b).all()
    # In queue order the blocks are 1, 1, ..., 2, ... (never going back) and the waves too.
    assert (np.diff(block_a[a]) >= 0).all() and (np.diff(wave[a]) >= 0).all()
    # A block holds at most `size` items, all of one wave.
    for blk in np.unique(block_a):
        members = np.flatnonzero(block_a == blk)
        assert len(members) <= size and len(set(wave[members].tolist())) == 1
    # So the first k items of both reviewers share every complete block.
    for k in range(0, n + 1, max(1, n // 7)):
        full = [blk for blk in np.unique(block_a[a[:k]]) if (block_a[a[:k]] == blk).sum() == (block_a == blk).sum()]
        assert complete_after({"A1": a, "A2": b}, k) >= sum((block_a == blk).sum() for blk in full)


def test_within_a_block_the_orders_differ_between_reviewers():
    keys = _keys(200)
    a, _ = review_order(3, "A1", keys, [1] * 200, BLOCK10)
    b, _ = review_order(3, "A2", keys, [1] * 200, BLOCK10)
    same_place = (a == b).mean()
    assert same_place < 0.3  # about 1 in 10 by chance


def test_the_partial_block_overlaps_as_the_hypergeometric_mean():
    """Two reviewers, j items of a block of 10 each: j * j / 10 shared on average (independent of the code)."""
    keys = _keys(10)
    for j in (3, 5, 7):
        shared = [
            complete_after({r: review_order(seed, r, keys, [1] * 10, BLOCK10)[0] for r in ("A1", "A2")}, j)
            for seed in range(3000)
        ]
        mean, se = float(np.mean(shared)), float(np.std(shared) / np.sqrt(len(shared)))
        assert abs(mean - j * j / 10) < 4 * se + 0.01, (j, mean)


def test_independent_orders_share_k_squared_over_n():
    keys = _keys(100)
    for k in (10, 30, 60):
        shared = [
            complete_after({r: review_order(seed, r, keys, [1] * 100, FREE)[0] for r in ("A1", "A2")}, k)
            for seed in range(600)
        ]
        mean, se = float(np.mean(shared)), float(np.std(shared) / np.sqrt(len(shared)))
        assert abs(mean - k * k / 100) < 4 * se, (k, mean)


def test_priorities_come_first_and_no_priority_last():
    keys = _keys(40)
    rng = np.random.default_rng(1)
    priority = rng.random(40)
    priority[:5] = np.nan
    for design in (BLOCK10, FREE):
        queue, block = review_order(9, "A1", keys, [1] * 40, design, priority)
        p = priority[queue]
        if design is FREE:
            assert np.isnan(p[-5:]).all() and (np.diff(p[:-5]) <= 0).all()
        else:  # blocks in priority order: each block's lowest above the next one's highest
            b = block[queue]
            assert set(b[np.isnan(p)].tolist()) == {4}  # the last block (shuffled within it)
            for x in np.unique(b)[:-1]:
                here, after = p[b == x], p[b == x + 1]
                assert np.nanmin(here) >= np.nanmax(after) or np.isnan(after).all()


def test_the_order_depends_on_the_items_not_on_their_order_in_the_input():
    keys = _keys(50)
    perm = np.random.default_rng(2).permutation(50)
    for design in (BLOCK10, FREE):
        queue, _ = review_order(5, "A1", keys, [1] * 50, design)
        shuffled = [keys[i] for i in perm]
        again, _ = review_order(5, "A1", shuffled, [1] * 50, design)
        assert [keys[i] for i in queue] == [shuffled[i] for i in again]


def test_the_design_record_round_trips_and_bad_records_are_refused():
    for design in (BLOCK10, FREE, OrderDesign(BLOCKS, 1)):
        assert OrderDesign.from_record(design.to_record()) == design
    bad_records = [
        {"design": "blocks"},
        {"design": "random", "block_size": None},
        {"design": "blocks", "block_size": 0},
        {"design": "blocks", "block_size": True},
        {"design": "independent", "block_size": 5},
        [1],
        None,
    ]
    for bad in bad_records:
        with pytest.raises(ValueError):
            OrderDesign.from_record(bad)
