"""The generalize / apply / hierarchy commands, end to end and on bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.checker import check_k_anonymity
from anonlab.cli.app import app
from anonlab.lattice.metrics import METRICS

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
runner = CliRunner()


def _qi_flags(folder: Path, qis: list[str] = QIS) -> list[str]:
    out = []
    for q in qis:
        out += ["--qi", f"{q}={folder / f'hierarchy_{q}.csv'}"]
    return out


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def test_generalize_writes_release_and_report(data_dir: Path, tmp_path: Path) -> None:
    folder = data_dir / "adult"
    out, rep = tmp_path / "r.csv", tmp_path / "r.json"
    code, text = _run(
        [
            "generalize",
            str(folder / "adult.csv"),
            "--delimiter",
            ";",
            *_qi_flags(folder),
            "--sensitive",
            "salary-class",
            "--k",
            "5",
            "--suppression",
            "0.01",
            "--metric",
            "precision_with_suppression",
            "--output",
            str(out),
            "--report",
            str(rep),
            "--verify",
            "--quiet",
        ]
    )
    assert code == 0, text
    release = pd.read_csv(out, dtype=str)
    assert list(release.columns) == [*QIS, "salary-class"]
    assert check_k_anonymity(release, QIS, 5, 301) == []
    report = json.loads(rep.read_text())
    for key in [
        "search",
        "k",
        "suppression_limit",
        "lattice_size",
        "nodes_checked",
        "transformation",
        "suppressed_records",
        "equivalence_classes",
        "information_loss",
        "runtime_seconds",
        "anonlab_version",
    ]:
        assert key in report
    assert report["suppressed_records"] == 207
    assert set(report["information_loss"]) == set(METRICS)
    assert round(report["information_loss"]["precision_with_suppression"], 4) == 0.5034
    assert report["verified"] is True
    assert int((release[QIS] == "*").all(axis=1).sum()) == 207


def test_config_file_and_flag_override(data_dir: Path, tmp_path: Path) -> None:
    examples = tmp_path / "examples"
    examples.mkdir()
    (tmp_path / "out").mkdir()
    shutil.copy(Path(__file__).resolve().parents[1] / "examples" / "adult.toml", examples)
    shutil.copytree(data_dir / "adult", tmp_path / "data" / "adult")
    out = tmp_path / "out"
    code, text = _run(
        [
            "generalize",
            "--config",
            str(examples / "adult.toml"),
            "--k",
            "10",
            "--output",
            str(out / "adult_k10.csv"),
            "--report",
            str(out / "adult_k10.json"),
            "--quiet",
        ]
    )
    assert code == 0, text
    assert not (out / "adult_k5.json").exists()  # the config's outputs: see test_no_overwrite
    report = json.loads((out / "adult_k10.json").read_text())
    assert report["k"] == 10
    assert report["search"] == "flash"


def test_apply_reuses_transformation(data_dir: Path, tmp_path: Path) -> None:
    folder = data_dir / "adult"
    rep = tmp_path / "r.json"
    code, text = _run(
        [
            "generalize",
            str(folder / "adult.csv"),
            *_qi_flags(folder),
            "--sensitive",
            "salary-class",
            "--k",
            "5",
            "--report",
            str(rep),
            "--quiet",
        ]
    )
    assert code == 0, text
    frame = pd.read_csv(folder / "adult.csv", sep=";", dtype=str)
    doubled = tmp_path / "doubled.csv"
    pd.concat([frame, frame]).to_csv(doubled, index=False)
    out = tmp_path / "applied.csv"
    code, text = _run(["apply", str(rep), str(doubled), "--output", str(out), "--quiet"])
    assert code == 0, text
    assert check_k_anonymity(pd.read_csv(out, dtype=str), QIS, 5, 0) == []
    small = tmp_path / "small.csv"
    frame.iloc[:40].to_csv(small, index=False)
    out2 = tmp_path / "applied2.csv"
    code, text = _run(["apply", str(rep), str(small), "--output", str(out2)])
    assert code == 2 and "not 5-anonymous" in text
    assert not out2.exists()


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    (tmp_path / "t.csv").write_text(
        "name,age,zip\nann,31,47677\nbob,32,47602\ncy,33,47678\ndee,34,47605\n"
    )
    (tmp_path / "age.csv").write_text("31;30-34;*\n32;30-34;*\n33;30-34;*\n34;30-34;*\n")
    (tmp_path / "zip.csv").write_text(
        "47677;4767*;*\n47602;4760*;*\n47678;4767*;*\n47605;4760*;*\n"
    )
    return tmp_path


def _tiny_args(t: Path, *extra: str) -> list[str]:
    return [
        "generalize",
        str(t / "t.csv"),
        "--qi",
        f"age={t / 'age.csv'}",
        "--qi",
        f"zip={t / 'zip.csv'}",
        "--identifying",
        "name",
        "--output",
        str(t / "out.csv"),
        *extra,
    ]


def test_tiny_release_drops_identifiers(tiny: Path) -> None:
    code, text = _run(_tiny_args(tiny, "--k", "2", "--quiet", "--verify"))
    assert code == 0, text
    out = pd.read_csv(tiny / "out.csv", dtype=str)
    assert list(out.columns) == ["age", "zip"]
    assert out["age"].tolist() == ["30-34"] * 4
    assert out["zip"].tolist() == ["31", "32", "33", "34"] or out["zip"].str.endswith("*").all()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--k", "0"], "k must be at least 1"),
        (["--k", "9"], "k = 9 is larger than the table's 4 records"),
        (
            ["--k", "2", "--suppression", "1.5"],
            "--suppression must be a fraction from 0 to 1 or a percentage up to 100% (got 1.5): "
            "write 0.01 or 1%",
        ),
        (
            ["--k", "2", "--suppression", "1"],
            "--suppression 1 is ambiguous (1% or 100%?): "
            "write 0.01 or 1% for one percent, or 100% to let every record be suppressed",
        ),
        (["--k", "2", "--suppression", "150%"], "(got 150%): write 0.01 or 1%"),
        (["--k", "2", "--sensitive", "nope"], "unknown column 'nope'"),
        (["--k", "2", "--search", "magic"], "--search: Input should be 'exhaustive'"),
        (["--k", "2", "--metric", "magic"], "--metric 'magic' is unknown: choose one of"),
    ],
)
def test_bad_parameters(tiny: Path, extra: list[str], message: str) -> None:
    before = (tiny / "t.csv").read_bytes()
    code, text = _run(_tiny_args(tiny, *extra))
    assert code == 2
    assert text.startswith("Error: ") and message in text
    assert len(text.strip().splitlines()) == 1
    assert not (tiny / "out.csv").exists()
    assert (tiny / "t.csv").read_bytes() == before


def test_value_missing_from_hierarchy(tiny: Path) -> None:
    (tiny / "age.csv").write_text("31;30-34;*\n32;30-34;*\n33;30-34;*\n")
    code, text = _run(_tiny_args(tiny, "--k", "2"))
    assert code == 2
    assert "column 'age': value '34' (data row 4) is not in hierarchy" in text
    assert not (tiny / "out.csv").exists()


def test_non_nested_hierarchy(tiny: Path) -> None:
    (tiny / "age.csv").write_text("31;30-34;A;*\n32;30-34;B;*\n33;30-34;A;*\n34;30-34;A;*\n")
    code, text = _run(_tiny_args(tiny, "--k", "2"))
    assert code == 2 and "is not nested" in text


def test_ragged_input_table(tiny: Path) -> None:
    (tiny / "t.csv").write_text("name,age,zip\nann,31,47677\nbob,32,47602,extra,more\n")
    code, text = _run(_tiny_args(tiny, "--k", "2"))
    assert code == 2 and "ragged or malformed" in text
    assert not (tiny / "out.csv").exists()


def test_output_over_input_is_refused(tiny: Path) -> None:
    args = _tiny_args(tiny, "--k", "2")
    args[args.index("--output") + 1] = str(tiny / "t.csv")
    before = (tiny / "t.csv").read_bytes()
    code, text = _run(args)
    assert code == 2 and "is also an input" in text
    assert (tiny / "t.csv").read_bytes() == before


def test_hierarchy_builders_cli(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "age.csv"
    code, text = _run(
        [
            "hierarchy",
            "interval",
            str(data_dir / "adult" / "adult.csv"),
            "--column",
            "age",
            "--widths",
            "5,10,20",
            "--output",
            str(out),
        ]
    )
    assert code == 0, text
    lines = out.read_text().splitlines()
    assert "39;35-39;30-39;20-39;*" in lines


def test_hierarchy_builders_on_missing_values_and_numeric_codes(tmp_path: Path) -> None:
    """A missing age gets its own group below '*'; numeric codes are grouped in numeric order."""
    table = tmp_path / "t.parquet"
    pd.DataFrame({"age": ["34", None, "41", ""], "grade": ["1", "10", "2", "9"]}).to_parquet(table)
    ages, grades = tmp_path / "age.csv", tmp_path / "grade.csv"
    code, text = _run(
        [
            "hierarchy",
            "interval",
            str(table),
            "--column",
            "age",
            "--widths",
            "5,10",
            "--output",
            str(ages),
        ]
    )
    assert code == 0, text
    assert ages.read_text().splitlines() == [";;;*", "34;30-34;30-39;*", "41;40-44;40-49;*"]
    code, text = _run(
        [
            "hierarchy",
            "grouping",
            str(table),
            "--column",
            "grade",
            "--sizes",
            "2",
            "--output",
            str(grades),
        ]
    )
    assert code == 0, text
    assert grades.read_text().splitlines() == ["1;1..2;*", "2;1..2;*", "9;9..10;*", "10;9..10;*"]
    code, text = _run(
        [
            "generalize",
            str(table),
            "--qi",
            f"age={ages}",
            "--qi",
            f"grade={grades}",
            "--k",
            "1",
            "--output",
            str(tmp_path / "r.csv"),
            "--verify",
            "--quiet",
        ]
    )
    assert code == 0, text


def test_apply_never_overwrites_a_hierarchy(tiny: Path) -> None:
    rep = tiny / "r.json"
    code, text = _run([*_tiny_args(tiny, "--k", "2", "--report", str(rep), "--quiet")])
    assert code == 0, text
    before = (tiny / "age.csv").read_bytes()
    for flag in ("--output", "--report"):
        args = [
            "apply",
            str(rep),
            str(tiny / "t.csv"),
            "--output",
            str(tiny / "o.csv"),
            flag,
            str(tiny / "age.csv"),
            "--quiet",
        ]
        code, text = _run(args)
        assert code == 2 and "is also an input" in text, text
        assert (tiny / "age.csv").read_bytes() == before


def test_two_outputs_on_one_path_are_refused(tiny: Path) -> None:
    """--report on the --output path would silently replace the release by the report."""
    code, text = _run(_tiny_args(tiny, "--k", "2", "--report", str(tiny / "out.csv")))
    assert code == 2 and f"'{tiny / 'out.csv'}' is given as both output and report" in text
    assert not (tiny / "out.csv").exists()


def test_apply_refuses_one_path_for_release_and_report(tiny: Path) -> None:
    rep = tiny / "r.json"
    code, text = _run([*_tiny_args(tiny, "--k", "2", "--report", str(rep), "--quiet")])
    assert code == 0, text
    same = tiny / "o.csv"
    code, text = _run(
        [
            "apply",
            str(rep),
            str(tiny / "t.csv"),
            "--output",
            str(same),
            "--report",
            str(same),
            "--quiet",
        ]
    )
    assert code == 2 and "given as both output and report" in text, text
    assert not same.exists()


def test_grouping_order_need_not_list_the_missing_value(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("grade,x\nA,1\n,2\nB,3\n")
    out = tmp_path / "g.csv"
    code, text = _run(
        [
            "hierarchy",
            "grouping",
            str(table),
            "--column",
            "grade",
            "--order",
            "B,A",
            "--sizes",
            "2",
            "--output",
            str(out),
        ]
    )
    assert code == 0, text
    assert out.read_text().splitlines() == [";;*", "B;B..A;*", "A;B..A;*"]


def test_python_dash_m_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "anonlab", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.startswith("anonlab ")


def _assert_refused(tiny: Path, args: list[str], message: str) -> None:
    before = {p.name: p.read_bytes() for p in tiny.iterdir()}
    code, text = _run(args)
    assert code == 2, text
    assert text.startswith("Error: ") and message in text, text
    assert len(text.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in tiny.iterdir()} == before  # nothing written


def test_unknown_qi_column(tiny: Path) -> None:
    args = _tiny_args(tiny, "--k", "2")
    args[args.index(f"age={tiny / 'age.csv'}")] = f"agee={tiny / 'age.csv'}"
    _assert_refused(
        tiny, args, "unknown column 'agee' (given as quasi-identifier): the table has name, age"
    )


def test_one_column_given_two_hierarchies(tiny: Path) -> None:
    (tiny / "age2.csv").write_bytes((tiny / "age.csv").read_bytes())
    args = [*_tiny_args(tiny, "--k", "2"), "--qi", f"age={tiny / 'age2.csv'}"]
    _assert_refused(tiny, args, "--qi names column 'age' twice")


def test_ragged_hierarchy_names_file_and_line(tiny: Path) -> None:
    (tiny / "age.csv").write_text("31;30-34;*\n32;30-34\n33;30-34;*\n34;30-34;*\n")
    _assert_refused(
        tiny, _tiny_args(tiny, "--k", "2"), "line 2: 2 fields where line 1 has 3 (value '32')"
    )


def test_non_nested_hierarchy_names_lines_and_values(tiny: Path) -> None:
    (tiny / "age.csv").write_text("31;30-34;A;*\n32;30-34;B;*\n33;30-34;A;*\n34;30-34;A;*\n")
    _assert_refused(
        tiny,
        _tiny_args(tiny, "--k", "2"),
        "group '30-34' at level 1 goes to 'A' (line 1) and to 'B' (line 2)",
    )


def test_unreadable_tables(tiny: Path) -> None:
    args = _tiny_args(tiny, "--k", "2")
    args[1] = str(tiny / "absent.csv")
    _assert_refused(tiny, args, "input file")
    (tiny / "binary.csv").write_bytes(bytes(range(256)) * 4)
    args[1] = str(tiny / "binary.csv")
    _assert_refused(tiny, args, "is not UTF-8 text")


def test_parquet_round_trip_and_verify(tiny: Path) -> None:
    pd.read_csv(tiny / "t.csv", dtype=str).to_parquet(tiny / "t.parquet")
    args = _tiny_args(tiny, "--k", "2", "--quiet", "--verify", "--report", str(tiny / "r.json"))
    args[1] = str(tiny / "t.parquet")
    args[args.index("--output") + 1] = str(tiny / "out.parquet")
    code, text = _run(args)
    assert code == 0, text
    out = pd.read_parquet(tiny / "out.parquet")
    assert list(out.columns) == ["age", "zip"] and len(out) == 4
    report = json.loads((tiny / "r.json").read_text())
    assert report["verified"] is True
    for key in (
        "search",
        "k",
        "suppression_limit",
        "lattice_size",
        "nodes_checked",
        "transformation",
        "suppressed_records",
        "equivalence_classes",
        "information_loss",
        "runtime_seconds",
        "anonlab_version",
    ):
        assert key in report, key
    assert set(report["information_loss"]) == set(METRICS)


def test_verify_failure_writes_nothing(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import anonlab.verify.generalization

    monkeypatch.setattr(
        anonlab.verify.generalization,
        "check_generalization",
        lambda *a, **k: ["column 'age' row 1: released '3*', expected '*'"],
    )
    _assert_refused(
        tiny,
        _tiny_args(tiny, "--k", "2", "--verify", "--quiet"),
        "verification failed, nothing written: column 'age' row 1",
    )


def test_lattice_too_large_is_refused(tmp_path: Path) -> None:
    columns = [f"q{i}" for i in range(13)]
    pd.DataFrame({c: ["a", "b"] for c in columns}).to_csv(tmp_path / "wide.csv", index=False)
    (tmp_path / "h.csv").write_text("a;a1;a2;a3;*\nb;b1;b2;b3;*\n")
    args = [
        "generalize",
        str(tmp_path / "wide.csv"),
        "--k",
        "1",
        "--output",
        str(tmp_path / "out.csv"),
    ]
    for c in columns:
        args += ["--qi", f"{c}={tmp_path / 'h.csv'}"]
    code, text = _run(args)
    assert code == 2, text
    assert "the lattice has 1,220,703,125 nodes (hierarchy heights: q0 4, q1 4" in text
    assert (
        "use a heuristic search (descent, lightning, top-down or genetic), fewer "
        "quasi-identifiers or shorter hierarchies"
    ) in text
    assert not (tmp_path / "out.csv").exists()
