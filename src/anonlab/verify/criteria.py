"""An independent check of the privacy models a generalized release claims to satisfy.

Written apart from the search: it imports nothing of :mod:`anonlab.privacy` or
:mod:`anonlab.lattice`. It takes the release as written (text), the original
table, and each model as the settings spell it (``{"model": ..., "attribute":
..., parameters}``), re-counts the released equivalence classes with pandas
and NumPy, and checks every model on them by its ARX 3.9 definition
(docs/privacy_models.md):

* rows whose quasi-identifiers are all ``'*'`` where the transformation would
  not make them so are *suppressed*: they belong to no class and are left out
  of every class-based model; the distributions of the sensitive attributes
  that t-closeness, beta-likeness and delta-disclosure compare with are those
  of the whole original table (ARX's ``DataManager.getDistribution``), records
  that were suppressed included;
* all-``'*'`` rows that the transformation itself makes all ``'*'`` form one
  class; if it fails a class-based model it must have been suppressed too, so
  its records then count against the suppression limit;
* the risk thresholds (``average-risk``, ``sample-uniqueness``,
  ``population-uniqueness``) are judged on the class sizes of the released
  records outside that all-``'*'`` class, as ARX's
  ``HashGroupifyDistribution`` does;
* inclusion (``original`` the research subset, ``population`` the table it
  was drawn from) sets no bound: the release must hold the subset's records
  only, so no released class may have more records than the population at
  the transformation;
* the profitability models (:mod:`anonlab.verify.profitability`; the journalist
  ones with ``original`` the research subset and ``population`` its table, as
  for inclusion): each released class's publisher payout, or its size against
  the size from which an attack does not pay;
* delta-presence (``original`` is then the research subset, ``population``
  the table it was drawn from): each released class's ``delta`` is its
  released records over its population records; a population class whose
  subset records were all suppressed is not judged again, and one holding no
  record of the subset (``delta = 0``) fails the release when ``dmin > 0``
  and no model of the combination gives ARX a minimal class size
  (:func:`population_only`).

Each finding is one line naming the model and the first failing class by its
quasi-identifier values, size and rows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.hierarchy import SUPPRESSED, Hierarchy
from anonlab.verify.profitability import PROFITABILITY, failing_classes
from anonlab.verify.tables import category_codes, plain_text

BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

#: slack in favour of the release when a float is compared with a threshold: the checker
#: computes in another order than the search, and must not fail a release on rounding
TOL = 1e-9
#: Euler-Mascheroni constant (Grassberger's estimator)
EULER_GAMMA = 0.5772156649015329
#: the largest key space of the release's classes before their keys are renumbered (a
#: quarter of int64's range, so that ``key * width + code`` cannot overflow)
GROUP_SPACE = np.iinfo(np.int64).max // 4


# ---------------------------------------------------------------------------
# The released classes
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Released:
    """The release's equivalence classes as the checker counts them.

    ``class_of`` gives each row its class (0 .. classes-1), -1 for a
    suppressed row. ``top`` is the class of the rows the transformation makes
    all ``'*'`` (-1 when there is none).
    """

    release: pd.DataFrame
    qi_columns: tuple[str, ...]
    class_of: IntArray
    sizes: IntArray
    top: int
    suppressed: int

    @property
    def classes(self) -> int:
        """Number of released classes."""
        return int(self.sizes.shape[0])

    def describe(self, cls: int) -> str:
        """A class by its quasi-identifier values, size and first rows."""
        rows = np.flatnonzero(self.class_of == cls)
        first = int(rows[0])
        values = ", ".join(f"{c}={_text(self.release[c]).iloc[first]}" for c in self.qi_columns)
        shown = ", ".join(str(int(r) + 1) for r in rows[:5])
        more = f" and {rows.size - 5} more" if rows.size > 5 else ""
        plural = "s" if rows.size > 1 else ""
        return f"class {values} ({rows.size} record{plural}, row{plural} {shown}{more})"


def released_classes(
    release: pd.DataFrame, qi_columns: Sequence[str], expected_star: BoolArray | None = None
) -> Released:
    """Group the release's rows into classes by their quasi-identifier values.

    ``expected_star`` marks the rows the transformation itself makes ``'*'``
    in every quasi-identifier (``None``: no row); other all-``'*'`` rows are
    suppressed.
    """
    cols = tuple(qi_columns)
    n = len(release)
    all_star = np.ones(n, dtype=bool)
    group = np.zeros(n, dtype=np.int64)
    space = 1
    for col in cols:
        codes, uniques = _text_codes(release[col])
        star = np.flatnonzero(np.asarray(uniques, dtype=object) == SUPPRESSED)
        all_star &= codes == (int(star[0]) if star.size else -1)
        width = max(len(uniques), 1)
        if space * width > GROUP_SPACE:  # renumber before the keys could overflow
            group, seen = pd.factorize(group)
            space = len(seen)
        group = group * width + codes
        space *= width
    expected = np.zeros(n, dtype=bool) if expected_star is None else expected_star
    suppressed = all_star & ~expected
    class_of = np.full(n, -1, dtype=np.int64)
    kept_codes, _ = pd.factorize(group[~suppressed])
    class_of[~suppressed] = kept_codes
    sizes = np.bincount(class_of[~suppressed], minlength=int(kept_codes.max(initial=-1)) + 1)
    top_rows = np.flatnonzero(all_star & expected)
    top = int(class_of[top_rows[0]]) if top_rows.size else -1
    return Released(release, cols, class_of, sizes.astype(np.int64), top, int(suppressed.sum()))


def _text_codes(column: pd.Series) -> tuple[NDArray[np.integer], Sequence[str]]:
    """Each row's text as a code (equal codes: equal texts) and the texts coded: a
    categorical's own (:func:`~anonlab.verify.tables.category_codes`), or factorized."""
    own = category_codes(column)
    if own is not None:
        return own
    codes, uniques = pd.factorize(_text(column))  # no missing codes: text only
    return codes, list(uniques)


