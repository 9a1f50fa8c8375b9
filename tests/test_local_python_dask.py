"""``Generalizer(recoding="local")`` on a Dask DataFrame and on a pandas one counted on an
engine (issue 24): the searches run on the engine's base frequency set and the release,
applied partition by partition, is the in-memory one label for label, with the frame's
index; the shared 2-worker cluster of tests/engines.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from anonlab.engine import open_engine
from anonlab.errors import AnonlabError
from anonlab.generalize import Generalizer
from anonlab.hierarchy import Hierarchy

pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")


def _table(seed: int) -> tuple[pd.DataFrame, dict[str, Hierarchy]]:
    """A random table of three quasi-identifiers with rare tuples (records stay suppressed
    after the first search, so several searches run), a sensitive and an identifying column,
    and an index that is not 0..n-1."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(300, 900))
    frame = pd.DataFrame(
        {
            "id": [f"p{i}" for i in range(n)],
            "a": [f"a{v}" for v in rng.integers(0, 8, n)],
            "b": [f"b{v}" for v in rng.integers(0, 6, n)],
            "c": [f"c{v}" for v in rng.integers(0, 4, n)],
            "s": [f"s{v}" for v in rng.integers(0, 5, n)],
            "x": rng.integers(0, 100, n),
        },
        index=pd.RangeIndex(n) * 3 + 11,
    )
    hierarchies = {
        "a": Hierarchy.from_rows([(f"a{v}", f"A{v // 2}", f"AA{v // 4}", "*") for v in range(8)]),
        "b": Hierarchy.from_rows([(f"b{v}", f"B{v // 3}", "*") for v in range(6)]),
        "c": Hierarchy.from_rows([(f"c{v}", "*") for v in range(4)]),
    }
    return frame, hierarchies


def _generalizer(engine: Any, criteria: list[dict[str, Any]]) -> Generalizer:
    return Generalizer(
        suppression=0.3,
        metric="loss",
        gs_factor=0.05,
        recoding="local",
        criteria=criteria,
        engine=engine,
    )


MODELS = [
    [{"model": "k-anonymity", "k": 4}],
    [{"model": "k-anonymity", "k": 3}, {"model": "distinct-l-diversity", "attribute": "s", "l": 2}],
]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("criteria", MODELS, ids=["k", "k+l"])
def test_dask_and_engine_releases_are_the_in_memory_one(
    seed: int, criteria: list[dict[str, Any]], dask_client: Any, dask_scheduler: str
) -> None:
    frame, hierarchies = _table(seed)
    roles: dict[str, Any] = {"identifying": ["id"], "sensitive": ["s"], "insensitive": ["x"]}
    in_memory = _generalizer(None, criteria)
    expected = in_memory.fit_transform(frame, hierarchies, **roles)
    assert len(in_memory.local_.iterations) >= 1
    assert list(expected.index) == list(frame.index)
    with open_engine("dask", scheduler=dask_scheduler) as engine:
        on_dask = _generalizer(engine, criteria)
        lazy = on_dask.fit_transform(dd.from_pandas(frame, npartitions=4), hierarchies, **roles)
        assert isinstance(lazy, dd.DataFrame)
        computed = dask_client.compute(lazy).result()
    assert on_dask.local_release_ is None and on_dask.local_plan_ is not None
    assert on_dask.local_.summary(["a", "b", "c"]) == in_memory.local_.summary(["a", "b", "c"])
    pd.testing.assert_frame_equal(computed.astype(str), expected.astype(str))
    with open_engine("numpy", batch_rows=64) as engine:
        counted = _generalizer(engine, criteria).fit_transform(frame, hierarchies, **roles)
    pd.testing.assert_frame_equal(counted.astype(str), expected.astype(str))


def test_a_value_the_count_did_not_see_is_an_error(dask_scheduler: str) -> None:
    frame, hierarchies = _table(4)
    roles: dict[str, Any] = {"identifying": ["id"], "sensitive": ["s"], "insensitive": ["x"]}
    with open_engine("numpy") as engine:
        fitted = _generalizer(engine, MODELS[0])
        fitted.fit(frame, hierarchies, **roles)
    from anonlab.lattice.local_pieces import release_partition

    changed = frame.assign(a=["a1"] * len(frame))
    changed.loc[changed.index[0], "b"] = "b9"
    with pytest.raises(Exception, match="b9"):
        release_partition(changed, fitted.local_plan_)  # type: ignore[arg-type]
    with pytest.raises(AnonlabError, match="aggregate_qi"):
        Generalizer(k=3, recoding="local", aggregate_qi={"a": "mode"}).fit(
            dd.from_pandas(frame, npartitions=2), hierarchies, **roles
        )
