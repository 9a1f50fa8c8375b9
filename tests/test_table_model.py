"""The one table model (anonlab.table.MicrodataTable): built once, taken by every family.

Each family's frame-taking signature must give what the table-taking one
gives, and a run must encode its input once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import anonlab
from anonlab.dataset import Role, RoleError
from anonlab.errors import AnonlabError
from anonlab.io import read_table
from anonlab.metrics import evaluate
from anonlab.microaggregation import microaggregate
from anonlab.microaggregation.sweep import run_tradeoff as sweep
from anonlab.perturbation.table import numeric_columns
from anonlab.perturbation.transforms import perturb_array
from anonlab.table import MicrodataTable, read_numbers
from anonlab.verify.microaggregation import check_microaggregation

pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")
TARRAGONA = Path(__file__).resolve().parents[1] / "data" / "sdc" / "Tarragona.csv"


def _people(n: int = 60, seed: int = 3) -> pd.DataFrame:
    """Records with two numeric, one nominal, one ordinal QI and three other columns."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "name": [f"p{i}" for i in range(n)],
            "age": rng.integers(18, 90, n).astype(str),
            "income": np.round(rng.gamma(2.0, 900.0, n), 2).astype(str),
            "sex": rng.choice(["f", "m"], n),
            "grade": rng.choice(["low", "mid", "high"], n),
            "region": rng.choice(["n", "s", "e", "w"], n),
            "diagnosis": rng.choice(["a", "b", "c"], n),
        }
    )


def _settings() -> dict[str, Any]:
    return {"nominal": ["sex"], "ordinal": ["grade"], "orders": {"grade": ["low", "mid", "high"]}}


def _table(frame: pd.DataFrame) -> MicrodataTable:
    return MicrodataTable.from_frame(
        frame,
        ["age", "income"],
        **_settings(),
        identifying=["name"],
        sensitive=["diagnosis"],
        insensitive=["region"],
    )


# --------------------------------------------------------------------- the model


def test_the_model_holds_every_role_and_each_encoding() -> None:
    frame = _people()
    table = _table(frame)
    assert table.roles == {
        "name": Role.IDENTIFYING,
        "age": Role.QUASI,
        "income": Role.QUASI,
        "sex": Role.QUASI,
        "grade": Role.QUASI,
        "region": Role.INSENSITIVE,
        "diagnosis": Role.SENSITIVE,
    }
    assert table.numeric.values.dtype == np.float64
    assert table.numeric.values.shape == (60, 2)
    assert table.numeric.values[:, 1].tolist() == [float(v) for v in frame["income"]]
    assert table.nominal == ["sex"] and table.ordinal == ["grade"]
    sex, grade = table.categorical
    assert sex.domain == ("f", "m") and not sex.ordinal
    assert grade.domain == ("low", "mid", "high") and grade.ordinal
    assert [grade.domain[c] for c in grade.codes] == frame["grade"].tolist()
    assert table.columns_with(Role.IDENTIFYING) == ["name"]
    assert table.by_other == ()


def test_standardization_is_computed_once_with_the_population_deviation() -> None:
    table = _table(_people())
    z, mean, std = table.standardized
    x = table.numeric.values
    assert np.array_equal(mean, x.mean(axis=0)) and np.array_equal(std, x.std(axis=0, ddof=0))
    assert np.array_equal(z, (x - mean) / std)
    assert table.standardized is table.standardized


def test_a_column_without_a_role_is_refused_unless_other_makes_it_insensitive() -> None:
    frame = _people()
    with pytest.raises(RoleError, match="name, region"):
        MicrodataTable.from_frame(frame, ["age", "income"], **_settings(), sensitive=["diagnosis"])
    table = MicrodataTable.from_frame(
        frame, ["age", "income"], **_settings(), sensitive=["diagnosis"], other="insensitive"
    )
    assert table.by_other == ("name", "region")
    assert table.roles["name"] == Role.INSENSITIVE


