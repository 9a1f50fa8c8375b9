"""MDAV for tables too large for O(n^2) MDAV: a k-d split into blocks, MDAV in each.

The standardized records are split recursively at the median of the attribute
with the largest spread (a k-d tree) until a block has at most ``block_size``
records; exact MDAV then runs inside every block. Cost: O(n log(n/B)) for the
split plus O(n B p / k) for the blocks, instead of O(n^2 p / k).

Undersized blocks cannot arise: every split puts a multiple of k records on
its left side (at least k) and at least k on its right, so each block holds
at least k records and MDAV's group sizes k..2k-1 hold inside every block.
Its quality against exact MDAV is measured in ``benchmarks/mdav.py`` and
reported in docs/em4adom.md.
"""

from __future__ import annotations

import numpy as np

from anonlab.microaggregation.columns import check_k
from anonlab.microaggregation.mdav import mdav_labels

DEFAULT_BLOCK_SIZE = 4096


def kd_blocks(z: np.ndarray, k: int, block_size: int) -> list[np.ndarray]:
    """Row numbers of each block of a k-d split of ``z`` (each block k..block_size rows).

    A block is split when it has more than ``block_size`` rows (and at least
    2k). The split attribute is the one with the largest range in the block;
    the left part takes the ``cut`` smallest rows by that attribute, with
    ``cut`` the multiple of k nearest to half the block (ties in the attribute
    are broken by row number, so the split is deterministic).
    """
    if block_size < 2 * k:
        raise ValueError("block_size must be at least 2k")
    done: list[np.ndarray] = []
    todo = [np.arange(z.shape[0])]
    while todo:
        rows = todo.pop()
        m = rows.size
        if m <= block_size or m < 2 * k:
            done.append(rows)
            continue
        part = z[rows]
        spread = part.max(axis=0) - part.min(axis=0)
        axis = int(np.argmax(spread))
        cut = max(k, round(m / 2 / k) * k)
        cut = min(cut, m - k)
        order = np.argsort(part[:, axis], kind="stable")
        todo.append(rows[order[cut:]])
        todo.append(rows[order[:cut]])
    done.sort(key=lambda b: int(b[0]) if b.size else -1)
    return done


def scalable_mdav_labels(
    z: np.ndarray, k: int, block_size: int = DEFAULT_BLOCK_SIZE
) -> np.ndarray:
    """Group labels from MDAV inside the blocks of a k-d split of standardized ``z``."""
    z = np.asarray(z, dtype=np.float64)
    n = z.shape[0]
    check_k(k, n)
    labels = np.empty(n, dtype=np.int64)
    offset = 0
    for rows in kd_blocks(z, k, max(block_size, 2 * k)):
        inner = mdav_labels(z[rows], k)
        labels[rows] = inner + offset
        offset += int(inner.max()) + 1
    return labels
