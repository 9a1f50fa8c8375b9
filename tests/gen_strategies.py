"""Hypothesis strategies for random small tables with random valid hierarchies."""

from __future__ import annotations

import pandas as pd
from hypothesis import strategies as st

from anonlab.hierarchy import Hierarchy


@st.composite
def hierarchy_for(draw: st.DrawFn, values: list[str]) -> Hierarchy:
    """A random nested hierarchy over ``values`` of height 0..3."""
    height = draw(st.integers(0, 3))
    groups = list(range(len(values)))  # group of each value at the current level
    rows = [[v] for v in values]
    for level in range(1, height + 1):
        n_groups = max(groups) + 1
        parents = draw(st.lists(st.integers(0, max(0, n_groups - 1)), min_size=n_groups,
                                max_size=n_groups))
        groups = [parents[g] for g in groups]
        for row, g in zip(rows, groups, strict=True):
            row.append(f"L{level}g{g}")
    if height and len(values) > 1 and len(set(groups)) == len(values):
        for row in rows:  # no level merged: a hierarchy that only relabels is refused
            row[-1] = f"L{height}g0"
    return Hierarchy.from_rows(rows)


@st.composite
def small_problem(draw: st.DrawFn) -> tuple[pd.DataFrame, dict[str, Hierarchy], int, float]:
    """A random table (1-3 QIs), hierarchies, k and suppression limit."""
    m = draw(st.integers(1, 3))
    n = draw(st.integers(1, 30))
    frame = {}
    hiers = {}
    for i in range(m):
        domain = [f"v{j}" for j in range(draw(st.integers(1, 6)))]
        col = draw(st.lists(st.sampled_from(domain), min_size=n, max_size=n))
        frame[f"q{i}"] = col
        hiers[f"q{i}"] = draw(hierarchy_for(domain))
    frame["s"] = draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n))
    k = draw(st.integers(1, n))
    suppression = draw(st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.5]))
    return pd.DataFrame(frame), hiers, k, suppression
