"""The one table model (anonlab.table.MicrodataTable) taken by fusion's providers and by risk.

A provider loaded from a table equals the provider loaded from its file; a
whole in-process fusion from tables gives the file's release; the risk of a
table equals the risk of its frame; roles that contradict the table are refused.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from anonlab.dataset import Role
from anonlab.errors import AnonlabError
from anonlab.fusion.config import FusionConfig, config_from_dict, load_config
from anonlab.fusion.engine import FusionResult, fuse, specialize_table
from anonlab.fusion.provider import (
    ProviderState,
    load_provider,
    provider_roles,
    provider_table,
)
from anonlab.io import read_table
from anonlab.risk.measure import measure_risk
from anonlab.runs.risk import run_risk
from anonlab.table import MicrodataTable, NumericColumns

pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fusion"
ADULT = Path(__file__).resolve().parents[1] / "data" / "adult" / "adult.csv"


@pytest.fixture(scope="module")
def example() -> FusionConfig:
    return load_config(EXAMPLE / "fusion.toml")


@pytest.fixture(scope="module")
def example_frames(example: FusionConfig) -> dict[str, pd.DataFrame]:
    return {p.id: read_table(str(p.file)) for p in example.providers}


def _user_table(config: FusionConfig, index: int, frame: pd.DataFrame) -> MicrodataTable:
    """A provider's table as a user builds it with from_frame (every column of its file)."""
    party = config.providers[index]
    qid = [c for c in party.columns if c in config.qid_attributes]
    continuous = [c for c in qid if config.taxonomies[c] == "continuous"]
    others = [c for c in party.columns if c not in qid]
    return MicrodataTable.from_frame(
        frame,
        continuous,
        nominal=[c for c in qid if c not in continuous],
        identifying=[config.fusion.id],
        sensitive=[config.class_column],
        insensitive=others,
        numbers="exact",
        allow_constant=True,
    )


def assert_same_state(got: ProviderState, want: ProviderState) -> None:
    """Codes, ids, classes and domains equal, to the bit and the dtype."""
    assert got.ids.dtype == want.ids.dtype and np.array_equal(got.ids, want.ids)
    assert np.array_equal(got.classes, want.classes) and got.class_labels == want.class_labels
    assert got.qid == want.qid and set(got.codes) == set(want.codes)
    for a, codes in want.codes.items():
        assert got.codes[a].dtype == codes.dtype
        assert got.codes[a].tobytes() == codes.tobytes(), a
    assert set(got.domains) == set(want.domains)
    for a, (distinct, inverse) in want.domains.items():
        assert got.domains[a][0].tobytes() == distinct.tobytes()
        assert np.array_equal(got.domains[a][1], inverse)
    assert got.bound == want.bound
    for c in got.config.released_columns(got.config.providers[got.index]):
        assert got.raw[c].equals(want.raw[c])


def assert_same_release(got: FusionResult, want: FusionResult) -> None:
    pd.testing.assert_frame_equal(got.table, want.table)
    assert got.specializations == want.specializations
    assert got.cut == want.cut and got.columns == want.columns


# --------------------------------------------------------------------- fusion providers


def test_provider_table_says_each_column_role_and_encodes_its_qids(
    example: FusionConfig, example_frames: dict[str, pd.DataFrame]
) -> None:
    table = provider_table(example, 0)
    assert list(table.frame.columns) == [
        "id",
        "age",
        "workclass",
        "fnlwgt",
        "education",
        "education-num",
        "marital-status",
        "occupation",
        "salary-class",
    ]
    assert table.roles["id"] == Role.IDENTIFYING
    assert table.roles["salary-class"] == Role.SENSITIVE
    assert table.columns_with(Role.QUASI) == ["age", "workclass", "fnlwgt", "marital-status"]
    assert table.columns_with(Role.INSENSITIVE) == ["education", "education-num", "occupation"]
    assert table.numbers == "exact" and table.numeric.names == ["age", "fnlwgt"]
    assert table.nominal == ["workclass", "marital-status"] and table.by_other == ()
    # from a frame: the same table
    same = provider_table(example, 0, example_frames["provider-a"])
    assert same.roles == table.roles
    assert same.numeric.values.tobytes() == table.numeric.values.tobytes()


