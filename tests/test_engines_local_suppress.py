"""Cell suppression and local recoding on the NumPy and Dask engines (issues 23 and 24):
small tables forced through the engines (Parquet parts of uneven sizes and a folder output, or
a CSV through the engine to a file output) give the in-memory release cell for cell (content
hash) and the same report figures, and ``anonlab verify`` passes on the engine run's report.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.io import read_table
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import GeneralizeSettings
from anonlab.runs.suppress import SuppressSettings, run_suppress
from anonlab.runs.verify import VerifySettings, run_verify
from engines import EngineCase

pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")

KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
#: report keys that name the run's own paths or time, not the release
OWN = {"parameters", "inputs", "outputs", "paths", "created", "runtime_seconds", "anonlab"}


@pytest.fixture
def table(data_dir: Path) -> pd.DataFrame:
    """sdcMicro's testdata as text, with missing key cells (blanks from the start) and the
    rows shuffled, so that first appearances differ from the file's sorted order."""
    frame = pd.read_csv(data_dir / "sdc" / "testdata.csv", dtype=str, keep_default_na=False)
    frame = frame.sample(frac=1.0, random_state=7).reset_index(drop=True)
    frame.loc[::37, "roof"] = ""
    frame.loc[::53, "sex"] = ""
    return frame


def _hash(frame: pd.DataFrame) -> str:
    return hashlib.sha256(frame.to_csv(index=False).encode()).hexdigest()


CASES: dict[str, dict[str, Any]] = {
    "all keys": {"k": 3},
    "importance, alpha 0.5": {
        "k": 2,
        "alpha": 0.5,
        "importance": {key: i + 1 for i, key in enumerate(reversed(KEYS))},
    },
    "strata and combs": {"k": 3, "strata": ["hhcivil"], "combs": [(3, 3), (5, 2)]},
}


@pytest.mark.parametrize("case", list(CASES))
def test_suppress_on_the_engines_gives_the_in_memory_release(
    engine: EngineCase, table: pd.DataFrame, case: str
) -> None:
    work = engine.workdir
    table.to_csv(work / "in.csv", index=False)
    parts = engine.parts(table, "parts")
    common = {"qi": KEYS, "other": "insensitive", "identifying": ["ori_hid"], **CASES[case]}
    memory = run_suppress(
        SuppressSettings(
            input=str(work / "in.csv"),
            output=str(work / "memory.csv"),
            report=str(work / "memory.json"),
            **common,
        )
    )
    expected = read_table(work / "memory.csv")
    assert memory.report["cells_suppressed"] > 0, "nothing blanked: the test would prove little"
    assert "ori_hid" not in expected.columns
    runs = {
        "folder": SuppressSettings(
            input=str(parts),
            output=engine.output("release"),
            report=str(work / "engine.json"),
            **engine.settings,
            **common,
        ),
        "file": SuppressSettings(
            input=str(work / "in.csv"),
            output=str(work / "gathered.csv"),
            **engine.settings,
            **common,
        ),
    }
    for name, settings in runs.items():
        run = run_suppress(settings)
        got = read_table(work / "release") if name == "folder" else read_table(settings.output)
        assert list(got.columns) == list(expected.columns), name
        assert _hash(got) == _hash(expected), name
        for key, value in memory.report.items():
            if key not in OWN:
                assert run.report[key] == value, (name, key)
    assert (work / "gathered.csv").read_bytes() == (work / "memory.csv").read_bytes()
    checked = run_verify(VerifySettings(report_in=str(work / "engine.json")))
    assert checked.report["ok"], checked.report["findings"]


def test_a_blank_is_written_as_a_missing_cell_in_the_parts(
    engine: EngineCase, table: pd.DataFrame
) -> None:
    parts = engine.parts(table, "parts")
    run = run_suppress(
        SuppressSettings(
            input=str(parts),
            qi=KEYS,
            k=3,
            other="insensitive",
            output=engine.output("release"),
            **engine.settings,
        )
    )
    import pyarrow.parquet as pq

    written = pq.read_table(engine.workdir / "release").to_pandas()
    assert len(written) == len(table) == run.report["records"]
    blanks = sum(int(((written[key].astype(str) == "") & (table[key] != "")).sum()) for key in KEYS)
    assert blanks == run.report["cells_suppressed"] > 0
    # every other cell is the input's text
    same = written[KEYS].astype(str).to_numpy() == table[KEYS].to_numpy()
    assert int((~same).sum()) == blanks
    assert np.array_equal(written["income"].astype(str).to_numpy(), table["income"].to_numpy())


