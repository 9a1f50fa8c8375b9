"""Hypothesis strategies for random small tables with random valid hierarchies.

Hard cases on purpose. A table whose values are drawn uniformly from a few
values per column has large classes already at the bottom node, so with ``k``
drawn uniformly from ``1..n`` the bottom node (or no node at all) is usually
the answer and the searches have nothing to decide. Here the values are
skewed (a few frequent values, several rare ones), and ``k`` is chosen from
the table: most of the time between the smallest ``k`` the bottom node fails
(its records in classes smaller than ``k`` exceed the suppression limit) and
the largest ``k`` the top node passes, so the optimum lies inside the
lattice. Hierarchies usually end in one group ``*`` (as real ones do), so
the top node is usually acceptable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st
from numpy.typing import NDArray

from anonlab.hierarchy import Hierarchy

#: largest lattice the model problems draw (the exhaustive oracle checks every node)
MAX_LATTICE = 320


@st.composite
def hierarchy_for(
    draw: st.DrawFn, values: list[str], height: int | None = None, single_root: bool | None = None
) -> Hierarchy:
    """A random nested hierarchy over ``values`` of height 0..3 (or ``height``).

    ``single_root`` (drawn when ``None``, true 7 times in 8) makes the top
    level one group ``*``.
    """
    if height is None:
        height = draw(st.integers(0, 3))
    # drawn even when given, so that every call draws (hypothesis warns about a
    # composite strategy that draws nothing, e.g. height 0 with single_root given)
    drawn_root = draw(st.sampled_from([True] * 7 + [False]))
    single_root = drawn_root if single_root is None else single_root
    groups = list(range(len(values)))  # group of each value at the current level
    rows = [[v] for v in values]
    for level in range(1, height + 1):
        n_groups = max(groups) + 1
        parents = draw(
            st.lists(st.integers(0, max(0, n_groups - 1)), min_size=n_groups, max_size=n_groups)
        )
        groups = [parents[g] for g in groups]
        for row, g in zip(rows, groups, strict=True):
            row.append(f"L{level}g{g}")
    if height and (single_root or (len(values) > 1 and len(set(groups)) == len(values))):
        for row in rows:  # one root; also, a hierarchy that only relabels is refused
            row[-1] = "*"
    return Hierarchy.from_rows(rows)


@st.composite
def skewed_column(draw: st.DrawFn, n: int, domain: list[str]) -> list[str]:
    """``n`` values from ``domain`` with random weights from 1 to 12 (a few frequent ones).

    The values come from a seeded generator: hypothesis' own small integers
    lean towards 0, which would make most columns constant.
    """
    weights = np.asarray(
        draw(
            st.lists(
                st.sampled_from([1, 1, 1, 2, 4, 12]), min_size=len(domain), max_size=len(domain)
            )
        ),
        dtype=float,
    )
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return [str(v) for v in rng.choice(domain, size=n, p=weights / weights.sum())]


def class_sizes(
    frame: pd.DataFrame, hiers: dict[str, Hierarchy], levels: tuple[int, ...]
) -> NDArray[np.int64]:
    """Class sizes of the table at a node, computed directly from the labels."""
    if frame.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    labels = pd.DataFrame(
        {
            c: [h.label(str(v), lv) for v in frame[c]]
            for (c, h), lv in zip(hiers.items(), levels, strict=True)
        }
    )
    return np.asarray(labels.value_counts().to_numpy(), dtype=np.int64)


def limit_of(suppression: float, n: int) -> int:
    """Records a suppression limit allows (as :func:`anonlab.privacy.max_suppressed`)."""
    return math.floor(suppression * n + 1e-9)


@st.composite
def hard_k(
    draw: st.DrawFn, frame: pd.DataFrame, hiers: dict[str, Hierarchy], suppression: float
) -> int:
    """k between the smallest one the bottom node fails and the largest the top node passes.

    About one time in ten (or when no such k exists) any k the top node passes.
    """
    n = frame.shape[0]
    limit = limit_of(suppression, n)
    bottom = class_sizes(frame, hiers, (0,) * len(hiers))
    top = class_sizes(frame, hiers, tuple(h.height for h in hiers.values()))

    def fails(sizes: NDArray[np.int64], k: int) -> bool:
        return int(sizes[sizes < k].sum()) > limit

    k_lo = next((k for k in range(1, n + 1) if fails(bottom, k)), None)
    k_hi = max((k for k in range(1, n + 1) if not fails(top, k)), default=1)
    # (7: not a boundary value, which hypothesis draws more often than the others)
    if k_lo is not None and k_lo <= k_hi and draw(st.integers(0, 9)) != 7:
        return draw(st.integers(k_lo, k_hi))
    return draw(st.integers(1, max(1, k_hi)))


@st.composite
def qi_table(
    draw: st.DrawFn, max_qis: int, max_lattice: int, min_rows: int = 1, max_rows: int = 30
) -> tuple[pd.DataFrame, dict[str, Hierarchy]]:
    """Skewed quasi-identifier columns ``q0..`` and hierarchies, lattice at most ``max_lattice``."""
    m = draw(st.integers(1, max_qis))
    n = draw(st.integers(min_rows, max_rows))
    heights = [draw(st.integers(0, 3)) for _ in range(m)]
    if not any(heights):
        heights[0] = 1  # a lattice of one node has nothing to search
    while math.prod(h + 1 for h in heights) > max_lattice:
        heights[int(np.argmax(heights))] -= 1
    frame: dict[str, list[str]] = {}
    hiers = {}
    for i, height in enumerate(heights):
        domain = [f"v{j}" for j in range(draw(st.sampled_from([2, 3, 4, 5, 6, 1])))]
        frame[f"q{i}"] = draw(skewed_column(n, domain))
        hiers[f"q{i}"] = draw(hierarchy_for(domain, height=height))
    return pd.DataFrame(frame), hiers


@st.composite
def small_problem(draw: st.DrawFn) -> tuple[pd.DataFrame, dict[str, Hierarchy], int, float]:
    """A random table (1-3 QIs), hierarchies, k and suppression limit (k mostly hard)."""
    table, hiers = draw(qi_table(max_qis=3, max_lattice=64, min_rows=4, max_rows=30))
    n = table.shape[0]
    table["s"] = draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n))
    suppression = draw(st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.5]))
    k = draw(hard_k(table[list(hiers)], hiers, suppression))
    return table, hiers, k, suppression


@dataclass
class ModelProblem:
    """A table with sensitive columns, its hierarchies, a suppression limit and a hard k.

    ``sensitive`` are the sensitive columns ``s0``, ``s1`` (skewed, 2 to 5
    values); ``k`` is a k-anonymity parameter chosen as in :func:`hard_k`.
    """

    frame: pd.DataFrame
    hierarchies: dict[str, Hierarchy]
    sensitive: list[str]
    k: int
    suppression: float

    @property
    def n(self) -> int:
        """Records of the table."""
        return int(self.frame.shape[0])

    def distinct(self, attribute: str) -> int:
        """Distinct values of a sensitive column."""
        return int(self.frame[attribute].nunique())


@st.composite
def model_problem(draw: st.DrawFn) -> ModelProblem:
    """A table of 1 to 6 QIs (lattice of at most :data:`MAX_LATTICE` nodes), 6 to 40 rows."""
    table, hiers = draw(qi_table(max_qis=6, max_lattice=MAX_LATTICE, min_rows=6, max_rows=40))
    n = table.shape[0]
    sensitive = [f"s{i}" for i in range(draw(st.integers(1, 2)))]
    for name in sensitive:
        domain = [f"{name}v{j}" for j in range(draw(st.integers(2, 5)))]
        table[name] = draw(skewed_column(n, domain))
    suppression = draw(st.sampled_from([0.0, 0.0, 0.05, 0.1, 0.2, 0.3, 1.0]))
    k = draw(hard_k(table[list(hiers)], hiers, suppression))
    return ModelProblem(table, hiers, sensitive, k, suppression)


def same_loss(a: Any, b: Any) -> bool:
    """Equal losses (floats up to rounding; tuples element-wise; NaN equals NaN)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(same_loss(x, y) for x, y in zip(a, b, strict=True))
        )
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
