"""Numeric kernels: BLAS threads, progress reports, k-d tree and blocked linkage agree."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from threadpoolctl import threadpool_info  # type: ignore[import-untyped]

from anonlab.errors import AnonlabError
from anonlab.metrics import evaluate, risk
from anonlab.metrics.risk import linkage_numeric
from anonlab.microaggregation import mdav_labels, microaggregate, scalable_mdav_labels
from anonlab.progress import ProgressFn
from anonlab.threads import thread_count

Call = tuple[str, int, int | None]


def blas_threads_now() -> set[int]:
    """Threads of every loaded BLAS library right now."""
    return {int(info["num_threads"]) for info in threadpool_info() if info["user_api"] == "blas"}


def recorder(calls: list[Call], threads: list[set[int]] | None = None) -> ProgressFn:
    def progress(step: str, done: int, total: int | None) -> None:
        calls.append((step, done, total))
        if threads is not None:
            threads.append(blas_threads_now())

    return progress


def table(n: int, p: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.standard_normal((n, p)), columns=[f"c{j}" for j in range(p)])


@pytest.mark.parametrize("workers", [1, 2])
def test_kernels_run_on_the_asked_number_of_blas_threads(workers: int) -> None:
    # threadpoolctl limits the libraries loaded when the limit starts: load SciPy's
    # OpenBLAS (the k-d tree's import brings it) first, as a long-running program has.
    import scipy.spatial  # noqa: F401

    outside = blas_threads_now()
    assert outside, "numpy loads a BLAS library"
    expected = {min(workers, n) for n in outside}
    data = table(400, 3)
    seen: list[set[int]] = []
    microaggregate(data, "all-numeric", 3, workers=workers, progress=recorder([], seen))
    masked = microaggregate(data, "all-numeric", 3).masked
    evaluate(data, masked, workers=workers, progress=recorder([], seen))
    z = data.to_numpy()
    mdav_labels(z, 3, workers=workers, progress=recorder([], seen))
    scalable_mdav_labels(z, 3, 64, workers=workers, progress=recorder([], seen))
    assert seen and all(s == expected for s in seen)
    assert blas_threads_now() == outside  # restored afterwards


def test_every_cpu_and_bad_workers() -> None:
    assert thread_count(-1) >= 1
    data = table(30, 2)
    bad_values: list[Any] = [0, -2, 1.5, True]
    for bad in bad_values:
        with pytest.raises(
            AnonlabError, match=r"workers must be -1 \(every CPU\) or at least 1"
        ) as info:
            microaggregate(data, "all-numeric", 3, workers=bad)
        assert info.value.parameter == "workers"
    assert microaggregate(data, "all-numeric", 3, workers=-1).labels.size == 30


@pytest.mark.parametrize("variant", ["exact", "scalable"])
def test_mdav_progress_reports_grouped_records(variant: str) -> None:
    n = 5000
    calls: list[Call] = []
    microaggregate(
        table(n, 3), "all-numeric", 3, variant=variant, block_size=600, progress=recorder(calls)
    )
    assert 10 <= len(calls) <= 110
    assert {step for step, _, _ in calls} == {
        "MDAV: records grouped" if variant == "exact" else "MDAV blocks: records grouped"
    }
    done = [d for _, d, _ in calls]
    assert done == sorted(done) and calls[-1][1:] == (n, n)


def test_evaluate_progress_reports_each_stage() -> None:
    data = table(300, 12)  # wide: blocked linkage reports its tiles
    masked = microaggregate(data, "all-numeric", 3).masked
    calls: list[Call] = []
    evaluate(data, masked, interval_p="1,5", progress=recorder(calls))
    steps = [s for s, _, _ in calls]
    assert list(dict.fromkeys(steps)) == [
        "evaluate: information loss",
        "evaluate: record linkage",
        "evaluate: interval disclosure",
    ]
    for step in set(steps):
        last = [c for c in calls if c[0] == step][-1]
        assert last[1] == last[2]


def same_linkage(z: NDArray[Any], zm: NDArray[Any]) -> None:
    kd = linkage_numeric(z, zm, method="kdtree")
    blocked = linkage_numeric(z, zm, method="blocked")
    np.testing.assert_array_equal(blocked.linked, kd.linked)
    np.testing.assert_array_equal(blocked.expected, kd.expected)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 70),
    p=st.integers(1, 30),
    levels=st.integers(2, 4),
    kind=st.sampled_from(["ties", "noise", "copies"]),
    float64=st.booleans(),
    tile=st.integers(1, 40),
)
def test_blocked_linkage_equals_the_kd_tree(
    seed: int, n: int, p: int, levels: int, kind: str, float64: bool, tile: int
) -> None:
    rng = np.random.default_rng(seed)
    if kind == "ties":  # integer grids: many originals at exactly the own distance
        z: NDArray[np.float64] = rng.integers(0, levels, size=(n, p)).astype(np.float64)
        zm: NDArray[np.float64] = z + rng.integers(-1, 2, size=(n, p))
    else:
        z = rng.standard_normal((n, p))
        zm = z + 0.2 * rng.standard_normal((n, p))
        if kind == "copies":  # masked records equal to other originals, and duplicates
            z[1::3] = z[0]
            zm[::2] = z[rng.integers(0, n, size=zm[::2].shape[0])]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(risk, "TILE_ROWS", tile)
        patch.setattr(risk, "TILE_COLS", tile + 3)
        if float64:
            patch.setattr(risk, "FLOAT32_SAFE", 0.0)
        same_linkage(z, zm)


def test_blocked_linkage_float64_for_values_beyond_float32() -> None:
    rng = np.random.default_rng(4)
    z = rng.standard_normal((50, 3))
    zm = z.copy()
    zm[0] = 1e20  # beyond float32's safe range: the products fall back to float64
    zm[1] = -3e16
    same_linkage(z, zm)


def test_wide_tables_use_blocked_products_with_the_same_result() -> None:
    data = table(400, risk.KD_MAX_DIM + 2, seed=3)
    masked = microaggregate(data, "all-numeric", 3).masked
    wide = evaluate(data, masked).measures
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(risk, "KD_MAX_DIM", 10_000)
        kd = evaluate(data, masked).measures
    assert wide["DLD"] == kd["DLD"] and wide["DLD_expected"] == kd["DLD_expected"]


def test_unknown_linkage_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown linkage method"):
        linkage_numeric(np.zeros((3, 1)), np.zeros((3, 1)), method="ball")
