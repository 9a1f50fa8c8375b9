"""Aggregated quasi-identifiers (``generalize --aggregate-qi``, issue 24) on the NumPy and
Dask engines: full-domain generalization writes, over the pieces, the same release as in
memory (the cells compared row by row, the engine's Parquet parts read back), for every
function, with missing values, decimals and ties of the mode spread over several parts;
the release passes the independent checker (the run verifies it) and ``anonlab verify``.
Mondrian and local recoding still aggregate in memory only, and say so in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.io import read_table
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import GeneralizeSettings
from anonlab.verify.report import verify_report
from engines import EngineCase

pytest.importorskip("distributed")
# small classes of one sensitive value: the run warns of it, as it should
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult"
QIS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
]
FUNCTIONS = ["mean", "geometric", "median", "mode", "interval"]


def _texts(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.astype(str).replace({"nan": "", "None": ""})


def _small_table() -> pd.DataFrame:
    """120 records: ``age`` decimal, with missing values and tied modes; ``sex`` and
    ``zone`` generalized beside it."""
    rng = np.random.default_rng(24)
    n = 120
    ages = rng.choice(["20", "21.5", "22", "30", "31", "39.25", "40", "55", ""], size=n)
    return pd.DataFrame(
        {
            "age": ages,
            "sex": rng.choice(["Male", "Female"], size=n),
            "zone": rng.choice(["a1", "a2", "b1", "b2"], size=n),
            "disease": rng.choice(["flu", "cold", "none"], size=n),
        }
    )


def _small_hierarchies(folder: Path) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    age = ["20;20-29;*", "21.5;20-29;*", "22;20-29;*", "30;30-39;*", "31;30-39;*"]
    age += ["39.25;30-39;*", "40;40-59;*", "55;40-59;*", ";;*"]
    files = {
        "age": age,
        "sex": ["Male;*", "Female;*"],
        "zone": ["a1;a;*", "a2;a;*", "b1;b;*", "b2;b;*"],
    }
    out = {}
    for name, rows in files.items():
        path = folder / f"hierarchy_{name}.csv"
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        out[name] = str(path)
    return out


def _settings(
    source: str, hierarchies: dict[str, str], output: str, report: Path, **extra: Any
) -> GeneralizeSettings:
    return GeneralizeSettings(
        input=source,
        qi=hierarchies,
        sensitive=["disease"],
        k=3,
        suppression=0.05,
        metric="precision_with_suppression",
        output=output,
        report=str(report),
        **extra,
    )


@pytest.mark.parametrize("missing", ["ignore", "zero"])
@pytest.mark.parametrize("function", FUNCTIONS)
def test_small_table_on_each_engine_is_the_in_memory_release(
    engine: EngineCase, function: str, missing: str
) -> None:
    frame = _small_table()
    hierarchies = _small_hierarchies(engine.workdir / "h")
    csv = engine.workdir / "table.csv"
    frame.to_csv(csv, index=False)
    parts = engine.parts(frame, "parts")
    aggregate = {"aggregate_qi": {"age": function}, "aggregate_missing": missing}
    memory = run_generalize(
        _settings(
            str(csv),
            hierarchies,
            str(engine.workdir / "memory.csv"),
            engine.workdir / "memory.json",
            **aggregate,
        )
    )
    on_engine = run_generalize(
        _settings(
            str(parts),
            hierarchies,
            engine.output("release"),
            engine.workdir / "engine.json",
            **aggregate,
            **engine.settings,
        )
    )
    written = _texts(read_table(engine.workdir / "release"))
    expected = _texts(pd.read_csv(engine.workdir / "memory.csv", dtype=str, keep_default_na=False))
    assert list(written.columns) == list(expected.columns)
    assert written.to_dict("list") == expected.to_dict("list")
    assert on_engine.report["verified"] is True
    assert on_engine.report["transformation"] == memory.report["transformation"]
    assert on_engine.report["distinct_values"] == memory.report["distinct_values"]
    # the aggregate is not a label: at least one class has a value the hierarchy lacks
    if function in ("mean", "interval"):
        assert not set(written["age"]) <= {"20-29", "30-39", "40-59", "*", ""}
    assert verify_report(engine.workdir / "engine.json").ok


@pytest.mark.parametrize("function", FUNCTIONS)
def test_adult_on_each_engine_is_the_in_memory_release(engine: EngineCase, function: str) -> None:
    hierarchies = {q: str(ADULT / f"hierarchy_{q}.csv") for q in QIS}
    common: dict[str, Any] = {
        "delimiter": ";",
        "aggregate_qi": {"age": function},
    }
    memory_out = engine.workdir / "memory.csv"
    run_generalize(
        _settings(
            str(ADULT / "adult.csv"),
            hierarchies,
            str(memory_out),
            engine.workdir / "memory.json",
            **common,
        ).model_copy(update={"sensitive": ["salary-class"], "k": 5, "suppression": 0.01})
    )
    result = run_generalize(
        _settings(
            str(ADULT / "adult.csv"),
            hierarchies,
            engine.output("release"),
            engine.workdir / "engine.json",
            **common,
            **engine.settings,
        ).model_copy(update={"sensitive": ["salary-class"], "k": 5, "suppression": 0.01})
    )
    written = _texts(read_table(engine.workdir / "release"))
    expected = _texts(pd.read_csv(memory_out, dtype=str, keep_default_na=False))
    assert len(written) == len(expected) == 30162
    assert written.to_dict("list") == expected.to_dict("list")
    assert result.report["verified"] is True
    assert result.report["transformation"]["age"] == 4


def test_a_tampered_engine_release_is_found_by_verify(engine: EngineCase) -> None:
    frame = _small_table()
    hierarchies = _small_hierarchies(engine.workdir / "h")
    parts = engine.parts(frame, "parts")
    run_generalize(
        _settings(
            str(parts),
            hierarchies,
            engine.output("release"),
            engine.workdir / "engine.json",
            aggregate_qi={"age": "median"},
            **engine.settings,
        )
    )
    assert verify_report(engine.workdir / "engine.json").ok
    release = read_table(engine.workdir / "release")
    ages = release["age"].astype(str).tolist()
    row = next(i for i, a in enumerate(ages) if a not in ("*", ""))
    ages[row] = "99"
    tampered = release.assign(age=ages)
    for part in (engine.workdir / "release").iterdir():
        part.unlink()
    tampered.to_parquet(engine.workdir / "release" / "part-0.parquet", index=False)
    assert not verify_report(engine.workdir / "engine.json").ok


@pytest.mark.parametrize("recoding", ["mondrian", "local"])
def test_other_recodings_on_an_engine_are_refused_in_one_line(
    tmp_path: Path, recoding: str
) -> None:
    hierarchies = _small_hierarchies(tmp_path / "h")
    csv = tmp_path / "table.csv"
    _small_table().to_csv(csv, index=False)
    settings = _settings(
        str(csv),
        hierarchies,
        f"{tmp_path / 'release'}/",
        tmp_path / "r.json",
        aggregate_qi={"age": "mean"},
        recoding=recoding,
    )
    with pytest.raises(AnonlabError, match=f"recoding '{recoding}'.*in memory"):
        run_generalize(settings)
    assert not (tmp_path / "release").exists()


@pytest.mark.parametrize("function", ["mean", "mode"])
def test_a_quasi_identifier_aggregated_without_hierarchy_on_each_engine(
    engine: EngineCase, function: str
) -> None:
    """ARX's microaggregation without clustering (``qi = {age = ""}``): ``age`` takes no
    part in the search and is aggregated in the classes of the other quasi-identifiers."""
    frame = _small_table()
    hierarchies = {**_small_hierarchies(engine.workdir / "h"), "age": ""}
    csv = engine.workdir / "table.csv"
    frame.to_csv(csv, index=False)
    parts = engine.parts(frame, "parts")
    aggregate = {"aggregate_qi": {"age": function}}
    memory = run_generalize(
        _settings(
            str(csv),
            hierarchies,
            str(engine.workdir / "m.csv"),
            engine.workdir / "m.json",
            **aggregate,
        )
    )
    on_engine = run_generalize(
        _settings(
            str(parts),
            hierarchies,
            engine.output("release"),
            engine.workdir / "e.json",
            **aggregate,
            **engine.settings,
        )
    )
    written = _texts(read_table(engine.workdir / "release"))
    expected = _texts(pd.read_csv(engine.workdir / "m.csv", dtype=str, keep_default_na=False))
    assert written.to_dict("list") == expected.to_dict("list")
    assert "age" not in on_engine.report["transformation"]
    assert on_engine.report["roles"] == memory.report["roles"]
    assert on_engine.report["verified"] is True
