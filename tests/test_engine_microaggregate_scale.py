"""MDAV's scalable variant on the engines with numbers near 1e300 and 1e-300.

In memory the column moments of such numbers are computed again on the column
scaled by a power of two (:func:`anonlab.encoding.column_scale`): squares of
numbers near 1e300 overflow and those of numbers near 1e-300 underflow to 0.
The engines' streamed moments are measured again the same way
(:func:`anonlab.microaggregation.pieces.table_moments`), so the NumPy engine and
Dask write the in-memory release where they refused it ("holds an infinite
value", "is constant"), and a constant column gets the in-memory line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.engine import open_engine, open_table
from anonlab.microaggregation.pieces import table_moments
from anonlab.runs.microaggregate import MicroaggregateSettings, run_microaggregate
from engines import assert_refused, write_parts

pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")
ROWS = 240


def _table(scale: float) -> pd.DataFrame:
    rng = np.random.default_rng(8)
    return pd.DataFrame(
        {
            "id": [f"p{i:04d}" for i in range(ROWS)],
            "a": rng.normal(0.0, 1.0, ROWS).round(3) * scale,
            "b": rng.normal(5.0, 2.0, ROWS).round(2),
        }
    )


def _cli(source: Path, output: str, *extra: str) -> None:
    args = ["microaggregate", str(source), "--variant", "scalable", "--k", "3"]
    result = CliRunner().invoke(app, [*args, "--identifying", "id", "--output", output, *extra])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_in_memory_numpy_and_dask_write_one_release(
    scale: float, tmp_path: Path, dask_scheduler: str
) -> None:
    csv = tmp_path / "t.csv"
    _table(scale).to_csv(csv, index=False)
    _cli(csv, str(tmp_path / "memory.parquet"))
    _cli(csv, f"{tmp_path / 'numpy'}/")
    _cli(csv, f"{tmp_path / 'dask'}/", "--engine", "dask", "--scheduler", dask_scheduler)
    expected = pd.read_parquet(tmp_path / "memory.parquet")
    assert np.isfinite(expected["a"]).all() and expected["a"].abs().max() > scale / 10
    for engine in ("numpy", "dask"):
        got = pd.read_parquet(tmp_path / engine)
        assert np.array_equal(got[["a", "b"]].to_numpy(), expected[["a", "b"]].to_numpy()), engine


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_several_regions_in_memory_and_on_the_engine(scale: float, tmp_path: Path) -> None:
    """More records than region_rows: the in-memory run cuts regions on the NumPy engine
    (its moments measured the same way) and gives the folder release in the input order."""
    source = write_parts(_table(scale), tmp_path / "in", [0, 50, 130, ROWS])
    common: dict[str, Any] = {"input": str(source), "k": 3, "variant": "scalable"}
    common["identifying"] = ["id"]
    memory = run_microaggregate(
        MicroaggregateSettings(**common, region_rows=80, output=str(tmp_path / "m.parquet"))
    )
    folder = run_microaggregate(
        MicroaggregateSettings(**common, region_rows=80, output=f"{tmp_path / 'out'}/")
    )
    assert memory.report["engine"]["regions"] == folder.report["engine"]["regions"] > 1
    key = ["a", "b"]
    written = pd.read_parquet(tmp_path / "m.parquet").sort_values(key).to_numpy()
    released = pd.read_parquet(tmp_path / "out").sort_values(key).to_numpy()
    assert np.array_equal(written, released)
    assert memory.report["verified"] and folder.report["verified"]


def test_scaled_moments_are_those_of_the_column_scaled_back(tmp_path: Path) -> None:
    """Dividing by a power of two is exact: the moments of a column near 1e300 (``a 2**997``)
    are ``2**997`` times those of ``a``, to the bit; the other column's are the streamed ones."""
    frame = _table(1.0)
    e = 997
    big = frame.assign(a=np.ldexp(frame["a"].to_numpy(), e))
    source = write_parts(big, tmp_path / "in", [0, 100, ROWS])
    plain_source = write_parts(frame, tmp_path / "plain", [0, 100, ROWS])
    with open_engine("numpy") as engine:
        scaled = table_moments(engine, open_table(source), ["a", "b"])
        plain = table_moments(engine, open_table(plain_source), ["a", "b"])
    assert np.isfinite(scaled.std).all()
    assert scaled.mean[1] == plain.mean[1] and scaled.std[1] == plain.std[1]  # b: to the bit
    assert scaled.mean[0] == np.ldexp(plain.mean[0], e)  # exact: powers of two commute
    assert scaled.std[0] == np.ldexp(plain.std[0], e)


@pytest.mark.parametrize("engine", ["numpy", "dask"])
def test_a_constant_column_gets_the_in_memory_line(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    source = tmp_path / "c.csv"
    pd.DataFrame({"id": [f"p{i}" for i in range(9)], "a": [1e-300] * 9, "b": range(9)}).to_csv(
        source, index=False
    )
    args = ["microaggregate", str(source), "--variant", "scalable", "--k", "3"]
    args += ["--identifying", "id"]
    memory = assert_refused([*args, "--output", str(tmp_path / "m.parquet")], tmp_path, "'a'")
    if engine == "dask":
        args += ["--engine", "dask", "--scheduler", request.getfixturevalue("dask_scheduler")]
    line = assert_refused([*args, "--output", f"{tmp_path / 'out'}/"], tmp_path, "'a'")
    assert line == memory
