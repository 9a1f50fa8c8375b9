"""The I/O spine: strict JSON reports, tables whose header names each column once."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from anonlab.io import read_json, to_json_text, write_json


def test_non_finite_numbers_become_null() -> None:
    text = to_json_text({"ILR": float("inf"), "x": [np.float64("nan"), np.float32(1.5)],
                         "grid": np.array([[1.0, np.inf]]), "n": np.int64(3)})

    def refuse(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    data = json.loads(text, parse_constant=refuse)
    assert data == {"ILR": None, "x": [None, 1.5], "grid": [[1.0, None]], "n": 3}


def test_report_round_trip(tmp_path: Path) -> None:
    report = {"measures": {"IL": 0.25, "ID_by_p": {"1": 0.5}}, "k": np.int32(3)}
    write_json(report, tmp_path / "r.json")
    assert read_json(tmp_path / "r.json") == {"measures": {"IL": 0.25, "ID_by_p": {"1": 0.5}},
                                              "k": 3}


def test_repeated_header_name_is_refused(tmp_path: Path) -> None:
    import pytest

    from anonlab.errors import AnonlabError
    from anonlab.io import read_table

    path = tmp_path / "t.csv"
    path.write_text("city,city,x\nBonn,Bonn,1\n", encoding="utf-8")
    with pytest.raises(AnonlabError, match="names the column 'city' twice"):
        read_table(path)
    path.write_text('"a;b",a,x\n1,2,3\n', encoding="utf-8")  # quoted names are whole names
    assert list(read_table(path, delimiter=",").columns) == ["a;b", "a", "x"]


def test_outputs_may_not_be_inputs_or_each_other(tmp_path: Path) -> None:
    import pytest

    from anonlab.errors import AnonlabError
    from anonlab.io import check_outputs

    data = tmp_path / "in.csv"
    check_outputs({"--output": tmp_path / "a.csv", "--report": None, "--html": "b.html"}, [data])
    with pytest.raises(AnonlabError, match="is also an input"):
        check_outputs({"--output": data}, [data])
    with pytest.raises(AnonlabError, match="given as both --output and --html: they name the same"):
        check_outputs({"--output": tmp_path / "a", "--html": tmp_path / "x" / ".." / "a"}, [data])


def test_fuse_refuses_one_path_for_two_outputs(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    config = Path(__file__).resolve().parents[1] / "examples" / "fusion" / "fusion.toml"
    out = tmp_path / "same.csv"
    result = CliRunner().invoke(app, ["fuse", str(config), "--output", str(out),
                                      "--report", str(out), "--quiet"])
    assert result.exit_code == 2
    assert "given as both --output and --report" in result.output
    assert not out.exists()