def test_all_numeric_leaves_out_the_columns_other_roles_name() -> None:
    frame = _people().assign(code=lambda f: np.arange(len(f)).astype(str))
    table = MicrodataTable.from_frame(
        frame,
        "all-numeric",
        identifying=["name", "code"],
        sensitive=["diagnosis"],
        other="insensitive",
    )
    assert table.numeric_names == ["age", "income"]
    assert table.roles["code"] == Role.IDENTIFYING


def test_the_exact_rule_reads_integers_and_refuses_what_perturbation_refuses() -> None:
    frame = pd.DataFrame({"a": ["1", "2", "+3"], "b": ["0.1", "1e2", "7"], "c": ["x", "y", "z"]})
    exact = MicrodataTable.from_frame(frame, ["a", "b"], other="insensitive", numbers="exact")
    assert exact.numeric.integer == [True, False]
    assert exact.numeric.values.flags.f_contiguous
    assert exact.numeric.values[:, 1].tolist() == [0.1, 100.0, 7.0]
    parsed = MicrodataTable.from_frame(frame, ["a", "b"], other="insensitive")
    assert parsed.numeric.integer == [False, False]  # text columns, whatever they spell
    assert np.array_equal(parsed.numeric.values, exact.numeric.values)
    with pytest.raises(AnonlabError, match=r"column 'c' is not numeric \(record 1: 'x'\)"):
        MicrodataTable.from_frame(frame, ["a", "c"], other="insensitive", numbers="exact")
    with pytest.raises(AnonlabError, match="column 'c' of the table is not numeric: row 1"):
        MicrodataTable.from_frame(frame, ["a", "c"], other="insensitive")


def test_spaces_around_numbers_do_not_change_them() -> None:
    plain = pd.DataFrame({"a": ["1.5", "2", "1e3"], "b": ["7", "8", "9"]})
    spaced = pd.DataFrame({"a": [" 1.5", "2\t", "\u00a01e3"], "b": ["7 ", " 8", "9"]})
    for frame in (plain, spaced):
        table = MicrodataTable.from_frame(frame, "all-numeric")
        assert table.numeric_names == ["a", "b"]
        assert table.numeric.values.tolist() == [[1.5, 7.0], [2.0, 8.0], [1000.0, 9.0]]


def test_a_masked_table_is_encoded_with_the_originals_domains() -> None:
    table = _table(_people(12))
    masked = table.frame.assign(sex=["*"] + ["f"] * 11, age=["30.0"] * 12)
    like = table.encoded_like(masked)
    assert like.categorical[0].domain == ("f", "m", "*")
    assert like.categorical[0].codes[0] == 2
    assert like.numeric.values[:, 0].tolist() == [30.0] * 12
    assert like.roles == table.roles


def test_column_settings_given_with_a_table_are_refused() -> None:
    table = _table(_people())
    with pytest.raises(AnonlabError, match=r"^nominal is given with a MicrodataTable") as info:
        microaggregate(table, k=3, nominal=["sex"])
    assert info.value.parameter == "nominal"
    with pytest.raises(AnonlabError, match=r"^columns is given with a MicrodataTable"):
        evaluate(table, table.frame, ["age"])


# ------------------------------------------- the families: old and new signatures agree


def test_microaggregate_of_the_table_equals_microaggregate_of_the_frame() -> None:
    frame = _people()
    by_frame = microaggregate(frame, ["age", "income"], 3, **_settings())
    by_table = microaggregate(_table(frame), k=3)
    pd.testing.assert_frame_equal(by_table.masked, by_frame.masked)
    assert np.array_equal(by_table.labels, by_frame.labels)
    assert by_table.summary() == by_frame.summary()
    assert (
        check_microaggregation(
            frame,
            by_table.masked,
            3,
            numeric=["age", "income"],
            nominal=["sex"],
            ordinal=["grade"],
            orders=_settings()["orders"],
        )
        == []
    )


