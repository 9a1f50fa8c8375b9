"""The core tests on every engine: one ``engine`` fixture, each result against the in-memory one.

Every test here takes the ``engine`` fixture (``tests/engines.py``) and so
runs twice: on the NumPy engine in this process and on the session's 2-worker
Dask ``LocalCluster``. Its input is a Parquet folder of four uneven parts (a
Dask DataFrame for the Python API on Dask); the reference is the in-memory
run, made once per module from the bundled files without any engine:

* generalization of Adult (7 quasi-identifiers, 5-anonymity and distinct
  3-diversity of ``occupation``, 1 % suppression, flash): the same
  transformation, nodes, suppressed records and rows (a content hash after a
  sort), the report's keys and values but the engine's parameters, and the
  independent checker's verdict (:func:`anonlab.verify.verify_report`);
* ``apply`` of that report to Adult: the same release and report;
* ``anonlab risk`` of the in-memory release: every figure the same;
* perturbation (``obt``, ``rotation``, ``rbt``, ``gdp``) of Tarragona: the release to 1e-12,
  and ``invert`` restores the input;
* ``evaluate`` (the EM4ADOM measures) of a microaggregated Tarragona.

``apply`` and ``evaluate`` run on an engine only when their settings have an
``engine`` field; otherwise their tests are skipped and say so.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import ReleaseRiskWarning
from anonlab.generalize import Generalizer
from anonlab.hierarchy import Hierarchy
from anonlab.io import read_table
from anonlab.microaggregation import microaggregate
from anonlab.privacy import DistinctLDiversity
from anonlab.privacy.closeness import HierarchicalDistanceTCloseness
from anonlab.risk.measure import measure_risk
from anonlab.runs.apply import run_apply
from anonlab.runs.generalize_settings import ApplySettings
from anonlab.runs.microaggregate import EvaluateSettings, run_evaluate
from anonlab.runs.perturb import InvertSettings, PerturbSettings, run_invert, run_perturb
from anonlab.verify import verify_report
from engines import EngineCase

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult"
TARRAGONA = REPO / "data" / "sdc" / "Tarragona.csv"
QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
SENSITIVE = ["salary-class", "occupation"]
L_DIVERSITY = "distinct-l-diversity:occupation:l=3"
#: relative tolerance of a float in a report (sums over pieces may add in another order)
REL = 1e-12
#: report keys that say when and how long a run took, or which files it read
RUN_KEYS = frozenset(
    {"created", "runtime_seconds", "search_seconds", "search_cpu_seconds", "inputs", "outputs"}
)
#: parameters that name the engine, or the run's own input and output paths
ENGINE_PARAMETERS = frozenset(
    {
        "engine",
        "scheduler",
        "workers",
        "memory_limit",
        "block_rows",
        "input",
        "table",
        "output",
        "report",
        "key",
        "original",
        "masked",
        "delimiter",
    }
)
#: report entries only a run on an engine writes: the engine, and evaluate's blocks
ENGINE_ONLY = (("engine",), ("measure_parameters", "blocks"))
runner = CliRunner()
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.perturbation.RecoverableReleaseWarning")


# ---------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------


def digest(frame: pd.DataFrame) -> str:
    """A SHA-256 of a table's column names and rows as text, the rows sorted first."""
    text = frame.astype(str)
    rows = sorted("\x1f".join(row) for row in text.itertuples(index=False, name=None))
    return hashlib.sha256("\x1e".join([",".join(frame.columns), *rows]).encode()).hexdigest()


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a real number or a decimal text, else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def assert_close(found: Any, expected: Any, where: str = "report") -> None:
    """``found`` equals ``expected``: the same keys and lengths, equal texts and integers,
    floats (and decimal texts) equal to a relative :data:`REL`."""
    if isinstance(expected, Mapping):
        assert isinstance(found, Mapping), where
        assert sorted(found) == sorted(expected), where
        for key in expected:
            assert_close(found[key], expected[key], f"{where}/{key}")
    elif isinstance(expected, list | tuple):
        assert isinstance(found, list | tuple) and len(found) == len(expected), where
        for i, (a, b) in enumerate(zip(found, expected, strict=True)):
            assert_close(a, b, f"{where}[{i}]")
    elif found != expected:
        a, b = _number(found), _number(expected)
        counts = isinstance(found, int) and isinstance(expected, int)
        assert a is not None and b is not None and not counts, f"{where}: {found!r} != {expected!r}"
        assert math.isclose(a, b, rel_tol=REL, abs_tol=0.0), f"{where}: {a!r} != {b!r}"


