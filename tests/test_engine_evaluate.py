"""``evaluate`` on the engines: the in-memory EM4ADOM figures, read piece by piece.

Every test runs on the NumPy engine and on the session's 2-worker Dask
``LocalCluster`` (processes, 1 GB each; :mod:`engines`), with inputs split
into Parquet parts that differ between the original and the masked table. The
bundled data: Tarragona (834 records, 13 numeric columns) masked by noise,
and EIA (4,092 records) microaggregated by MDAV with a nominal (STATE) and an
ordinal (MONTH) column. Exact measures must equal the in-memory ones to
:data:`REL` relative; on one block (the default B) the blockwise ones too,
exactly. On several blocks the blockwise ones must be the per-block figures
computed here from :mod:`anonlab.metrics.risk`, and both engines must agree
exactly on every figure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.encoding import CategoricalColumn, encode_all, encode_like
from anonlab.errors import AnonlabError
from anonlab.metrics import evaluate, risk
from anonlab.metrics.em4adom import Evaluation
from anonlab.metrics.evaluate_pieces import (
    BLOCKWISE,
    DEFAULT_BLOCK_ROWS,
    EXACT,
    evaluate_on_engine,
)
from anonlab.microaggregation import microaggregate
from anonlab.runs.microaggregate import EvaluateSettings, run_evaluate
from engines import EngineCase

REPO = Path(__file__).resolve().parents[1]
TARRAGONA = REPO / "data" / "sdc" / "Tarragona.csv"
EIA = REPO / "data" / "sdc" / "EIA.csv"
EIA_NUMERIC = [
    "RESREVENUE",
    "RESSALES",
    "COMREVENUE",
    "COMSALES",
    "INDREVENUE",
    "INDSALES",
    "OTHREVENUE",
    "OTHRSALES",
    "TOTREVENUE",
    "TOTSALES",
]
#: exact measures: relative difference to the in-memory figure (measured: at most 1.4e-14)
REL = 1e-12


@pytest.fixture(scope="module")
def tarragona() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tarragona and a copy with normal noise of 20 % of each column's deviation."""
    original = pd.read_csv(TARRAGONA)
    rng = np.random.default_rng(14)
    masked = original.copy()
    for name in original.columns:
        masked[name] = original[name] + rng.normal(0, 0.2 * original[name].std(), len(original))
    return original, masked


@pytest.fixture(scope="module")
def eia() -> tuple[pd.DataFrame, pd.DataFrame]:
    """EIA (as text) and its MDAV release (k=3) of the numeric columns, STATE and MONTH."""
    original = pd.read_csv(EIA, dtype=str)
    chosen = original[[*EIA_NUMERIC, "STATE", "MONTH"]]
    masked = microaggregate(chosen, EIA_NUMERIC, nominal=["STATE"], ordinal=["MONTH"], k=3).masked
    return original, masked


def _close(got: Evaluation, want: Evaluation) -> None:
    """Exact measures to REL, the others (and ID_by_p) equal; same keys and notes."""
    assert list(got.measures) == list(want.measures)
    for name, value in want.measures.items():
        if name in EXACT:
            assert got.measures[name] == pytest.approx(value, rel=REL, abs=1e-300), name
        else:
            assert got.measures[name] == value, name
    assert got.notes == want.notes
    assert (got.records, got.columns, got.nominal, got.ordinal) == (
        want.records,
        want.columns,
        want.nominal,
        want.ordinal,
    )