def test_evaluate_of_the_table_equals_evaluate_of_the_frames() -> None:
    frame = _people()
    table = _table(frame)
    masked = microaggregate(table, k=4).masked
    by_frame = evaluate(frame, masked, ["age", "income"], **_settings())
    by_table = evaluate(table, masked)
    by_tables = evaluate(table, table.encoded_like(masked))
    assert by_table.summary() == by_frame.summary() == by_tables.summary()
    assert by_table.measures["ZIL"] >= 0 and 0 <= by_table.measures["ILh"] <= 1


def test_the_trade_off_sweep_encodes_the_table_once(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _people()
    by_frame = sweep(frame, [3, 4, 5], ["age", "income"], **_settings())
    built: list[int] = []
    original = MicrodataTable.from_frame.__func__  # type: ignore[attr-defined]

    def counted(cls: type[MicrodataTable], *args: Any, **kwargs: Any) -> MicrodataTable:
        built.append(1)
        table: MicrodataTable = original(cls, *args, **kwargs)
        return table

    monkeypatch.setattr(MicrodataTable, "from_frame", classmethod(counted))
    by_frame_counted = sweep(frame, [3, 4, 5], ["age", "income"], **_settings())
    assert len(built) == 1
    table = _table(frame)
    built.clear()
    by_table = sweep(table, [3, 4, 5])
    assert built == []
    assert by_table == by_frame == by_frame_counted


def test_the_perturbation_numbers_come_from_the_table_model() -> None:
    frame = read_table(TARRAGONA, dtype=str, strings="arrow")
    names = [str(c) for c in frame.columns]
    old = numeric_columns(frame, names)
    table = MicrodataTable.from_frame(frame, None, numbers="exact")
    assert table.numeric.names == old.names and table.numeric.integer == old.integer
    assert np.array_equal(table.numeric.values, old.values)
    assert read_numbers(frame, names, "exact").integer == old.integer
    z1, released1, key1 = perturb_array(old, "rotation", seed=5)
    z2, released2, key2 = perturb_array(table.numeric, "rotation", seed=5)
    assert np.array_equal(z1, z2) and np.array_equal(released1, released2)
    assert key1.to_dict() == key2.to_dict()


# ---------------------------------------------------- the runs build the model once


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    built: list[str] = []
    original = MicrodataTable.from_frame.__func__  # type: ignore[attr-defined]

    def counted(
        cls: type[MicrodataTable], frame: pd.DataFrame, *args: Any, **kwargs: Any
    ) -> MicrodataTable:
        built.append(kwargs.get("numbers", "parsed"))
        table: MicrodataTable = original(cls, frame, *args, **kwargs)
        return table

    monkeypatch.setattr(MicrodataTable, "from_frame", classmethod(counted))
    return built


def test_each_run_builds_its_table_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    built = _count_builds(monkeypatch)
    data = tmp_path / "people.csv"
    _people().to_csv(data, index=False)
    roles = {"identifying": ["name"], "sensitive": ["diagnosis"], "insensitive": ["region"]}
    micro = anonlab.run_microaggregate(
        anonlab.MicroaggregateSettings(
            input=str(data),
            columns=["age", "income"],
            k=3,
            output=str(tmp_path / "m.csv"),
            **_settings(),
            **roles,
        )
    )
    assert built == ["parsed"]
    assert micro.report["roles"]["name"] == "identifying"
    assert micro.report["verified"] is True
    built.clear()
    perturbed = anonlab.run(
        anonlab.PerturbSettings(
            input=str(data),
            columns=["age", "income"],
            seed=1,
            output=str(tmp_path / "p.csv"),
            key=str(tmp_path / "p_key.json"),
            identifying=["name"],
            sensitive=["diagnosis"],
            other="insensitive",
        )
    )
    assert built == ["exact"]
    assert perturbed.report["insensitive_by_other"] == ["sex", "grade", "region"]
    assert perturbed.release is not None and "name" not in perturbed.release.columns
