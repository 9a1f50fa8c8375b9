"""The four perturbations and their inverse.

Every method z-scores the chosen columns (population deviation, as the
paper's ``Var`` divides by ``N``) and multiplies each record by an orthogonal
matrix, so Euclidean distances between the standardized records are kept and
distance-based clustering of the release finds the same clusters.

* ``obt`` (the paper, section 3): pair the columns at random, the last three
  forming a triple when their count is odd; each pair/triple gets a matrix
  drawn from the seeded :class:`~anonlab.perturbation.library.MatrixLibrary`
  whose matrices all have ``P(A) >= min_privacy``.
* ``rbt`` (Oliveira and Zaiane 2004): pair the columns at random and rotate
  each pair ``(a, b) -> (a cos t + b sin t, -a sin t + b cos t)`` by an angle
  ``t`` drawn uniformly from the security range where ``Var(a - a') >= rho_1``
  and ``Var(b - b') >= rho_2`` on the data; an odd last column is rotated the
  same way with a column already rotated.
* ``rotation``: one Haar-random ``d x d`` orthogonal matrix.
* ``gdp`` (geometric perturbation, Chen and Liu 2005): a Haar-random rotation,
  a random translation drawn uniformly from ``[-1, 1]^d`` and independent
  Gaussian noise ``N(0, noise^2)`` on every standardized value, drawn per block
  of rows (:func:`~anonlab.perturbation.key.add_noise`, so that an engine's
  piece draws its own rows' noise); it alone does not keep distances exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.perturbation.key import (
    METHODS,
    Block,
    PerturbationKey,
    add_noise,
    centred_moments,
    fingerprint,
)
from anonlab.perturbation.library import (
    MatrixLibrary,
    check_seed,
    fresh_seed,
    haar_orthogonal,
    library_seed,
)
from anonlab.perturbation.table import (
    NumericColumns,
    numeric_columns,
    with_columns,
)
from anonlab.progress import ProgressFn, report_to

if TYPE_CHECKING:
    import pandas as pd

FloatArray = NDArray[np.float64]
ANGLE_STEPS = 36_000  # security-range grid of 0.01 degree
BLOCK_ROWS = 1 << 16  # records multiplied by the matrix at a time (one progress step)


@dataclass(frozen=True)
class Perturbation:
    """A perturbation's release, its key, and the standardized data it started from."""

    release: pd.DataFrame
    key: PerturbationKey
    standardized: FloatArray
    released: FloatArray


