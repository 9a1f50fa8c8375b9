"""An independent check of a perturbed release, written apart from the perturbation code.

What the perturbation promises (docs/perturbation.md): the chosen columns are
z-scored, ``z = (x - mean) / std`` with the population deviation, and every
record is released as ``y = A z`` for an orthogonal ``A`` (obt, rbt,
rotation), or ``y = A z + t + e`` with a translation ``t`` and Gaussian
noise ``e`` (gdp). Other columns pass through unchanged. So:

* **Distances** (obt, rbt, rotation): ``||y_i - y_j|| = ||z_i - z_j||`` for
  every pair of records, checked to ``1e-9 * max(||z_i - z_j||, 1)`` (relative,
  with one standard deviation as the floor for near-identical records). The
  z-score differences are computed from the input here, ``(x_i - x_j) / std``
  (no mean enters, so no cancellation). Up to 2,000 records every pair is
  checked; above that a seeded random sample of 20,000 pairs, and every
  record with the next one in the order of a seeded random projection (short
  pairs, every record in one).
* **The key** (any method, when given): read as plain JSON, not through the
  library's key class. Its SHA-256 digest (format version 2) must match its
  content; its method, columns and record count must be the release's; its
  means and deviations must be the input's (to 1e-9 relative); its blocks must
  cover the columns once with orthogonal matrices (``|A A^T - E| <= 1e-9``);
  and undoing the release with it, ``x = mean + std * ((y - t - e) A)`` with
  the noise ``e`` regenerated from its seed (one stream, or with
  ``noise.stream = "blocked"`` one stream per block of 65,536 rows seeded by
  ``[seed, block]``), must give the input back to
  ``1e-9 * (|x| + std)``.

A gdp release keeps no distance (its noise moves them), so without its key
it cannot be checked at all, which is an error rather than a pass.

Text is parsed by Arrow's cast to ``float64`` (a correctly rounded parser,
so a double's shortest round-trip text reads back as exactly that double),
with no Python object per value. Arrow takes a subset of what Python's
``float`` takes (no spaces, ``_`` or non-ASCII digits) and gives the same
double for it, so a column Arrow refuses, or one with a missing value, is
parsed value by value with ``float`` instead, which decides as before.
Columns that are numbers already (a DataFrame's, or a release re-read with
the reader's ``doubles``) are taken as they are. The
input and the release are each held once as an ``n x d`` matrix; everything
else is computed a block of rows (or pairs) at a time, so a million records
in 20 columns need about 2 x 160 MB.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from anonlab.errors import AnonlabError
from anonlab.threads import blas_threads
from anonlab.verify.tables import (
    FloatArray,
    IntArray,
    arrow_text,
    check_present,
    floats,
    shape_findings,
    text,
    unchanged_findings,
)

METHODS = ("obt", "rbt", "rotation", "gdp")
ORTHOGONAL = ("obt", "rbt", "rotation")
KEY_FORMAT = "anonlab-perturbation-key"
DISTANCE_RTOL = 1e-9
INVERT_RTOL = 1e-9
MOMENT_RTOL = 1e-9
ORTHOGONAL_TOL = 1e-9
ALL_PAIRS_LIMIT = 2_000
SAMPLED_PAIRS = 20_000
BLOCK_VALUES = 4_000_000  # doubles in one block of pairwise differences
NOISE_ROWS = 65_536  # rows of noise regenerated at a time (the stream does not depend on it)
NOISE_BLOCK_ROWS = 65_536  # rows of a key's "blocked" noise: [j B, (j + 1) B) from [seed, j]
BLOCK_ROWS = 65_536  # rows (or pairs) handled at a time: temporaries of a few MB


def check_perturbation(
    original: pd.DataFrame,
    release: pd.DataFrame,
    columns: Sequence[str],
    method: str,
    *,
    key: Mapping[str, Any] | None = None,
    pairs: int = SAMPLED_PAIRS,
    all_pairs_limit: int = ALL_PAIRS_LIMIT,
    seed: int = 0,
) -> list[str]:
    """Problems with ``release`` as a perturbation of ``columns`` of ``original`` (empty: holds).

    ``key`` is the key file's parsed JSON (optional for obt, rbt and
    rotation; needed for gdp). ``pairs`` and ``seed`` set the random sample
    of pairs checked above ``all_pairs_limit`` records.
    """
    if method not in METHODS:
        raise AnonlabError(f"method '{method}' is not a perturbation: one of {', '.join(METHODS)}")
    if method not in ORTHOGONAL and key is None:
        raise AnonlabError(
            "key is needed: a gdp release adds noise, so its distances cannot "
            "check it; give its key file to check that it inverts to the input",
            parameter="key",
        )
    check_present(original, columns, "input")
    problems = shape_findings(original, release)
    if problems:
        return problems
    with blas_threads(1):  # BLAS threads waiting on each other cost more CPU than they save
        return _findings(original, release, columns, method, key, pairs, all_pairs_limit, seed)


def _findings(
    original: pd.DataFrame,
    release: pd.DataFrame,
    columns: Sequence[str],
    method: str,
    key: Mapping[str, Any] | None,
    pairs: int,
    all_pairs_limit: int,
    seed: int,
) -> list[str]:
    """The findings of :func:`check_perturbation` once the tables have the same shape."""
    problems = unchanged_findings(original, release, columns)
    x = input_matrix(original, columns)
    y, problem = numeric_matrix(release, columns, "release")
    if problem is not None:
        return [*problems, problem]
    std = _deviations(x, columns)
    if method in ORTHOGONAL:
        problems += distance_findings(
            x, y, std, pairs=pairs, all_pairs_limit=all_pairs_limit, seed=seed
        )
    if key is not None:
        problems += key_findings(key, x, y, columns, method)
    return problems


# -------------------------------------------------------------------------------- parsing


def numeric_matrix(
    frame: pd.DataFrame, columns: Sequence[str], what: str
) -> tuple[FloatArray, str | None]:
    """The ``n x d`` doubles of ``columns`` and a finding if a value is not a finite number.

    Text columns are cast by Arrow (see the module docstring); a column Arrow
    cannot take, and a column of numbers, goes through
    :func:`anonlab.verify.tables.floats` (Python's ``float``, or the numbers
    as they are).
    """
    out = np.empty((frame.shape[0], len(columns)), dtype=np.float64)
    finite = _cast_into(out, [_castable(frame[name]) for name in columns])
    for j, name in enumerate(columns):
        column = frame[name]
        bad = None
        if finite[j] is None:
            values, bad = floats(column)
            if bad is None:
                out[:, j] = values
        elif not finite[j]:
            bad = int(np.flatnonzero(~np.isfinite(out[:, j]))[0])
        if bad is not None:
            shown = text(column.iloc[bad : bad + 1])[0]
            return out, (
                f"column '{name}' of the {what} holds '{shown}' at row {bad + 1}, "
                "not a finite number"
            )
    return out, None


def input_matrix(frame: pd.DataFrame, columns: Sequence[str]) -> FloatArray:
    """The input's numeric columns; a value that is not a number is the user's error."""
    values, problem = numeric_matrix(frame, columns, "input")
    if problem is not None:
        raise AnonlabError(f"{problem}: give the input the release was made from")
    return values


def _cast_into(out: FloatArray, texts: Sequence[Any]) -> list[bool | None]:
    """Cast Arrow columns to doubles into the columns of ``out``, a block of rows at a time.

    A block of rows of ``out`` stays in the cache while its columns are
    written. Returns for each column whether all its values are finite, or
    ``None`` when it was not filled: not text (``texts[j] is None``) or a
    value Arrow refuses (then Python's ``float`` decides: ``" 1.5"`` passes).
    """
    import pyarrow as pa

    finite: list[bool | None] = [None if t is None else True for t in texts]
    n = out.shape[0]
    for start in range(0, n, BLOCK_ROWS):
        stop = min(n, start + BLOCK_ROWS)
        for j, strings in enumerate(texts):
            if finite[j] is None:
                continue
            try:
                values = strings.slice(start, stop - start).cast(pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                finite[j] = None
                continue
            out[start:stop, j] = values.to_numpy(zero_copy_only=False)
            finite[j] = finite[j] and bool(np.isfinite(out[start:stop, j]).all())
    return finite


def _castable(column: pd.Series) -> Any:
    """The column as Arrow text (or Arrow doubles) to cast, else ``None``.

    ``None`` for NumPy numbers and booleans (``floats`` takes them as they are,
    or refuses them) and for a column that is not all text.
    """
    import pyarrow as pa

    kind = column.dtype
    if isinstance(kind, pd.ArrowDtype) and pa.types.is_float64(kind.pyarrow_dtype):
        values = pa.array(column)  # no copy
        return None if values.null_count else values
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return None
    return arrow_text(column)


def pairs_description(
    n: int, pairs: int = SAMPLED_PAIRS, all_pairs_limit: int = ALL_PAIRS_LIMIT
) -> str:
    """Which pairs :func:`distance_findings` checks for ``n`` records, in words."""
    if n <= all_pairs_limit:
        return f"all {n * (n - 1) // 2:,} pairs"
    return f"{pairs:,} random pairs and every record with its neighbour along a random direction"


def _deviations(x: FloatArray, columns: Sequence[str]) -> FloatArray:
    """Population deviations of the input's columns; a constant column is the user's error."""
    _, std = moments(x)
    flat = np.flatnonzero(~(std > 0))
    if flat.size:
        raise AnonlabError(
            f"column '{columns[int(flat[0])]}' of the input is constant, so no "
            "perturbation can have used it: give the input the release was "
            "made from"
        )
    return std


def moments(x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Column means and population deviations, ``sqrt(sum_i (x_i - mean)^2 / n)``.

    Two passes (the mean first, so no cancellation), the second a block of
    rows at a time: no ``n x d`` temporary.
    """
    n = x.shape[0]
    mean = np.asarray(x.mean(axis=0), dtype=np.float64)
    squares = np.zeros(x.shape[1])
    for start in range(0, n, BLOCK_ROWS):
        centred = x[start : start + BLOCK_ROWS] - mean
        squares += np.einsum("ij,ij->j", centred, centred)
    return mean, np.sqrt(squares / n)


# ------------------------------------------------------------------------------- distances


def distance_findings(
    x: FloatArray,
    y: FloatArray,
    std: FloatArray | None = None,
    *,
    pairs: int = SAMPLED_PAIRS,
    all_pairs_limit: int = ALL_PAIRS_LIMIT,
    seed: int = 0,
) -> list[str]:
    """A finding when released distances differ from the z-score distances.

    ``x`` holds the input's values and ``std`` their deviations: the z-score
    difference of records ``i`` and ``j`` is ``(x_i - x_j) / std`` (no mean
    enters, and no shift changes a distance). ``std=None``: ``x`` is scaled.
    """
    n = x.shape[0]
    if n < 2:
        return []
    scale = np.ones(x.shape[1]) if std is None else std
    if n <= all_pairs_limit:
        bad, count, total = _all_pairs(x / scale, y)
    else:
        first, second, order = _sampled_pairs(x, scale, pairs, seed)
        bad, count = _listed_pairs(x, scale, y, first, second)
        near, more = _neighbour_pairs(x, scale, y, order)
        bad, count, total = bad or near, count + more, first.size + n - 1
    if bad is None:
        return []
    i, j, dz, dy = bad
    return [
        f"the distance between records {i + 1} and {j + 1} is {dy:.12g} in the release "
        f"but {dz:.12g} between their z-scores ({count:,} of {total:,} pairs checked "
        "differ by more than 1e-9 relative)"
    ]


Bad = tuple[int, int, float, float] | None


def _differ(dz: FloatArray, dy: FloatArray) -> np.ndarray[Any, np.dtype[np.bool_]]:
    return np.asarray(np.abs(dy - dz) > DISTANCE_RTOL * np.maximum(dz, 1.0))


def _all_pairs(scaled: FloatArray, y: FloatArray) -> tuple[Bad, int, int]:
    """Every pair ``i < j``, in blocks of rows: (first bad pair, bad count, pairs)."""
    n, d = scaled.shape
    rows = max(1, BLOCK_VALUES // (n * d))
    bad: Bad = None
    count = 0
    for start in range(0, n - 1, rows):
        stop = min(n - 1, start + rows)
        dz = _block_distances(scaled, start, stop)
        dy = _block_distances(y, start, stop)
        upper = np.arange(n)[None, :] > np.arange(start, stop)[:, None]
        wrong = _differ(dz, dy) & upper
        if wrong.any():
            count += int(wrong.sum())
            if bad is None:
                r, c = (int(v[0]) for v in np.nonzero(wrong))
                bad = (start + r, c, float(dz[r, c]), float(dy[r, c]))
    return bad, count, n * (n - 1) // 2


def _block_distances(values: FloatArray, start: int, stop: int) -> FloatArray:
    """Euclidean distances of rows ``start:stop`` to every row, from differences."""
    diff = values[start:stop, None, :] - values[None, :, :]
    return np.asarray(np.sqrt(np.einsum("ijk,ijk->ij", diff, diff)), dtype=np.float64)


def _sampled_pairs(
    x: FloatArray, scale: FloatArray, pairs: int, seed: int
) -> tuple[IntArray, IntArray, IntArray]:
    """``pairs`` seeded random pairs of distinct records, and an order of the records that
    pairs each with a near one (the next in the order).

    The near pairs join consecutive records in the order of their projection
    on a seeded random direction: every record is in one, and they are short
    (the distances clustering depends on most). An exact nearest-neighbour
    search would cost far more in several dimensions: a k-d tree took 20 s
    of CPU for 100,000 records in 10 columns of skewed data, and grows faster
    than the record count.
    """
    n, d = x.shape
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n, pairs)
    second = rng.integers(0, n - 1, pairs)
    second += second >= first  # never the record itself
    direction = rng.standard_normal(d)
    projection = np.empty(n)
    for start in range(0, n, BLOCK_ROWS):
        stop = min(n, start + BLOCK_ROWS)
        projection[start:stop] = (x[start:stop] / scale) @ direction
    order = np.argsort(projection, kind="stable")
    return first.astype(np.int64), second.astype(np.int64), order.astype(np.int64)


def _listed_pairs(
    x: FloatArray, scale: FloatArray, y: FloatArray, first: IntArray, second: IntArray
) -> tuple[Bad, int]:
    """The listed pairs, a block at a time: (first bad pair, bad count)."""
    bad: Bad = None
    count = 0
    for start in range(0, first.size, BLOCK_ROWS):
        i, j = first[start : start + BLOCK_ROWS], second[start : start + BLOCK_ROWS]
        dz = _norms((x[i] - x[j]) / scale)
        dy = _norms(y[i] - y[j])
        wrong = np.flatnonzero(_differ(dz, dy))
        if wrong.size and bad is None:
            w = int(wrong[0])
            bad = (int(i[w]), int(j[w]), float(dz[w]), float(dy[w]))
        count += wrong.size
    return bad, count


def _neighbour_pairs(
    x: FloatArray, scale: FloatArray, y: FloatArray, order: IntArray
) -> tuple[Bad, int]:
    """Every record with the next one in ``order``: (first bad pair, bad count).

    A block of the order at a time, each record's row gathered once per block.
    """
    bad: Bad = None
    count = 0
    for start in range(0, order.size - 1, BLOCK_ROWS):
        rows = order[start : start + BLOCK_ROWS + 1]
        xs, ys = x[rows], y[rows]
        dz = _norms((xs[:-1] - xs[1:]) / scale)
        dy = _norms(ys[:-1] - ys[1:])
        wrong = np.flatnonzero(_differ(dz, dy))
        if wrong.size and bad is None:
            w = int(wrong[0])
            bad = (int(rows[w]), int(rows[w + 1]), float(dz[w]), float(dy[w]))
        count += wrong.size
    return bad, count


def _norms(diff: FloatArray) -> FloatArray:
    """Euclidean length of every row."""
    return np.asarray(np.sqrt(np.einsum("ij,ij->i", diff, diff)), dtype=np.float64)


# ------------------------------------------------------------------------------------- key


class _DamagedKeyError(Exception):
    """A key whose content cannot be read as a key (the message says what is wrong)."""


def key_findings(
    key: Mapping[str, Any], x: FloatArray, y: FloatArray, columns: Sequence[str], method: str
) -> list[str]:
    """Findings about the key and about undoing the release with it (see the module docstring)."""
    if not isinstance(key, Mapping) or key.get("format") != KEY_FORMAT:
        raise AnonlabError(
            "key is not a perturbation key: give the key file written with the release",
            parameter="key",
        )
    sealed = _digest_findings(key)
    try:
        means, stds, matrix, translation, noise = _key_parts(key, len(columns))
    except _DamagedKeyError as exc:
        return [*sealed, f"the key is damaged: {exc}"]
    mismatch = _match_findings(key, columns, method, x.shape[0])
    if mismatch:
        return [*sealed, *mismatch]
    names = [str(c) for c in key["columns"]]
    pos = [list(columns).index(c) for c in names]  # the key's order, as indices into x and y
    content = _moment_findings(x, pos, means, stds, names) + _block_findings(key, names)
    if content:  # a key that is wrong in itself: undoing the release with it says no more
        return [*sealed, *content]
    undo = _Undo(means, stds, matrix, translation, noise)
    return [*sealed, *undo.findings(x, y, pos, names)]


def key_digest(content: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a key's content without its digest, as canonical JSON.

    Canonical: keys sorted, no spaces, UTF-8, floats in shortest round-trip
    form (Python's ``json``), as the key was sealed when written.
    """
    plain = {k: v for k, v in content.items() if k != "sha256"}
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _digest_findings(key: Mapping[str, Any]) -> list[str]:
    digest = key.get("sha256")
    if digest is None:
        if key.get("version") == 1:
            return []  # written before keys were sealed: checked by content alone
        return [
            "the key has no integrity digest ('sha256'): it is not the file that was "
            "written with the release"
        ]
    if digest != key_digest(key):
        return [
            "the key file was changed after it was written: its content does not match "
            "its SHA-256 digest"
        ]
    return []


def _vector(value: Any, d: int, what: str) -> FloatArray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise _DamagedKeyError(f"its {what} are not numbers") from None
    if arr.shape != (d,) or not np.all(np.isfinite(arr)):
        raise _DamagedKeyError(f"its {what} are not {d} finite numbers")
    return arr


def _key_parts(
    key: Mapping[str, Any], d: int
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, tuple[int, float, bool] | None]:
    """Means, deviations, the full ``d x d`` matrix (key column order), translation, noise."""
    try:
        names = [str(c) for c in key["columns"]]
        means = _vector(key["means"], len(names), "means")
        stds = _vector(key["stds"], len(names), "deviations")
        blocks = [
            ([str(c) for c in b["columns"]], np.asarray(b["matrix"], dtype=np.float64))
            for b in key["blocks"]
        ]
        raw_t = key.get("translation")
        translation = (
            np.zeros(len(names)) if raw_t is None else _vector(raw_t, len(names), "translation")
        )
        noise_part = key.get("noise") or {}
        scale = float(noise_part.get("scale") or 0.0)
        seed = noise_part.get("seed")
        blocked = noise_part.get("stream") == "blocked"
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _DamagedKeyError(f"it lacks or garbles {exc!s}") from None
    if len(names) != d:
        raise _DamagedKeyError(f"it has {len(names)} columns, the release {d}")
    if not (np.isfinite(scale) and scale >= 0):
        raise _DamagedKeyError(f"its noise scale {scale} is not a number >= 0")
    if not np.all(stds > 0):
        raise _DamagedKeyError("a deviation is not positive")
    matrix = np.zeros((d, d))
    index = {c: i for i, c in enumerate(names)}
    for cols, block in blocks:
        if block.shape != (len(cols), len(cols)) or any(c not in index for c in cols):
            raise _DamagedKeyError(f"the block {cols} does not fit its columns")
        idx = [index[c] for c in cols]
        matrix[np.ix_(idx, idx)] = block
    noise = None if seed is None or scale == 0.0 else (int(seed), scale, blocked)
    return means, stds, matrix, translation, noise


def _match_findings(
    key: Mapping[str, Any], columns: Sequence[str], method: str, records: int
) -> list[str]:
    """The key must be the release's: same method, columns and record count."""
    if key.get("method") != method:
        return [f"the key is for method '{key.get('method')}', the report's release for '{method}'"]
    if sorted(str(c) for c in key["columns"]) != sorted(columns):
        return [f"the key's columns {list(key['columns'])} are not the release's {list(columns)}"]
    if key.get("records") != records:
        return [f"the key is for {key.get('records')} records, the release has {records}"]
    return []


def _moment_findings(
    x: FloatArray, pos: Sequence[int], means: FloatArray, stds: FloatArray, columns: Sequence[str]
) -> list[str]:
    """The key's means and deviations must be the input's (population deviation, to 1e-9).

    ``pos`` lists the input's column of each of the key's ``columns``.
    """
    mean, std = (m[pos] for m in moments(x))
    for what, got, want, tol in (
        ("mean", means, mean, MOMENT_RTOL * (np.abs(mean) + std)),
        ("deviation", stds, std, MOMENT_RTOL * std),
    ):
        wrong = np.flatnonzero(np.abs(got - want) > tol)
        if wrong.size:
            j = int(wrong[0])
            return [
                f"the key's {what} of column '{columns[j]}' is {got[j]:.12g}, but the "
                f"input's is {want[j]:.12g}"
            ]
    return []


def _block_findings(key: Mapping[str, Any], columns: Sequence[str]) -> list[str]:
    """Every column in exactly one block; every block's matrix orthogonal."""
    seen = [str(c) for b in key["blocks"] for c in b["columns"]]
    if sorted(seen) != sorted(columns):
        return ["the key's blocks do not cover each column exactly once"]
    for block in key["blocks"]:
        a = np.asarray(block["matrix"], dtype=np.float64)
        if (
            not np.all(np.isfinite(a))
            or np.max(np.abs(a @ a.T - np.eye(a.shape[0]))) > ORTHOGONAL_TOL
        ):
            return [
                f"the key's matrix of block {list(block['columns'])} is not orthogonal (to 1e-9)"
            ]
    return []


class _NoiseRows:
    """The noise of consecutive rows from row 0: one stream ``default_rng(seed)``, or with
    ``blocked`` a stream ``default_rng([seed, j])`` per block ``j`` of rows."""

    def __init__(self, seed: int, blocked: bool) -> None:
        self.seed, self.blocked = seed, blocked
        self.block = 0
        self.gen = np.random.default_rng([seed, 0] if blocked else seed)

    def draw(self, start: int, shape: tuple[int, ...]) -> FloatArray:
        """The draws of rows ``start .. start + shape[0]`` (the rows after the last drawn)."""
        if not self.blocked:
            return self.gen.standard_normal(shape)
        out = np.empty(shape)
        done = 0
        while done < shape[0]:
            row = start + done
            if row // NOISE_BLOCK_ROWS != self.block:
                self.block = row // NOISE_BLOCK_ROWS
                self.gen = np.random.default_rng([self.seed, self.block])
            take = min(shape[0] - done, (self.block + 1) * NOISE_BLOCK_ROWS - row)
            out[done : done + take] = self.gen.standard_normal((take, shape[1]))
            done += take
        return out


@dataclass(frozen=True)
class _Undo:
    """Undoing a release with a key: ``x = mean + std * ((y - t - e) A)``, in the key's order."""

    means: FloatArray
    stds: FloatArray
    matrix: FloatArray
    translation: FloatArray
    noise: tuple[int, float, bool] | None  # (seed, scale, blocked) of the gdp noise ``e``

    def findings(
        self, x: FloatArray, y: FloatArray, pos: Sequence[int], columns: Sequence[str]
    ) -> list[str]:
        """Undoing the release must give the input: ``|x' - x| <= 1e-9 (|x| + std)``.

        A block of :data:`NOISE_ROWS` rows at a time, the noise drawn row by
        row from ``default_rng(seed)`` as it was added, or for a blocked key
        from ``default_rng([seed, j])`` for rows of block ``j`` of
        :data:`NOISE_BLOCK_ROWS` (the stream does not depend on ``NOISE_ROWS``).
        """
        gen = None if self.noise is None else _NoiseRows(self.noise[0], self.noise[2])
        same = list(pos) == list(range(x.shape[1]))  # the key's order is the release's
        first: tuple[int, int, float, float] | None = None
        count = 0
        for start in range(0, x.shape[0], NOISE_ROWS):
            rows = slice(start, start + NOISE_ROWS)
            xb, yb = (x[rows], y[rows]) if same else (x[rows][:, pos], y[rows][:, pos])
            shift = yb - self.translation
            if gen is not None and self.noise is not None:
                shift -= gen.draw(start, shift.shape) * self.noise[1]
            restored = self.means + self.stds * (shift @ self.matrix)
            wrong = np.abs(restored - xb) > INVERT_RTOL * (np.abs(xb) + self.stds)
            if not wrong.any():
                continue
            count += int(wrong.sum())
            if first is None:
                i, j = (int(v[0]) for v in np.nonzero(wrong))
                first = (start + i, j, float(restored[i, j]), float(xb[i, j]))
        if first is None:
            return []
        i, j, got, want = first
        return [
            f"undoing the release with the key gives {got:.12g} for column "
            f"'{columns[j]}' of record {i + 1}, but the input holds {want:.12g} "
            f"({count:,} values differ)"
        ]
