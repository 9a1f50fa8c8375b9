"""``generalize`` of a large table with a file output: the NumPy engine's pieces, one file.

Above :data:`anonlab.runs.generalize_steps.ENGINE_FILE_ROWS` input records a run with a
CSV or Parquet file output reads its input in pieces, writes the release as Parquet parts,
checks them as an engine run does and gathers them into the file. The threshold is lowered
here so that the bundled Adult example takes that way: its CSV release must be the bytes
the whole-table run writes, its Parquet release the same rows, its report the same search.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import anonlab.runs.generalize_steps as steps
from anonlab.errors import ReleaseRiskWarning
from anonlab.runs.common import estimated_rows
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import GeneralizeSettings

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
QIS = ("sex", "age", "race", "marital-status", "education", "workclass")
SAME_SEARCH = ("transformation", "nodes_checked", "suppressed_records", "records", "k")


def _settings(output: Path | str, **extra: Any) -> GeneralizeSettings:
    return GeneralizeSettings(
        input=str(ADULT / "adult.csv"),
        delimiter=";",
        qi={q: str(ADULT / f"hierarchy_{q}.csv") for q in QIS},
        sensitive=["salary-class"],
        other="insensitive",
        k=5,
        suppression=0.01,
        output=str(output),
        report=str(output) + ".json",
        **extra,
    )


def _run(output: Path, through_engine: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(steps, "ENGINE_FILE_ROWS", 0 if through_engine else 10**12)
    with pytest.warns(ReleaseRiskWarning):  # l = 1 in some classes, both ways alike
        run_generalize(_settings(output))
    report: dict[str, Any] = json.loads(Path(str(output) + ".json").read_text())
    return report


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_text_release_is_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    whole = _run(tmp_path / f"whole{suffix}", False, monkeypatch)
    pieces = _run(tmp_path / f"pieces{suffix}", True, monkeypatch)
    assert (tmp_path / f"whole{suffix}").read_bytes() == (tmp_path / f"pieces{suffix}").read_bytes()
    assert {k: whole[k] for k in SAME_SEARCH} == {k: pieces[k] for k in SAME_SEARCH}
    assert whole["risk"] == pieces["risk"]
    assert not list(tmp_path.glob(".*"))  # no staged part or scratch file left


def test_parquet_release_holds_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(tmp_path / "whole.parquet", False, monkeypatch)
    _run(tmp_path / "pieces.parquet", True, monkeypatch)
    whole = pq.read_table(tmp_path / "whole.parquet").to_pandas().astype(str)
    pieces = pq.read_table(tmp_path / "pieces.parquet").to_pandas().astype(str)
    pd.testing.assert_frame_equal(whole, pieces)
    assert pq.ParquetFile(tmp_path / "pieces.parquet").metadata.num_rows == 30_162


def test_route_needs_a_large_csv_or_parquet_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(steps, "ENGINE_FILE_ROWS", 0)
    assert steps.file_through_engine(_settings(tmp_path / "r.csv"), [])
    assert not steps.file_through_engine(_settings(tmp_path / "r.xlsx"), [])
    assert not steps.file_through_engine(_settings(f"{tmp_path}/r/"), [])

    class Presence:
        needs_population = True

    assert not steps.file_through_engine(_settings(tmp_path / "r.csv"), [Presence()])
    monkeypatch.setattr(steps, "ENGINE_FILE_ROWS", 40_000)
    assert not steps.file_through_engine(_settings(tmp_path / "r.csv"), [])


def test_row_estimates(tmp_path: Path) -> None:
    estimate = estimated_rows(str(ADULT / "adult.csv"), ";")
    assert abs(estimate - 30_163) <= 0.05 * 30_163  # header line counted, a few % off at most
    frame = pd.DataFrame({"a": range(5_000), "b": ["x"] * 5_000})
    frame.to_parquet(tmp_path / "t.parquet", row_group_size=700)
    assert estimated_rows(str(tmp_path / "t.parquet"), None) == 5_000
    assert estimated_rows("sqlite:///nothing.db", None) == 0
