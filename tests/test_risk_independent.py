"""An independent check: the risk figures recomputed with a plain pandas groupby.

The checks below never call the risk module's grouping; they follow the
definitions in docs/risk.md directly on random tables, including tables with
suppressed records (all attacker columns ``*``) and partly ``*`` rows (which
are ordinary values).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonlab.risk import measure_risk

COLUMNS = ["a", "b", "c"]


def _table(seed: int, rows: int, suppressed: int, cards: tuple[int, int, int]) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            col: rng.integers(0, card, size=rows).astype(str)
            for col, card in zip(COLUMNS, cards, strict=True)
        }
    )
    frame.loc[rng.random(rows) < 0.05, "b"] = "*"  # a partly suppressed value: an ordinary value
    frame["s"] = rng.choice(["x", "y", "z", "w"], size=rows, p=[0.5, 0.3, 0.15, 0.05])
    if suppressed:
        rows_out = rng.choice(rows, size=min(suppressed, rows), replace=False)
        frame.loc[rows_out, COLUMNS] = "*"
    return frame


def _pandas_figures(frame: pd.DataFrame, thresholds: list[float]) -> dict[str, object]:
    """Prosecutor risk, records at risk, uniques and class sizes by a plain groupby."""
    suppressed = (frame[COLUMNS] == "*").all(axis=1)
    kept = frame[~suppressed]
    sizes = kept.groupby(COLUMNS).size()
    n = len(kept)
    at_risk = {f"{t:g}": float(sizes[1.0 / sizes > t].sum()) / n for t in thresholds}
    return {
        "suppressed": int(suppressed.sum()),
        "records": n,
        "count": len(sizes),
        "smallest": int(sizes.min()),
        "sizes": {str(k): int(v) for k, v in sizes.value_counts().sort_index().items()},
        "highest": 1.0 / sizes.min(),
        "average": len(sizes) / n,
        "at_risk": at_risk,
        "uniques": float((sizes == 1).sum()) / n,
    }


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(20, 400),
    suppressed=st.integers(0, 15),
    cards=st.tuples(st.integers(1, 6), st.integers(1, 8), st.integers(1, 10)),
    extra=st.floats(0.01, 1.0),
)
def test_prosecutor_figures_equal_a_pandas_groupby(
    seed: int, rows: int, suppressed: int, cards: tuple[int, int, int], extra: float
) -> None:
    frame = _table(seed, rows, suppressed, cards)
    thresholds = [0.2, 0.1, 0.05, extra]
    risk = measure_risk(frame, COLUMNS, sensitive=["s"], thresholds=thresholds)
    want = _pandas_figures(frame, thresholds)
    assert risk["suppressed"] == want["suppressed"]
    assert risk["records"] == want["records"]
    assert risk["classes"]["count"] == want["count"]
    assert risk["classes"]["smallest"] == want["smallest"]
    assert risk["classes"]["sizes"] == want["sizes"]
    assert risk["prosecutor"]["highest"] == pytest.approx(want["highest"], rel=1e-12)
    assert risk["prosecutor"]["average"] == pytest.approx(want["average"], rel=1e-12)
    assert risk["prosecutor"]["records_at_risk"] == pytest.approx(want["at_risk"], rel=1e-12)
    assert risk["sample_uniques"] == pytest.approx(want["uniques"], rel=1e-12)
    # without a population the journalist sees the sample (ARX without a research subset)
    assert risk["journalist"]["highest"] == risk["prosecutor"]["highest"]
    assert risk["marketer"]["average"] == pytest.approx(want["average"], rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(10, 300), suppressed=st.integers(0, 10))
def test_sensitive_figures_equal_a_pandas_groupby(seed: int, rows: int, suppressed: int) -> None:
    frame = _table(seed, rows, suppressed, (3, 4, 3))
    risk = measure_risk(frame, COLUMNS, sensitive=["s"])["sensitive"]["s"]
    kept = frame[~(frame[COLUMNS] == "*").all(axis=1)]
    if kept.empty:  # every record suppressed: no class, nothing to measure
        assert risk["distinct_l"] is None and risk["t_equal"] is None
        return
    q = kept["s"].value_counts(normalize=True)
    distinct: list[int] = []
    entropy: list[float] = []
    t_equal: list[float] = []
    for _, group in kept.groupby(COLUMNS):
        p = group["s"].value_counts(normalize=True)
        distinct.append(len(p))
        entropy.append(float(np.exp(-(p * np.log(p)).sum())))
        t_equal.append(0.5 * float(p.reindex(q.index, fill_value=0.0).sub(q).abs().sum()))
    assert risk["distinct_l"] == min(distinct)
    assert risk["entropy_l"] == pytest.approx(min(entropy), rel=1e-12)
    assert risk["t_equal"] == pytest.approx(max(t_equal), abs=1e-12)
    assert risk["single_value_classes"] == sum(d == 1 for d in distinct)
