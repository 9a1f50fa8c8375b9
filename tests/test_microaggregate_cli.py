"""The microaggregate / evaluate / tradeoff commands, end to end and on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app

runner = CliRunner()


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


@pytest.fixture
def tarragona(data_dir: Path) -> Path:
    return data_dir / "sdc" / "Tarragona.csv"


def test_microaggregate_then_evaluate(tarragona: Path, tmp_path: Path) -> None:
    out, rep, html = tmp_path / "t_k3.csv", tmp_path / "t_k3.json", tmp_path / "t.html"
    code, text = _run(
        [
            "microaggregate",
            str(tarragona),
            "--columns",
            "all-numeric",
            "--k",
            "3",
            "--output",
            str(out),
            "--report",
            str(rep),
            "--html",
            str(html),
        ]
    )
    assert code == 0, text
    assert "SSE/SST = 16.9326 %" in text
    masked = pd.read_csv(out)
    original = pd.read_csv(tarragona)
    assert masked.shape == original.shape and list(masked.columns) == list(original.columns)
    assert (masked.groupby(list(masked.columns)).size() >= 3).all()
    report = json.loads(rep.read_text())
    assert report["command"] == "microaggregate" and report["method"] == "MDAV"
    assert report["k"] == 3 and report["groups"] == 278 and report["records"] == 834
    assert round(100 * report["measures"]["ILh"], 4) == 16.9326
    assert report["group_sizes"] == {"min": 3, "max": 3, "count_by_size": {"3": 278}}
    assert "<html" in html.read_text().lower()

    ev = tmp_path / "eval.json"
    code, text = _run(
        [
            "evaluate",
            str(tarragona),
            str(out),
            "--lambda",
            "0.5,0,0.5",
            "--report",
            str(ev),
            "--quiet",
        ]
    )
    assert code == 0, text
    assert text == ""
    measures = json.loads(ev.read_text())["measures"]
    for name in (
        "ILh",
        "IL1",
        "IL2",
        "IL3",
        "ILs",
        "IL",
        "DLD",
        "DLD_expected",
        "ID",
        "DR",
        "score",
    ):
        assert isinstance(measures[name], float)
    assert round(100 * measures["ILh"], 4) == 16.9326
    params = json.loads(ev.read_text())["measure_parameters"]
    assert params["lambda"] == [0.5, 0.0, 0.5] and params["tau"] == [0.5, 0.5]
    assert params["interval_p"] == [float(p) for p in range(1, 11)]


def test_tradeoff_plot_and_best_k(tarragona: Path, tmp_path: Path) -> None:
    png, rep = tmp_path / "ru.png", tmp_path / "ru.json"
    code, text = _run(
        ["tradeoff", str(tarragona), "--k", "3-6", "--plot", str(png), "--report", str(rep)]
    )
    assert code == 0, text
    assert "best" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads(rep.read_text())
    assert [p["k"] for p in report["points"]] == [3, 4, 5, 6]
    best = min(report["points"], key=lambda p: p["score"])
    assert report["best_k"] == best["k"]
    il = [p["IL"] for p in report["points"]]
    assert il == sorted(il)


def test_config_file_with_flag_override(tarragona: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "micro.toml"
    cfg.write_text(f'input = "{tarragona}"\nk = 10\noutput = "o.csv"\nreport = "o.json"\n')
    code, text = _run(
        ["microaggregate", "--config", str(cfg), "--k", "5", "--overwrite", "--quiet"]
    )
    assert code == 0, text
    report = json.loads((tmp_path / "o.json").read_text())
    assert report["k"] == 5 and round(100 * report["measures"]["ILh"], 4) == 22.4619


def test_mixed_types_on_adult(data_dir: Path, tmp_path: Path) -> None:
    adult = pd.read_csv(data_dir / "adult" / "adult.csv", sep=";", dtype=str).head(200)
    src = tmp_path / "adult200.csv"
    adult.to_csv(src, index=False)
    out, rep = tmp_path / "m.csv", tmp_path / "m.json"
    code, text = _run(
        [
            "microaggregate",
            str(src),
            "--columns",
            "age",
            "--nominal",
            "sex,race,workclass",
            "--ordinal",
            "education",
            "--k",
            "4",
            "--identifying",
            "native-country",
            "--sensitive",
            "salary-class",
            "--insensitive",
            "marital-status,occupation",
            "--output",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0, text
    masked = pd.read_csv(out, dtype=str)
    assert "native-country" not in masked.columns  # identifying: dropped
    assert masked["salary-class"].tolist() == adult["salary-class"].tolist()
    assert set(masked["sex"]) <= set(adult["sex"])
    assert (masked.groupby(["age", "sex", "race", "workclass", "education"]).size() >= 4).all()
    code, text = _run(
        [
            "evaluate",
            str(src),
            str(out),
            "--columns",
            "age",
            "--nominal",
            "sex,race,workclass",
            "--ordinal",
            "education",
            "--report",
            str(rep),
            "--quiet",
        ]
    )
    assert code == 0, text
    measures = json.loads(rep.read_text())["measures"]
    assert measures["ZIL"] > 0 and measures["ILR"] >= 0 and 0 < measures["DLD"] <= 1


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (
            "a,b\n1,2\n3,x\n5,6\n",
            ["--columns", "a,b", "--k", "2"],
            "Error: column 'b' of the table is not numeric: row 2 holds 'x'",
        ),
        (
            "a,b\n1,2\n3,\n5,6\n",
            ["--columns", "a,b", "--k", "2"],
            "Error: column 'b' of the table has a missing value (NaN) at row 2",
        ),
        (
            "a,b\n1,7\n3,7\n5,7\n",
            ["--columns", "a,b", "--k", "2"],
            "Error: column 'b' of the table is constant (standard deviation S_j = 0)",
        ),
        (
            "a,b\n1,2\n3,4\n5,6\n",
            ["--k", "4"],
            "Error: --k = 4 is larger than the table's 3 records: choose k <= 3",
        ),
        (
            "a,b\n1,2\n3,4\n5,6\n",
            ["--k", "2", "--variant", "fast"],
            "Error: --variant: Input should",
        ),
        (
            "a,b\n1,2\n3,4\n5,6\n",
            ["--k", "1"],
            "Error: --k: Input should be greater than or equal to 2",
        ),
        ("a,b\n1,2\n3,4\n5,6\n", ["--k", "2", "--columns", "c"], "Error: unknown column 'c'"),
    ],
)
def test_microaggregate_bad_input(
    tmp_path: Path, content: str, args: list[str], message: str
) -> None:
    src = _bad(tmp_path, "in.csv", content)
    out, rep = tmp_path / "out.csv", tmp_path / "out.json"
    code, text = _run(
        ["microaggregate", str(src), *args, "--output", str(out), "--report", str(rep)]
    )
    assert code == 2
    assert text.strip().startswith(message), text
    assert len(text.strip().splitlines()) == 1
    assert not out.exists() and not rep.exists()
    assert src.read_text() == content


@pytest.mark.parametrize(
    ("masked", "message"),
    [
        ("a,b\n1,2\n3,4\n", "Error: the original has 3 rows but the masked table has 2"),
        ("a,c\n1,2\n3,4\n5,6\n", "Error: column 'b' of the original is missing from the masked"),
    ],
)
def test_evaluate_shape_errors(tmp_path: Path, masked: str, message: str) -> None:
    orig = _bad(tmp_path, "o.csv", "a,b\n1,2\n3,4\n5,6\n")
    mask = _bad(tmp_path, "m.csv", masked)
    rep = tmp_path / "e.json"
    code, text = _run(["evaluate", str(orig), str(mask), "--report", str(rep)])
    assert code == 2
    assert text.strip().startswith(message), text
    assert not rep.exists()


def test_output_over_input_is_refused(tarragona: Path, tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    src.write_bytes(tarragona.read_bytes())
    code, text = _run(["microaggregate", str(src), "--k", "3", "--output", str(src)])
    assert code == 2 and "is also an input" in text
    assert src.read_bytes() == tarragona.read_bytes()


def test_nothing_to_write_and_bad_weights(tarragona: Path, tmp_path: Path) -> None:
    code, text = _run(["microaggregate", str(tarragona), "--k", "3"])
    assert code == 2 and "nothing to write" in text
    rep = tmp_path / "r.json"
    code, text = _run(
        ["tradeoff", str(tarragona), "--k", "3-4", "--tau", "0.5,0.6", "--report", str(rep)]
    )
    assert code == 2 and "tau weights must add up to 1" in text and not rep.exists()
    code, text = _run(["tradeoff", str(tarragona), "--k", "three", "--report", str(rep)])
    assert code == 2 and "--k 'three'" in text


def test_help_has_examples() -> None:
    for command in ("microaggregate", "evaluate", "tradeoff"):
        code, text = _run([command, "--help"])
        assert code == 0 and "Example" in text and "anonlab " + command in text


def test_csv_release_uses_the_one_dialect(tmp_path: Path) -> None:
    # every command writes CSV releases in one dialect (comma, "\n"), whatever the input's
    src = _bad(tmp_path, "semi.csv", "a;b;name\n1;2;x\n3;4;y\n5;7;z\n8;9;w\n")
    out = tmp_path / "semi_k2.csv"
    code, text = _run(
        [
            "microaggregate",
            str(src),
            "--k",
            "2",
            "--insensitive",
            "name",
            "--output",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0, text
    lines = out.read_bytes().decode().split("\n")
    assert lines[0] == "a,b,name" and lines[-1] == "" and "\r" not in out.read_text()
    code, text = _run(["evaluate", str(src), str(out), "--quiet"])
    assert code == 0, text


def test_categorical_only_table_by_default_columns(tmp_path: Path) -> None:
    # --columns defaults to all-numeric; a table whose QIs are all categorical has no
    # numeric column, which then means "none", not an error.
    src = _bad(
        tmp_path,
        "cat.csv",
        "a,b\n" + "".join(f"{'xyz'[i % 3]},{('lo', 'mid', 'hi')[i * 7 % 3]}\n" for i in range(12)),
    )
    out, rep, ru = tmp_path / "cat_k3.csv", tmp_path / "ev.json", tmp_path / "ru.json"
    code, text = _run(
        [
            "microaggregate",
            str(src),
            "--nominal",
            "a",
            "--ordinal",
            "b",
            "--order",
            "b=lo,mid,hi",
            "--k",
            "3",
            "--output",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0, text
    assert (pd.read_csv(out).groupby(["a", "b"]).size() >= 3).all()
    code, text = _run(
        [
            "evaluate",
            str(src),
            str(out),
            "--nominal",
            "a",
            "--ordinal",
            "b",
            "--order",
            "b=lo,mid,hi",
            "--report",
            str(rep),
            "--quiet",
        ]
    )
    assert code == 0, text
    report = json.loads(rep.read_text())
    assert report["columns"] == [] and report["measures"]["ZIL"] > 0
    code, text = _run(
        [
            "tradeoff",
            str(src),
            "--nominal",
            "a",
            "--insensitive",
            "b",
            "--k",
            "2-3",
            "--report",
            str(ru),
            "--quiet",
        ]
    )
    assert code == 0, text
    assert [p["k"] for p in json.loads(ru.read_text())["points"]] == [2, 3]
    code, text = _run(["evaluate", str(src), str(out), "--quiet"])
    assert code == 2 and "Error: no numeric column found" in text


def test_categorical_tradeoff_maps_zil_against_dld(tmp_path: Path) -> None:
    # Without numeric columns there is no IL, DR or score: the table and the R-U map
    # show ZIL and DLD (the paper's Adult map) instead of empty cells and an empty plot.
    from anonlab.metrics.tradeoff import ru_axes

    src = _bad(
        tmp_path,
        "cat.csv",
        "a,b\n" + "".join(f"{'xyz'[i % 3]},{'pqrs'[i * 7 % 4]}\n" for i in range(16)),
    )
    png = tmp_path / "ru.png"
    code, text = _run(["tradeoff", str(src), "--nominal", "a,b", "--k", "2-4", "--plot", str(png)])
    assert code == 0, text
    assert "ZIL" in text and "DLD" in text and "None" not in text
    assert png.stat().st_size > 0
    assert ru_axes([{"k": 2, "ZIL": 1.0, "DLD": 0.5}]) == ("ZIL", "DLD")
    assert ru_axes([{"k": 2, "IL": 0.1, "DR": 0.5, "ZIL": 1.0, "DLD": 0.5}]) == ("IL", "DR")


@pytest.mark.parametrize("workers", ["0", "-2"])
def test_bad_workers_is_a_one_line_error(tarragona: Path, workers: str) -> None:
    code, text = _run(["evaluate", str(tarragona), str(tarragona), "--workers", workers, "--quiet"])
    assert code == 2
    assert f"Error: --workers: must be -1 (every CPU) or at least 1 (got {workers})" in text
    assert len(text.strip().splitlines()) == 1


def test_help_states_defaults_and_verify_switch() -> None:
    result = runner.invoke(app, ["microaggregate", "--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0
    flat = " ".join(result.output.split())
    assert "--verify" in flat and "--no-verify" in flat and "(default: on)" in flat
    for default in ("(default: 3)", "(default: exact)", "(default: 16384)"):
        assert default in flat, default
    result = runner.invoke(app, ["tradeoff", "--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0 and "(default: 3-10)" in " ".join(result.output.split())


def test_flag_overrides_a_toml_verify_and_library_errors_name_flags(
    tarragona: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "m.toml"
    cfg.write_text(f'input = "{tarragona}"\nverify = false\noutput = "o.csv"\nreport = "o.json"\n')
    code, text = _run(["microaggregate", "--config", str(cfg), "--verify", "--quiet"])
    assert code == 0, text
    assert json.loads((tmp_path / "o.json").read_text())["verified"] is True
    code, text = _run(["microaggregate", "--config", str(cfg), "--quiet"])
    assert code == 0, text
    assert json.loads((tmp_path / "o.json").read_text())["verified"] is False
    code, text = _run(
        [
            "microaggregate",
            str(tarragona),
            "--variant",
            "scalable",
            "--k",
            "3",
            "--block-size",
            "4",
            "--output",
            str(tmp_path / "s.csv"),
        ]
    )
    assert code == 2
    assert text.strip() == "Error: --block-size must be a whole number of at least 2k = 6, got 4"
    code, text = _run(["evaluate", str(tarragona), str(tarragona), "--p", "0", "--quiet"])
    assert code == 2 and text.startswith("Error: --p values must be percentages"), text