def assert_same_report(found: dict[str, Any], expected: dict[str, Any], engine: EngineCase) -> None:
    """The engine run's report is the in-memory one: every key and value but the run's
    times, the fingerprints of the table(s) read (:data:`RUN_KEYS`) and the engine's
    parameters (:data:`ENGINE_PARAMETERS`), which name this engine."""
    if isinstance(found.get("engine"), Mapping):
        assert found["engine"]["name"] == engine.name
    found = _without(found, ENGINE_ONLY)
    skip = RUN_KEYS | {"parameters"}
    assert_close(
        {k: v for k, v in found.items() if k not in skip},
        {k: v for k, v in expected.items() if k not in skip},
    )
    # the outputs the report names: the same kinds, each at the run's own path
    assert sorted(found.get("outputs", {})) == sorted(expected.get("outputs", {}))
    if "inputs" in expected:  # the same files but the table(s) read: CSV here, parts there
        data = {"data", "original", "masked"}
        assert sorted(found["inputs"]) == sorted(expected["inputs"])
        assert_close(
            {k: v for k, v in found["inputs"].items() if k not in data},
            {k: v for k, v in expected["inputs"].items() if k not in data},
            "inputs",
        )
    params, reference = found["parameters"], expected["parameters"]
    assert params["engine"] == engine.name and reference["engine"] == "numpy"
    assert params.get("scheduler") == engine.scheduler
    assert_close(
        {k: v for k, v in params.items() if k not in ENGINE_PARAMETERS},
        {k: v for k, v in reference.items() if k not in ENGINE_PARAMETERS},
        "parameters",
    )


def _without(report: dict[str, Any], paths: tuple[tuple[str, ...], ...]) -> dict[str, Any]:
    """A copy of ``report`` without the entries at ``paths`` (keys, outer first)."""
    out = dict(report)
    for path in paths:
        holder = out
        for key in path[:-1]:
            if not isinstance(holder.get(key), Mapping):
                break
            holder[key] = dict(holder[key])
            holder = holder[key]
        else:
            holder.pop(path[-1], None)
    return out