def test_exact_numbers_are_python_floats_of_the_example_text(example: FusionConfig) -> None:
    """Arrow's correctly rounded parse gives each value the double Python's float gives it."""
    for index in range(len(example.providers)):
        table = provider_table(example, index)
        for j, name in enumerate(table.numeric.names):
            python = np.array([float(v) for v in table.frame[name]], dtype=np.float64)
            assert table.numeric.values[:, j].tobytes() == python.tobytes(), name
    # and on text where a sloppy parser rounds wrong
    tricky = [
        "0.1",
        "2.675",
        "9007199254740993",
        "1e-320",
        "1.7976931348623157e308",
        "0.30000000000000004",
        "123456789.123456789",
        "-7.5e-3",
    ]
    frame = pd.DataFrame({"x": tricky, "k": "a"})
    got = MicrodataTable.from_roles(frame, {"x": "quasi", "k": "sensitive"}, numbers="exact")
    assert got.numeric.values[:, 0].tobytes() == np.array([float(v) for v in tricky]).tobytes()


def test_provider_from_a_table_equals_provider_from_its_file(
    example: FusionConfig, example_frames: dict[str, pd.DataFrame]
) -> None:
    for index, party in enumerate(example.providers):
        from_file = load_provider(example, index)
        frame = example_frames[party.id]
        from_table = load_provider(example, index, provider_table(example, index, frame))
        assert_same_state(from_table, from_file)
        # a user's own table, rows shuffled, the whole file: the same state (ids sorted)
        shuffled = frame.sample(frac=1.0, random_state=index).reset_index(drop=True)
        user = load_provider(example, index, _user_table(example, index, shuffled))
        assert_same_state(user, from_file)
        assert user.table is not None and user.table.n == from_file.n


def test_fusion_from_tables_gives_the_release_of_the_files(
    example: FusionConfig, example_frames: dict[str, pd.DataFrame], tmp_path: Path
) -> None:
    from anonlab.io import write_table

    from_files = fuse(example)
    tables = {
        p.id: provider_table(example, i, example_frames[p.id])
        for i, p in enumerate(example.providers)
    }
    assert_same_release(fuse(example, tables), from_files)
    typed = {
        p.id: _user_table(example, i, pd.read_csv(str(p.file)))  # typed, as pandas reads
        for i, p in enumerate(example.providers)
    }
    from_typed = fuse(example, typed)
    assert_same_release(from_typed, from_files)
    write_table(from_files.table, tmp_path / "files.csv")
    write_table(from_typed.table, tmp_path / "tables.csv")
    assert (tmp_path / "files.csv").read_bytes() == (tmp_path / "tables.csv").read_bytes()


def _small(
    tmp_path: Path, keep_id: bool = False, extra: dict[str, Any] | None = None
) -> tuple[FusionConfig, pd.DataFrame]:
    """Two providers: p holds a continuous and a taxonomy QI, q an insensitive column only."""
    rng = np.random.default_rng(5)
    n = 40
    frame = pd.DataFrame(
        {
            "id": [f"r{i}" for i in rng.permutation(n)],
            "num": rng.integers(0, 30, n).astype(str),
            "cat": rng.choice(["1", "2", "3"], n),  # digits: a taxonomy column that parses
            "note": rng.choice(["u", "v"], n),
            "cls": rng.choice(["p", "q"], n),
        }
    )
    (tmp_path / "cat.csv").write_text("1;1-2;*\n2;1-2;*\n3;3;*\n")
    data: dict[str, Any] = {
        "fusion": {"class": "cls", "id": "id", "score": "tds", "keep_id": keep_id, **(extra or {})},
        "templates": [{"qid": ["num", "cat"], "k": 4}],
        "taxonomies": {"num": "continuous", "cat": str(tmp_path / "cat.csv")},
        "parties": [
            {"id": "p", "file": "p.csv", "columns": ["num", "cat"]},
            {"id": "q", "file": "q.csv", "columns": ["note"], "insensitive": ["note"]},
        ],
    }
    return config_from_dict(data, tmp_path), frame


