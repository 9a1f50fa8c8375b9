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
  the noise ``e`` regenerated from its seed, must give the input back to
  ``1e-9 * (|x| + std)``.

A gdp release keeps no distance (its noise moves them), so without its key
it cannot be checked at all, which is an error rather than a pass.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from anonlab.errors import AnonlabError
from anonlab.verify.tables import (
    FloatArray,
    IntArray,
    check_present,
    numeric_matrix,
    original_matrix,
    shape_findings,
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
        raise AnonlabError("key is needed: a gdp release adds noise, so its distances cannot "
                           "check it; give its key file to check that it inverts to the input",
                           parameter="key")
    check_present(original, columns, "input")
    problems = shape_findings(original, release)
    if problems:
        return problems
    problems += unchanged_findings(original, release, columns)
    x = original_matrix(original, columns)
    y, problem = numeric_matrix(release, columns, "release")
    if problem is not None:
        return [*problems, problem]
    std = _deviations(x, columns)
    if method in ORTHOGONAL:
        problems += distance_findings(x / std, y, pairs=pairs, all_pairs_limit=all_pairs_limit,
                                      seed=seed)
    if key is not None:
        problems += key_findings(key, x, y, columns, method)
    return problems


def pairs_description(n: int, pairs: int = SAMPLED_PAIRS,
                      all_pairs_limit: int = ALL_PAIRS_LIMIT) -> str:
    """Which pairs :func:`distance_findings` checks for ``n`` records, in words."""
    if n <= all_pairs_limit:
        return f"all {n * (n - 1) // 2:,} pairs"
    return f"{pairs:,} random pairs and every record with its neighbour along a random direction"


def _deviations(x: FloatArray, columns: Sequence[str]) -> FloatArray:
    """Population deviations of the input's columns; a constant column is the user's error."""
    std = x.std(axis=0)
    flat = np.flatnonzero(~(std > 0))
    if flat.size:
        raise AnonlabError(f"column '{columns[int(flat[0])]}' of the input is constant, so no "
                           "perturbation can have used it: give the input the release was "
                           "made from")
    return np.asarray(std, dtype=np.float64)


# ------------------------------------------------------------------------------- distances


def distance_findings(scaled: FloatArray, y: FloatArray, *, pairs: int = SAMPLED_PAIRS,
                      all_pairs_limit: int = ALL_PAIRS_LIMIT, seed: int = 0) -> list[str]:
    """A finding when released distances differ from the z-score distances.

    ``scaled`` is ``x / std`` (z-scores up to a shift, which no distance sees).
    """
    n = scaled.shape[0]
    if n < 2:
        return []
    if n <= all_pairs_limit:
        bad, count, total = _all_pairs(scaled, y)
    else:
        first, second = _sampled_pairs(scaled, pairs, seed)
        bad, count, total = _listed_pairs(scaled, y, first, second)
    if bad is None:
        return []
    i, j, dz, dy = bad
    return [f"the distance between records {i + 1} and {j + 1} is {dy:.12g} in the release "
            f"but {dz:.12g} between their z-scores ({count:,} of {total:,} pairs checked "
            "differ by more than 1e-9 relative)"]


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


def _sampled_pairs(scaled: FloatArray, pairs: int, seed: int) -> tuple[IntArray, IntArray]:
    """``pairs`` seeded random pairs of distinct records, then every record with a near one.

    The near pairs join consecutive records in the order of their projection
    on a seeded random direction: every record is in one, and they are short
    (the distances clustering depends on most). An exact nearest-neighbour
    search would cost far more in several dimensions: a k-d tree took 20 s
    of CPU for 100,000 records in 10 columns of skewed data, and grows faster
    than the record count.
    """
    n, d = scaled.shape
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n, pairs)
    second = rng.integers(0, n - 1, pairs)
    second += second >= first  # never the record itself
    direction = rng.standard_normal(d)
    order = np.argsort(scaled @ direction, kind="stable")
    return (np.concatenate([first, order[:-1]]).astype(np.int64),
            np.concatenate([second, order[1:]]).astype(np.int64))


def _listed_pairs(scaled: FloatArray, y: FloatArray, first: IntArray, second: IntArray
                  ) -> tuple[Bad, int, int]:
    dz = np.sqrt(np.sum((scaled[first] - scaled[second]) ** 2, axis=1))
    dy = np.sqrt(np.sum((y[first] - y[second]) ** 2, axis=1))
    wrong = np.flatnonzero(_differ(dz, dy))
    if not wrong.size:
        return None, 0, first.size
    w = int(wrong[0])
    return (int(first[w]), int(second[w]), float(dz[w]), float(dy[w])), wrong.size, first.size


# ------------------------------------------------------------------------------------- key


class _DamagedKeyError(Exception):
    """A key whose content cannot be read as a key (the message says what is wrong)."""