def _invoke(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


def _json(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


# ---------------------------------------------------------------------------
# Generalization (and apply, and risk, of its release)
# ---------------------------------------------------------------------------


def _generalize_args(source: Path) -> list[str]:
    qi = [arg for q in QIS for arg in ("--qi", f"{q}={ADULT / f'hierarchy_{q}.csv'}")]
    return [
        "generalize",
        str(source),
        *qi,
        "--sensitive",
        ",".join(SENSITIVE),
        "--k",
        "5",
        "--criterion",
        L_DIVERSITY,
        "--suppression",
        "1%",
        "--search",
        "flash",
        "--quiet",
    ]


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return read_table(ADULT / "adult.csv", delimiter=";")


@pytest.fixture(scope="module")
def generalized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The in-memory generalization of the Adult CSV: release file, report, their paths."""
    root = tmp_path_factory.mktemp("memory")
    _invoke(
        [
            *_generalize_args(ADULT / "adult.csv"),
            "--delimiter",
            ";",
            "--output",
            str(root / "release.parquet"),
            "--report",
            str(root / "report.json"),
        ]
    )
    return {
        "release": read_table(root / "release.parquet"),
        "report": _json(root / "report.json"),
        "release_path": root / "release.parquet",
        "report_path": root / "report.json",
    }


def test_the_reference_is_what_the_comparison_needs(generalized: dict[str, Any]) -> None:
    """Both models shape the optimum, some records are suppressed, nothing is trivial."""
    report = generalized["report"]
    assert report["verified"] is True
    assert 0 < report["suppressed_records"] <= 0.01 * report["records"]
    assert [c["model"] for c in report["criteria"]] == ["k-anonymity", "distinct-l-diversity"]
    assert any(level > 0 for level in report["transformation"].values())
    assert report["nodes_checked"] > 1


def test_generalize(engine: EngineCase, adult: pd.DataFrame, generalized: dict[str, Any]) -> None:
    """``anonlab generalize`` of a Parquet folder on the engine: the in-memory release and
    report; the independent checker passes the written release."""
    parts = engine.parts(adult, "adult")
    report_path = engine.workdir / "report.json"
    _invoke(
        [
            *_generalize_args(parts),
            *engine.flags,
            "--output",
            engine.output("release"),
            "--report",
            str(report_path),
        ]
    )
    report, expected = _json(report_path), generalized["report"]
    for key in ("transformation", "nodes_checked", "suppressed_records", "records"):
        assert report[key] == expected[key], key
    written = sorted(p.name for p in (engine.workdir / "release").iterdir())
    assert written == [f"part-{i:05d}.parquet" for i in range(4)]  # the engine's: a part a piece
    release = read_table(engine.workdir / "release")
    assert digest(release) == digest(generalized["release"])
    assert_same_report(report, expected, engine)
    checked = verify_report(report_path)
    assert checked.ok, checked.line()


def _hierarchies() -> dict[str, Hierarchy]:
    return {q: Hierarchy.from_csv(ADULT / f"hierarchy_{q}.csv") for q in QIS}


def _generalizer(engine: EngineCase | None) -> Generalizer:
    return Generalizer(
        k=5,
        criteria=[DistinctLDiversity("occupation", 3)],
        suppression=0.01,
        metric="precision_with_suppression",
        engine=engine.api if engine is not None else None,
    )


def _fit(fitted: Generalizer, frame: Any) -> Any:
    """``fitted.fit_transform`` of Adult's frame (or the engine's) with the bundled
    hierarchies; the release (salary-class has classes of l = 1: no risk warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        return fitted.fit_transform(frame, _hierarchies(), sensitive=SENSITIVE)


@pytest.fixture(scope="module")
def generalized_in_python(adult: pd.DataFrame) -> tuple[Generalizer, pd.DataFrame]:
    """The Python API's in-memory generalization of Adult (fitted, and its release)."""
    fitted = _generalizer(None)
    return fitted, _fit(fitted, adult)


def test_generalizer(
    engine: EngineCase,
    adult: pd.DataFrame,
    generalized_in_python: tuple[Generalizer, pd.DataFrame],
    generalized: dict[str, Any],
) -> None:
    """``Generalizer(engine=...)`` on the engine's frame (a Dask DataFrame on Dask) finds
    the in-memory search's transformation and gives its release."""
    expected_fit, expected = generalized_in_python
    fitted = _generalizer(engine)
    released = _fit(fitted, engine.frame(adult))
    assert isinstance(released, pd.DataFrame) == (engine.name == "numpy")  # lazy on Dask
    assert fitted.transformation_ == expected_fit.transformation_
    assert fitted.result_.search.nodes_checked == expected_fit.result_.search.nodes_checked
    assert fitted.result_.suppressed_records == expected_fit.result_.suppressed_records
    assert digest(engine.compute(released)) == digest(expected)
    assert digest(expected) == digest(generalized["release"])  # CLI and API agree


def _closeness_generalizer(engine: EngineCase | None) -> Generalizer:
    """Hierarchical t-closeness 0.2 of occupation with 4 % suppression: not monotone, so the
    search runs on its monotone sub-model (the class size and value coverage t implies)."""
    model = HierarchicalDistanceTCloseness("occupation", 0.2, ADULT / "hierarchy_occupation.csv")
    return Generalizer(
        k=1,
        criteria=[model],
        suppression=0.04,
        metric="loss",
        engine=engine.api if engine is not None else None,
    )


@pytest.fixture(scope="module")
def closeness_in_memory(adult: pd.DataFrame) -> tuple[Generalizer, pd.DataFrame]:
    """The in-memory search with a model that is not monotone."""
    fitted = _closeness_generalizer(None)
    return fitted, _fit(fitted, adult)


def test_generalizer_with_a_model_that_is_not_monotone(
    engine: EngineCase, adult: pd.DataFrame, closeness_in_memory: tuple[Generalizer, pd.DataFrame]
) -> None:
    """On the engine, the sub-model built from the engine's frequency set prunes as in memory:
    the same transformation, nodes checked (fewer than the lattice) and release."""
    expected_fit, expected = closeness_in_memory
    fitted = _closeness_generalizer(engine)
    released = _fit(fitted, engine.frame(adult))
    search = fitted.result_.search
    assert fitted.transformation_ == expected_fit.transformation_
    assert search.nodes_checked == expected_fit.result_.search.nodes_checked
    assert search.nodes_checked < search.checked.shape[0]
    assert search.sub_tags is not None
    assert fitted.result_.suppressed_records == expected_fit.result_.suppressed_records
    assert digest(engine.compute(released)) == digest(expected)


@pytest.fixture(scope="module")
def applied(
    generalized: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The in-memory ``apply`` of the reference report to the Adult CSV."""
    root = tmp_path_factory.mktemp("applied")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        run_apply(
            ApplySettings(
                report_in=str(generalized["report_path"]),
                input=str(ADULT / "adult.csv"),
                delimiter=";",
                output=str(root / "release.parquet"),
                report=str(root / "report.json"),
            )
        )
    return {"release": read_table(root / "release.parquet"), "report": _json(root / "report.json")}


def test_apply(
    engine: EngineCase, adult: pd.DataFrame, generalized: dict[str, Any], applied: dict[str, Any]
) -> None:
    """``apply`` of the reference report on the engine: the in-memory apply's release (the
    generalize release: the same table) and report; the checker passes it."""
    if "engine" not in ApplySettings.model_fields:
        pytest.skip("ApplySettings has no engine field: apply runs in memory only")
    report_path = engine.workdir / "report.json"
    settings: dict[str, Any] = {
        "report_in": str(generalized["report_path"]),
        "input": str(engine.parts(adult, "adult")),
        "output": engine.output("release"),
        "report": str(report_path),
        **engine.settings,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        run_apply(ApplySettings(**settings))
    assert len(list((engine.workdir / "release").iterdir())) == 4  # a part a piece
    release = read_table(engine.workdir / "release")
    assert digest(release) == digest(applied["release"]) == digest(generalized["release"])
    assert_same_report(_json(report_path), applied["report"], engine)
    checked = verify_report(report_path)
    assert checked.ok, checked.line()


def _risk_args(source: Path, report: Path) -> list[str]:
    return [
        "risk",
        str(source),
        "--qi",
        ",".join(QIS),
        "--sensitive",
        ",".join(SENSITIVE),
        "--population",
        "1000000",
        "--risk-threshold",
        "0.02",
        "--hierarchy",
        f"occupation={ADULT / 'hierarchy_occupation.csv'}",
        "--report",
        str(report),
        "--quiet",
    ]


@pytest.fixture(scope="module")
def risk_in_memory(
    generalized: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """``anonlab risk`` of the in-memory release file, in memory."""
    path = tmp_path_factory.mktemp("risk") / "report.json"
    _invoke(_risk_args(generalized["release_path"], path))
    return _json(path)


def test_risk(
    engine: EngineCase, generalized: dict[str, Any], risk_in_memory: dict[str, Any]
) -> None:
    """``anonlab risk`` of the generalized release as a Parquet folder on the engine: every
    figure is the in-memory one, to the last bit."""
    risk = risk_in_memory["risk"]
    assert risk["suppressed"] > 0 and risk["suda2"] is not None  # the figures are there
    assert risk["sensitive"]["occupation"]["t_hierarchical"] is not None
    report_path = engine.workdir / "report.json"
    _invoke(
        [*_risk_args(engine.parts(generalized["release"], "release"), report_path), *engine.flags]
    )
    report = _json(report_path)
    assert report["risk"] == risk
    assert json.dumps(report["risk"], sort_keys=True) == json.dumps(risk, sort_keys=True)
    assert_same_report(report, risk_in_memory, engine)


def test_measure_risk(engine: EngineCase, generalized: dict[str, Any]) -> None:
    """:func:`measure_risk` of the engine's frame on the engine: the in-memory figures."""
    release = generalized["release"]
    options: dict[str, Any] = {
        "sensitive": SENSITIVE,
        "sampling_fraction": 0.05,
        "hierarchies": {"occupation": ADULT / "hierarchy_occupation.csv"},
    }
    expected = measure_risk(release, QIS, **options)
    source = engine.frame(release) if engine.name == "dask" else engine.parts(release, "r")
    assert measure_risk(source, QIS, engine=engine.api, **options) == expected


# ---------------------------------------------------------------------------
# Perturbation and evaluation (Tarragona: 834 records, 13 numeric columns)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tarragona() -> pd.DataFrame:
    return pd.read_csv(TARRAGONA)


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pd.DataFrame]:
    """The in-memory releases of ``obt``, ``rotation``, ``rbt`` and ``gdp`` (seed 7) of the
    Tarragona CSV."""
    root = tmp_path_factory.mktemp("perturbed")
    out = {}
    for method in ("obt", "rotation", "rbt", "gdp"):
        run_perturb(
            PerturbSettings(
                input=str(TARRAGONA),
                method=method,
                seed=7,
                output=str(root / f"{method}.parquet"),
                key=str(root / f"{method}.json"),
            )
        )
        out[method] = pd.read_parquet(root / f"{method}.parquet")
    return out


@pytest.mark.parametrize("method", ["obt", "rotation", "rbt", "gdp"])
def test_perturb_and_invert(
    engine: EngineCase,
    method: Literal["obt", "rotation", "rbt", "gdp"],
    tarragona: pd.DataFrame,
    perturbed: dict[str, pd.DataFrame],
) -> None:
    """The engine's release of a Parquet folder is the in-memory one to 1e-12 (row by row:
    the parts in order); ``invert`` with the key restores the input exactly."""
    key = str(engine.workdir / "key.json")
    run_perturb(
        PerturbSettings(
            input=str(engine.parts(tarragona, "in")),
            method=method,
            seed=7,
            output=engine.output("release"),
            key=key,
            **engine.settings,
        )
    )
    got = pd.read_parquet(engine.workdir / "release")
    want = perturbed[method]
    assert list(got.columns) == list(want.columns) == list(tarragona.columns)
    a, b = got.to_numpy(dtype=np.float64), want.to_numpy(dtype=np.float64)
    assert a.shape == b.shape == tarragona.shape
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * max(1.0, float(np.abs(b).max())))
    assert not np.allclose(a, tarragona.to_numpy(dtype=np.float64))  # the values moved
    run_invert(
        InvertSettings(
            input=str(engine.workdir / "release"),
            key=key,
            output=engine.output("restored"),
            **engine.settings,
        )
    )
    restored = pd.read_parquet(engine.workdir / "restored")
    assert list(restored.columns) == list(tarragona.columns)
    assert (restored.to_numpy() == tarragona.to_numpy()).all()


