"""The metrics' option errors name every metric that takes the option."""

from __future__ import annotations

import pytest

from anonlab.lattice.metrics import METRICS
from anonlab.lattice.metrics.base import metric_names


@pytest.mark.parametrize("flag", ["takes_gs_factor", "multi_dimensional", "needs_base_index"])
def test_metric_names_are_the_registrys(flag: str) -> None:
    expected = sorted(name for name, cls in METRICS.items() if getattr(cls, flag))
    assert metric_names(flag) == expected
    assert expected  # each flag is taken by some metric, so the comparison means something
