"""Attacks on a perturbed release: how much of the original an attacker recovers.

All attacks work on standardized values: the attacker is assumed to know each
column's mean and deviation (they are often published, and an attacker with a
few known records or a sample estimates them). ``x`` is a record's z-score
vector, ``y`` its released vector, and every attack returns estimates
``x_hat`` for all records.

* ``naive``: read the released columns as the originals (``x_hat = y``); its
  mean squared error relative to ``Var(X)`` is exactly what ``S`` measures.
* Known input-output, with ``m`` records whose original and released values
  are both known. The release is first centred: z-scores have mean 0, so the
  release's centroid is the translation (plus the noise's mean), and centring
  removes it.
  ``least_squares``: the linear map ``x = B y`` that fits the known pairs
  (minimum-norm least squares); exact for any invertible linear transform once
  ``m >= d`` known records span the space. ``procrustes``: the orthogonal ``Q``
  minimizing ``||Y_k Q - X_k||`` (orthogonal Procrustes, by one SVD); exact for an
  orthogonal transform under the same condition. ``method_aware``: exploits
  OBT's structure (each released column mixes only the two or three columns of
  its pair or triple, with a unit-norm row): for every released column it
  fits every pair (and, with ``m >= 3``, every triple) of original columns on
  the known records and keeps the support whose fit is exact with a unit
  coefficient norm; two known records identify every pair.
* ``known_sample`` (PCA; Liu, Giannella and Kargupta 2006): from an
  independent sample of the same distribution, the covariance eigenvectors of
  sample and release give ``A_hat = V_y D V_x^T``; each sign in ``D`` is the
  one whose projected release matches the projected sample's quantiles best.
  Fails when covariance eigenvalues coincide.
* ``ica`` (scikit-learn FastICA): unmixes the release into independent
  components, then matches components (and signs) to the sample's columns by
  their quantiles (Hungarian assignment). Needs nearly independent,
  non-Gaussian columns. FastICA is fitted on at most ``ICA_FIT_RECORDS``
  records (at most 200 iterations) and applied to all.

* ``ties`` (release only: :mod:`anonlab.perturbation.ties`): records tied on an
  original value lie on one hyperplane of the release, whose normal is a
  column of the transform; the search finds such directions from the release
  alone, and each estimate is matched to the original column it fits best
  (with its sign, which favours the attacker: the matching uses the truth).
  Not run on a release with noise, which leaves no exact tie.

Score of an attack, over the records it did not know: the relative error
``||x_hat - x|| / ||x||`` per record, its median, and the share of records
recovered within 10 % and 25 % (and to 1e-6, "exactly"); and per column,
``columns_recovered``: how many original columns the estimate gives within
10 % relative RMS error ``||x_hat_j - x_j|| / ||x_j|| <= 0.1``.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError, ReleaseRiskWarning
from anonlab.perturbation.library import check_seed
from anonlab.perturbation.ties import find_ties
from anonlab.progress import ProgressFn, report_to
from anonlab.userwarn import warn_user

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
ICA_FIT_RECORDS = 5_000
METHOD_AWARE_CHUNK = 1 << 21  # float64 values per array when scoring supports
_QUANTILES = np.linspace(0.01, 0.99, 99)


class RecoverableReleaseWarning(ReleaseRiskWarning):
    """A perturbed release from which an attack recovers most records closely.

    A :class:`~anonlab.errors.ReleaseRiskWarning`, as every family's risk
    warning is: a filter or ``fail_on_risk`` on that class covers it too.
    """


def naive(released: FloatArray) -> FloatArray:
    """The released values read as the original ones."""
    return released.copy()


def _centred(
    released: FloatArray, centre: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    """The release minus its centroid (``centre``: the whole release's, when given)."""
    c = released.mean(axis=0) if centre is None else centre
    return released - c, c


def least_squares(
    known_x: FloatArray, known_y: FloatArray, released: FloatArray, centre: FloatArray | None = None
) -> FloatArray:
    """Minimum-norm least-squares linear map from released to original, fitted on known pairs."""
    y, centre = _centred(released, centre)
    b, *_ = np.linalg.lstsq(known_y - centre, known_x, rcond=None)
    return np.asarray(y @ b, dtype=np.float64)


def procrustes_rotation(a: FloatArray, b: FloatArray) -> FloatArray:
    """The orthogonal ``Q`` minimizing ``||a Q - b||_F``: ``Q = U V^T`` for ``a^T b = U S V^T``.

    Schönemann's 1966 solution of the orthogonal Procrustes problem (what
    ``scipy.linalg.orthogonal_procrustes`` computes; NumPy's SVD spares the
    command the import of ``scipy.linalg``).
    """
    u, _, vt = np.linalg.svd(a.T @ b)
    return np.asarray(u @ vt, dtype=np.float64)


def procrustes(
    known_x: FloatArray, known_y: FloatArray, released: FloatArray, centre: FloatArray | None = None
) -> FloatArray:
    """Orthogonal ``Q`` minimizing ``||(Y_k - c) Q - X_k||`` (Procrustes), applied to all."""
    y, centre = _centred(released, centre)
    q = procrustes_rotation(known_y - centre, known_x)
    return np.asarray(y @ q, dtype=np.float64)


def _supports(d: int, m: int) -> list[tuple[int, ...]]:
    sets: list[tuple[int, ...]] = list(itertools.combinations(range(d), 2))
    if m >= 3 and d >= 3:
        sets += list(itertools.combinations(range(d), 3))
    return sets


def method_aware_matrix(known_x: FloatArray, known_y: FloatArray) -> FloatArray:
    """The ``d x d`` mixing matrix rebuilt row by row from pair/triple fits on known records.

    For released column ``j`` and support ``S`` the coefficients are
    ``a = pinv(X_k[:, S]) y_k[:, j]``; the score is the relative residual plus
    ``| ||a|| - 1 |`` (a true OBT row fits exactly with unit norm) plus a tiny
    penalty per column so that a pair beats the triples containing it. The
    supports are scored in chunks of about ``METHOD_AWARE_CHUNK`` values, so
    memory stays bounded however many columns (``d^3 / 6`` triples) there are.
    """
    m, d = known_x.shape
    sets = _supports(d, m)
    size = max(len(s) for s in sets)
    scale = np.linalg.norm(known_y, axis=0) + 1e-300
    best_score = np.full(d, np.inf)
    best_set = np.zeros(d, dtype=np.intp)
    best_coef = np.zeros((d, size))
    step = max(1, METHOD_AWARE_CHUNK // (d * max(m, size)))
    for start in range(0, len(sets), step):
        chunk = sets[start : start + step]
        sub = np.zeros((len(chunk), m, size))
        for i, s in enumerate(chunk):
            sub[i, :, : len(s)] = known_x[:, s]
        pinv = np.linalg.pinv(sub)  # (K, size, m)
        coef = np.einsum("kcm,mj->kjc", pinv, known_y)  # (K, d, size)
        fitted = np.einsum("kmc,kjc->kmj", sub, coef)  # (K, m, d)
        resid = np.linalg.norm(fitted - known_y[None], axis=1) / scale  # (K, d)
        norm_gap = np.abs(np.linalg.norm(coef, axis=2) - 1.0)
        lengths = np.array([len(s) for s in chunk], dtype=np.float64)
        score = resid + norm_gap + 1e-9 * lengths[:, None]
        best = np.argmin(score, axis=0)
        value = score[best, np.arange(d)]
        better = value < best_score
        best_score[better] = value[better]
        best_set[better] = start + best[better]
        best_coef[better] = coef[best[better], np.flatnonzero(better)]
    matrix = np.zeros((d, d))
    for j in range(d):
        s = sets[int(best_set[j])]
        matrix[j, list(s)] = best_coef[j, : len(s)]
    return matrix


def method_aware(
    known_x: FloatArray, known_y: FloatArray, released: FloatArray, centre: FloatArray | None = None
) -> FloatArray:
    """Recover records through the pair/triple matrix rebuilt by :func:`method_aware_matrix`."""
    y, centre = _centred(released, centre)
    matrix = method_aware_matrix(known_x, known_y - centre)
    return np.asarray(y @ np.linalg.pinv(matrix).T, dtype=np.float64)


def _quantiles(values: FloatArray) -> FloatArray:
    return np.asarray(np.quantile(values, _QUANTILES, axis=0), dtype=np.float64)


def known_sample(
    sample: FloatArray, released: FloatArray, centre: FloatArray | None = None
) -> FloatArray:
    """PCA attack: align the release's principal axes with an independent sample's."""
    y, _ = _centred(released, centre)
    xs = sample - sample.mean(axis=0)
    _, vx = np.linalg.eigh(np.cov(xs, rowvar=False))
    _, vy = np.linalg.eigh(np.cov(y, rowvar=False))
    px, py = _quantiles(xs @ vx), _quantiles(y @ vy)
    plus = np.sum((py - px) ** 2, axis=0)
    minus = np.sum((-py[::-1] - px) ** 2, axis=0)  # quantiles of -v are reversed negatives
    signs = np.where(minus < plus, -1.0, 1.0)
    a_hat = (vy * signs) @ vx.T  # y = A x, so x = A^T y and x_hat rows = y @ A
    return np.asarray(y @ a_hat, dtype=np.float64)


def ica(sample: FloatArray, released: FloatArray, seed: int = 0) -> FloatArray:
    """FastICA unmixing, components matched to the sample's columns by quantiles."""
    from scipy.optimize import linear_sum_assignment
    from sklearn.decomposition import FastICA

    y, _ = _centred(released)
    d = y.shape[1]
    rng = np.random.default_rng(seed)
    fit_rows = (
        y
        if y.shape[0] <= ICA_FIT_RECORDS
        else y[rng.choice(y.shape[0], ICA_FIT_RECORDS, replace=False)]
    )
    model = FastICA(
        n_components=d,
        whiten="unit-variance",
        whiten_solver="eigh",
        random_state=seed,
        max_iter=200,
        tol=1e-3,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(fit_rows)
    sources = model.transform(y)
    sources /= model.transform(fit_rows).std(axis=0) + 1e-300  # the rows it was fitted on
    xs = sample - sample.mean(axis=0)
    sd = xs.std(axis=0)
    sd[sd <= 1e-12] = 1.0  # a column constant in the sample: its quantiles are all 0
    qx = _quantiles(xs / sd)  # (99, d) per sample column
    qs = _quantiles(sources)  # (99, d) per component
    plus = ((qs[:, :, None] - qx[:, None, :]) ** 2).sum(axis=0)  # (component, column)
    minus = ((-qs[::-1, :, None] - qx[:, None, :]) ** 2).sum(axis=0)
    comp, col = linear_sum_assignment(np.minimum(plus, minus))
    out = np.empty_like(y)
    for c, j in zip(comp, col, strict=True):
        sign = -1.0 if minus[c, j] < plus[c, j] else 1.0
        out[:, j] = sign * sources[:, c] * sd[j]
    return out


def score(estimate: FloatArray, truth: FloatArray) -> dict[str, float]:
    """Median relative error ``||x_hat - x|| / ||x||`` and shares within 10 %, 25 %, 1e-6;
    and ``columns_recovered`` (:func:`columns_recovered`)."""
    err = np.linalg.norm(estimate - truth, axis=1)
    size = np.linalg.norm(truth, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(
            size > 0, err / np.where(size > 0, size, 1.0), np.where(err > 0, np.inf, 0.0)
        )
    return {
        "median_relative_error": float(np.median(rel)),
        "within_10": float(np.mean(rel <= 0.10)),
        "within_25": float(np.mean(rel <= 0.25)),
        "exact": float(np.mean(rel <= 1e-6)),
        "columns_recovered": columns_recovered(estimate, truth),
    }


def columns_recovered(estimate: FloatArray, truth: FloatArray, within: float = 0.10) -> int:
    """Columns ``j`` with ``||x_hat_j - x_j|| <= within * ||x_j||`` (relative RMS error)."""
    err = np.linalg.norm(estimate - truth, axis=0)
    size = np.linalg.norm(truth, axis=0)
    return int(np.count_nonzero(err <= within * size))


def matched_estimate(candidates: FloatArray, truth: FloatArray) -> FloatArray:
    """Candidate columns assigned one to one to the truth's columns by ``|correlation|``.

    Pairs are taken greedily, the highest ``|correlation|`` first; each
    assigned candidate is used with the sign of its correlation, and a column
    no candidate is assigned to is estimated by 0, its z-score mean. The
    matching reads the truth, so it is about the most the candidates can give.
    """
    out = np.zeros_like(truth)
    if candidates.shape[1] == 0:
        return out
    a = candidates - candidates.mean(axis=0)
    b = truth - truth.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.nan_to_num(
            (a.T @ b) / np.outer(np.linalg.norm(a, axis=0), np.linalg.norm(b, axis=0))
        )
    strength = np.abs(corr)
    for _ in range(min(corr.shape)):
        r, c = np.unravel_index(int(np.argmax(strength)), strength.shape)
        if strength[r, c] <= 0:
            break
        out[:, c] = np.sign(corr[r, c]) * candidates[:, r]
        strength[r, :] = -1.0
        strength[:, c] = -1.0
    return out


def tie_attack(
    original: FloatArray, released: FloatArray, centre: FloatArray | None = None, seed: int = 0
) -> FloatArray:
    """Estimates from the directions that tied values give away (release only).

    :func:`anonlab.perturbation.ties.find_ties` searches the release; each
    direction ``w`` estimates a column as ``(y - c) w``, matched to the
    original's columns by :func:`matched_estimate`.
    """
    y, _ = _centred(released, centre)
    found = find_ties(y, seed=seed)
    return matched_estimate(y @ found.directions.T, original)


KNOWN_IO = {"least_squares": least_squares, "procrustes": procrustes, "method_aware": method_aware}


def run_attacks(
    original: FloatArray,
    released: FloatArray,
    known: Sequence[int] = (2, 5, 10),
    *,
    seed: int = 0,
    sample: FloatArray | None = None,
    sample_attacks: bool = True,
    centre: FloatArray | None = None,
    ties: bool = True,
    progress: ProgressFn | None = None,
) -> list[dict[str, Any]]:
    """The attack table on aligned standardized ``original`` and ``released`` records.

    ``known`` lists the numbers of known records tried by each known
    input-output attack (chosen at random, seeded). ``sample`` is the
    attacker's independent sample for the PCA and ICA attacks; when ``None`` a
    random half of ``original`` plays it and those attacks are scored on the
    other half. ``sample_attacks=False`` skips them (the quick check behind
    the recoverability warning). ``centre`` is the centroid of the whole
    release when ``released`` holds only some of its records (the attacker
    holds the whole release; by default the centroid of ``released``).
    ``ties=False`` skips the tie attack (a release with noise has no exact
    tie). ``progress`` hears ``("attacks", done, total)`` after each attack.

    When an attack that needs no sample recovers at least half of the other
    records, or any column, within 10 % (:func:`recoverable`), a
    :class:`RecoverableReleaseWarning` is issued.
    """
    rows = attack_table(
        original,
        released,
        known,
        seed=seed,
        sample=sample,
        sample_attacks=sample_attacks,
        centre=centre,
        ties=ties,
        progress=progress,
    )
    warn_if_recoverable(rows)
    return rows


def attack_table(
    original: FloatArray,
    released: FloatArray,
    known: Sequence[int] = (2, 5, 10),
    *,
    seed: int = 0,
    sample: FloatArray | None = None,
    sample_attacks: bool = True,
    centre: FloatArray | None = None,
    ties: bool = True,
    progress: ProgressFn | None = None,
) -> list[dict[str, Any]]:
    """The rows of :func:`run_attacks`, without the warning."""
    check_seed(seed)
    n, d = original.shape
    if released.shape != original.shape:
        raise AnonlabError(
            f"the original has {n} records x {d} columns but the release "
            f"{released.shape[0]} x {released.shape[1]}: give aligned files"
        )
    bad = [m for m in known if m < 1 or m >= n]
    if bad:
        raise AnonlabError(
            f"known {bad[0]} must be between 1 and the number of records minus one ({n - 1})",
            parameter="known",
        )
    counts = sorted(set(int(k) for k in known))
    total = 1 + int(ties) + len(KNOWN_IO) * len(counts) + (2 if sample_attacks else 0)
    report = report_to(progress)
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = [
        {"attack": "naive", "known": 0, **score(naive(released), original)}
    ]
    report("attacks", len(rows), total)
    if ties:
        rows.append(
            {
                "attack": "ties",
                "known": 0,
                **score(tie_attack(original, released, centre, seed), original),
            }
        )
        report("attacks", len(rows), total)
    for m in counts:
        pick = rng.choice(n, m, replace=False)
        rest = np.ones(n, dtype=bool)
        rest[pick] = False
        for name, attack in KNOWN_IO.items():
            est = attack(original[pick], released[pick], released, centre)
            rows.append({"attack": name, "known": m, **score(est[rest], original[rest])})
            report("attacks", len(rows), total)
    if sample_attacks:
        rows += _sample_attacks(original, released, rng, seed, sample, centre)
        report("attacks", total, total)
    return rows


def _sample_attacks(
    original: FloatArray,
    released: FloatArray,
    rng: np.random.Generator,
    seed: int,
    sample: FloatArray | None,
    centre: FloatArray | None,
) -> list[dict[str, Any]]:
    """The PCA and ICA rows; without a ``sample`` a random half of ``original`` plays it."""
    n, d = original.shape
    if sample is None:
        order = rng.permutation(n)
        half = max(n // 2, min(n, d + 1))
        sample, scored = original[order[:half]], order[half:]
        if scored.size == 0:
            scored = order
    else:
        scored = np.arange(n)
    if not (sample.shape[0] > d and sample.shape[1] == d):
        return []
    return [
        {
            "attack": "known_sample",
            "known": int(sample.shape[0]),
            **score(known_sample(sample, released, centre)[scored], original[scored]),
        },
        {
            "attack": "ica",
            "known": int(sample.shape[0]),
            **score(ica(sample, released, seed)[scored], original[scored]),
        },
    ]


SAMPLE_ATTACKS = ("known_sample", "ica")


def recoverable(rows: Sequence[dict[str, Any]], share: float = 0.5) -> dict[str, Any] | None:
    """The attack needing the fewest known records that recovers ``share`` of the records
    within 10 %, or any column (``columns_recovered``); attacks with a sample excepted."""
    hits = [
        r
        for r in rows
        if r["attack"] not in SAMPLE_ATTACKS
        and (r["within_10"] >= share or r.get("columns_recovered", 0) > 0)
    ]
    return (
        min(hits, key=lambda r: (r["known"], -r["within_10"], -r.get("columns_recovered", 0)))
        if hits
        else None
    )


def recoverable_message(rows: Sequence[dict[str, Any]], share: float = 0.5) -> str | None:
    """The warning's text when :func:`recoverable` finds an attack, else ``None``."""
    hit = recoverable(rows, share)
    if hit is None:
        return None
    how = (
        f"the {hit['attack']} attack from the release alone"
        if hit["known"] == 0
        else f"the {hit['attack']} attack with {hit['known']} known record(s)"
    )
    if hit["within_10"] >= share:
        what = f"{hit['within_10']:.0%} of the other records"
    else:
        what = f"{hit['columns_recovered']} column(s) of every record"
    return f"release is recoverable: {how} recovers {what} within 10% (see docs/perturbation.md)"


def warn_if_recoverable(rows: Sequence[dict[str, Any]], share: float = 0.5) -> str | None:
    """Issue :class:`RecoverableReleaseWarning` when :func:`recoverable` finds an attack.

    Returns the warning's text (``None`` when nothing was issued). The
    warning names the first line outside anonlab that led here
    (:func:`anonlab.userwarn.warn_user`).
    """
    message = recoverable_message(rows, share)
    if message is not None:
        warn_user(RecoverableReleaseWarning(message))
    return message