def _parts(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"p": frame[["id", "num", "cat", "cls"]], "q": frame[["id", "note", "cls"]]}


def test_the_state_takes_its_numbers_from_the_table(tmp_path: Path) -> None:
    config, frame = _small(tmp_path)
    table = provider_table(config, 0, _parts(frame)["p"])
    halves = NumericColumns(table.numeric.names, table.numeric.values / 2, [False])
    state = load_provider(config, 0, dataclasses.replace(table, numeric=halves))
    plain = load_provider(config, 0, table)
    assert np.array_equal(state.codes["num"], plain.codes["num"] / 2)
    order = np.argsort(table.frame["id"].to_numpy(dtype=str), kind="stable")  # ids as text
    assert np.array_equal(plain.codes["num"], table.numeric.values[order, 0])


def test_a_provider_without_template_columns_is_a_table_too(tmp_path: Path) -> None:
    config, frame = _small(tmp_path)
    table = provider_table(config, 1, _parts(frame)["q"])
    assert table.columns_with(Role.QUASI) == [] and table.numeric.names == []
    assert table.roles == {"id": Role.IDENTIFYING, "note": Role.INSENSITIVE, "cls": Role.SENSITIVE}
    tables = {
        p.id: provider_table(config, i, _parts(frame)[p.id]) for i, p in enumerate(config.providers)
    }
    assert_same_release(fuse(config, tables), fuse(config, _parts(frame)))


def test_roles_follow_keep_id_and_a_class_named_insensitive(tmp_path: Path) -> None:
    config, _ = _small(tmp_path, keep_id=True, extra={"insensitive": ["cls"]})
    roles, unnamed = provider_roles(config, 0)
    assert roles == {
        "num": Role.QUASI,
        "cat": Role.QUASI,
        "id": Role.INSENSITIVE,
        "cls": Role.INSENSITIVE,
    }
    assert unnamed == []
    config, _ = _small(tmp_path, extra={"sensitive": ["note"]})
    assert provider_roles(config, 1)[0]["note"] == Role.SENSITIVE
    config, frame = _small(tmp_path)
    del config.providers[1].insensitive[:]  # a column named nowhere: by other
    roles, unnamed = provider_roles(config, 1)
    assert roles["note"] == Role.INSENSITIVE and unnamed == ["note"]
    assert provider_table(config, 1, _parts(frame)["q"]).by_other == ("note",)


def test_specialize_table_takes_a_table(tmp_path: Path) -> None:
    _, frame = _small(tmp_path)
    settings = {
        "fusion": {"class": "cls", "id": "id", "score": "tds"},
        "templates": [{"qid": ["num", "cat"], "k": 4}],
        "taxonomies": {"num": "continuous", "cat": str(tmp_path / "cat.csv")},
    }
    part = frame[["id", "num", "cat", "cls"]]
    table = MicrodataTable.from_frame(
        part, ["num"], nominal=["cat"], identifying=["id"], sensitive=["cls"], numbers="exact"
    )
    assert_same_release(specialize_table(table, settings), specialize_table(part, settings))


