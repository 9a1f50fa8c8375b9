"""Cell suppression on the NumPy and Dask engines (issues 23 and 24): small tables forced
through the engines (Parquet parts of uneven sizes, a folder output, or Dask with a file
output) give the in-memory release cell for cell (content hash) and the same figures, and
``anonlab verify`` passes on the engine run's report. Local recoding still runs in memory:
its refusal on the engines is one line.
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
    engine: EngineCase, table: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    from anonlab.suppression import pieces

    if engine.name == "dask":
        pytest.skip("the first pass is patched in this process")
    parts = engine.parts(table, "parts")
    counted = pieces.engine_suppression

    def fewer(*args: Any, **kwargs: Any) -> Any:
        result, plan = counted(*args, **kwargs)
        result.records -= 1
        return result, plan

    monkeypatch.setattr(pieces, "engine_suppression", fewer)
    settings = SuppressSettings(
        input=str(parts),
        qi=KEYS,
        k=3,
        other="insensitive",
        output=engine.output("release"),
        **engine.settings,
    )
    with pytest.raises(AnonlabError, match="changed while it was read"):
        run_suppress(settings)
    assert not (engine.workdir / "release").exists()


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
