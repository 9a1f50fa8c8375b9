"""The perturb / perturb --invert / attack commands end to end, and on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.perturbation import RecoverableReleaseWarning, perturb

runner = CliRunner()


TABLE = ("zip", "a", "b", "c", "d", "e", "count", "town")  # the columns of ``table``


def _roles(columns: str, table: tuple[str, ...] = TABLE) -> list[str]:
    """Every column of ``table`` not perturbed, released unchanged by explicit choice."""
    chosen = columns.split(",")
    rest = [c for c in table if c not in chosen]
    return ["--insensitive", ",".join(rest)] if rest else []


def _cols(columns: str) -> list[str]:
    """``--columns`` and the roles of the other columns of ``table``."""
    return ["--columns", columns, *_roles(columns)]


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


@pytest.fixture()
def table(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        rng.exponential(1.0, (120, 5)) @ rng.standard_normal((5, 5)), columns=list("abcde")
    ).round(4)
    frame.insert(0, "zip", [f"0{1000 + i}" for i in range(120)])
    frame["count"] = rng.integers(0, 50, 120)
    frame["town"] = [f"t{i % 7}" for i in range(120)]
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path


def test_perturb_writes_release_key_report_and_inverts(table: Path, tmp_path: Path) -> None:
    out, key, rep = tmp_path / "rel.csv", tmp_path / "key.json", tmp_path / "rep.json"
    html = tmp_path / "rep.html"
    code, text = _run(
        [
            "perturb",
            str(table),
            *_cols("a,b,c,d,e,count"),
            "--method",
            "obt",
            "--min-privacy",
            "0.5",
            "--seed",
            "7",
            "--output",
            str(out),
            "--key",
            str(key),
            "--report",
            str(rep),
            "--html",
            str(html),
            "--known",
            "2,5",
            "--quiet",
        ]
    )
    assert code == 0, text
    # the integer column's ties give its pair away from the release alone
    assert "Warning: release is recoverable: the ties attack from the release alone" in text
    original = pd.read_csv(table, dtype={"zip": str})
    release = pd.read_csv(out, dtype={"zip": str})
    assert list(release.columns) == list(original.columns)
    for col in ("zip", "town"):  # pass through, leading zeros kept
        assert release[col].tolist() == original[col].tolist()
    assert not np.allclose(release["a"], original["a"])
    report = json.loads(rep.read_text())
    for k in (
        "method",
        "columns",
        "records",
        "privacy_summary",
        "attacks",
        "clustering",
        "warnings",
        "anonlab_version",
        "parameters",
        "roles",
        "risk",
        "risk_warnings",
    ):
        assert k in report
    assert report["method"] == "obt" and report["records"] == 120
    aware = [r for r in report["attacks"] if r["attack"] == "method_aware" and r["known"] == 2]
    assert aware[0]["within_10"] == 1.0
    # the shareable report names no block (a pairing with its S undoes the release)
    assert "blocks" not in report and "overall" not in report
    assert {"blocks", "block_sizes", "min_S", "min_P"} <= set(report["privacy_summary"])
    assert report["released_unchanged"] == ["zip", "town"]
    assert {"attack", "known", "median_relative_error", "within_10", "within_25"} <= set(
        report["attacks"][0]
    )
    assert report["clustering"]["kmeans"] == 1.0 and report["clustering"]["ward"] == 1.0
    text_report = rep.read_text()
    secret = json.loads(key.read_text())
    assert "means" not in report and "matrix" not in text_report
    assert str(secret["means"][0]) not in text_report
    assert str(release["a"][0]) not in text_report
    assert html.read_text().startswith("<!DOCTYPE html>") or "<html" in html.read_text()
    restored = tmp_path / "restored.csv"
    code, text = _run(
        ["perturb", "--invert", "--key", str(key), str(out), "--output", str(restored), "--quiet"]
    )
    assert code == 0, text
    back = pd.read_csv(restored, dtype={"zip": str})
    assert back[["zip", "count"]].equals(original[["zip", "count"]])  # integers exactly
    assert np.allclose(back[list("abcde")], original[list("abcde")], rtol=1e-13, atol=1e-12)


def test_the_report_does_not_hold_the_seed(table: Path, tmp_path: Path) -> None:
    # the seed regenerates the transform (here the whole rotation): it is key material
    from anonlab.perturbation.library import haar_orthogonal

    rep, html, key = tmp_path / "rep.json", tmp_path / "rep.html", tmp_path / "key.json"
    assert (
        _run(
            [
                "perturb",
                str(table),
                *_cols("a,b,c,d,e"),
                "--method",
                "rotation",
                "--seed",
                "123457",
                "--report",
                str(rep),
                "--html",
                str(html),
                "--key",
                str(key),
                "--output",
                str(tmp_path / "o.csv"),
                "--quiet",
            ]
        )[0]
        == 0
    )
    matrix = np.asarray(json.loads(key.read_text())["blocks"][0]["matrix"])
    assert np.allclose(haar_orthogonal(np.random.default_rng(123457), 5, 1)[0], matrix)
    report = json.loads(rep.read_text())
    assert "seed" not in report["parameters"] and report["parameters"]["seed_given"] is True
    assert "123457" not in rep.read_text() and "123457" not in html.read_text()


def test_without_a_seed_the_transform_is_unpredictable(table: Path, tmp_path: Path) -> None:
    # a default seed (formerly 0) let anyone regenerate the transform from the code alone
    keys = []
    for run in range(2):
        out, key = tmp_path / f"r{run}.csv", tmp_path / f"k{run}.json"
        assert (
            _run(
                [
                    "perturb",
                    str(table),
                    *_cols("a,b,c,d"),
                    "--method",
                    "rotation",
                    "--output",
                    str(out),
                    "--key",
                    str(key),
                    "--quiet",
                ]
            )[0]
            == 0
        )
        keys.append(np.asarray(json.loads(key.read_text())["blocks"][0]["matrix"]))
        back = tmp_path / f"b{run}.csv"
        assert (
            _run(
                [
                    "perturb",
                    "--invert",
                    "--key",
                    str(key),
                    str(out),
                    "--output",
                    str(back),
                    "--quiet",
                ]
            )[0]
            == 0
        )
        assert np.allclose(pd.read_csv(back)[list("abcd")], pd.read_csv(table)[list("abcd")])
    assert not np.allclose(keys[0], keys[1])
    values = np.random.default_rng(0).standard_normal((30, 4))
    frame = pd.DataFrame(values, columns=list("abcd"))
    with pytest.warns(RecoverableReleaseWarning):  # two known records undo OBT pairs
        first = perturb(frame, method="obt").released
    with pytest.warns(RecoverableReleaseWarning):
        assert not np.allclose(first, perturb(frame, method="obt").released)


def test_a_stored_library_does_not_give_away_the_seed(table: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib.json"
    assert (
        _run(
            [
                "perturb",
                str(table),
                *_cols("a,b,c,d"),
                "--seed",
                "98765",
                "--library",
                str(lib),
                "--output",
                str(tmp_path / "o.csv"),
                "--quiet",
            ]
        )[0]
        == 0
    )
    assert json.loads(lib.read_text())["seed"] != 98765


def test_every_method_from_the_cli(table: Path, tmp_path: Path) -> None:
    for method in ("rbt", "rotation", "gdp"):
        out, key = tmp_path / f"{method}.csv", tmp_path / f"{method}.json"
        code, text = _run(
            [
                "perturb",
                str(table),
                *_cols("a,b,c"),
                "--method",
                method,
                "--rho",
                "0.3",
                "--noise",
                "0.05",
                "--output",
                str(out),
                "--key",
                str(key),
            ]
        )
        assert code == 0, text
        assert method in text
        back = tmp_path / f"{method}_back.csv"
        assert (
            _run(
                [
                    "perturb",
                    "--invert",
                    "--key",
                    str(key),
                    str(out),
                    "--output",
                    str(back),
                    "--quiet",
                ]
            )[0]
            == 0
        )
        restored, original = pd.read_csv(back), pd.read_csv(table)
        assert np.allclose(restored[list("abc")], original[list("abc")], rtol=1e-12, atol=1e-9)


def test_library_is_built_once_and_reused(table: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib.json"
    args = [
        "perturb",
        str(table),
        *_cols("a,b,c,d"),
        "--library",
        str(lib),
        "--min-privacy",
        "0.6",
        "--quiet",
    ]
    assert _run([*args, "--seed", "1", "--output", str(tmp_path / "r1.csv")])[0] == 0
    first = lib.read_text()
    assert _run([*args, "--seed", "2", "--output", str(tmp_path / "r2.csv")])[0] == 0
    assert lib.read_text() == first
    code, text = _run(
        [
            "perturb",
            str(table),
            *_cols("a,b"),
            "--library",
            str(lib),
            "--min-privacy",
            "0.7",
            "--output",
            str(tmp_path / "r3.csv"),
        ]
    )
    assert code == 2 and "--min-privacy 0.7 is above the privacy level 0.6" in text
    assert not (tmp_path / "r3.csv").exists()


def test_config_file_with_flag_override(table: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "perturb.toml"
    cfg.write_text(
        f'input = "{table.name}"\ncolumns = "a,b,c"\nmethod = "rotation"\n'
        'insensitive = "zip,d,e,count,town"\nseed = 3\noutput = "cfg.csv"\n'
    )
    code, text = _run(
        [
            "perturb",
            "--config",
            str(cfg),
            "--method",
            "rbt",
            "--report",
            str(tmp_path / "cfg.json"),
            "--overwrite",
            "--quiet",
        ]
    )
    assert code == 0, text
    assert json.loads((tmp_path / "cfg.json").read_text())["method"] == "rbt"
    assert (tmp_path / "cfg.csv").exists()


def test_attack_command(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel.csv"
    assert (
        _run(
            [
                "perturb",
                str(table),
                *_cols("a,b,c,d,e"),
                "--method",
                "rotation",
                "--output",
                str(out),
                "--quiet",
            ]
        )[0]
        == 0
    )
    rep = tmp_path / "attack.json"
    code, text = _run(
        [
            "attack",
            str(table),
            str(out),
            *_cols("a,b,c,d,e"),
            "--known",
            "2,5",
            "--report",
            str(rep),
        ]
    )
    assert code == 0, text
    report = json.loads(rep.read_text())
    assert report["command"] == "attack"
    rows = {(r["attack"], r["known"]): r for r in report["attacks"]}
    assert rows[("procrustes", 5)]["exact"] == 1.0  # 5 known records span 5 columns
    code, text = _run(
        [
            "attack",
            str(table),
            str(out),
            *_cols("a,b,c,d,e"),
            "--known",
            "5",
            "--max-records",
            "60",
            "--report",
            str(rep),
            "--quiet",
        ]
    )
    sub = {(r["attack"], r["known"]): r for r in json.loads(rep.read_text())["attacks"]}
    assert code == 0 and sub[("procrustes", 5)]["exact"] == 1.0  # centred on the whole file
    assert "Warning: release is recoverable" in text
    code, text = _run(["attack", str(table), str(out), *_cols("a,b,town")])
    assert code == 2 and "Error: column 'town' is not numeric" in text
    code, text = _run(["attack", str(table), str(out), *_cols("a,b"), "--seed", "-2"])
    assert code == 2 and text.strip() == "Error: --seed -2 must be a whole number >= 0"
    code, text = _run(["attack", str(table), str(out), *_cols("a,b"), "--delimiter", "ab"])
    assert code == 2 and text.strip().startswith("Error: --delimiter 'ab' must be one character")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*_cols("a")], "1 column(s) chosen: an orthogonal transform needs at least 2"),
        ([*_cols("a,town")], "column 'town' is not numeric"),
        ([*_cols("a,nope")], "unknown column 'nope'"),
        ([*_cols("a,b"), "--method", "swap"], "--method: Input should be 'obt'"),
        ([*_cols("a,b"), "--min-privacy", "0.99"], "--min-privacy 0.99 is out of reach"),
        ([*_cols("a,b"), "--method", "rbt", "--rho", "9"], "--rho (9, 9) is out of reach"),
        (
            [*_cols("a,b"), "--method", "rotation", "--library", "x.json"],
            "--library applies to method obt only",
        ),
        ([*_cols("a,b"), "--seed", "-1"], "--seed -1 must be a whole number >= 0"),
        ([*_cols("a,b"), "--delimiter", ";;"], "--delimiter ';;' must be one character"),
        ([*_cols("a,b"), "--delimiter", ""], "--delimiter '' must be one character"),
    ],
)
def test_bad_input_one_line_exit_2_nothing_written(
    table: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    out, key = tmp_path / "o.csv", tmp_path / "k.json"
    code, text = _run(["perturb", str(table), *args, "--output", str(out), "--key", str(key)])
    assert code == 2
    assert text.startswith("Error: ") and message in text
    assert len(text.strip().splitlines()) == 1
    assert not out.exists() and not key.exists()


def test_nan_and_constant_columns_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b,c\n1,2,5\n2,,5\n3,4,5\n")
    code, text = _run(
        [
            "perturb",
            str(path),
            "--columns",
            "a,b",
            "--insensitive",
            "c",
            "--output",
            str(tmp_path / "o.csv"),
        ]
    )
    assert code == 2 and "column 'b' has a missing or infinite value (record 2)" in text
    code, text = _run(
        [
            "perturb",
            str(path),
            "--columns",
            "a,c",
            "--insensitive",
            "b",
            "--output",
            str(tmp_path / "o.csv"),
        ]
    )
    assert code == 2 and "column 'c' is constant" in text
    assert not (tmp_path / "o.csv").exists()


def test_a_header_naming_a_column_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b,a\n1,2,3\n4,5,7\n2,9,1\n5,1,1\n")
    for args in ([], ["--columns", "a,b", "--insensitive", "c"]):
        code, text = _run(["perturb", str(path), *args, "--output", str(tmp_path / "o.csv")])
        assert code == 2
        assert text.strip() == (
            f"Error: file '{path}' names the column 'a' twice in its "
            "header: give every column its own name"
        )
    path.write_text("a,b,c\n1,2,3\n4,5,7\n2,9,1\n5,1,1\n")
    code, text = _run(
        [
            "perturb",
            str(path),
            "--columns",
            "b,b",
            "--insensitive",
            "a,c",
            "--output",
            str(tmp_path / "o.csv"),
        ]
    )
    assert code == 2 and text.strip() == "Error: --columns names 'b' twice: name each column once"
    assert not (tmp_path / "o.csv").exists()


def test_a_table_without_records_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.parquet"
    pd.DataFrame({"a": pd.Series([], dtype=float), "b": pd.Series([], dtype=float)}).to_parquet(
        path
    )
    code, text = _run(["perturb", str(path), "--output", str(tmp_path / "o.csv")])
    assert code == 2
    assert text.startswith(f"Error: file '{path}'")  # the one reader's message
    assert "no rows: give at least one record" in text and len(text.splitlines()) == 1
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("flag", ["--key", "--report", "--html", "--library", "--output"])
def test_a_directory_given_as_a_file_is_refused_before_writing(
    table: Path, tmp_path: Path, flag: str
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    paths = {"--output": tmp_path / "o.csv", "--key": tmp_path / "k.json", flag: folder}
    args = [a for f, p in paths.items() for a in (f, str(p))]
    code, text = _run(["perturb", str(table), *_cols("a,b"), *args])
    assert code == 2
    assert text.strip() == f"Error: {flag} '{folder}' is a folder: give a file name inside it"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "folder"]
    code, text = _run(["attack", str(table), str(table), *_cols("a,b"), "--report", str(folder)])
    assert code == 2 and text.strip() == (
        f"Error: --report '{folder}' is a folder: give a file name inside it"
    )
    code, text = _run(
        [
            "perturb",
            "--invert",
            str(table),
            "--key",
            str(folder),
            "--output",
            str(tmp_path / "o.csv"),
        ]
    )
    assert code == 2 and text.strip() == (
        f"Error: --key '{folder}' is a folder: give a file name inside it"
    )


def test_outputs_never_overwrite_inputs(table: Path, tmp_path: Path) -> None:
    before = table.read_bytes()
    code, text = _run(["perturb", str(table), *_cols("a,b"), "--output", str(table)])
    assert code == 2 and "is also an input" in text
    code, text = _run(
        [
            "perturb",
            str(table),
            *_cols("a,b"),
            "--output",
            str(tmp_path / "x.csv"),
            "--key",
            str(tmp_path / "x.csv"),
        ]
    )
    assert code == 2 and "is given as both output and key" in text
    assert table.read_bytes() == before and not (tmp_path / "x.csv").exists()


def test_invert_refuses_a_key_that_does_not_match(table: Path, tmp_path: Path) -> None:
    r1, k1 = tmp_path / "r1.csv", tmp_path / "k1.json"
    r2, k2 = tmp_path / "r2.csv", tmp_path / "k2.json"
    for r, k, s in ((r1, k1, "1"), (r2, k2, "2")):
        assert (
            _run(
                [
                    "perturb",
                    str(table),
                    *_cols("a,b,c"),
                    "--seed",
                    s,
                    "--output",
                    str(r),
                    "--key",
                    str(k),
                    "--quiet",
                ]
            )[0]
            == 0
        )
    out = tmp_path / "back.csv"
    code, text = _run(["perturb", "--invert", "--key", str(k1), str(r2), "--output", str(out)])
    assert code == 2 and "the key does not match" in text and not out.exists()
    pd.read_csv(r1).drop(columns=["b"]).to_csv(tmp_path / "short.csv", index=False)
    code, text = _run(
        ["perturb", "--invert", "--key", str(k1), str(tmp_path / "short.csv"), "--output", str(out)]
    )
    assert code == 2 and "it has no column 'b'" in text
    code, text = _run(["perturb", "--invert", str(r1), "--output", str(out)])
    assert code == 2 and "--invert needs --key" in text
    (tmp_path / "junk.json").write_text("{}")
    code, text = _run(
        ["perturb", "--invert", "--key", str(tmp_path / "junk.json"), str(r1), "--output", str(out)]
    )
    assert code == 2 and "is not a perturbation key" in text
    assert not out.exists()


def test_help_has_an_example() -> None:
    for cmd in ("perturb", "attack"):
        code, text = _run([cmd, "--help"])
        assert code == 0 and "Example" in text


def test_column_types_come_from_every_value(tmp_path: Path) -> None:
    # a late fraction makes an integer column a double one; pass-through text stays as written
    from anonlab.io import read_table
    from anonlab.perturbation.table import numeric_columns

    rows = [f"{i},{2 * i},00{i % 3}" for i in range(200)]
    path = tmp_path / "late.csv"
    path.write_text("a,b,c\n" + "\n".join(rows) + "\n199.5,7,001\n")
    frame = read_table(path, dtype=str)
    data = numeric_columns(frame, ["a", "b"])
    assert data.integer == [False, True]
    assert data.values[-1].tolist() == [199.5, 7.0]
    assert frame["c"].iloc[0] == "000"
    path.write_text("a,b,c\n" + "\n".join(rows) + "\n5,oops,001\n")
    code, text = _run(
        [
            "perturb",
            str(path),
            "--columns",
            "a,b",
            "--insensitive",
            "c",
            "--output",
            str(tmp_path / "o.csv"),
        ]
    )
    assert code == 2
    assert text.strip() == (
        "Error: column 'b' is not numeric (record 201: 'oops'): choose "
        "numeric columns (z-scores need numbers)"
    )
    assert not (tmp_path / "o.csv").exists()


def test_semicolon_csv_and_parquet_categories_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=40),
            "y": rng.normal(size=40),
            "cat": pd.Categorical(["a", "b"] * 20),
            "s": ["q;r"] * 40,
        }
    )
    semi = tmp_path / "semi.csv"
    frame.to_csv(semi, sep=";", index=False)
    out, key, back = tmp_path / "o.csv", tmp_path / "k.json", tmp_path / "b.csv"
    assert (
        _run(
            [
                "perturb",
                str(semi),
                "--columns",
                "x,y",
                "--insensitive",
                "cat,s",
                "--output",
                str(out),
                "--key",
                str(key),
                "--quiet",
            ]
        )[0]
        == 0
    )
    # every release is written in the one CSV dialect (comma), whatever the input's delimiter
    assert out.read_text().splitlines()[0] == "x,y,cat,s"
    assert (
        _run(
            ["perturb", "--invert", "--key", str(key), str(out), "--output", str(back), "--quiet"]
        )[0]
        == 0
    )
    restored = pd.read_csv(back)
    assert restored["s"].tolist() == frame["s"].tolist()
    assert np.allclose(restored[["x", "y"]], frame[["x", "y"]], rtol=1e-13, atol=1e-13)
    pq_in = tmp_path / "cat.parquet"
    frame.to_parquet(pq_in, index=False)
    assert (
        _run(
            [
                "perturb",
                str(pq_in),
                "--columns",
                "x,y",
                "--insensitive",
                "cat,s",
                "--output",
                str(out),
                "--quiet",
            ]
        )[0]
        == 0
    )
    assert pd.read_csv(out)["cat"].tolist() == ["a", "b"] * 20
