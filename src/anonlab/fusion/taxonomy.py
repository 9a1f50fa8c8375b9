"""Taxonomy trees of categorical attributes and intervals of continuous ones.

A taxonomy is an ARX-layout hierarchy file (read and validated by
:class:`anonlab.hierarchy.Hierarchy`) seen as a tree: the last column is the
root (a virtual root ``*`` is added when it holds several labels), each
column's labels are the children of the next column's. A node with a single
child covers the same leaves as that child, so chains of single children are
collapsed to their lowest node: every specialization then really splits.

Continuous attributes have no file: their root is one interval that the
owner splits at information-gain-best thresholds into ``[lo, t)`` and
``[t, hi]`` labels.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.fusion.config import SensitivityConfig
from anonlab.hierarchy import SUPPRESSED, Hierarchy


@dataclass(frozen=True)
class Taxonomy:
    """A collapsed taxonomy tree over one attribute's leaf values.

    ``labels[v]`` names node ``v``; ``children[v]`` its child nodes; ``depth``
    the node's depth (root 0); ``ancestors[leaf, d]`` the node at depth ``d`` on
    the path of leaf index ``leaf`` (``-1`` below the leaf); ``leaf_node[i]`` the
    node of leaf index ``i`` (leaf indices follow ``values``).
    """

    attribute: str
    values: tuple[str, ...]
    labels: tuple[str, ...]
    children: tuple[tuple[int, ...], ...]
    depth: NDArray[Any]
    ancestors: NDArray[Any]
    leaf_node: NDArray[Any]
    leaf_levels: NDArray[Any]

    @property
    def root(self) -> int:
        """The root node (always 0)."""
        return 0

    def leaf_codes(self, column: pd.Series | NDArray[Any], source: str) -> NDArray[Any]:
        """Leaf indices of raw values; unknown values are an error naming them."""
        index = {v: i for i, v in enumerate(self.values)}
        codes, uniq = pd.factorize(
            pd.Series(column, dtype=object).astype(str)
            if isinstance(column, np.ndarray)
            else column.astype(str)
        )
        missing = [str(u) for u in uniq if str(u) not in index]
        if missing:
            shown = ", ".join(f"'{m}'" for m in missing[:5])
            raise AnonlabError(
                f"{source}: column '{self.attribute}' has values the taxonomy "
                f"does not list ({shown}): add them to the hierarchy file"
            )
        lookup = np.array([index[str(u)] for u in uniq], dtype=np.int64)
        out: NDArray[Any] = lookup[codes]
        return out

    def leaf_count(self, node: int) -> int:
        """Number of leaves under ``node``."""
        d = int(self.depth[node])
        return int((self.ancestors[:, d] == node).sum())

    def level_sum(self, node: int) -> int:
        """Sum of the sensitivity levels of the leaves under ``node``."""
        d = int(self.depth[node])
        return int(self.leaf_levels[self.ancestors[:, d] == node].sum())

    def child_of(self, node: int, leaves: NDArray[Any]) -> NDArray[Any]:
        """The child of ``node`` on each leaf's path (leaves must lie under ``node``)."""
        d = int(self.depth[node]) + 1
        out: NDArray[Any] = self.ancestors[leaves, d]
        return out

    def node_of(self, label_nodes: set[int], leaves: NDArray[Any]) -> NDArray[Any]:
        """For each leaf, the node of the set ``label_nodes`` on its path (a cut)."""
        out = np.full(leaves.shape, -1, dtype=np.int64)
        for d in range(self.ancestors.shape[1]):
            nodes = self.ancestors[leaves, d]
            hit = (out < 0) & np.isin(nodes, list(label_nodes))
            out[hit] = nodes[hit]
        return out


Key = tuple[int, str]
"""A hierarchy node before collapsing: (level, label)."""


def build_taxonomy(
    hierarchy: Hierarchy, attribute: str, sensitivity: SensitivityConfig | None = None
) -> Taxonomy:
    """Build the collapsed tree of ``hierarchy`` (see the module docstring)."""
    raw_children, root_key = _raw_tree(hierarchy)

    def collapse(key: Key) -> Key:
        while len(raw_children.get(key, [])) == 1:
            key = raw_children[key][0]
        return key

    labels, children, depth, leaf_node = _number_nodes(raw_children, root_key, collapse)
    values = tuple(r[0] for r in hierarchy.rows)
    ancestors = _ancestor_table(values, leaf_node, depth, children)
    sensitivity = sensitivity or SensitivityConfig()
    unknown = [v for v in sensitivity.values.get(attribute, {}) if v not in leaf_node]
    if unknown:
        raise AnonlabError(
            f"sensitivity.values.{attribute} names '{unknown[0]}', which the "
            f"taxonomy of '{attribute}' does not list: fix the value"
        )
    levels = np.array([sensitivity.level(attribute, v) for v in values], dtype=np.int64)
    return Taxonomy(
        attribute,
        values,
        tuple(labels),
        tuple(tuple(c) for c in children),
        np.array(depth, dtype=np.int64),
        ancestors,
        np.array([leaf_node[v] for v in values], dtype=np.int64),
        levels,
    )


