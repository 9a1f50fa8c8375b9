"""What a perturbation keeps and what it protects: clustering agreement, measures, attacks.

The report keys (documented in docs/perturbation.md) are stable: ``blocks``
(per block: ``columns``, ``S``, ``S_trace``, ``R``, ``P``, ``P_trace``),
``overall``, ``attacks`` (rows of :func:`anonlab.perturbation.attacks.run_attacks`)
and ``clustering`` (adjusted Rand index of k-means, DBSCAN and Ward between the
standardized original and the release). No record values and no key enter it.

``blocks`` and ``overall`` are secret: a block's column pairing is part of the
key, and for a 2 x 2 rotation ``S_trace = 2 (1 - cos t)`` gives its angle, so
together they undo the release up to one sign per pair. :func:`shareable`
replaces them by :func:`privacy_summary`, figures over all blocks that name
no block.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.perturbation.attacks import attack_table, warn_if_recoverable
from anonlab.perturbation.key import PerturbationKey
from anonlab.perturbation.measures import block_measures, column_variances, grouped_privacy
from anonlab.progress import ProgressFn

FloatArray = NDArray[np.float64]
CLUSTERING_RECORDS = 2_000
ATTACK_RECORDS = 10_000


def privacy_measures(
    key: PerturbationKey, standardized: FloatArray, released: FloatArray
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-block and overall ``S``, ``S_trace``, ``R``, ``P`` (docs/formulas.md §4).

    ``S`` is measured on every record, from one pass of per-column variances
    (:func:`~anonlab.perturbation.measures.column_variances`).
    """
    index = {c: i for i, c in enumerate(key.columns)}
    var_x, var_diff = column_variances(standardized, released)
    blocks: list[dict[str, Any]] = []
    ps: list[float] = []
    for b in key.blocks:
        idx = [index[c] for c in b.columns]
        measures = block_measures(b.matrix, grouped_privacy(var_x, var_diff, idx))
        ps.append(measures["P"])
        blocks.append({"columns": list(b.columns), **measures})
    overall: dict[str, Any] = dict(
        block_measures(key.full_matrix(), grouped_privacy(var_x, var_diff, range(len(key.columns))))
    )
    overall["min_block_P"] = float(min(ps))
    overall["mean_block_P"] = float(np.mean(ps))
    return blocks, overall


SECRET_KEYS = ("blocks", "overall")