@dataclass(frozen=True)
class Histograms:
    """Sparse per-class counts of one sensitive attribute: triples (class, value, count),
    sorted by class, and the attribute's global distribution over the original table."""

    classes: IntArray
    values: IntArray
    counts: IntArray
    sizes: IntArray
    p: FloatArray  # global share of each value
    names: list[str]  # value of each code
    known: int  # the first ``known`` names are the original table's values


def histograms(released: Released, original: pd.Series, column: pd.Series) -> Histograms:
    """The released classes' histograms of a sensitive column and its global distribution.

    Value codes come from the original column (first appearance order); a
    released value the original lacks gets a code of its own (the release
    changed the column, which :func:`check_generalization` reports).
    """
    names = [str(v) for v in pd.unique(_text(original).to_numpy())]
    known = len(names)
    index = {v: i for i, v in enumerate(names)}
    global_counts = np.bincount(
        _text(original).map(index).to_numpy(dtype=np.int64), minlength=len(names)
    )
    released_values = _text(column).to_numpy()
    for v in pd.unique(released_values):
        if v not in index:
            index[v] = len(names)
            names.append(str(v))
    codes = pd.Series(released_values).map(index).to_numpy(dtype=np.int64)
    rows = released.class_of >= 0
    width = len(names)
    keys = released.class_of[rows] * width + codes[rows]
    pairs, counts = np.unique(keys, return_counts=True)
    p = np.zeros(width)
    p[: global_counts.shape[0]] = global_counts / max(int(global_counts.sum()), 1)
    return Histograms(
        pairs // width, pairs % width, counts.astype(np.int64), released.sizes, p, names, known
    )


def _per_class(h: Histograms, weights: NDArray[Any]) -> FloatArray:
    """Sum of ``weights`` (one per triple) over each class's triples."""
    return np.bincount(h.classes, weights=weights, minlength=h.sizes.shape[0]).astype(np.float64)


# ---------------------------------------------------------------------------
# The class-based models, each as a mask of failing classes and the value reached
# ---------------------------------------------------------------------------

Verdict = tuple[BoolArray, FloatArray, str]  # failing classes, each class's value, what fails


def _distinct(h: Histograms) -> FloatArray:
    return np.bincount(h.classes, minlength=h.sizes.shape[0]).astype(np.float64)


def _distinct_l(h: Histograms, spec: Mapping[str, Any]) -> Verdict:
    """Distinct l-diversity: at least ``l`` distinct values in every class."""
    distinct = _distinct(h)
    return distinct < int(spec["l"]), distinct, f"fewer than l = {spec['l']} distinct values"