def test_text_arrow_refuses_is_read_as_python_float_and_bad_numbers_refused(tmp_path: Path) -> None:
    config, frame = _small(tmp_path)
    spaced = frame.copy()
    spaced["num"] = [f" {v} " for v in frame["num"]]
    assert_same_release(fuse(config, _parts(spaced)), fuse(config, _parts(frame)))
    bad = frame.copy()
    bad.loc[3, "num"] = "old"
    with pytest.raises(
        AnonlabError, match="continuous column 'num' has the non-numeric value 'old'"
    ):
        fuse(config, _parts(bad))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"insensitive": ["num"], "columns": []}, "gives column 'num' insensitive"),
        ({"identifying": [], "insensitive": ["id"]}, "gives column 'id' insensitive"),
        ({"sensitive": [], "insensitive": ["cls"]}, "gives column 'cls' insensitive"),
        ({"numbers": "parsed"}, "by rule 'parsed', fusion by rule 'exact'"),
        (
            {"columns": ["num", "cat"], "nominal": []},
            "'cat' has a taxonomy file but is not categorical",
        ),
    ],
)
def test_a_table_that_contradicts_the_config_is_refused(
    tmp_path: Path, change: dict[str, Any], words: str
) -> None:
    config, frame = _small(tmp_path)
    settings: dict[str, Any] = {
        "columns": ["num"],
        "nominal": ["cat"],
        "identifying": ["id"],
        "sensitive": ["cls"],
        "insensitive": [],
        "numbers": "exact",
    }
    settings.update(change)
    part = frame[["id", "num", "cat", "cls"]]
    table = MicrodataTable.from_frame(part, **settings)
    with pytest.raises(AnonlabError, match=words) as info:
        fuse(config, {"p": table, "q": _parts(frame)["q"]})
    assert info.value.parameter == "frames"
    with pytest.raises(AnonlabError) as direct:
        load_provider(config, 0, table)
    assert direct.value.parameter == "frame"


def test_a_table_without_the_provider_columns_is_refused(tmp_path: Path) -> None:
    config, frame = _small(tmp_path)
    table = MicrodataTable.from_frame(
        frame[["id", "num", "cls"]], ["num"], identifying=["id"], sensitive=["cls"], numbers="exact"
    )
    with pytest.raises(AnonlabError, match="provider 'p' has no column 'cat'"):
        load_provider(config, 0, table)


# ------------------------------------------------------------------ from_roles itself


def test_from_roles_refuses_roles_that_do_not_fit_the_frame() -> None:
    frame = pd.DataFrame({"a": ["1", "2"], "b": ["x", "y"], "c": ["s", "t"]})
    ok = MicrodataTable.from_roles(
        frame, {"a": Role.QUASI, "b": "quasi", "c": "insensitive"}, nominal=["b"], by_other=["c"]
    )
    assert ok.numeric.names == ["a"] and ok.nominal == ["b"] and ok.by_other == ("c",)
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"roles": {"a": "quasi", "b": "quasi"}}, "column 'c' of the table has no role", "roles"),
        (
            {"roles": {"a": "quasi", "b": "quasi", "c": "quasi", "d": "quasi"}},
            "roles names column 'd'",
            "roles",
        ),
        ({"roles": {"a": "quasi", "b": "secret", "c": "quasi"}}, "not a role", "roles"),
        ({"nominal": ["c"]}, "nominal names column 'c', whose role is insensitive", "nominal"),
        ({"nominal": ["b"], "ordinal": ["b"]}, "both nominal and ordinal", "ordinal"),
        (
            {"by_other": ["a"]},
            "by_other names column 'a', whose role is quasi-identifier",
            "by_other",
        ),
    ]
    base: dict[str, Any] = {
        "roles": {"a": "quasi", "b": "quasi", "c": "insensitive"},
        "nominal": ["b"],
    }
    for change, words, parameter in cases:
        args = {**base, **change}
        with pytest.raises(AnonlabError, match=words) as info:
            MicrodataTable.from_roles(frame, **args)
        assert info.value.parameter == parameter
    with pytest.raises(AnonlabError, match="no records"):
        MicrodataTable.from_roles(frame.iloc[:0], {"a": "quasi", "b": "quasi", "c": "quasi"})


# -------------------------------------------------------------------------------- risk


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    frame = read_table(str(ADULT)).head(1500)
    frame.insert(0, "name", [f"person {i}" for i in range(len(frame))])
    return frame


QI = ["age", "sex", "race", "marital-status"]
TABLE_QI = ["sex", "age", "race", "marital-status"]  # the table's order: Adult's
SENSITIVE = ["occupation", "salary-class"]


