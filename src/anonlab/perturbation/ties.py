"""Release-only attacks: tied original values give an orthogonal transform away.

A release is ``y = A z (+ t)`` with ``A`` orthogonal, so ``z_j = a_j^T (y - t)``
where ``a_j`` is the ``j``-th column of ``A`` (docs/formulas.md §4). Records
that share the value of original column ``j`` therefore lie on one hyperplane
``{y : a_j^T y = const}`` of the release, and the difference of any two of
them is orthogonal to ``a_j``. A table with tied values (a discrete column, a
common zero, rounded amounts) thus shows the directions ``a_j`` to anyone who
holds the release alone: no key, no report, no known record. Once ``a_j`` is
found, ``a_j^T (y - t)`` is column ``j`` of every record (up to its sign, and
to its mean and deviation, which the attacks of this package assume known).

Two searches, each exact up to rounding:

* **Pairs of released columns** (OBT's and RBT's 2 x 2 blocks). For a block
  ``(u, v)`` and two records tied on one of its original columns, the
  difference of their released ``(u, v)`` values points along the *other*
  column's axis ``A e_b``: the directions of all record-pair differences of
  the couple pile up at two perpendicular angles. Every couple of released
  columns is searched (up to :data:`PAIR_BUDGET` record pairs each, and
  :data:`TOTAL_BUDGET` in all); a couple's frame is kept when its two
  projections hold fewer distinct values than the two released columns.
  Axis-aligned directions (a released column constant on a group) carry no
  new information and are left out.
* **Hyperplanes** (3 x 3 blocks, a full rotation, couples without ties). In a
  subspace of ``m`` released columns, ``m`` records tied on one original value
  span a hyperplane whose normal (the null vector of their ``m - 1``
  differences) is ``a_j``: random ``m``-tuples are drawn, their normals
  computed, and a normal that several tuples give exactly is a candidate, kept
  when the release projected on it holds fewer distinct values than the
  records (mutually orthogonal normals, fewest distinct values first). With
  ``m - 1`` normals of an ``m``-column subspace found, the last direction is
  their orthogonal complement. It needs a value shared by a large share of
  the records (a tuple of ``m`` records must fall in one group), so it finds
  discrete columns and common values; a column whose ties are only a few
  pairs is found by the pair search in a 2 x 2 block only.

Noise (gdp with ``noise > 0``) leaves no two records tied exactly, so the
search is not run on such a release; what noise leaves to an attacker who
knows the transform is measured in docs/perturbation.md ("Remedies").

The estimates are scored as every attack is (per record), and per column:
a column is recovered when the best-matching estimate, with its sign, is
within 10 % relative RMS error (``|r| >= 0.995`` for unit-variance columns).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

PAIR_BUDGET = 400_000  # record pairs per couple of released columns
TOTAL_BUDGET = 20_000_000  # record pairs over all couples
TUPLE_BUDGET = 20_000  # record tuples in the whole space
TRIPLE_BUDGET = 4_000  # record triples per triple of columns
MAX_SUBSPACES = 120  # triples of columns searched for hyperplanes
EXACT_WINDOW = 1e-9  # relative angle window of an exact tie
DISTINCT_TOLERANCE = 1e-9  # relative gap under which two projections are one value
MIN_PEAK = 3  # record pairs in one direction before it counts
MAX_CANDIDATES = 64  # repeated normals judged per subspace


@dataclass(frozen=True)
class TieFinding:
    """Directions of the release (unit rows, ``d`` wide) that the search found."""

    directions: FloatArray
    couples: int  # column couples whose frame was kept
    hyperplanes: int  # normals found by the hyperplane search


def distinct_values(values: FloatArray) -> int:
    """How many values differ by more than :data:`DISTINCT_TOLERANCE` of the largest."""
    if values.size == 0:
        return 0
    s = np.sort(values)
    scale = float(np.max(np.abs(s))) or 1.0
    return int(1 + np.count_nonzero(np.diff(s) > DISTINCT_TOLERANCE * scale))


def record_pairs(n: int, budget: int, rng: np.random.Generator) -> tuple[IntArray, IntArray]:
    """Every pair of ``n`` records when there are at most ``budget``, else about ``budget``
    distinct random pairs (drawn with replacement, repeats dropped)."""
    if n * (n - 1) // 2 <= budget:
        i, k = np.triu_indices(n, 1)
        return i.astype(np.intp), k.astype(np.intp)
    i = rng.integers(0, n, budget)
    k = rng.integers(0, n - 1, budget)
    k = k + (k >= i)  # a different record
    lo, hi = np.minimum(i, k), np.maximum(i, k)
    code = np.unique(lo.astype(np.int64) * n + hi)
    return (code // n).astype(np.intp), (code % n).astype(np.intp)


def pseudo_angle(du: FloatArray, dv: FloatArray) -> FloatArray:
    """A value in [-1, 1] that orders directions of the half plane as their angle does.

    The direction is first turned into the half plane ``du > 0`` (``dv``
    times the sign of ``du``); ``dv / (|du| + |dv|)`` then rises with the
    angle from ``-pi/2`` to ``pi/2`` (a cheaper stand-in for ``arctan2``,
    equal for equal directions).
    """
    au = np.abs(du)
    av = np.abs(dv)
    turned = np.copysign(av, dv * du)
    au += av
    with np.errstate(invalid="ignore"):  # 0 / 0 for equal records: nan, which no pile holds
        out: FloatArray = np.divide(turned, au, out=turned)
    return out


def direction_of(key: float) -> FloatArray:
    """The unit vector ``(du, dv)`` of a :func:`pseudo_angle`."""
    ratio = key / (1.0 - key) if key >= 0 else key / (1.0 + key)
    vec = np.array([1.0, ratio])
    out: FloatArray = vec / np.linalg.norm(vec)
    return out


def angle_peaks(keys: FloatArray, window: float, top: int = 4) -> list[tuple[float, int]]:
    """The ``top`` directions where ``keys`` pile up most: ``(key, count)`` pairs.

    A pile is a run of sorted keys each within ``window`` of the next, of at
    least :data:`MIN_PEAK` keys; at a window of 1e-9 chance gives about none
    (``pairs * window`` keys are expected in one window).
    """
    if keys.size < MIN_PEAK:
        return []
    s = np.sort(keys)
    starts = np.flatnonzero(np.diff(s, prepend=-np.inf) > window)
    lengths = np.diff(np.append(starts, s.size))
    best = np.argsort(-lengths, kind="stable")[:top]
    return [
        (float(s[starts[b] + lengths[b] // 2]), int(lengths[b]))
        for b in best
        if lengths[b] >= MIN_PEAK
    ]


def _couple_keys(
    columns: FloatArray, u: int, v: int, pairs: tuple[IntArray, IntArray], least: float
) -> FloatArray:
    """Pseudo-angles of the pairs' differences in columns ``(u, v)`` (rows of
    ``columns``), off the axes (within rounding) and off pairs closer than ``least``."""
    i, k = pairs
    cu, cv = columns[u], columns[v]
    du = cu[i] - cu[k]
    dv = cv[i] - cv[k]
    keys = pseudo_angle(du, dv)
    keep = np.abs(keys) < 1.0 - 1e-12  # not along v's axis
    keep &= np.abs(keys) > 1e-12  # nor along u's
    keep &= np.abs(du) + np.abs(dv) > least
    out: FloatArray = keys[keep]
    return out


def _frame(d: int, u: int, v: int, key: float) -> FloatArray:
    """The two unit directions (rows, ``d`` wide) of a peak in couple ``(u, v)``."""
    along = direction_of(key)
    out = np.zeros((2, d))
    out[0, [u, v]] = along
    out[1, [u, v]] = (-along[1], along[0])
    return out


def _couple_frame(y: FloatArray, u: int, v: int, keys: FloatArray) -> tuple[int, FloatArray] | None:
    """The frame of couple ``(u, v)`` that most lowers its distinct values, and by how much.

    ``None`` when no frame of a pile's direction holds :data:`MIN_PEAK` fewer
    distinct values than the two released columns (three records that happen
    to lie on one line make a pile, and lower them by 2).
    """
    raw = distinct_values(y[:, u]) + distinct_values(y[:, v])
    best: tuple[int, FloatArray] | None = None
    for key, _ in angle_peaks(keys, EXACT_WINDOW):
        frame = _frame(y.shape[1], u, v, key)
        found = sum(distinct_values(y @ w) for w in frame)
        # a chance collinear triple lowers them by 2: ask for MIN_PEAK
        if raw - found >= MIN_PEAK and (best is None or raw - found > best[0]):
            best = (raw - found, frame)
    return best


def pair_search(
    y: FloatArray, rng: np.random.Generator
) -> list[tuple[tuple[int, int], FloatArray]]:
    """Frames of column couples, greedily: most evident first, each column in one couple."""
    n, d = y.shape
    couples = list(itertools.combinations(range(d), 2))
    if n < 3 or not couples:
        return []
    budget = max(1_000, min(PAIR_BUDGET, TOTAL_BUDGET // len(couples)))
    pairs = record_pairs(n, budget, rng)
    least = 1e-9 * (float(np.max(np.abs(y))) or 1.0)
    columns = np.ascontiguousarray(y.T)
    scored: list[tuple[int, tuple[int, int], FloatArray]] = []
    for u, v in couples:
        found = _couple_frame(y, u, v, _couple_keys(columns, u, v, pairs, least))
        if found is not None:
            scored.append((found[0], (u, v), found[1]))
    scored.sort(key=lambda t: -t[0])
    used: set[int] = set()
    kept: list[tuple[tuple[int, int], FloatArray]] = []
    for _, (u, v), frame in scored:
        if u not in used and v not in used:
            used.update((u, v))
            kept.append(((u, v), frame))
    return kept


def tuple_normals(points: FloatArray, rng: np.random.Generator, count: int) -> FloatArray:
    """Unit normals (sign fixed) of hyperplanes through ``count`` random ``m``-tuples of points.

    Tuples whose ``m - 1`` differences are nearly dependent give no normal.
    """
    n, m = points.shape
    if n < m + 1:
        return np.zeros((0, m))
    picks = rng.integers(0, n, (count, m))
    ordered = np.sort(picks, axis=1)
    picks = picks[np.all(np.diff(ordered, axis=1) > 0, axis=1)]  # m distinct records
    diffs = points[picks[:, 1:]] - points[picks[:, :1]]  # (count, m - 1, m)
    if m == 3:  # the cross product of the two differences
        normals = np.cross(diffs[:, 0], diffs[:, 1])
        size = np.linalg.norm(normals, axis=1)
        ok = size > 1e-8 * np.linalg.norm(diffs[:, 0], axis=1) * np.linalg.norm(diffs[:, 1], axis=1)
        normals = normals[ok] / size[ok, None]
    else:  # the last column of Q in the complete QR of the differences' transpose
        q, r = np.linalg.qr(np.swapaxes(diffs, 1, 2), mode="complete")
        diag = np.abs(np.diagonal(r, axis1=1, axis2=2))
        ok = diag.min(axis=1) > 1e-8 * np.maximum(diag.max(axis=1), 1e-300)
        normals = q[ok, :, -1]
    lead = np.argmax(np.abs(normals), axis=1)
    signs = np.sign(normals[np.arange(normals.shape[0]), lead])
    out: FloatArray = normals * signs[:, None]
    return out


def _repeated(normals: FloatArray, grid: float = 1e-7) -> FloatArray:
    """The normals that two or more tuples gave (to ``grid``), most repeated first."""
    if normals.shape[0] < 2:
        return np.zeros((0, normals.shape[1]))
    cells = np.rint(normals / grid).astype(np.int64)
    mix = np.random.default_rng(0).integers(1, 2**61, cells.shape[1])
    keys = (cells * mix).sum(axis=1)  # one number per cell (wrapping: a hash)
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    keep = order[counts[order] >= 2]
    out: FloatArray = normals[first[keep]]
    return out


def hyperplane_search(
    y: FloatArray, columns: list[int], rng: np.random.Generator, budget: int = TUPLE_BUDGET
) -> FloatArray:
    """Mutually orthogonal tie normals (rows, ``d`` wide) in the subspace of ``columns``."""
    n, d = y.shape
    m = len(columns)
    sub = y[:, columns]
    candidates = _repeated(tuple_normals(sub, rng, budget))[:MAX_CANDIDATES]
    scored = sorted(((distinct_values(sub @ c), i) for i, c in enumerate(candidates)))
    kept: list[FloatArray] = []
    for distinct, i in scored:
        c = candidates[i]
        # the tuple's own m records share a value: ask for MIN_PEAK coincidences more
        if distinct > n - m + 1 - MIN_PEAK or any(abs(float(c @ k)) > 1e-6 for k in kept):
            continue
        kept.append(c)
        if len(kept) == m - 1:
            break
    if len(kept) == m - 1:  # the last direction is the complement of the others
        basis = np.linalg.svd(np.array(kept), full_matrices=True)[2]
        kept.append(basis[-1])
    out = np.zeros((len(kept), d))
    if kept:
        out[:, columns] = np.array(kept)
    return out


def _subspaces(rest: list[int], d: int) -> list[list[int]]:
    """The column sets the hyperplane search tries: triples of ``rest`` (bounded), then all
    ``d`` columns (a full rotation mixes every column)."""
    sets = [list(t) for t in itertools.islice(itertools.combinations(rest, 3), MAX_SUBSPACES)]
    if d >= 3 and list(range(d)) not in sets:
        sets.append(list(range(d)))
    return sets


def find_ties(released: FloatArray, *, seed: int = 0) -> TieFinding:
    """Directions of ``released`` (an exact orthogonal release) that ties give away.

    The pair search runs first; the hyperplane search then tries triples of
    the columns no couple explained, and the whole space. Directions are
    candidates: :func:`anonlab.perturbation.attacks.tie_attack` scores them
    against the original.
    """
    rng = np.random.default_rng(seed)
    y = np.asarray(released, dtype=np.float64)
    d = y.shape[1]
    found = pair_search(y, rng)
    rows = [f for _, f in found]
    rest = [j for j in range(d) if all(j not in c for c, _ in found)]
    hyper = 0
    for cols in _subspaces(rest, d):
        budget = TRIPLE_BUDGET if len(cols) == 3 else TUPLE_BUDGET
        normals = hyperplane_search(y, cols, rng, budget)
        rows.append(normals)
        hyper += normals.shape[0]
    directions = np.vstack(rows) if rows else np.zeros((0, d))
    return TieFinding(directions, len(found), hyper)