def grassberger(n: IntArray | FloatArray) -> FloatArray:
    """Grassberger's digamma-like estimator ``G(n)`` as ARX 3.9 evaluates it.

    ``G(2k) = -gamma - ln 2 + sum_{j=1}^{k} 2 / (2j - 1)`` (Grassberger 2003),
    with odd ``n`` rounded down to even (``G(1) = G(0)``); above 100 ARX uses
    the expansion ``ln n + m (1/24 - m (7/960 - m 31/8064))`` with
    ``m = 1 / ((n/2) (n/2))``, the product taken in Java's 32-bit ``int``
    (it wraps above ``n = 92680``; so does this function, to judge as ARX).
    """
    n = np.asarray(n, dtype=np.int64)
    even = n - n % 2
    small = even <= 100
    k_max = 50
    series = np.concatenate([[0.0], np.cumsum(2.0 / (2.0 * np.arange(1, k_max + 1) - 1.0))])
    out = np.empty(n.shape, dtype=np.float64)
    out[small] = -EULER_GAMMA - math.log(2.0) + series[even[small] // 2]
    half = even[~small] // 2
    square = (half * half + 2**31) % 2**32 - 2**31  # Java's int multiplication
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m = 1.0 / square.astype(np.float64)
        out[~small] = np.log(even[~small].astype(np.float64)) + m * (
            1.0 / 24 - m * (7.0 / 960 - m * 31.0 / 8064)
        )
    return out


def _entropy_l(h: Histograms, spec: Mapping[str, Any]) -> Verdict:
    """Entropy l-diversity, ARX's test: ``sum_v f_v psi(f_v) <= n (psi(n) - ln l)`` with
    ``psi = ln`` (Shannon) or Grassberger's ``G``, and at least ``ceil(l)`` values."""
    l_value = float(spec["l"])
    psi: Callable[[Any], FloatArray] = (
        grassberger
        if spec.get("estimator", "shannon") == "grassberger"
        else (lambda x: np.log(np.asarray(x, dtype=np.float64)))
    )
    n = h.sizes
    total = _per_class(h, h.counts * psi(h.counts))
    bound = n * (psi(n) - math.log(l_value))
    entropy = psi(n) - np.divide(total, n, out=np.zeros_like(total), where=n > 0)
    fails = (_distinct(h) < math.ceil(l_value)) | (total > bound + TOL * np.maximum(1, abs(bound)))
    return fails, np.exp(entropy), f"entropy below log(l) for l = {l_value:g}"


def _recursive_cl(h: Histograms, spec: Mapping[str, Any]) -> Verdict:
    """Recursive (c,l)-diversity: ``r_1 < c (r_l + ... + r_m)`` with ``r`` the class's
    counts in descending order, and at least ``l`` values (the same arithmetic as ARX)."""
    l_value, c = int(spec["l"]), float(spec["c"])
    order = np.lexsort((-h.counts, h.classes))
    cls, cnt = h.classes[order], h.counts[order]
    starts = np.searchsorted(cls, np.arange(h.sizes.shape[0]))
    rank = np.arange(cls.shape[0]) - starts[cls]
    r1 = np.zeros(h.sizes.shape[0])
    r1[cls[rank == 0]] = cnt[rank == 0]
    tail = np.bincount(
        cls[rank >= l_value - 1], weights=cnt[rank >= l_value - 1], minlength=h.sizes.shape[0]
    )
    fails = (_distinct(h) < l_value) | ~(r1 < tail * c)
    ratio = np.divide(r1, tail, out=np.full_like(r1, np.inf), where=tail > 0)
    return fails, ratio, f"r1 not below c = {c:g} times r_{l_value} + ... + r_m"


def _equal_t(h: Histograms, spec: Mapping[str, Any]) -> Verdict:
    """Equal-distance t-closeness: ``1/2 sum_v |q_v - p_v| <= t`` (Li et al. 2007)."""
    q = h.counts / h.sizes[h.classes]
    p = h.p[h.values]
    distance = (1.0 + _per_class(h, np.abs(p - q) - p)) / 2.0
    return distance > float(spec["t"]) + TOL, distance, f"distance above t = {spec['t']}"


def _dense_chunks(
    h: Histograms, width: int, columns: IntArray, rows: int = 4_000_000
) -> list[tuple[int, FloatArray]]:
    """The class distributions ``q`` as dense (classes, width) blocks of bounded size;
    ``columns`` maps each value code to its column."""
    step = max(1, rows // max(width, 1))
    blocks = []
    for start in range(0, h.sizes.shape[0], step):
        stop = min(start + step, h.sizes.shape[0])
        inside = (h.classes >= start) & (h.classes < stop)
        block = np.zeros((stop - start, width))
        block[h.classes[inside] - start, columns[h.values[inside]]] = (
            h.counts[inside] / h.sizes[h.classes[inside]]
        )
        blocks.append((start, block))
    return blocks


_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def natural_order(values: Sequence[str]) -> list[str]:
    """The natural order of a sensitive attribute's values (docs/privacy_models.md).

    Numeric when every value but a missing one (empty, or ``NULL`` in any
    case) is a decimal number: by value, missing values last, equal numbers
    in the given order; otherwise the order of Java's ``String.compareTo``
    (UTF-16 code units), which ARX uses for an attribute of type string.
    """

    def missing(v: str) -> bool:
        return v == "" or v.upper() == "NULL"

    present = [v for v in values if not missing(v)]
    if present and all(_NUMBER.fullmatch(v.strip()) for v in present):
        return sorted(values, key=lambda v: (1, 0.0) if missing(v) else (0, float(v.strip())))
    return sorted(values, key=lambda v: v.encode("utf-16-be", "surrogatepass"))


def _ordered_t(h: Histograms, spec: Mapping[str, Any]) -> Verdict:
    """Ordered-distance t-closeness: ``sum_i |sum_{j<=i} (q_j - p_j)| / (m - 1) <= t`` over
    the ``m`` values of the table in their order (``order`` restricted to them, else
    :func:`natural_order`)."""
    data_values = h.names[: h.known]
    given = spec.get("order")
    present = set(data_values)
    order = [str(v) for v in given if str(v) in present] if given else natural_order(data_values)
    position = {v: i for i, v in enumerate(order)}
    for v in h.names:  # values the order lacks: reported apart, placed last here
        position.setdefault(v, len(position))
    columns = np.array([position[v] for v in h.names], dtype=np.int64)
    m = len(position)
    p = np.zeros(m)
    p[columns] = h.p
    distance = np.zeros(h.sizes.shape[0])
    for start, q in _dense_chunks(h, m, columns):
        cumulative = np.cumsum(q - p[None, :], axis=1)
        distance[start : start + q.shape[0]] = np.abs(cumulative).sum(axis=1) / max(m - 1, 1)
    return distance > float(spec["t"]) + TOL, distance, f"distance above t = {spec['t']}"


def _hierarchical_t(h: Histograms, spec: Mapping[str, Any]) -> Verdict:
    """Hierarchical-distance t-closeness (Li et al. 2007), ARX's tree: every inner node
    ``N`` at level ``L`` of a hierarchy of height ``H`` costs ``L / H * min(pos_N, neg_N)``,
    where ``pos_N`` and ``neg_N`` sum its children's positive and negative extras (a leaf's
    extra is ``p_v - q_v``, an inner node's ``pos - neg``); the distance is the sum of the
    costs, at most ``t``."""
    hierarchy = Hierarchy.from_csv(str(spec["hierarchy"]))
    leaves = hierarchy.values
    position = {v: i for i, v in enumerate(leaves)}
    columns = np.array([position.get(v, 0) for v in h.names], dtype=np.int64)
    p = np.zeros(len(leaves))
    np.add.at(p, columns, h.p)
    links = _tree_links(hierarchy)
    height = max(hierarchy.height, 1)
    distance = np.zeros(h.sizes.shape[0])
    for start, q in _dense_chunks(h, len(leaves), columns):
        extra = p[None, :] - q
        cost = np.zeros(q.shape[0])
        for level, parent in enumerate(links, start=1):
            pos = _sum_columns(np.maximum(extra, 0.0), parent)
            neg = _sum_columns(np.maximum(-extra, 0.0), parent)
            cost += level / height * np.minimum(pos, neg).sum(axis=1)
            extra = pos - neg
        distance[start : start + q.shape[0]] = cost
    return distance > float(spec["t"]) + TOL, distance, f"distance above t = {spec['t']}"


def _tree_links(hierarchy: Hierarchy) -> list[IntArray]:
    """For each level 1..height: the parent node (a label at that level) of each node of
    the level below (level 0: the hierarchy's values, in its order)."""
    links = []
    below_index = {v: i for i, v in enumerate(hierarchy.values)}
    for level in range(1, hierarchy.height + 1):
        nodes: dict[str, int] = {}
        parent = np.zeros(len(below_index), dtype=np.int64)
        for value in hierarchy.values:
            child = below_index[hierarchy.label(value, level - 1)]
            parent[child] = nodes.setdefault(hierarchy.label(value, level), len(nodes))
        links.append(parent)
        below_index = nodes
    return links


def _sum_columns(matrix: FloatArray, parent: IntArray) -> FloatArray:
    """Columns of ``matrix`` summed into their parents' columns."""
    out = np.zeros((matrix.shape[0], int(parent.max(initial=-1)) + 1))
    np.add.at(out.T, parent, matrix.T)
    return out


def _likeness(h: Histograms, spec: Mapping[str, Any], enhanced: bool) -> Verdict:
    """Basic beta-likeness ``(q_v - p_v) / p_v <= beta`` for every value in the class;
    enhanced: ``<= min(beta, -ln p_v)`` (Cao and Karras 2012; ARX 3.9)."""
    beta = float(spec["beta"])
    q = h.counts / h.sizes[h.classes]
    p = h.p[h.values]
    gain = np.divide(q - p, p, out=np.full_like(q, np.inf), where=p > 0)
    limit = (
        np.minimum(beta, -np.log(np.where(p > 0, p, 1.0))) if enhanced else np.full_like(q, beta)
    )
    over = gain > limit + TOL
    worst = np.full(h.sizes.shape[0], -np.inf)
    np.maximum.at(worst, h.classes, gain)
    fails = np.bincount(h.classes, weights=over, minlength=h.sizes.shape[0]) > 0
    return (
        fails,
        worst,
        f"a value's relative gain above beta = {beta:g}" + (" or -ln p" if enhanced else ""),
    )


def _delta_disclosure(h: Histograms, spec: Mapping[str, Any]) -> Verdict:
    """delta-disclosure privacy: ``|log2(q_v / p_v)| < delta`` for every value in the class
    (Brickell and Shmatikov 2008; ARX 3.9)."""
    delta = float(spec["delta"])
    q = h.counts / h.sizes[h.classes]
    p = h.p[h.values]
    ratio = np.divide(q, p, out=np.full_like(q, np.inf), where=p > 0)
    value = np.abs(np.log(ratio) / math.log(2.0))
    worst = np.full(h.sizes.shape[0], -np.inf)
    np.maximum.at(worst, h.classes, value)
    return worst >= delta + TOL, worst, f"|log2(q/p)| not below delta = {delta:g}"


SENSITIVE_CHECKS: dict[str, Callable[[Histograms, Mapping[str, Any]], Verdict]] = {
    "distinct-l-diversity": _distinct_l,
    "entropy-l-diversity": _entropy_l,
    "recursive-cl-diversity": _recursive_cl,
    "equal-distance-t-closeness": _equal_t,
    "ordered-distance-t-closeness": _ordered_t,
    "hierarchical-distance-t-closeness": _hierarchical_t,
    "basic-beta-likeness": lambda h, s: _likeness(h, s, False),
    "enhanced-beta-likeness": lambda h, s: _likeness(h, s, True),
    "delta-disclosure": _delta_disclosure,
}


# ---------------------------------------------------------------------------
# Models of the population and of the risk
# ---------------------------------------------------------------------------


def generalized_keys(
    frame: pd.DataFrame, hierarchies: Mapping[str, Hierarchy], levels: Mapping[str, int]
) -> pd.Series:
    """Each row's generalized quasi-identifiers (the labels at ``levels``) as one text key."""
    parts = []
    for col, level in levels.items():
        codes, values = pd.factorize(_text(frame[col]))
        missing = hierarchies[col].missing([str(v) for v in values])
        if missing:
            raise ValueError(f"value '{missing[0]}' of column '{col}' is not in its hierarchy")
        labels = np.array([hierarchies[col].label(str(v), level) for v in values], dtype=object)
        parts.append(pd.Series(labels[codes], dtype=object))
    key = parts[0].astype(str)
    for part in parts[1:]:
        key = key + "\x1f" + part.astype(str)
    return key


def _row_keys(frame: pd.DataFrame, columns: Sequence[str]) -> pd.Series:
    """Each row's values in ``columns`` as one text key."""
    key = pd.Series([""] * len(frame), dtype=object)
    for col in columns:
        key = key + "\x1f" + _text(frame[col]).reset_index(drop=True).astype(str)
    return key


def research_rows(table: pd.DataFrame, subset: pd.DataFrame) -> IntArray | None:
    """The rows of ``table`` a research subset stands for, in table order (``None``: some
    subset row has no table row left).

    Each subset row takes the first table row equal to it on every column that
    no earlier subset row took (ARX's ``DataSubset.create``): rows are matched
    as a multiset, by their values and the rank of their occurrence.
    """
    columns = [str(c) for c in table.columns]
    if sorted(str(c) for c in subset.columns) != sorted(columns):
        return None
    left_key = _row_keys(table, columns)
    right_key = _row_keys(subset, columns)
    left_rank = left_key.groupby(left_key).cumcount().astype(str)
    right_rank = right_key.groupby(right_key).cumcount().astype(str)
    position = pd.Series(np.arange(len(table)), index=(left_key + "\x1e" + left_rank).to_numpy())
    found = position.reindex((right_key + "\x1e" + right_rank).to_numpy())
    if found.isna().any():
        return None
    return np.sort(found.to_numpy(dtype=np.int64))


def _release_keys(released: Released) -> pd.Series:
    key = _text(released.release[released.qi_columns[0]]).astype(str)
    for col in released.qi_columns[1:]:
        key = key + "\x1f" + _text(released.release[col]).astype(str)
    return key.reset_index(drop=True)


def _presence_counts(released: Released, population_keys: pd.Series) -> FloatArray:
    """Population records of each released class."""
    counts = population_keys.value_counts()
    first = pd.Series(np.arange(len(released.class_of)))
    keys = _release_keys(released)
    per_class = np.zeros(released.classes)
    rows = released.class_of >= 0
    reps = first[rows].groupby(released.class_of[rows]).first().to_numpy()
    per_class[:] = keys.iloc[reps].map(counts).fillna(0).to_numpy(dtype=np.float64)
    return per_class


def poisson_k(k: int, significance: float, lam: float, zero_truncated: bool) -> int:
    """The class size ARX 3.9 requires for k-map estimated from a sample (El Emam and
    Dankar 2008): the smallest size whose Poisson (or zero-truncated Poisson) cumulative
    probability with mean ``lam = f k`` reaches ``1 - significance``, capped at ``k``."""
    from scipy.stats import poisson

    threshold = 1.0 - significance
    if zero_truncated:
        norm = 1.0 - float(poisson.pmf(0, lam))
        counter, value = 1, 0.0
        while value < threshold:
            value += float(poisson.pmf(counter, lam)) / norm
            counter += 1
            if counter >= k:
                break
        return min(k, counter)
    counter, value = 0, 0.0
    while value < threshold:
        value = float(poisson.cdf(counter, lam))
        counter += 1
        if counter >= k:
            break
    return min(k, counter + 1)


def _risk_sizes(released: Released) -> IntArray:
    """Class sizes the risk thresholds judge: released classes but the all-'*' one."""
    keep = np.ones(released.classes, dtype=bool)
    if released.top >= 0:
        keep[released.top] = False
    return np.asarray(released.sizes[keep], dtype=np.int64)


def _risk_finding(spec: Mapping[str, Any], sizes: IntArray, n_table: int) -> str | None:
    """The risk thresholds of ARX 3.9 on the released class sizes (None: holds).

    ``population-uniqueness`` counts the classes here and applies the
    estimators of :mod:`anonlab.risk.population` (the one implementation of
    each, shared with the risk report), with ARX's rule: Dankar without its
    Zayatz fallback, the population ``N = round(n / sampling_fraction)``.
    """
    threshold = float(spec["threshold"])
    records = int(sizes.sum())
    if records == 0:
        return None
    model = spec["model"]
    if model == "average-risk":
        risk = sizes.shape[0] / records
        return (
            None
            if risk <= threshold + TOL
            else (
                f"average re-identification risk {risk:.6g} (released classes / records) is "
                f"above threshold {threshold:g}"
            )
        )
    uniques = float(np.count_nonzero(sizes == 1))
    if model == "sample-uniqueness":
        share = uniques / records
        return (
            None
            if share <= threshold + TOL
            else (f"{share:.6g} of the released records are unique, above threshold {threshold:g}")
        )
    from anonlab.risk.population import UniquenessEstimates

    size = spec.get("population_size")
    population = (
        int(size)
        if size is not None
        else math.floor(n_table / float(spec["sampling_fraction"]) + 0.5)
    )
    histogram = {int(s): int(c) for s, c in zip(*np.unique(sizes, return_counts=True), strict=True)}
    estimator = str(spec.get("estimator", "dankar"))
    estimates = UniquenessEstimates(
        histogram, population, iterations_per_try=int(spec.get("iterations_per_try", 1000))
    )
    estimate = (
        estimates.dankar(fallback=False)[0] if estimator == "dankar" else estimates.value(estimator)
    )
    share = float(estimate) / population
    if (0.0 < share <= threshold + TOL) or (share == 0.0 and uniques == 0):
        return None
    return (
        f"estimated population uniqueness {share:.6g} ({estimator}) is above threshold "
        f"{threshold:g}, or the estimate failed while records are sample-unique"
    )


# ---------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------


def check_criteria(
    original: pd.DataFrame,
    release: pd.DataFrame,
    criteria: Sequence[Mapping[str, Any]],
    qi_columns: Sequence[str],
    max_suppressed: int,
    *,
    expected_star: BoolArray | None = None,
    population: pd.DataFrame | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    levels: Mapping[str, int] | None = None,
) -> list[str]:
    """Problems with the privacy models of a release (empty list: every model holds).

    ``criteria`` are the models as the settings spell them. ``expected_star``
    marks the rows the transformation makes all ``'*'`` (see
    :func:`released_classes`); ``hierarchies`` and ``levels`` (the
    transformation) are needed to generalize ``population``, the population
    table of ``delta-presence`` and ``k-map`` (whose rows include the
    original's for delta-presence, as in ARX's research subset).
    """
    released = released_classes(release, qi_columns, expected_star)
    context = _Context(
        original,
        release,
        released,
        population,
        hierarchies,
        levels,
        any(declares_minimal_class_size(spec) for spec in criteria),
    )
    problems: list[str] = []
    failing_top = False
    for spec in criteria:
        fails, reason, extra = _verdict(spec, context)
        problems += extra
        if fails is None:
            continue
        failing_top |= bool(released.top >= 0 and fails[released.top])
        if released.top >= 0:
            fails = fails.copy()
            fails[released.top] = False
        bad = np.flatnonzero(fails)
        if bad.size:
            more = f" (and {bad.size - 1} more classes)" if bad.size > 1 else ""
            problems.append(f"{_name(spec)}: {released.describe(int(bad[0]))} has {reason}{more}")
    problems += _suppression_findings(released, failing_top, max_suppressed)
    return problems


@dataclass(frozen=True)
class _Context:
    """What the models are checked on."""

    original: pd.DataFrame
    release: pd.DataFrame
    released: Released
    population: pd.DataFrame | None
    hierarchies: Mapping[str, Hierarchy] | None
    levels: Mapping[str, int] | None
    #: some model of the combination gives ARX a minimal class size
    #: (:func:`declares_minimal_class_size`)
    minimal_class_size: bool = False


#: the models ARX 3.9 gives a minimal class size whatever their parameters
#: (``isMinimalClassSizeAvailable``: ``KAnonymity``, ``LDiversity``); k-map has one only with an
#: estimator (``KMap``: its derived ``k'``)
MINIMAL_CLASS_SIZE_MODELS = frozenset(
    {
        "k-anonymity",
        "distinct-l-diversity",
        "entropy-l-diversity",
        "recursive-cl-diversity",
        "profitability-prosecutor-no-attack",
    }
)


def declares_minimal_class_size(spec: Mapping[str, Any]) -> bool:
    """Whether ARX 3.9 gives the model a minimal class size (``k``, ``ceil(l)``, k-map's
    ``k'``), which ``HashGroupify.isPrivacyModelFulfilled`` checks before every model."""
    model = str(spec["model"])
    return model in MINIMAL_CLASS_SIZE_MODELS or (model == "k-map" and bool(spec.get("estimator")))


def _verdict(spec: Mapping[str, Any], ctx: _Context) -> tuple[BoolArray | None, str, list[str]]:
    """One model: its failing classes (None for a model judged as a whole), what fails,
    and findings of its own."""
    model = str(spec["model"])
    name = _name(spec)
    released = ctx.released
    if model == "k-anonymity":
        return released.sizes < int(spec["k"]), f"fewer than k = {spec['k']} records", []
    if model in SENSITIVE_CHECKS:
        attribute = str(spec["attribute"])
        if attribute not in ctx.release.columns or attribute not in ctx.original.columns:
            return (
                None,
                "",
                [f"{name}: attribute '{attribute}' is missing from the release or the original"],
            )
        h = histograms(released, ctx.original[attribute], ctx.release[attribute])
        fails, _, reason = SENSITIVE_CHECKS[model](h, spec)
        return fails, reason, _unknown_values(name, h, spec)
    if model in ("delta-presence", "k-map", "inclusion"):
        return _presence(spec, ctx)
    if model in PROFITABILITY:
        return _profitability(spec, ctx)
    if model in ("average-risk", "sample-uniqueness", "population-uniqueness"):
        finding = _risk_finding(spec, _risk_sizes(released), len(ctx.original))
        return None, "", [f"{name}: {finding}"] if finding else []
    return None, "", [f"{name}: the checker does not know model '{model}'"]


def _suppression_findings(released: Released, failing_top: bool, limit: int) -> list[str]:
    """Suppressed records over the limit, counting the all-'*' class when it fails a model."""
    problems = []
    if failing_top:
        top = int(released.sizes[released.top])
        total = released.suppressed + top
        if total > limit:
            problems.append(
                f"the all-'*' class ({top} records) fails a privacy model, so it "
                f"must be suppressed, but with it {total} records are suppressed "
                f"and the limit is {limit}"
            )
    if released.suppressed > limit:
        problems.append(f"{released.suppressed} records are suppressed but the limit is {limit}")
    return problems


def _name(spec: Mapping[str, Any]) -> str:
    on = f" on '{spec['attribute']}'" if spec.get("attribute") else ""
    return f"model '{spec['model']}'{on}"


def _unknown_values(name: str, h: Histograms, spec: Mapping[str, Any]) -> list[str]:
    """Values an ``order`` or a hierarchy does not list (the model is not defined there)."""
    listed: list[str] | None = None
    if spec.get("order"):
        listed = [str(v) for v in spec["order"]]
    elif spec.get("hierarchy"):
        listed = Hierarchy.from_csv(str(spec["hierarchy"])).values
    if listed is None:
        return []
    absent = sorted(set(h.names) - set(listed))
    return (
        [
            f"{name}: value '{absent[0]}' is not in its "
            f"{'order' if spec.get('order') else 'hierarchy'}"
        ]
        if absent
        else []
    )


def _presence(spec: Mapping[str, Any], ctx: _Context) -> tuple[BoolArray | None, str, list[str]]:
    """delta-presence and k-map on the released classes (ARX 3.9's ``DPresence``, ``KMap``)."""
    name = _name(spec)
    released = ctx.released
    n_table = len(ctx.original)
    if spec["model"] == "k-map" and spec.get("estimator"):
        lam = n_table / float(spec["population_size"]) * int(spec["k"])
        needed = min(
            poisson_k(
                int(spec["k"]),
                float(spec["significance"]),
                lam,
                spec["estimator"] == "zero-truncated-poisson",
            ),
            n_table,
        )
        return (
            released.sizes < needed,
            f"fewer than the {needed} records k-map's estimate needs",
            [],
        )
    if ctx.population is None or ctx.hierarchies is None or ctx.levels is None:
        return None, "", [f"{name}: the population table is not available to the checker"]
    keys = generalized_keys(ctx.population, ctx.hierarchies, ctx.levels)
    counts = _presence_counts(released, keys)
    if spec["model"] == "k-map":
        k = int(spec["k"])
        return counts < k, f"fewer than k = {k} matching records in the population", []
    if spec["model"] == "inclusion":
        return _inclusion(released, counts)
    subset = generalized_keys(ctx.original, ctx.hierarchies, ctx.levels)
    return _delta_presence(spec, ctx, keys, subset, counts)


def _delta_presence(
    spec: Mapping[str, Any], ctx: _Context, keys: pd.Series, subset: pd.Series, counts: FloatArray
) -> tuple[BoolArray, str, list[str]]:
    """delta-presence as ARX 3.9 judges it (:func:`population_only`): the released classes'
    ``delta`` (released records / population records ``counts``), and the population's
    classes without any record of the research subset (``keys``, ``subset``: the
    population's and the subset's generalized quasi-identifiers)."""
    released = ctx.released
    dmin, dmax = float(spec["dmin"]), float(spec["dmax"])
    delta = np.divide(
        released.sizes, counts, out=np.full(released.classes, np.inf), where=counts > 0
    )
    fails = (delta < dmin - TOL) | (delta > dmax + TOL)
    extra = []
    if dmin > TOL and not ctx.minimal_class_size:
        empty = population_only(keys, subset)
        if len(empty):
            extra.append(
                f"{_name(spec)}: population records with generalized values "
                f"{empty.iloc[0].replace(chr(31), ', ')} hold no record of the "
                f"research subset, so their delta is 0, below dmin = {dmin:g}"
            )
    return fails, f"delta outside [{dmin:g}, {dmax:g}]", extra


def _profitability(
    spec: Mapping[str, Any], ctx: _Context
) -> tuple[BoolArray | None, str, list[str]]:
    """The profitability models (:mod:`anonlab.verify.profitability`) on the released classes:
    their labels, sizes and, for the journalist models, population sizes."""
    released = ctx.released
    rows = released.class_of >= 0
    first = (
        pd.Series(np.arange(len(released.class_of)))[rows]
        .groupby(released.class_of[rows])
        .first()
        .to_numpy()
    )
    labels = {c: _text(ctx.release[c]).iloc[first].tolist() for c in released.qi_columns}
    population = None
    if (
        str(spec["model"]).startswith("profitability-journalist")
        and ctx.population is not None
        and ctx.hierarchies is not None
        and ctx.levels is not None
    ):
        keys = generalized_keys(ctx.population, ctx.hierarchies, ctx.levels)
        population = _presence_counts(released, keys)
    fails, reason, finding = failing_classes(
        spec, released.sizes, population, labels, ctx.hierarchies, ctx.levels
    )
    return fails, reason, [f"{_name(spec)}: {finding}"] if finding else []


def _inclusion(released: Released, counts: FloatArray) -> tuple[BoolArray, str, list[str]]:
    """inclusion (ARX 3.9's ``Inclusion``): no bound of its own, but the release must hold
    research-subset records only. The release is checked row by row against the subset
    (:mod:`anonlab.verify.generalization`); here each released class must have no more
    records than the population (``counts``) has at these levels."""
    return (
        np.asarray(released.sizes > counts),
        "more records than the population has with these values (a record that is "
        "not of the research subset)",
        [],
    )


def population_only(population_keys: pd.Series, subset_keys: pd.Series) -> pd.Series:
    """The population records whose generalized class holds no record of the research subset.

    ARX 3.9's delta-presence (``DPresence.isAnonymous``: ``delta = count / pcount``, 0 when
    ``count == 0``) judges every class of the *population* at the transformation, ``count``
    being its research-subset records before any suppression (``HashGroupify.addInternal``).
    A class with subset records outside ``[dmin, dmax]`` is suppressed like any other
    failing class; one without (delta 0) cannot be, and below ``dmin`` it makes the
    transformation fail (``HashGroupify.analyzeAll``: ``entry.count == 0``). A class whose
    subset records the release suppressed is therefore not one of these: it had records.
    ARX checks the minimal class size first (``isPrivacyModelFulfilled``), and a class
    without records is below any, so with k-anonymity, an l-diversity model or an estimated
    k-map in the combination no class of this kind is judged (:class:`_Context`).
    """
    return population_keys[~population_keys.isin(set(subset_keys))]


def _text(column: pd.Series) -> pd.Series:
    """A column as text, a missing value (null) as the empty string an empty CSV field reads as
    (a column that is text already, e.g. a categorical release read back, as it is)."""
    if plain_text(column):
        return column
    return column.astype(str).where(column.notna(), "")