def _adult_table(frame: pd.DataFrame) -> MicrodataTable:
    return MicrodataTable.from_frame(
        frame,
        None,
        nominal=QI,
        identifying=["name"],
        sensitive=["salary-class", "occupation"],
        other="insensitive",
    )


def _same(a: Any, b: Any) -> bool:
    """Equal to the last bit (NaN-safe): compare the exact JSON texts."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_measure_risk_of_a_table_equals_its_frame(adult: pd.DataFrame) -> None:
    table = _adult_table(adult)
    want = measure_risk(adult, TABLE_QI, sensitive=SENSITIVE, sampling_fraction=0.1)
    got = measure_risk(table, sampling_fraction=0.1)
    assert got["attacker_columns"] == TABLE_QI and list(got["sensitive"]) == SENSITIVE
    assert _same(got, want)
    # some of the table's roles, given: the same as the frame with those columns
    fewer = measure_risk(table, ["sex", "age"], sensitive=["occupation"])
    assert _same(fewer, measure_risk(adult, ["sex", "age"], sensitive=["occupation"]))


def test_measure_risk_refuses_roles_the_table_contradicts(adult: pd.DataFrame) -> None:
    table = _adult_table(adult)
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"attacker_columns": ["age", "name"]}, "attacker_columns", "makes identifying"),
        ({"attacker_columns": ["age", "occupation"]}, "attacker_columns", "makes sensitive"),
        ({"attacker_columns": ["education"]}, "attacker_columns", "makes insensitive"),
        ({"sensitive": ["age"]}, "sensitive", "makes a quasi-identifier"),
    ]
    for kwargs, parameter, words in cases:
        with pytest.raises(AnonlabError, match=words) as info:
            measure_risk(table, **kwargs)
        assert info.value.parameter == parameter
        assert str(info.value).startswith(parameter)
    with pytest.raises(AnonlabError, match="attacker_columns is not given") as frame_info:
        measure_risk(adult)
    assert frame_info.value.parameter == "attacker_columns"


def _without_times(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in ("created", "runtime_seconds")}


def test_run_risk_of_a_table_equals_its_frame_and_its_file(
    adult: pd.DataFrame, tmp_path: Path
) -> None:
    table = _adult_table(adult)
    from_table = run_risk(table, report=tmp_path / "table" / "risk.json")
    # a table model gives every column a role; a frame names them (the rest: insensitive)
    rest = [c for c in adult.columns if c not in TABLE_QI + SENSITIVE]
    from_frame = run_risk(
        adult,
        TABLE_QI,
        sensitive=SENSITIVE,
        insensitive=rest,
        report=tmp_path / "frame" / "risk.json",
    )
    assert from_table.report["roles"]["quasi_identifying"] == TABLE_QI
    assert _same(_without_times(from_table.report), _without_times(from_frame.report))
    assert from_table.report["inputs"] == {"data": None}
    adult.to_csv(tmp_path / "adult.csv", index=False)
    from_file = run_risk(tmp_path / "adult.csv", TABLE_QI, sensitive=SENSITIVE, insensitive=rest)
    assert _same(from_file.report["risk"], from_table.report["risk"])
    assert from_file.report["roles"] == from_table.report["roles"]


def test_run_risk_refuses_a_qi_the_table_contradicts(adult: pd.DataFrame) -> None:
    table = _adult_table(adult)
    with pytest.raises(
        AnonlabError, match="qi names 'salary-class', which the MicrodataTable makes sensitive"
    ) as info:
        run_risk(table, ["age", "salary-class"])
    assert info.value.parameter == "qi"
    with pytest.raises(AnonlabError, match="sensitive names 'education'") as sens:
        run_risk(table, sensitive=["education"])
    assert sens.value.parameter == "sensitive"
    with pytest.raises(AnonlabError, match="qi is not given") as missing:
        run_risk(adult)
    assert missing.value.parameter == "qi"
