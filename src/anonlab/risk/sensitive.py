"""What a release gives away about a sensitive attribute: l-diversity and t-closeness it reaches.

For each equivalence class ``c`` (records that are not suppressed) with value
shares ``p_c(v)`` of the sensitive attribute, and the shares ``q(v)`` over all
those records:

* distinct l (Machanavajjhala et al., "l-diversity: privacy beyond
  k-anonymity", TKDD 1(1), 2007): the number of distinct values in the class;
* entropy l: ``exp(H_c)``, ``H_c = -sum_v p_c(v) ln p_c(v)`` (natural
  logarithm, as sdcMicro's ``ldiversity``, ``src/Measure_Risk.h``
  ``compute_group_ldiversity``, and ARX's ``EntropyLDiversity``);
* t with equal ground distance (Li, Li and Venkatasubramanian, "t-closeness:
  privacy beyond k-anonymity and l-diversity", ICDE 2007): the earth mover's
  distance ``1/2 sum_v |p_c(v) - q(v)|`` (ARX ``EqualDistanceTCloseness``);
* t with hierarchical ground distance (same paper, section 4.2; ARX
  ``HierarchicalDistanceTCloseness``): with hierarchy height ``H``, the cost
  of node ``N`` at level ``l >= 1`` is ``(l / H) min(pos(N), neg(N))``, where
  ``pos``/``neg`` add up the positive/negative net extras
  ``sum_{v under child} (p_c(v) - q(v))`` of ``N``'s children; ``t`` is the
  sum over all nodes. Nodes are the distinct labels of each level, as ARX
  builds its tree.

The release's figure is the worst class: the smallest l and the largest t.

The (class, value) pairs are taken in order of class, then value code (the
value's order of first appearance in the table), whatever order the records
came in: the sums of floating-point terms per class (entropy, earth mover's
distance) then add their terms in one order, so the figures measured from a
table's frequency set (:func:`pairs_of_counts`, the engines' per-class
sensitive counts) are the very doubles measured from its records.

Only the classes are visited, never the rows again: each (class, value) pair
is counted once with :func:`~anonlab.grouping.group_tuples`, and since
``min(pos, neg) = pos - max(net, 0)`` and a child without any of the class's
records has a negative net, the hierarchical distance is
``sum_{l=1}^{H} (l / H) (g_{l-1} - g_l)`` with ``g_l`` the sum over the
level-``l`` nodes that hold some of the class of ``max(P_c(N) - Q(N), 0)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonlab.errors import AnonlabError
from anonlab.grouping import group_tuples
from anonlab.hierarchy import Hierarchy
from anonlab.risk.classes import Array, Classes


@dataclass(frozen=True)
class ClassValues:
    """The (class, value) pairs of one sensitive attribute.

    Pair ``i`` says that ``counts[i]`` records of class ``pair_class[i]`` hold
    value ``values[pair_value[i]]``; ``overall[v]`` is the number of records
    (not suppressed) holding value ``v``.
    """

    pair_class: Array
    pair_value: Array
    counts: Array
    values: Array
    overall: Array
    sizes: Array


def class_values(classes: Classes, attribute: str) -> ClassValues:
    """Count each class's records by their value of ``attribute`` (an extra column of the cells)."""
    j = classes.extra_index(attribute)
    cell_values = classes.cell_tuples[:, j]
    values = classes.encoded.values[j]
    pairs = np.column_stack([classes.cell_class, cell_values])
    inverse, first = group_tuples(pairs, [max(classes.count, 1), max(len(values), 1)])
    counts = np.bincount(inverse, weights=classes.cell_sizes, minlength=first.size)
    order = np.lexsort((cell_values[first], classes.cell_class[first]))
    return ClassValues(
        pair_class=classes.cell_class[first][order],
        pair_value=cell_values[first][order],
        counts=counts[order],
        values=values,
        overall=np.bincount(cell_values, weights=classes.cell_sizes, minlength=len(values)),
        sizes=classes.sizes.astype(np.float64),
    )


def pairs_of_counts(
    pair_class: Array, pair_value: Array, counts: Array, values: Array, sizes: Array
) -> ClassValues:
    """The (class, value) pairs of one sensitive attribute from a frequency set's counts.

    ``counts[i]`` records of class ``pair_class[i]`` hold value
    ``values[pair_value[i]]`` (each pair once, suppressed records left out);
    ``sizes`` are the classes' records. Gives what :func:`class_values` gives
    the same records: pairs in order of class, then value, and ``overall``
    summed from the pairs (whole numbers, so exactly).
    """
    pc = np.asarray(pair_class, dtype=np.int64)
    pv = np.asarray(pair_value, dtype=np.int64)
    order = np.lexsort((pv, pc))
    weights = np.asarray(counts, dtype=np.float64)[order]
    return ClassValues(
        pair_class=pc[order],
        pair_value=pv[order],
        counts=weights,
        values=values,
        overall=np.bincount(pv[order], weights=weights, minlength=len(values)),
        sizes=np.asarray(sizes).astype(np.float64),
    )


