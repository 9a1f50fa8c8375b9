"""Reports are strict JSON: undefined numbers become null, NumPy values plain numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from anonlab.io import read_json, to_json_text, write_json


def test_non_finite_numbers_become_null() -> None:
    text = to_json_text({"ILR": float("inf"), "x": [np.float64("nan"), np.float32(1.5)],
                         "grid": np.array([[1.0, np.inf]]), "n": np.int64(3)})

    def refuse(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    data = json.loads(text, parse_constant=refuse)
    assert data == {"ILR": None, "x": [None, 1.5], "grid": [[1.0, None]], "n": 3}


def test_report_round_trip(tmp_path: Path) -> None:
    report = {"measures": {"IL": 0.25, "ID_by_p": {"1": 0.5}}, "k": np.int32(3)}
    write_json(report, tmp_path / "r.json")
    assert read_json(tmp_path / "r.json") == {"measures": {"IL": 0.25, "ID_by_p": {"1": 0.5}},
                                              "k": 3}