def key_findings(key: Mapping[str, Any], x: FloatArray, y: FloatArray,
                 columns: Sequence[str], method: str) -> list[str]:
    """Findings about the key and about undoing the release with it (see the module docstring)."""
    if not isinstance(key, Mapping) or key.get("format") != KEY_FORMAT:
        raise AnonlabError("key is not a perturbation key: give the key file written with "
                           "the release", parameter="key")
    sealed = _digest_findings(key)
    try:
        means, stds, matrix, translation, noise = _key_parts(key, len(columns))
    except _DamagedKeyError as exc:
        return [*sealed, f"the key is damaged: {exc}"]
    mismatch = _match_findings(key, columns, method, x.shape[0])
    if mismatch:
        return [*sealed, *mismatch]
    names = [str(c) for c in key["columns"]]
    pos = [list(columns).index(c) for c in names]  # everything below in the key's order
    x, y = x[:, pos], y[:, pos]
    content = _moment_findings(x, means, stds, names) + _block_findings(key, names)
    if content:  # a key that is wrong in itself: undoing the release with it says no more
        return [*sealed, *content]
    shift = y - translation
    shift -= _noise(noise, (shift.shape[0], shift.shape[1]))
    restored = means + stds * (shift @ matrix)
    return [*sealed, *_restore_findings(restored, x, stds, names)]


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
        return ["the key has no integrity digest ('sha256'): it is not the file that was "
                "written with the release"]
    if digest != key_digest(key):
        return ["the key file was changed after it was written: its content does not match "
                "its SHA-256 digest"]
    return []


def _vector(value: Any, d: int, what: str) -> FloatArray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise _DamagedKeyError(f"its {what} are not numbers") from None
    if arr.shape != (d,) or not np.all(np.isfinite(arr)):
        raise _DamagedKeyError(f"its {what} are not {d} finite numbers")
    return arr


def _key_parts(key: Mapping[str, Any], d: int
               ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, tuple[int, float] | None]:
    """Means, deviations, the full ``d x d`` matrix (key column order), translation, noise."""
    try:
        names = [str(c) for c in key["columns"]]
        means = _vector(key["means"], len(names), "means")
        stds = _vector(key["stds"], len(names), "deviations")
        blocks = [([str(c) for c in b["columns"]], np.asarray(b["matrix"], dtype=np.float64))
                  for b in key["blocks"]]
        raw_t = key.get("translation")
        translation = (np.zeros(len(names)) if raw_t is None
                       else _vector(raw_t, len(names), "translation"))
        noise_part = key.get("noise") or {}
        scale = float(noise_part.get("scale") or 0.0)
        seed = noise_part.get("seed")
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
    noise = None if seed is None or scale == 0.0 else (int(seed), scale)
    return means, stds, matrix, translation, noise


def _match_findings(key: Mapping[str, Any], columns: Sequence[str], method: str,
                    records: int) -> list[str]:
    """The key must be the release's: same method, columns and record count."""
    if key.get("method") != method:
        return [f"the key is for method '{key.get('method')}', the report's release for "
                f"'{method}'"]
    if sorted(str(c) for c in key["columns"]) != sorted(columns):
        return [f"the key's columns {list(key['columns'])} are not the release's "
                f"{list(columns)}"]
    if key.get("records") != records:
        return [f"the key is for {key.get('records')} records, the release has {records}"]
    return []


def _moment_findings(x: FloatArray, means: FloatArray, stds: FloatArray,
                     columns: Sequence[str]) -> list[str]:
    """The key's means and deviations must be the input's (population deviation, to 1e-9)."""
    mean = x.mean(axis=0)
    std = np.sqrt(np.mean((x - mean) ** 2, axis=0))
    for what, got, want, tol in (
        ("mean", means, mean, MOMENT_RTOL * (np.abs(mean) + std)),
        ("deviation", stds, std, MOMENT_RTOL * std),
    ):
        wrong = np.flatnonzero(np.abs(got - want) > tol)
        if wrong.size:
            j = int(wrong[0])
            return [f"the key's {what} of column '{columns[j]}' is {got[j]:.12g}, but the "
                    f"input's is {want[j]:.12g}"]
    return []


def _block_findings(key: Mapping[str, Any], columns: Sequence[str]) -> list[str]:
    """Every column in exactly one block; every block's matrix orthogonal."""
    seen = [str(c) for b in key["blocks"] for c in b["columns"]]
    if sorted(seen) != sorted(columns):
        return ["the key's blocks do not cover each column exactly once"]
    for block in key["blocks"]:
        a = np.asarray(block["matrix"], dtype=np.float64)
        if not np.all(np.isfinite(a)) or np.max(np.abs(a @ a.T - np.eye(a.shape[0]))) > \
                ORTHOGONAL_TOL:
            return [f"the key's matrix of block {list(block['columns'])} is not orthogonal "
                    "(to 1e-9)"]
    return []


def _noise(noise: tuple[int, float] | None, shape: tuple[int, int]) -> FloatArray:
    """The gdp noise ``scale * N(0, 1)``, drawn row by row from ``default_rng(seed)``."""
    out = np.zeros(shape)
    if noise is None:
        return out
    seed, scale = noise
    gen = np.random.default_rng(seed)
    for start in range(0, shape[0], NOISE_ROWS):
        stop = min(shape[0], start + NOISE_ROWS)
        out[start:stop] = gen.standard_normal((stop - start, shape[1])) * scale
    return out


def _restore_findings(restored: FloatArray, x: FloatArray, stds: FloatArray,
                      columns: Sequence[str]) -> list[str]:
    """Undoing the release must give the input: ``|x' - x| <= 1e-9 (|x| + std)``."""
    wrong = np.abs(restored - x) > INVERT_RTOL * (np.abs(x) + stds)
    if not wrong.any():
        return []
    rows, cols = np.nonzero(wrong)
    i, j = int(rows[0]), int(cols[0])
    return [f"undoing the release with the key gives {restored[i, j]:.12g} for column "
            f"'{columns[j]}' of record {i + 1}, but the input holds {x[i, j]:.12g} "
            f"({int(wrong.sum()):,} values differ)"]