def standardize(
    values: FloatArray, overwrite: bool = False
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Z-scores ``(x - mean) / std`` per column (population std), with means and stds.

    With ``overwrite`` the z-scores replace ``values`` (no copy of the table).
    """
    z, means, stds = centred_moments(values, overwrite)
    z /= stds
    return z, means, stds


def random_groups(count: int, rng: np.random.Generator) -> list[list[int]]:
    """Random pairs of ``range(count)``; the last three form a triple when ``count`` is odd."""
    order = [int(i) for i in rng.permutation(count)]
    groups = [order[i : i + 2] for i in range(0, count - count % 2, 2)]
    if count % 2:
        groups[-1].append(order[-1])
    return groups


def obt_blocks(
    names: Sequence[str], rng: np.random.Generator, library: MatrixLibrary
) -> list[Block]:
    """OBT: random pairs (and a last triple), each with a matrix drawn from the library."""
    return [
        Block(tuple(names[i] for i in g), library.draw(rng, len(g)))
        for g in random_groups(len(names), rng)
    ]


def rotation_2d(angle: float) -> FloatArray:
    """``[[cos t, sin t], [-sin t, cos t]]``, the rotation of Oliveira and Zaiane."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, s], [-s, c]])


def security_angles(cov: FloatArray, rho: tuple[float, float]) -> FloatArray:
    """Grid angles where ``Var(a - a') >= rho_1`` and ``Var(b - b') >= rho_2``.

    With ``a' = a cos t + b sin t`` and ``b' = -a sin t + b cos t``:
    ``Var(a - a') = (1-c)^2 Va + s^2 Vb - 2 (1-c) s C`` and
    ``Var(b - b') = s^2 Va + (1-c)^2 Vb + 2 (1-c) s C``.
    """
    t = np.arange(ANGLE_STEPS) * (2 * np.pi / ANGLE_STEPS)
    c1, s = 1 - np.cos(t), np.sin(t)
    va, vb, cab = cov[0, 0], cov[1, 1], cov[0, 1]
    var_a = c1 * c1 * va + s * s * vb - 2 * c1 * s * cab
    var_b = s * s * va + c1 * c1 * vb + 2 * c1 * s * cab
    return np.asarray(t[(var_a >= rho[0]) & (var_b >= rho[1])], dtype=np.float64)


def _rbt_angle(
    cov: FloatArray, rho: tuple[float, float], names: tuple[str, str], rng: np.random.Generator
) -> float:
    """An angle drawn uniformly from the security range of a pair with 2 x 2 covariance
    ``cov`` (:func:`security_angles`)."""
    angles = security_angles(cov, rho)
    if angles.size == 0:
        raise AnonlabError(
            f"rho ({rho[0]:g}, {rho[1]:g}) is out of reach for columns "
            f"'{names[0]}' and '{names[1]}': no rotation angle gives "
            "Var(A - A') that large; lower rho",
            parameter="rho",
        )
    return float(angles[int(rng.integers(angles.size))])


def z_covariance(z: FloatArray) -> FloatArray:
    """The population covariance matrix of the z-scores (``np.cov`` with ``bias=True``):
    everything of the data that :func:`rbt_blocks` looks at."""
    return np.atleast_2d(np.asarray(np.cov(z, rowvar=False, bias=True), dtype=np.float64))


def rbt_blocks(
    names: Sequence[str], cov: FloatArray, rng: np.random.Generator, rho: tuple[float, float]
) -> list[Block]:
    """RBT: random pairs rotated by an angle from the security range; odd column rotated again.

    ``cov`` is the ``d x d`` population covariance of the z-scores
    (:func:`z_covariance`): a pair's angle needs its 2 x 2 block; the odd
    column ``l`` is paired with the rotated partner ``r = m_0 p + m_1 q`` (``m``
    the partner's row of the first rotation of ``(p, q)``), whose covariance
    with ``l`` is ``T S T^T`` for ``S`` the covariance of ``(l, p, q)`` and
    ``T = [[1, 0, 0], [0, m_0, m_1]]``.
    """
    order = [int(i) for i in rng.permutation(len(names))]
    blocks: list[Block] = []
    for i in range(0, len(order) - 1, 2):
        a, b = order[i], order[i + 1]
        pair = cov[np.ix_([a, b], [a, b])]
        m = rotation_2d(_rbt_angle(pair, rho, (names[a], names[b]), rng))
        blocks.append(Block((names[a], names[b]), m))
    if len(order) % 2:
        last = order[-1]
        k = int(rng.integers(len(blocks)))
        first = blocks.pop(k)
        partner = int(rng.integers(2))
        lpq = [last, *(names.index(c) for c in first.columns)]
        to_pair = np.zeros((2, 3))
        to_pair[0, 0] = 1.0
        to_pair[1, 1:] = first.matrix[partner]  # the partner column after its rotation
        pair = to_pair @ cov[np.ix_(lpq, lpq)] @ to_pair.T
        m2 = rotation_2d(_rbt_angle(pair, rho, (names[last], first.columns[partner]), rng))
        three = np.eye(3)
        three[:2, :2] = first.matrix  # (p, q, last): first rotation on p, q
        second = np.eye(3)
        idx = [2, partner]  # then (last, rotated partner)
        second[np.ix_(idx, idx)] = m2
        blocks.insert(k, Block((*first.columns, names[last]), second @ three))
    return blocks


def _apply(z: FloatArray, full: FloatArray, progress: ProgressFn | None = None) -> FloatArray:
    """Rows ``A z`` of every record, one BLAS product per block of records.

    Each record's product is computed alone, so splitting the records into
    blocks gives the same doubles as one product; the columns of the result
    are contiguous. ``progress`` hears ``("perturbing blocks", done, total)``.
    """
    n = z.shape[0]
    total = max(1, -(-n // BLOCK_ROWS))
    report = report_to(progress)
    if total == 1:
        out = np.asarray((full @ z.T).T, dtype=np.float64)
        report("perturbing blocks", 1, 1)
        return out
    out = np.empty(z.shape, dtype=np.float64, order="F")
    for i in range(total):
        rows = slice(i * BLOCK_ROWS, min(n, (i + 1) * BLOCK_ROWS))
        out[rows] = (full @ z[rows].T).T
        report("perturbing blocks", i + 1, total)
    return out


def assemble(names: Sequence[str], blocks: Sequence[Block]) -> FloatArray:
    """The full ``d x d`` matrix ``A`` of ``blocks`` over the columns ``names`` (each block's
    matrix placed at its columns' rows and columns, zeros elsewhere)."""
    index = {c: i for i, c in enumerate(names)}
    full = np.zeros((len(names), len(names)))
    for b in blocks:
        idx = [index[c] for c in b.columns]
        full[np.ix_(idx, idx)] = b.matrix
    return full


def data_free_blocks(
    method: str,
    names: Sequence[str],
    rng: np.random.Generator,
    *,
    seed: int,
    min_privacy: float = 0.5,
    library: MatrixLibrary | None = None,
) -> list[Block]:
    """The blocks of ``obt``, ``rotation`` or ``gdp``, drawn from ``rng`` and nothing else.

    ``obt``: :func:`obt_blocks` from ``library`` (built from ``seed`` when
    ``None``, :func:`~anonlab.perturbation.library.library_seed`); ``rotation``
    and ``gdp``: one Haar-random ``d x d`` orthogonal matrix. ``rbt`` is not one
    of them: its angles depend on the data's covariances (:func:`rbt_blocks`).
    """
    if method == "obt":
        lib = (
            library if library is not None else MatrixLibrary.build(min_privacy, library_seed(seed))
        )
        if lib.min_privacy < min_privacy:
            raise AnonlabError(
                f"min_privacy {min_privacy:g} is above the privacy level "
                f"{lib.min_privacy:g} the OBT library was built for: build a "
                "library at this level",
                parameter="min_privacy",
            )
        return obt_blocks(names, rng, lib)
    if method in ("rotation", "gdp"):
        return [Block(tuple(names), haar_orthogonal(rng, len(names), 1)[0])]
    raise ValueError(f"method {method!r} draws its blocks from the data")


def check_method(method: str, noise: float = 0.1, rho: Sequence[float] = (0.5, 0.5)) -> None:
    """Refuse an unknown method, and a gdp noise or an rbt rho that is not a number >= 0."""
    if method not in METHODS:
        raise AnonlabError(
            f"method '{method}' is unknown: choose one of {', '.join(METHODS)}", parameter="method"
        )
    if method == "gdp" and (not np.isfinite(noise) or noise < 0):
        raise AnonlabError(f"noise {noise} must be a finite number >= 0", parameter="noise")
    if method == "rbt" and (len(rho) != 2 or min(rho) < 0 or not np.all(np.isfinite(rho))):
        raise AnonlabError(f"rho {tuple(rho)} must be two numbers >= 0", parameter="rho")


def perturb_array(
    data: NumericColumns,
    method: str,
    *,
    seed: int | None,
    min_privacy: float = 0.5,
    rho: tuple[float, float] = (0.5, 0.5),
    noise: float = 0.1,
    library: MatrixLibrary | None = None,
    overwrite: bool = False,
    progress: ProgressFn | None = None,
) -> tuple[FloatArray, FloatArray, PerturbationKey]:
    """Perturb checked numeric columns; returns (standardized, released, key).

    With ``overwrite`` the standardized values replace ``data.values`` in place.
    ``seed=None`` draws a fresh seed from the operating system (see
    :func:`~anonlab.perturbation.library.fresh_seed`).
    """
    check_method(method, noise, rho)
    check_seed(seed)
    seed = fresh_seed() if seed is None else seed
    rng = np.random.default_rng(seed)
    z, means, stds = standardize(data.values, overwrite)
    names = data.names
    d = len(names)
    translation: FloatArray | None = None
    noise_seed: int | None = None
    if method == "rbt":
        blocks = rbt_blocks(names, z_covariance(z), rng, rho)
    else:
        blocks = data_free_blocks(
            method, names, rng, seed=seed, min_privacy=min_privacy, library=library
        )
    released = _apply(z, assemble(names, blocks), progress)
    if method == "gdp":
        translation = rng.uniform(-1.0, 1.0, d)
        noise_seed = int(rng.integers(2**62))
        released += translation
        if noise > 0:
            add_noise(released, noise_seed, noise, blocked=True)
    release_means, release_stds = fingerprint(released)
    key = PerturbationKey(
        method=method,
        columns=tuple(names),
        integer=tuple(data.integer),
        means=means,
        stds=stds,
        blocks=tuple(blocks),
        translation=translation,
        noise_scale=float(noise) if method == "gdp" else 0.0,
        noise_seed=noise_seed,
        records=z.shape[0],
        release_means=release_means,
        release_stds=release_stds,
        noise_stream="blocked" if method == "gdp" else "single",
    )
    return z, released, key


def perturb(
    frame: pd.DataFrame,
    columns: Sequence[str] | None = None,
    method: str = "obt",
    *,
    seed: int | None = None,
    min_privacy: float = 0.5,
    rho: tuple[float, float] = (0.5, 0.5),
    noise: float = 0.1,
    library: MatrixLibrary | None = None,
    known: Sequence[int] = (2, 5, 10),
    progress: ProgressFn | None = None,
) -> Perturbation:
    """Perturb ``columns`` of ``frame`` (all columns when ``None``); others pass through.

    The released columns keep their names and order; the key undoes it
    (:func:`invert`). The seed regenerates the transform, so it is as secret as
    the key; without one a fresh seed comes from the operating system.

    The attacks that need no sample (naive, ties, and known-record with
    ``known`` records, on at most 10,000 records) then try the release: when
    one recovers at least half of the other records, or any column, within
    10 %, a
    :class:`~anonlab.perturbation.attacks.RecoverableReleaseWarning` is issued.
    """
    from anonlab.perturbation.evaluate import recoverability_check

    seed = fresh_seed() if seed is None else seed
    data = numeric_columns(frame, columns)
    z, released, key = perturb_array(
        data,
        method,
        seed=seed,
        min_privacy=min_privacy,
        rho=rho,
        noise=noise,
        library=library,
        progress=progress,
    )
    recoverability_check(
        z, released, known=known, seed=seed % 2**32, ties=key.noise_scale == 0, progress=progress
    )
    release = with_columns(
        frame.copy(), data.names, [released[:, j] for j in range(released.shape[1])]
    )
    return Perturbation(release, key, z, released)


def invert_array(released: FloatArray, key: PerturbationKey) -> FloatArray:
    """Original values from released ones: ``x = mean + std * ((y - t - e) A)``."""
    y = released.copy()
    if key.translation is not None:
        y -= key.translation
    if key.noise_seed is not None and key.noise_scale > 0:
        add_noise(
            y, key.noise_seed, key.noise_scale, sign=-1.0, blocked=key.noise_stream == "blocked"
        )
    z = np.asarray((key.full_matrix().T @ y.T).T, dtype=np.float64)
    z *= key.stds
    z += key.means
    return z


def restore_columns(
    released: FloatArray, key: PerturbationKey, where: str = "release"
) -> list[NDArray[np.float64] | NDArray[np.int64]]:
    """Check the release against the key and restore each column (integers rounded back)."""
    key.check_release(released, where)
    restored = invert_array(released, key)
    return [
        np.rint(restored[:, j]).astype(np.int64) if key.integer[j] else restored[:, j]
        for j in range(restored.shape[1])
    ]


def invert(release: pd.DataFrame, key: PerturbationKey, where: str = "release") -> pd.DataFrame:
    """Restore the original table from a release and its key (to float precision).

    Integer columns are rounded back to integers.
    """
    key.check_columns([str(c) for c in release.columns], where)
    data = numeric_columns(release, list(key.columns), allow_constant=True)
    return with_columns(release.copy(), list(key.columns), restore_columns(data.values, key, where))