def test_a_table_changed_between_the_passes_is_refused(
    tmp_path: Path, table: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writing pass's rows must be the first pass's (here the first pass is patched to
    have counted one record fewer, on the NumPy engine in this process)."""
    from anonlab.suppression import pieces
    from engines import write_parts

    parts = write_parts(table, tmp_path / "parts", [0, 1000, len(table)])
    counted = pieces.engine_suppression

    def fewer(*args: Any, **kwargs: Any) -> Any:
        result, plan = counted(*args, **kwargs)
        result.records -= 1
        return result, plan

    monkeypatch.setattr(pieces, "engine_suppression", fewer)
    settings = SuppressSettings(
        input=str(parts), qi=KEYS, k=3, other="insensitive", output=f"{tmp_path / 'release'}/"
    )
    with pytest.raises(AnonlabError, match="changed while it was read"):
        run_suppress(settings)
    assert not (tmp_path / "release").exists()


def test_a_stratum_below_k_is_the_same_one_line_on_the_engines(
    engine: EngineCase, table: pd.DataFrame
) -> None:
    parts = engine.parts(table, "parts")
    settings = SuppressSettings(
        input=str(parts),
        qi=["urbrur", "sex"],
        k=3,
        strata=["age"],
        other="insensitive",
        output=engine.output("release"),
        **engine.settings,
    )
    with pytest.raises(AnonlabError, match="fewer than k = 3"):
        run_suppress(settings)
    assert not (engine.workdir / "release").exists()


ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
LOCAL_QI = ["age", "sex", "marital-status", "education", "race"]

LOCAL_CASES: dict[str, dict[str, Any]] = {
    # gs factor 0.5 first, then ARX's 0.05 on the suppressed records: several searches
    "k": {"k": 5, "insensitive": ["occupation", "salary-class"]},
    "k and l-diversity": {
        "criteria": [
            {"model": "k-anonymity", "k": 3},
            {"model": "distinct-l-diversity", "attribute": "occupation", "l": 2},
        ],
        "sensitive": ["occupation"],
        "insensitive": ["salary-class"],
    },
    "t-closeness, an identifying column": {
        "criteria": [
            {"model": "k-anonymity", "k": 4},
            {"model": "equal-distance-t-closeness", "attribute": "salary-class", "t": 0.3},
        ],
        "sensitive": ["salary-class"],
        "identifying": ["occupation"],
    },
}


@pytest.fixture
def adult() -> pd.DataFrame:
    """3,000 records of Adult: five quasi-identifiers with the bundled hierarchies, two more
    columns."""
    frame = pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str, keep_default_na=False)
    return frame.iloc[:3000][[*LOCAL_QI, "occupation", "salary-class"]].reset_index(drop=True)


def _local(source: str, output: str, **extra: Any) -> GeneralizeSettings:
    values: dict[str, Any] = {
        "input": source,
        "qi": {c: str(ADULT / f"hierarchy_{c}.csv") for c in LOCAL_QI},
        "recoding": "local",
        "suppression": 0.5,
        "metric": "loss",
        "gs_factor": 0.5,
        "output": output,
        **extra,
    }
    return GeneralizeSettings(**values)


@pytest.mark.parametrize("case", list(LOCAL_CASES))
def test_local_recoding_on_the_engines_gives_the_in_memory_release(
    engine: EngineCase, adult: pd.DataFrame, case: str
) -> None:
    work = engine.workdir
    adult.to_csv(work / "in.csv", index=False)
    parts = engine.parts(adult, "parts")
    extra = LOCAL_CASES[case]
    memory = run_generalize(
        _local(str(work / "in.csv"), str(work / "memory.csv"), report=str(work / "m.json"), **extra)
    )
    expected = read_table(work / "memory.csv")
    assert memory.report["iterations"] >= 1, "no search after the first: the test proves little"
    assert len(memory.report["releases"]) >= 2
    folder = run_generalize(
        _local(
            str(parts),
            engine.output("release"),
            report=str(work / "engine.json"),
            **engine.settings,
            **extra,
        )
    )
    gathered = run_generalize(
        _local(str(work / "in.csv"), str(work / "gathered.csv"), **engine.settings, **extra)
    )
    got = read_table(work / "release")
    assert list(got.columns) == list(expected.columns)
    assert _hash(got) == _hash(expected)
    assert (work / "gathered.csv").read_bytes() == (work / "memory.csv").read_bytes()
    for run in (folder, gathered):
        for key, value in memory.report.items():
            if key not in OWN:
                assert run.report[key] == value, key
    checked = run_verify(VerifySettings(report_in=str(work / "engine.json")))
    assert checked.report["ok"], checked.report["findings"]


def test_local_recoding_refuses_aggregates_on_an_engine(
    engine: EngineCase, adult: pd.DataFrame
) -> None:
    parts = engine.parts(adult, "parts")
    settings = _local(
        str(parts),
        engine.output("release"),
        k=5,
        insensitive=["occupation", "salary-class"],
        aggregate_qi={"age": "mean"},
        **engine.settings,
    )
    with pytest.raises(AnonlabError, match="aggregate_qi"):
        run_generalize(settings)
    assert not (engine.workdir / "release").exists()


def _random_table(seed: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A random table of three quasi-identifiers with small hierarchies and a sensitive
    column (rare tuples, so that records stay suppressed after the first search)."""
    from anonlab.hierarchy import Hierarchy

    rng = np.random.default_rng(seed)
    n = int(rng.integers(60, 400))
    frame = pd.DataFrame(
        {
            "a": [f"a{v}" for v in rng.integers(0, 8, n)],
            "b": [f"b{v}" for v in rng.integers(0, 6, n)],
            "c": [f"c{v}" for v in rng.integers(0, 4, n)],
            "s": [f"s{v}" for v in rng.integers(0, 5, n)],
        }
    )
    hierarchies = {
        "a": Hierarchy.from_rows([(f"a{v}", f"A{v // 2}", f"AA{v // 4}", "*") for v in range(8)]),
        "b": Hierarchy.from_rows([(f"b{v}", f"B{v // 3}", "*") for v in range(6)]),
        "c": Hierarchy.from_rows([(f"c{v}", "*") for v in range(4)]),
    }
    return frame, hierarchies


RANDOM_MODELS = [
    [{"model": "k-anonymity", "k": 3}],
    [{"model": "k-anonymity", "k": 2}, {"model": "distinct-l-diversity", "attribute": "s", "l": 2}],
    [{"model": "k-anonymity", "k": 2}, {"model": "entropy-l-diversity", "attribute": "s", "l": 2}],
    [{"model": "equal-distance-t-closeness", "attribute": "s", "t": 0.5}],
]


@pytest.mark.parametrize("judge", ["search", "whole lattice"])
@pytest.mark.parametrize("seed", range(8))
def test_local_recoding_on_a_frequency_set_is_the_one_on_the_rows(
    seed: int, judge: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On random tables, local recoding of the NumPy engine's rowless dataset (units = base
    tuples) gives every record the search and levels the in-memory run gives it, whether the
    searches on the suppressed records run Flash or judge the whole lattice."""
    from anonlab import engine as engines
    from anonlab.dataset import Roles
    from anonlab.generalize import model_dataset, resolve_criteria
    from anonlab.grouping import group_tuples
    from anonlab.lattice import local
    from anonlab.lattice.pieces import engine_dataset

    if judge == "search":  # never judge the whole lattice
        monkeypatch.setattr(local, "JUDGE_AT_ONCE_SECONDS", -1.0)
        monkeypatch.setattr(local, "JUDGE_AT_HIGH_FACTOR_SECONDS", -1.0)
        monkeypatch.setattr(local, "PAIR_SECONDS", 1.0)
    else:
        monkeypatch.setattr(local, "PAIR_SECONDS", 0.0)
    frame, hierarchies = _random_table(seed)
    specs = RANDOM_MODELS[seed % len(RANDOM_MODELS)]
    roles = Roles.of(sensitive=["s"]) if any("attribute" in s for s in specs) else None
    roles = roles or Roles.of(insensitive=["s"])
    options = {"metric": "loss", "gs_factor": 0.5}
    memory = model_dataset(frame, hierarchies, resolve_criteria(specs), roles=roles)
    expected = local.local_recoding(memory, resolve_criteria(specs), 1.0, **options)
    with engines.open_engine("numpy", batch_rows=37) as opened:
        rowless = engine_dataset(opened, frame, hierarchies, roles=roles)
    got = local.local_recoding(rowless, resolve_criteria(specs), 1.0, **options)
    assert got.levels == expected.levels
    tuple_of, _ = group_tuples(memory.code_matrix(), [q.cardinality(0) for q in memory.qis])
    assert np.array_equal(got.step[tuple_of], expected.step)
    assert got.summary(["a", "b", "c"]) == expected.summary(["a", "b", "c"])


def test_local_release_pass_refuses_a_table_that_changed(tmp_path: Path) -> None:
    """The writing pass of local recoding refuses rows other than the first pass counted, and
    a tuple the first pass did not count, each in one line (a run then discards its staged
    folder)."""
    from anonlab import engine as engines
    from anonlab.dataset import Roles
    from anonlab.engine.table import open_table
    from anonlab.generalize import resolve_criteria
    from anonlab.lattice.local import local_recoding
    from anonlab.lattice.local_pieces import local_plan, write_parts
    from anonlab.lattice.pieces import engine_dataset

    frame, hierarchies = _random_table(3)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    criteria = resolve_criteria([{"model": "k-anonymity", "k": 3}])
    with engines.open_engine("numpy") as opened:
        table = open_table(tmp_path / "t.parquet")
        dataset = engine_dataset(opened, table, hierarchies, roles=Roles.of(insensitive=["s"]))
        result = local_recoding(dataset, criteria, 1.0, metric="loss", gs_factor=0.5)
        plan = local_plan(dataset, result, ())
        (tmp_path / "a").mkdir()
        with pytest.raises(AnonlabError, match="changed while it was read"):
            write_parts(opened, table, plan, tmp_path / "a", dataset.n + 1)
        seen = set(map(tuple, frame[["a", "b", "c"]].to_numpy().tolist()))
        absent = next(
            (a, b, c)
            for a in sorted(set(frame["a"]))
            for b in sorted(set(frame["b"]))
            for c in sorted(set(frame["c"]))
            if (a, b, c) not in seen
        )
        changed = frame.copy()
        changed.loc[0, ["a", "b", "c"]] = list(absent)  # values counted, their tuple not
        changed.to_parquet(tmp_path / "t.parquet", index=False)
        with pytest.raises(AnonlabError, match="did not count"):
            write_parts(opened, open_table(tmp_path / "t.parquet"), plan, tmp_path / "b", 0)