def distinct_l(cv: ClassValues) -> Array:
    """Number of distinct values in each class."""
    return np.bincount(cv.pair_class, minlength=cv.sizes.size).astype(np.float64)


def entropy_l(cv: ClassValues) -> Array:
    """``exp(-sum p ln p)`` of each class."""
    p = cv.counts / cv.sizes[cv.pair_class]
    entropy = -np.bincount(cv.pair_class, weights=p * np.log(p), minlength=cv.sizes.size)
    return np.asarray(np.exp(entropy))


def _excess(cv: ClassValues, node: Array, nodes: int) -> Array:
    """Per class: ``sum over nodes holding some of the class of max(P_c(N) - Q(N), 0)``.

    ``node[v]`` is the node of value ``v`` at the level considered.
    """
    n = float(cv.overall.sum())
    q = np.bincount(node, weights=cv.overall, minlength=nodes) / n
    pair_node = node[cv.pair_value]
    grouped = np.column_stack([cv.pair_class, pair_node])
    inverse, first = group_tuples(grouped, [max(cv.sizes.size, 1), max(nodes, 1)])
    share = np.bincount(inverse, weights=cv.counts, minlength=first.size)
    share = share / cv.sizes[cv.pair_class[first]]
    gain = np.maximum(share - q[pair_node[first]], 0.0)
    return np.bincount(cv.pair_class[first], weights=gain, minlength=cv.sizes.size)


def t_equal(cv: ClassValues) -> Array:
    """Earth mover's distance of each class to the whole table, equal ground distance."""
    return _excess(cv, np.arange(cv.values.size, dtype=np.int64), cv.values.size)


def hierarchy_levels(hierarchy: Hierarchy, values: Array, attribute: str) -> list[Array]:
    """Node numbers of ``values`` at each level ``0..H`` of ``hierarchy`` (labels per level)."""
    texts = [str(v) for v in values]
    missing = hierarchy.missing(texts)
    if missing:
        shown = ", ".join(repr(v) for v in missing[:3])
        raise AnonlabError(
            f"hierarchies: the hierarchy of '{attribute}' lacks values of the table: {shown}"
            f"{' ...' if len(missing) > 3 else ''}: add them to its first column",
            parameter="hierarchies",
        )
    levels: list[Array] = []
    for level in range(hierarchy.height + 1):
        labels = hierarchy.labels(texts, level)
        codes, _ = pd.factorize(np.asarray(labels, dtype=object))
        levels.append(np.asarray(codes, dtype=np.int64))
    return levels


def t_hierarchical(cv: ClassValues, levels: list[Array]) -> Array:
    """Earth mover's distance of each class with the hierarchy's ground distance (ARX's tree)."""
    height = len(levels) - 1
    if height == 0:
        return np.zeros(cv.sizes.size)
    excess = [_excess(cv, node, int(node.max()) + 1 if node.size else 0) for node in levels]
    total = np.zeros(cv.sizes.size)
    for level in range(1, height + 1):
        total += (level / height) * (excess[level - 1] - excess[level])
    return total


def value_figures(
    cv: ClassValues | None, attribute: str, hierarchy: Hierarchy | None
) -> dict[str, float | int | None]:
    """The release's smallest distinct and entropy l and largest t for ``attribute``, with the
    classes whose records all share one value and their records, from the (class, value)
    pairs (``None``: no class at all)."""
    if cv is None or cv.sizes.size == 0:
        return {
            "distinct_l": None,
            "entropy_l": None,
            "t_equal": None,
            "t_hierarchical": None,
            "single_value_classes": 0,
            "single_value_records": 0,
        }
    t_hier: float | None = None
    if hierarchy is not None:
        t_hier = float(t_hierarchical(cv, hierarchy_levels(hierarchy, cv.values, attribute)).max())
    distinct = distinct_l(cv)
    single = distinct == 1
    return {
        "distinct_l": float(distinct.min()),
        "entropy_l": float(entropy_l(cv).min()),
        "t_equal": float(t_equal(cv).max()),
        "t_hierarchical": t_hier,
        "single_value_classes": int(single.sum()),
        "single_value_records": int(cv.sizes[single].sum()),
    }
