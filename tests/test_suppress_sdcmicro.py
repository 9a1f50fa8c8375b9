"""Cell suppression against sdcMicro 5.8.1's ``localSuppression`` (issue 24).

tests/data/sdcmicro_suppression.json records, for each case (table, keys, k,
importance, combs, strata, alpha), the cells sdcMicro blanked, measured side by side
on this machine (its ``source`` says how), and whether sdcMicro's own release left a
combination below k by the independent checker. anonlab must never blank more, and
every combination of its release must reach k.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from anonlab.suppression import suppress
from anonlab.verify.suppression import check_suppression

ROOT = Path(__file__).resolve().parents[1]
RECORDED = json.loads((ROOT / "tests" / "data" / "sdcmicro_suppression.json").read_text())
CASES: list[dict[str, Any]] = RECORDED["cases"]


def test_the_record_says_where_its_figures_come_from() -> None:
    assert "sdcMicro 5.8.1" in RECORDED["source"]
    assert len(CASES) >= 15
    assert any(case["combs"] for case in CASES) and any(case["strata"] for case in CASES)
    assert {case["alpha"] for case in CASES} >= {0.0, 0.5, 1.0}
    assert any(case["importance"] for case in CASES)
    # sdcMicro#352: sdcMicro's release with combs can leave a combination below k
    assert any(case["sdcmicro_below_k"] for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[case["case"] for case in CASES])
def test_never_more_cells_than_sdcmicro_and_every_combination_at_k(case: dict[str, Any]) -> None:
    table = pd.read_csv(ROOT / case["file"]) if case["file"] else pd.DataFrame(case["table"])
    keys: list[str] = case["keys"]
    combs = None if case["combs"] is None else [tuple(pair) for pair in case["combs"]]
    ranks = case["importance"]
    importance = None if ranks is None else dict(zip(keys, ranks, strict=True))
    result = suppress(
        table,
        keys,
        case["k"],
        importance=importance,
        combs=combs,
        strata=case["strata"],
        alpha=case["alpha"],
    )
    assert result.cells_suppressed <= case["sdcmicro_cells"], (
        result.cells_suppressed,
        case["sdcmicro_cells"],
    )
    problems = check_suppression(
        table,
        result.release,
        keys,
        case["k"],
        combs=combs,
        strata=[case["strata"]] if case["strata"] else (),
        alpha=case["alpha"],
        suppressed=result.suppressed,
    )
    assert problems == []
    assert all(c["smallest_frequency"] >= c["k"] for c in result.combinations)