def privacy_summary(blocks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the shareable report says of the blocks: their count and sizes, the smallest S and P.

    ``min_S`` and ``min_P`` are the smallest distance privacy and privacy
    level over the blocks, without saying which block has them. They are
    withheld (``None``, with the reason in ``withheld``) when the release has
    a single block of two columns: its pairing is then known and its ``S``
    is ``2 (1 - cos t)`` of its angle ``t`` (docs/formulas.md §4), which undoes it.
    """
    sizes: dict[str, int] = {}
    for b in blocks:
        size = str(len(b["columns"]))
        sizes[size] = sizes.get(size, 0) + 1
    summary: dict[str, Any] = {
        "blocks": len(blocks),
        "block_sizes": sizes,
        "min_S": None,
        "min_P": None,
        "withheld": None,
    }
    if len(blocks) == 1 and len(blocks[0]["columns"]) == 2:
        summary["withheld"] = (
            "a single pair of columns: its S gives its rotation angle, "
            "which with the release undoes it"
        )
    elif blocks:
        summary["min_S"] = float(min(b["S"] for b in blocks))
        summary["min_P"] = float(min(b["P"] for b in blocks))
    return summary


def shareable(summary: dict[str, Any]) -> dict[str, Any]:
    """A :func:`perturbation_summary` without its secret keys, with :func:`privacy_summary`."""
    out = {k: v for k, v in summary.items() if k not in SECRET_KEYS}
    out["privacy_summary"] = privacy_summary(summary.get("blocks") or [])
    return out


def dbscan_eps(points: FloatArray, min_samples: int = 5) -> float:
    """A radius near the median distance of a record to its ``min_samples``-th neighbour.

    It is placed half-way between that distance and the next larger pairwise
    distance, so that no pair of records lies at distance ``eps`` within
    rounding error: an orthogonal transform, which changes distances only in
    the last bits, then gives DBSCAN exactly the same neighbourhoods.
    """
    from scipy.spatial.distance import pdist
    from sklearn.neighbors import NearestNeighbors

    k = min(min_samples, points.shape[0] - 1)
    dist, _ = NearestNeighbors(n_neighbors=k + 1).fit(points).kneighbors(points)
    target = float(np.median(dist[:, -1]))
    pairs = pdist(points)
    above = pairs[pairs > target * (1 + 1e-9) + 1e-12]
    if above.size == 0:
        return target * 1.5 + 1e-9
    return (target + float(above.min())) / 2


#: distances are snapped to multiples of 2^(e - WARD_GRID_BITS), 2^e <= the largest one
WARD_GRID_BITS = 30


def snapped_distances(points: FloatArray) -> FloatArray:
    """The condensed pairwise distances, each rounded to a grid of the data's own scale.

    The grid step is ``q = 2^(floor(log2 d_max) - 30)``, a power of two, so
    ``q * rint(d / q)`` is exact: two distances that are equal in exact
    arithmetic (duplicate records, values on a lattice) come out bit-equal,
    however the last bits of the computed distances differ, and an isometry
    of the points (an orthogonal transform, which moves the distances by a
    few units in the last place, about ``1e-16 d_max``) gives the same
    snapped distances unless one lies within that much of a grid mid-point.
    The change to each distance is at most ``q / 2 <= 2^-31 d_max``.
    """
    from scipy.spatial.distance import pdist

    d: FloatArray = np.asarray(pdist(points), dtype=np.float64)
    top = float(d.max()) if d.size else 0.0
    if not top > 0:
        return d
    q = 2.0 ** (np.floor(np.log2(top)) - WARD_GRID_BITS)
    snapped: FloatArray = np.rint(d / q) * q
    return snapped


def ward_labels(points: FloatArray, n_clusters: int) -> NDArray[np.intp]:
    """Ward's clustering into ``n_clusters``, with one tie order for every isometric copy.

    Ward merges, at each step, the two clusters A, B with the least increase
    of the within-cluster sum of squares,
    ``Delta(A, B) = |A| |B| / (|A| + |B|) * ||c_A - c_B||^2`` (updated by
    Lance-Williams from the pairwise distances: SciPy's ``linkage``). With
    duplicate records or lattice values many increases tie, and a tie is
    broken by rounding noise, so a distance-preserving release could split the
    data differently (adjusted Rand index down to 0.09 on data with many
    duplicates, tests/test_ward_ties.py). Here the increases are computed from
    :func:`snapped_distances`, so equal distances are bit-equal, and ties go
    by record order, which a release keeps: an isometry gives the same labels.
    """
    from scipy.cluster.hierarchy import cut_tree, linkage

    n = points.shape[0]
    if n_clusters >= n:  # every record its own cluster (and no tree for fewer than 2)
        return np.arange(n, dtype=np.intp)
    tree = linkage(snapped_distances(points), method="ward")
    labels: NDArray[np.intp] = np.asarray(
        cut_tree(tree, n_clusters=n_clusters), dtype=np.intp
    ).ravel()
    return labels


def cluster_labels(
    points: FloatArray, n_clusters: int, eps: float, seed: int
) -> dict[str, NDArray[np.intp]]:
    """Labels of k-means (fixed seed), DBSCAN (``eps``, 5 samples) and Ward
    (:func:`ward_labels`, deterministic under ties)."""
    from sklearn.cluster import DBSCAN, KMeans

    return {
        "kmeans": KMeans(n_clusters=n_clusters, n_init=2, random_state=seed).fit_predict(points),
        "dbscan": DBSCAN(eps=eps, min_samples=5).fit_predict(points),
        "ward": ward_labels(points, n_clusters),
    }


def clustering_agreement(
    standardized: FloatArray,
    released: FloatArray,
    *,
    seed: int = 0,
    n_clusters: int = 3,
    max_records: int = CLUSTERING_RECORDS,
) -> dict[str, Any]:
    """Adjusted Rand index of each clusterer's labels before and after (1.0 = identical).

    On a seeded random subset of at most ``max_records`` records (Ward needs
    quadratic memory); DBSCAN's ``eps`` is set from the original (see
    :func:`dbscan_eps`) and used for both.
    """
    from sklearn.metrics import adjusted_rand_score

    n = standardized.shape[0]
    rows = (
        np.arange(n)
        if n <= max_records
        else np.sort(np.random.default_rng(seed).choice(n, max_records, replace=False))
    )
    before, after = standardized[rows], released[rows]
    k = max(1, min(n_clusters, rows.size))
    eps = dbscan_eps(before) if rows.size > 1 else 1.0
    la = cluster_labels(before, k, eps, seed)
    lb = cluster_labels(after, k, eps, seed)
    out: dict[str, Any] = {name: float(adjusted_rand_score(la[name], lb[name])) for name in la}
    out.update({"records": int(rows.size), "n_clusters": k, "dbscan_eps": eps})
    return out


def attack_subset(n: int, limit: int, seed: int) -> NDArray[np.intp]:
    """Seeded random rows (all when ``n <= limit``) on which the attack suite runs."""
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed + 1).choice(n, limit, replace=False))


def perturbation_summary(
    key: PerturbationKey,
    standardized: FloatArray,
    released: FloatArray,
    *,
    known: Sequence[int] = (2, 5, 10),
    seed: int = 0,
    n_clusters: int = 3,
    attack_records: int = ATTACK_RECORDS,
    clustering_records: int = CLUSTERING_RECORDS,
    progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """The method-specific part of a ``perturb`` report; warns when the release is recoverable.

    The attacks and clusterers work on samples of at most a few thousand
    records, where BLAS and OpenMP threads only wait on each other (and burn
    CPU spinning on a busy machine): they run on one thread each. The
    :class:`~anonlab.perturbation.attacks.RecoverableReleaseWarning` names the
    caller's line (the first one outside anonlab).
    """
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]  # with sklearn

    with threadpool_limits(limits=1):
        summary = _summary(
            key,
            standardized,
            released,
            known=known,
            seed=seed,
            n_clusters=n_clusters,
            attack_records=attack_records,
            clustering_records=clustering_records,
            progress=progress,
        )
    message = warn_if_recoverable(summary["attacks"])
    summary["warnings"] = [message] if message else []
    return summary


def _summary(
    key: PerturbationKey,
    standardized: FloatArray,
    released: FloatArray,
    *,
    known: Sequence[int],
    seed: int,
    n_clusters: int,
    attack_records: int,
    clustering_records: int,
    progress: ProgressFn | None,
) -> dict[str, Any]:
    blocks, overall = privacy_measures(key, standardized, released)
    rows = attack_subset(standardized.shape[0], attack_records, seed)
    usable = [m for m in known if m < rows.size]
    attacks = attack_table(
        standardized[rows],
        released[rows],
        usable,
        seed=seed,
        centre=released.mean(axis=0),
        ties=key.noise_scale == 0,
        progress=progress,
    )
    return {
        "method": key.method,
        "columns": list(key.columns),
        "records": int(standardized.shape[0]),
        "blocks_count": len(key.blocks),
        "blocks": blocks,
        "overall": overall,
        "attacks": attacks,
        "attack_records": int(rows.size),
        "clustering": clustering_agreement(
            standardized, released, seed=seed, n_clusters=n_clusters, max_records=clustering_records
        ),
        "warnings": [],
    }


def recoverability_check(
    standardized: FloatArray,
    released: FloatArray,
    *,
    known: Sequence[int] = (2, 5, 10),
    seed: int = 0,
    attack_records: int = ATTACK_RECORDS,
    ties: bool = True,
    progress: ProgressFn | None = None,
) -> str | None:
    """The attacks that need no sample (naive, ties, known input-output), for the warning
    when no report is made; ``ties=False`` for a release with noise (no exact tie).

    Returns the warning's text (``None`` when the release resisted); the
    warning names the caller's line (the first one outside anonlab).
    """
    rows = attack_subset(standardized.shape[0], attack_records, seed)
    usable = [m for m in known if m < rows.size]
    table = attack_table(
        standardized[rows],
        released[rows],
        usable,
        seed=seed,
        sample_attacks=False,
        centre=released.mean(axis=0),
        ties=ties,
        progress=progress,
    )
    return warn_if_recoverable(table)
