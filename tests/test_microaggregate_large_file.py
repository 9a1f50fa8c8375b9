"""``microaggregate --variant scalable`` with a file output on a table of more than
``region_rows`` records: the NumPy engine's pieces, as a folder output's run, then the file.

The run reads its input in pieces (the columns' roles decided on its head) instead of
reading and modelling every row before cutting the same regions; the file and the report
must be those of the whole-table run, byte for byte (but paths and times).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import anonlab.runs.microaggregate as runs
from anonlab.errors import ReleaseRiskWarning
from anonlab.runs.microaggregate import MicroaggregateSettings, run_microaggregate

TARRAGONA = Path(__file__).resolve().parents[1] / "data" / "sdc" / "Tarragona.csv"
VARYING = ("created", "outputs", "parameters", "runtime_seconds")


def _settings(output: Path, **extra: Any) -> MicroaggregateSettings:
    values: dict[str, Any] = {
        "input": str(TARRAGONA),
        "k": 3,
        "variant": "scalable",
        "region_rows": 200,
        "columns": "all-numeric",
        "output": str(output),
        "report": f"{output}.json",
        **extra,
    }
    return MicroaggregateSettings(**values)


def _run(output: Path, pieces: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    if not pieces:
        monkeypatch.setattr(runs, "_file_through_engine", lambda s: False)
    with pytest.warns(ReleaseRiskWarning):  # k = 3: risk 1/3, both ways alike
        result = run_microaggregate(_settings(output))
    monkeypatch.undo()
    assert result.release is not None and len(result.release) == 834
    report: dict[str, Any] = json.loads(Path(f"{output}.json").read_text())
    return {k: v for k, v in report.items() if k not in VARYING}


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_file_is_the_whole_table_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    whole = _run(tmp_path / f"whole{suffix}", False, monkeypatch)
    pieces = _run(tmp_path / f"pieces{suffix}", True, monkeypatch)
    assert (tmp_path / f"whole{suffix}").read_bytes() == (tmp_path / f"pieces{suffix}").read_bytes()
    assert whole == pieces
    assert whole["engine"]["regions"] == 5
    assert not list(tmp_path.glob(".*"))


def test_route_needs_the_scalable_variant_on_numbers(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    assert runs._file_through_engine(_settings(out))
    assert not runs._file_through_engine(_settings(out, variant="exact"))
    assert not runs._file_through_engine(_settings(out, region_rows=1_000))
    assert not runs._file_through_engine(_settings(tmp_path / "r.xlsx"))
    assert not runs._file_through_engine(_settings(out, engine="dask"))