def _raw_tree(hierarchy: Hierarchy) -> tuple[dict[Key, list[Key]], Key]:
    """Every node's children as the hierarchy's rows give them, and the root.

    Several top values (or a hierarchy of one level) get a common root ``*``
    one level above the top.
    """
    rows = hierarchy.rows
    height = hierarchy.height
    raw_children: dict[Key, list[Key]] = {}
    tops = list(dict.fromkeys(r[height] for r in rows))
    top_level = height + 1 if len(tops) > 1 or height == 0 else height
    for r in rows:
        path = [(lvl, r[lvl]) for lvl in range(height + 1)]
        if top_level > height:
            path.append((top_level, SUPPRESSED))
        for (lo, lab), parent in itertools.pairwise(path):
            kids = raw_children.setdefault(parent, [])
            if (lo, lab) not in kids:
                kids.append((lo, lab))
    return raw_children, (top_level, rows[0][height] if top_level == height else SUPPRESSED)


def _number_nodes(
    raw_children: dict[Key, list[Key]],
    root_key: Key,
    collapse: Callable[[Key], Key],
) -> tuple[list[str], list[list[int]], list[int], dict[str, int]]:
    """Node ids in breadth-first order of the collapsed tree: labels, children, depths and
    the node of each leaf value."""
    labels: list[str] = []
    children: list[list[int]] = []
    depth: list[int] = []
    leaf_node: dict[str, int] = {}
    queue = [(collapse(root_key), 0, collapse(root_key)[1])]
    ids: dict[Key, int] = {}
    head = 0
    while head < len(queue):
        key, d, label = queue[head]
        head += 1
        node = len(labels)
        ids[key] = node
        labels.append(label)
        depth.append(d)
        children.append([])
        if key[0] == 0:
            leaf_node[key[1]] = node
        kids = raw_children.get(key, [])
        queue += [
            (collapse(kid), d + 1, lab)
            for kid, lab in zip(kids, _child_labels(kids, collapse), strict=True)
        ]
    for key, node in ids.items():
        children[node].extend(ids[collapse(kid)] for kid in raw_children.get(key, []))
    return labels, children, depth, leaf_node


def _ancestor_table(
    values: tuple[str, ...], leaf_node: dict[str, int], depth: list[int], children: list[list[int]]
) -> NDArray[np.int64]:
    """(values x depth) node ids: the ancestor of each leaf value at each depth (-1 below it)."""
    parent_of = {child: node for node, kids in enumerate(children) for child in kids}
    ancestors = np.full((len(values), max(depth) + 1), -1, dtype=np.int64)
    for i, v in enumerate(values):
        node = leaf_node[v]
        while True:
            ancestors[i, depth[node]] = node
            if node == 0:
                break
            node = parent_of[node]
    return ancestors


def _child_labels(
    kids: list[tuple[int, str]], collapse: Callable[[tuple[int, str]], tuple[int, str]]
) -> list[str]:
    """Labels of sibling nodes: each collapsed chain's lowest label, kept distinct.

    Siblings come from one hierarchy level, so their own labels differ; a
    chain's lowest label may equal a sibling's (a leaf named like a group
    elsewhere), and such a chain keeps the label of its top instead.
    """
    lowest = [collapse(k)[1] for k in kids]
    return [
        low if lowest.count(low) == 1 else kid[1] for kid, low in zip(kids, lowest, strict=True)
    ]


def format_number(x: float) -> str:
    """A short label for an interval bound that reads back as the same number.

    Ten significant digits when they suffice, else the shortest exact form, so
    bounds closer than 1e-10 relative still get distinct labels.
    """
    if float(x).is_integer():
        return str(int(x))
    short = f"{x:.10g}"
    return short if float(short) == x else repr(float(x))


def interval_label(lo: float, hi: float, closed: bool) -> str:
    """``[lo, hi)``, or ``[lo, hi]`` for the rightmost interval."""
    return f"[{format_number(lo)}, {format_number(hi)}{']' if closed else ')'}"
