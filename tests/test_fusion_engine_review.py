"""Review findings on the fusion engine: each test failed before its fix."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.fusion.config import config_from_dict
from anonlab.fusion.engine import fuse
from anonlab.fusion.messages import Instructions, decode_instructions, encode_instructions
from anonlab.fusion.provider import load_taxonomies
from anonlab.fusion.taxonomy import build_taxonomy, interval_label
from anonlab.hierarchy import Hierarchy


def test_sibling_labels_stay_distinct_when_a_leaf_is_named_like_a_group() -> None:
    # leaf 'X' is alone in group 'Y' (a chain collapsed to its leaf) while 'X' is also
    # the group of a and b: the two children of the root must not both read 'X'
    tax = build_taxonomy(
        Hierarchy.from_rows([["a", "X", "*"], ["b", "X", "*"], ["X", "Y", "*"]]), "t"
    )
    kids = [tax.labels[c] for c in tax.children[0]]
    assert sorted(kids) == ["X", "Y"]
    # the networked parties accept the instructions the engine builds from them
    instr = Instructions("t", 0, "*", tuple(kids), (np.array([0, 1]), np.array([2])))
    assert decode_instructions(encode_instructions(instr)).children == tuple(kids)
    # the collapsed chain still covers leaf 'X' alone
    y = tax.children[0][kids.index("Y")]
    assert tax.leaf_count(y) == 1 and not tax.children[y]


def _review_config(tmp_path: Path, **sensitivity: Any) -> dict[str, Any]:
    (tmp_path / "race.csv").write_text("White;*\nBlack;*\n")
    return {
        "fusion": {"class": "cls", "id": "id", "score": "sensitivity"},
        "templates": [{"qid": ["age", "race"], "k": 2}],
        "taxonomies": {"age": "continuous", "race": str(tmp_path / "race.csv")},
        "sensitivity": sensitivity,
        "parties": [
            {"id": "a", "file": "a.csv", "columns": ["age", "job"], "factor": 0.5},
            {"id": "b", "file": "b.csv", "columns": ["race"], "factor": 0.5},
        ],
    }


@pytest.mark.parametrize(
    ("sensitivity", "message"),
    [
        (
            {"attributes": {"rase": 1}},
            "sensitivity.attributes names column 'rase' that no provider lists",
        ),
        (
            {"values": {"rase": {"White": 1}}},
            "sensitivity.values names column 'rase' that no provider lists",
        ),
        ({"values": {"age": {"30": 1}}}, "sensitivity.values.age: 'age' has no taxonomy file"),
        ({"values": {"job": {"x": 1}}}, "sensitivity.values.job: 'job' has no taxonomy file"),
    ],
)
def test_sensitivity_names_that_would_be_ignored_are_errors(
    tmp_path: Path, sensitivity: dict[str, Any], message: str
) -> None:
    with pytest.raises(AnonlabError, match=re.escape(message)):
        config_from_dict(_review_config(tmp_path, **sensitivity), tmp_path)


def test_sensitivity_value_missing_from_the_taxonomy_is_an_error(tmp_path: Path) -> None:
    config = config_from_dict(_review_config(tmp_path, values={"race": {"Whyte": 1}}), tmp_path)
    with pytest.raises(
        AnonlabError,
        match=re.escape(
            "sensitivity.values.race names 'Whyte', which the taxonomy of 'race' does not list"
        ),
    ):
        load_taxonomies(config, ["race"])
    ok = config_from_dict(
        _review_config(tmp_path, values={"race": {"White": 1}}, attributes={"job": 2}), tmp_path
    )
    assert int(load_taxonomies(ok, ["race"])["race"].leaf_levels.sum()) == 1 + 4


def test_interval_labels_name_bounds_beyond_ten_significant_digits() -> None:
    # coordinates 1e-10 apart: every interval printed as '[41.1234567, 41.1234567)' before,
    # so the released column merged all of them and sibling labels clashed
    lo, t, hi = 41.1234567001, 41.12345670025, 41.1234567004
    left, right = interval_label(lo, t, False), interval_label(t, hi, True)
    assert left != right
    assert left == "[41.1234567001, 41.12345670025)" and right == "[41.12345670025, 41.1234567004]"
    assert interval_label(17.0, 41.5, False) == "[17, 41.5)"  # short bounds stay short
    assert interval_label(0.1, 0.30000000000000004, True) == "[0.1, 0.30000000000000004]"


def test_fine_grained_numbers_are_released_with_distinct_labels() -> None:
    rng = np.random.default_rng(1)
    n = 200
    lat = 41.1234567 + rng.integers(0, 20, n) * 1e-10
    cls = rng.integers(0, 2, n).astype(str)
    a = pd.DataFrame({"id": range(n), "cls": cls, "lat": [repr(float(x)) for x in lat]})
    b = pd.DataFrame({"id": range(n), "cls": cls, "v": rng.integers(0, 3, n).astype(str)})
    config = config_from_dict(
        {
            "fusion": {"class": "cls", "id": "id", "score": "tds"},
            "templates": [{"qid": ["lat"], "k": 2}],
            "taxonomies": {"lat": "continuous"},
            "parties": [
                {"id": "a", "file": "-", "columns": ["lat"]},
                {"id": "b", "file": "-", "columns": ["v"]},
            ],
        },
        ".",
    )
    result = fuse(config, {"a": a, "b": b})
    assert result.rounds > 1
    assert result.table["lat"].nunique() == len(result.cut["lat"]) == result.rounds + 1
    for step in result.specializations:
        assert len(set(step["children"])) == len(step["children"])


def test_id_and_class_naming_one_column_is_a_config_error(tmp_path: Path) -> None:
    data = _review_config(tmp_path)
    data["fusion"]["id"] = "cls"
    with pytest.raises(
        AnonlabError, match=re.escape("fusion.id and fusion.class both name column 'cls'")
    ):
        config_from_dict(data, tmp_path)