@pytest.fixture(scope="module")
def masked(tarragona: pd.DataFrame) -> pd.DataFrame:
    """Tarragona microaggregated by MDAV, k = 3."""
    return microaggregate(tarragona, k=3).masked


@pytest.fixture(scope="module")
def evaluated(
    tarragona: pd.DataFrame, masked: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The in-memory EM4ADOM report of ``masked`` against the Tarragona CSV."""
    root = tmp_path_factory.mktemp("evaluated")
    masked.to_csv(root / "masked.csv", index=False)
    result = run_evaluate(
        EvaluateSettings(
            original=str(TARRAGONA),
            masked=str(root / "masked.csv"),
            report=str(root / "report.json"),
        )
    )
    assert result.report["measures"]["IL"] > 0 and result.report["measures"]["DLD"] > 0
    return _json(root / "report.json")


def test_evaluate(
    engine: EngineCase, tarragona: pd.DataFrame, masked: pd.DataFrame, evaluated: dict[str, Any]
) -> None:
    """``evaluate`` of two Parquet folders on the engine: the in-memory report's measures
    and every other key (floats to a relative 1e-12)."""
    if "engine" not in EvaluateSettings.model_fields:
        pytest.skip("EvaluateSettings has no engine field: evaluate runs in memory only")
    report_path = engine.workdir / "report.json"
    settings: dict[str, Any] = {
        "original": str(engine.parts(tarragona, "original")),
        "masked": str(engine.parts(masked, "masked")),
        "report": str(report_path),
        **engine.settings,
    }
    blocks = "block_rows" in EvaluateSettings.model_fields
    if blocks:  # on the numpy engine too; one block, so every record is linked as in memory
        settings["block_rows"] = len(tarragona)
    run_evaluate(EvaluateSettings(**settings))
    report = _json(report_path)
    if blocks:
        assert report["engine"]["name"] == engine.name
    assert_close(report["measures"], evaluated["measures"], "measures")
    assert_same_report(report, evaluated, engine)
