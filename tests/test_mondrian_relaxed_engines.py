"""Relaxed Mondrian on the NumPy and Dask engines (issue 24): 1500 records of Adult (age cut in
order, sex and marital status along their hierarchies) in three Parquet pieces, where
relaxed cuts split tuples across partitions (and the relaxed partitioning is kept), give on
both engines the release the in-memory run gives, cell for cell.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonlab.dataset import Roles
from anonlab.generalize import model_dataset, resolve_criteria
from anonlab.hierarchy import Hierarchy
from anonlab.mondrian.method import flat_hierarchies, mondrian
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import GeneralizeSettings

pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
CUT_ALONG = ["sex", "marital-status"]


def _table() -> pd.DataFrame:
    adult = pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str, keep_default_na=False)
    columns = ["age", *CUT_ALONG, "occupation", "salary-class"]
    return adult.iloc[:1500][columns].reset_index(drop=True)


def _hierarchies() -> dict[str, Hierarchy]:
    return {c: Hierarchy.from_csv(ADULT / f"hierarchy_{c}.csv") for c in CUT_ALONG}


def _write_parts(frame: pd.DataFrame, folder: Path) -> None:
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[part].to_parquet(folder / f"part-{i}.parquet", index=False)


def _hash(frame: pd.DataFrame) -> str:
    text = "\n".join(",".join(map(str, row)) for row in frame.astype(str).to_numpy())
    return hashlib.sha256(("|".join(frame.columns) + "\n" + text).encode()).hexdigest()


def _settings(tmp: Path, output: str, sensitive: list[str], **extra: object) -> GeneralizeSettings:
    values: dict[str, object] = {
        "input": str(tmp / "table"),
        "qi": {"age": "", **{c: str(ADULT / f"hierarchy_{c}.csv") for c in CUT_ALONG}},
        "sensitive": sensitive,
        "insensitive": [c for c in ("occupation", "salary-class") if c not in sensitive],
        "recoding": "mondrian",
        "relaxed": True,
        "output": f"{tmp}/{output}",
        **extra,
    }
    return GeneralizeSettings(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("criteria", "sensitive"),
    [
        ([{"model": "k-anonymity", "k": 10}], []),
        ([{"model": "k-anonymity", "k": 10}], ["occupation", "salary-class"]),
        (
            [
                {"model": "k-anonymity", "k": 10},
                {"model": "distinct-l-diversity", "attribute": "occupation", "l": 3},
            ],
            ["occupation"],
        ),
    ],
    ids=["k", "k+two-sensitive", "k+l"],
)
def test_relaxed_release_is_the_same_on_the_engines(
    tmp_path: Path, criteria: list[dict[str, object]], sensitive: list[str]
) -> None:
    frame = _table()
    _write_parts(frame, tmp_path / "table")
    # the in-memory partitioning splits frequency rows (a relaxed cut), so the pieces must
    # agree on which records go where
    model = resolve_criteria(criteria)
    hierarchies = flat_hierarchies(frame, _hierarchies(), ["age"])
    others = [c for c in ("occupation", "salary-class") if c not in sensitive]
    dataset = model_dataset(frame, hierarchies, model, roles=Roles.of((), sensitive, others, None))
    found = mondrian(dataset, model, ordered=["age"], relaxed=True)
    rows = np.concatenate([p.rows for p in found.partitions])
    assert found.partitioning.relaxed_kept
    assert len(np.unique(rows)) < len(rows), "no row was split: the test would prove nothing"

    memory = run_generalize(_settings(tmp_path, "memory.csv", sensitive, criteria=criteria))
    expected = pd.read_csv(tmp_path / "memory.csv", dtype=str, keep_default_na=False)
    numpy_run = run_generalize(_settings(tmp_path, "numpy/", sensitive, criteria=criteria))
    dask_run = run_generalize(
        _settings(tmp_path, "dask/", sensitive, criteria=criteria, engine="dask", workers=2)
    )
    for name, report in (("numpy", numpy_run.report), ("dask", dask_run.report)):
        got = pd.read_parquet(tmp_path / name).astype(str)
        assert list(got.columns) == list(expected.columns)
        assert _hash(got) == _hash(expected), name
        assert report["loss"] == memory.report["loss"]
        assert report["mondrian"]["relaxed"] is True
        assert report["mondrian"]["partitions"] == memory.report["mondrian"]["partitions"]