def _shifted_parts(case: EngineCase, frame: pd.DataFrame, name: str) -> Path:
    """``frame`` as parts cut elsewhere than :meth:`EngineCase.parts` cuts (one row first)."""
    folder = case.workdir / name
    folder.mkdir()
    cuts = [0, 1, len(frame) // 2 + 7, len(frame)]
    for i in range(3):
        frame.iloc[cuts[i] : cuts[i + 1]].to_parquet(
            folder / f"part-{i}.parquet", index=False, row_group_size=97
        )
    return folder


def test_one_block_equals_in_memory_numeric(
    engine: EngineCase, tarragona: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    original, masked = tarragona
    want = evaluate(original, masked)
    got = evaluate_on_engine(
        engine.parts(original, "o"), _shifted_parts(engine, masked, "m"), engine=engine.api
    )
    _close(got, want)
    blocks = got.parameters["blocks"]
    assert blocks["count"] == 1
    assert set(blocks["exact"]) | set(blocks["blockwise"]) == set(got.measures)
    assert set(blocks["blockwise"]) <= set(BLOCKWISE)


def test_one_block_equals_in_memory_mixed(
    engine: EngineCase, eia: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    original, masked = eia
    want = evaluate(
        original,
        masked,
        EIA_NUMERIC,
        nominal=["STATE"],
        ordinal=["MONTH"],
        lambdas=(0.5, 0, 0.5),
        interval_p="1,5,10",
    )
    got = evaluate_on_engine(
        engine.parts(original, "o"),
        _shifted_parts(engine, masked, "m"),
        EIA_NUMERIC,
        engine=engine.api,
        nominal=["STATE"],
        ordinal=["MONTH"],
        lambdas=(0.5, 0, 0.5),
        interval_p="1,5,10",
    )
    _close(got, want)
    assert got.measures["ZIL"] > 0  # the categorical columns were masked, and measured


def _per_block(
    original: pd.DataFrame,
    masked: pd.DataFrame,
    numeric: list[str],
    nominal: list[str],
    ordinal: list[str],
    block: int,
    p_values: tuple[float, ...],
) -> dict[str, Any]:
    """DLD, DLD_expected and ID over blocks of ``block`` rows, here from the in-memory
    kernels: each block linked alone, on values standardized by the whole original."""
    x = original[numeric].astype(float).to_numpy()
    xm = masked[numeric].astype(float).to_numpy()
    mean, std = x.mean(axis=0), x.std(axis=0)
    z, zm = (x - mean) / std, (xm - mean) / std
    cats = encode_all(original, nominal, ordinal)
    cats_m = [encode_like(c, masked) for c in cats]
    n = len(original)
    linked = expected = 0.0
    disclosed = np.zeros(len(p_values))
    for start in range(0, n, block):
        rows = slice(start, min(n, start + block))

        def cut(cols: list[CategoricalColumn], rows: slice = rows) -> list[CategoricalColumn]:
            return [CategoricalColumn(c.name, c.codes[rows], c.domain, c.ordinal) for c in cols]

        link = (
            risk.linkage_mixed(z[rows], cut(cats), zm[rows], cut(cats_m))
            if cats
            else risk.linkage_numeric(z[rows], zm[rows])
        )
        linked += link.linked.sum()
        expected += link.expected.sum()
        size = rows.stop - rows.start
        disclosed += np.array(risk.interval_disclosures(x[rows], xm[rows], p_values)) * size
    return {
        "DLD": linked / n,
        "DLD_expected": expected / n,
        "ID_by_p": {f"{p:g}": d / n for p, d in zip(p_values, disclosed, strict=True)},
    }


@pytest.mark.parametrize("data", ["tarragona", "eia"])
def test_blocks_on_both_engines(
    data: str,
    request: pytest.FixtureRequest,
    session_numpy_engine: Any,
    session_dask_engine: Any,
    tmp_path: Path,
) -> None:
    original, masked = request.getfixturevalue(data)
    numeric = [str(c) for c in original.columns] if data == "tarragona" else EIA_NUMERIC
    nominal, ordinal = ([], []) if data == "tarragona" else (["STATE"], ["MONTH"])
    block = 200 if data == "tarragona" else 1000
    case = EngineCase("numpy", session_numpy_engine, None, tmp_path)
    first, second = case.parts(original, "o"), _shifted_parts(case, masked, "m")
    got = {
        name: evaluate_on_engine(
            first, second, numeric, engine=api, nominal=nominal, ordinal=ordinal, block_rows=block
        )
        for name, api in (("numpy", session_numpy_engine), ("dask", session_dask_engine))
    }
    assert got["numpy"].measures == got["dask"].measures  # identical, not merely close
    result = got["numpy"]
    assert result.parameters["blocks"]["count"] == -(-len(original) // block)
    want = evaluate(original, masked, numeric, nominal=nominal, ordinal=ordinal)
    for name in result.parameters["blocks"]["exact"]:
        assert result.measures[name] == pytest.approx(want.measures[name], rel=REL), name
    blocks = _per_block(
        original, masked, numeric, nominal, ordinal, block, tuple(float(p) for p in range(1, 11))
    )
    assert result.measures["DLD"] == pytest.approx(blocks["DLD"], rel=1e-15)
    assert result.measures["DLD_expected"] == pytest.approx(blocks["DLD_expected"], rel=1e-12)
    for p, value in blocks["ID_by_p"].items():
        assert result.measures["ID_by_p"][p] == pytest.approx(value, rel=1e-12), p
    assert result.measures["DLD"] != want.measures["DLD"]  # several blocks: another figure


def test_dask_dataframes(
    session_numpy_engine: Any,
    session_dask_engine: Any,
    tarragona: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    """``anonlab.metrics.evaluate`` takes Dask DataFrames; both engines read their partitions
    (other partitions in the two tables) and agree exactly."""
    original, masked = tarragona
    dd = pytest.importorskip("dask.dataframe")
    first, second = dd.from_pandas(original, npartitions=2), dd.from_pandas(masked, npartitions=5)
    _close(evaluate(first, second), evaluate(original, masked))
    got = [
        evaluate_on_engine(first, second, engine=api, block_rows=300).measures
        for api in (session_numpy_engine, session_dask_engine)
    ]
    assert got[0] == got[1]
    assert got[0]["DLD"] == evaluate_on_engine(original, masked, block_rows=300).measures["DLD"]


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(app, args)


def test_command_on_both_engines(
    engine: EngineCase, tarragona: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    masked = tarragona[1]
    parts = _shifted_parts(engine, masked, "m")
    masked_csv = engine.workdir / "masked.csv"
    masked.to_csv(masked_csv, index=False)
    memory = engine.workdir / "memory.json"
    assert (
        _invoke(
            ["evaluate", str(TARRAGONA), str(masked_csv), "--quiet", "--report", str(memory)]
        ).exit_code
        == 0
    )
    flags = engine.flags if engine.name == "dask" else ["--block-rows", str(DEFAULT_BLOCK_ROWS)]
    report, html = engine.workdir / "r.json", engine.workdir / "r.html"
    result = _invoke(
        [
            "evaluate",
            str(TARRAGONA),
            str(parts),
            *flags,
            "--report",
            str(report),
            "--html",
            str(html),
            "--quiet",
        ]
    )
    assert result.exit_code == 0, result.output
    got, want = json.loads(report.read_text()), json.loads(memory.read_text())
    assert got["engine"] == {"name": engine.name, "block_rows": DEFAULT_BLOCK_ROWS, "blocks": 1}
    assert got["measure_parameters"]["blocks"]["blockwise"] == list(BLOCKWISE)
    for name, value in want["measures"].items():
        if name in EXACT:
            assert got["measures"][name] == pytest.approx(value, rel=REL), name
        else:
            assert got["measures"][name] == value, name
    assert "EM4ADOM" in html.read_text()


def test_config_keys(engine: EngineCase, tarragona: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    original, masked = tarragona
    folder = _shifted_parts(engine, masked, "m")
    keys = {**engine.settings, "block_rows": 250}
    lines = [
        f"{k} = {json.dumps(v)}"
        for k, v in {"original": str(TARRAGONA), "masked": str(folder), **keys}.items()
    ]
    config = engine.workdir / "evaluate.toml"
    config.write_text("\n".join(lines) + "\n")
    settings = EvaluateSettings.load(config)
    report = run_evaluate(settings).report
    assert report["engine"]["blocks"] == 4 and report["parameters"]["block_rows"] == 250
    want = evaluate_on_engine(original, masked, block_rows=250)  # other pieces: rounding
    _close(
        Evaluation(report["measures"], {}, 834, report["columns"], [], [], report["notes"]), want
    )


BAD = [
    ("rows", "has 834 rows but the masked table has 833"),
    ("column", "column 'SALES' of the original is missing from the masked table"),
    ("block_rows", "--block-rows: Input should be greater than or equal to 2 (got 1)"),
    ("constant", "column 'c' of the original is constant"),
    ("ordinal", "value 'Z' of ordinal column 'o' in the masked table is not a value"),
]


@pytest.mark.parametrize(("case", "message"), BAD, ids=[c for c, _ in BAD])
def test_bad_input_one_line_nothing_written(
    case: str, message: str, engine: EngineCase, tarragona: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    original, masked = tarragona
    extra: list[str] = []
    if case == "rows":
        masked = masked.iloc[:-1]
    elif case == "column":
        masked = masked.drop(columns=["SALES"])
    elif case == "block_rows":
        extra = ["--block-rows", "1"]
    elif case in ("constant", "ordinal"):
        original = original.assign(c=1.0, o=["A", "B"] * (len(original) // 2))
        masked = masked.assign(c=1.0, o=["A", "Z"] * (len(masked) // 2))
        extra = ["--columns", "c,SALES" if case == "constant" else "SALES"]
        extra += ["--ordinal", "o"]
    given, other = engine.parts(original, "o"), engine.parts(masked, "m")
    report = engine.workdir / "r.json"
    flags = engine.flags if engine.name == "dask" else ["--block-rows", "500"]
    result = _invoke(
        ["evaluate", str(given), str(other), *flags, *extra, "--report", str(report), "--quiet"]
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert message in " ".join(result.output.split()), result.output
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert not report.exists()
    assert sorted(p.name for p in engine.workdir.iterdir()) == ["m", "o"]


def test_database_tables_on_the_engine(
    tmp_path: Path, tarragona: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    """A database table, which the engines do not read, is read whole as in memory and cut
    into pieces: the measures equal the same tables' from CSV files on the NumPy engine."""
    import sqlite3

    original, masked = tarragona
    with sqlite3.connect(tmp_path / "o.db") as db:
        original.to_sql("t", db, index=False)
    with sqlite3.connect(tmp_path / "m.db") as db:
        masked.to_sql("t", db, index=False)
    masked.to_csv(tmp_path / "m.csv", index=False)
    from_db = run_evaluate(
        EvaluateSettings(
            original=f"sqlite:///{tmp_path / 'o.db'}",
            masked=f"sqlite:///{tmp_path / 'm.db'}",
            table="t",
            block_rows=300,
        )
    )
    from_csv = run_evaluate(
        EvaluateSettings(original=str(TARRAGONA), masked=str(tmp_path / "m.csv"), block_rows=300)
    )
    assert from_db.report["engine"] == from_csv.report["engine"]
    for name, value in from_csv.report["measures"].items():
        assert from_db.report["measures"][name] == pytest.approx(value, rel=REL), name


def test_settings_refuse_what_the_engine_does_not_do() -> None:
    with pytest.raises(AnonlabError, match="workers -1"):
        EvaluateSettings(original="a.csv", masked="b.csv", engine="dask", workers=-1)
    with pytest.raises(AnonlabError, match="scheduler applies to engine 'dask' only"):
        EvaluateSettings(original="a.csv", masked="b.csv", scheduler="tcp://127.0.0.1:1")
    with pytest.raises(AnonlabError, match="block_rows must be"):
        evaluate_on_engine(
            pd.DataFrame({"a": [1.0, 2.0]}), pd.DataFrame({"a": [1.0, 2.0]}), block_rows=1
        )
