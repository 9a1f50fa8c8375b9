"""``anonlab suppress`` end to end: command line, TOML, Python, verify, errors, all or nothing."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import anonlab
from anonlab.cli.app import app
from anonlab.errors import AnonlabError

runner = CliRunner()
KEYS = "urbrur,roof,walls,water,electcon,relat,sex"
DOC = Path(__file__).resolve().parents[1] / "docs" / "suppression.md"


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


@pytest.fixture
def testdata(data_dir: Path) -> Path:
    return data_dir / "sdc" / "testdata.csv"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_documented_example_prints_what_the_page_shows(testdata: Path, tmp_path: Path) -> None:
    before = _sha(testdata)
    out, rep, html = tmp_path / "t.csv", tmp_path / "t.json", tmp_path / "t.html"
    code, text = _run(
        [
            "suppress",
            str(testdata),
            "--qi",
            KEYS,
            "--k",
            "3",
            "--other",
            "insensitive",
            "--output",
            str(out),
            "--report",
            str(rep),
            "--html",
            str(html),
        ]
    )
    assert code == 0, text
    line = next(x for x in text.splitlines() if x.startswith("local suppression"))
    shown = re.search(r"```text\n(local suppression[^\n]*)\n```", DOC.read_text()).group(1)  # type: ignore[union-attr]
    assert re.sub(r"; [0-9.]+ s$", "", line) == shown
    assert _sha(testdata) == before  # the input is only read
    release = pd.read_csv(out)
    original = pd.read_csv(testdata)
    assert list(release.columns) == list(original.columns) and len(release) == len(original)
    assert int(release[KEYS.split(",")].isna().sum().sum()) == 176
    report = json.loads(rep.read_text())
    assert report["command"] == "suppress" and report["verified"] is True
    assert report["cells_suppressed"] == 176 and report["records_touched"] == 176
    assert report["suppressed_per_key"]["relat"] == 133
    assert report["combinations"][0]["smallest_frequency"] >= 3
    assert report["importance"]["urbrur"] == 1  # two values: the most important
    assert "prosecutor" in report["risk"] and "risk_blanks" in report
    assert report["inputs"]["data"]["sha256"] == before
    page = html.read_text()
    assert "<html" in page.lower() and "Blanked cells per key" in page
    code, text = _run(["verify", str(rep)])
    assert code == 0, text
    assert "suppress release" in text and "holds" in text


def test_toml_python_and_command_line_give_the_same_release(testdata: Path, tmp_path: Path) -> None:
    config = tmp_path / "s.toml"
    config.write_text(
        f'input = "{testdata}"\n'
        'qi = ["urbrur", "roof", "walls", "water", "sex"]\n'
        "k = 3\n"
        "importance = { urbrur = 1, sex = 2, roof = 3, walls = 4, water = 5 }\n"
        'combs = "3=5,2=10"\n'
        'other = "insensitive"\n'
        'output = "toml.csv"\n'
    )
    code, text = _run(["suppress", "--config", str(config), "--quiet"])
    assert code == 0, text
    cli = tmp_path / "cli.csv"
    code, text = _run(
        [
            "suppress",
            str(testdata),
            "--qi",
            "urbrur,roof,walls,water,sex",
            "--k",
            "3",
            "--combs",
            "3=5",
            "--combs",
            "2=10",
            "--other",
            "insensitive",
            "--quiet",
            "--importance",
            "urbrur=1,sex=2",
            "--importance",
            "roof=3,walls=4,water=5",
            "--output",
            str(cli),
        ]
    )
    assert code == 0, text
    from_toml, from_cli = pd.read_csv(tmp_path / "toml.csv"), pd.read_csv(cli)
    pd.testing.assert_frame_equal(from_toml, from_cli)
    result = anonlab.suppress(
        pd.read_csv(testdata),
        qi=["urbrur", "roof", "walls", "water", "sex"],
        k=3,
        importance={"urbrur": 1, "sex": 2, "roof": 3, "walls": 4, "water": 5},
        combs=[(3, 5), (2, 10)],
    )
    assert result.cells_suppressed == int(from_cli[["roof", "walls", "water"]].isna().sum().sum())
    assert [c["k"] for c in result.combinations] == [5] * 10 + [10] * 10
    assert all(c["smallest_frequency"] >= c["k"] for c in result.combinations)
    settings = anonlab.SuppressSettings(
        input=str(testdata),
        qi=["urbrur", "roof", "walls", "water", "sex"],
        k=3,
        importance="urbrur=1,sex=2,roof=3,walls=4,water=5",
        combs=[[3, 5], [2, 10]],
        other="insensitive",
    )
    with pytest.warns(anonlab.ReleaseRiskWarning):
        run = anonlab.run(settings)
    assert run.release is not None
    assert run.report["cells_suppressed"] == result.cells_suppressed
    pd.testing.assert_frame_equal(run.release.isna(), result.release.isna())


def test_strata_and_alpha(testdata: Path, tmp_path: Path) -> None:
    rep = tmp_path / "r.json"
    code, text = _run(
        [
            "suppress",
            str(testdata),
            "--qi",
            KEYS,
            "--k",
            "3",
            "--strata",
            "hhcivil",
            "--alpha",
            "0.5",
            "--other",
            "insensitive",
            "--report",
            str(rep),
            "--quiet",
        ]
    )
    assert code == 0, text
    report = json.loads(rep.read_text())
    assert report["strata"] == ["hhcivil"] and report["alpha"] == 0.5
    assert report["roles"]["hhcivil"] == "insensitive"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--qi", "urbrur,nope"], "nope"),
        (["--qi", "urbrur,sex", "--importance", "urbrur=x"], "is not KEY=RANK"),
        (["--qi", "urbrur,sex", "--importance", "urbrur=1"], "no rank for sex"),
        (["--qi", "urbrur,sex", "--combs", "3"], "combs size 3 out of range"),
        (["--qi", "urbrur,sex", "--combs", "2=x"], "is not SIZE or SIZE=K"),
        (["--qi", "urbrur,sex", "--alpha", "2"], "alpha"),
        (["--qi", "urbrur,sex", "--engine", "dask", "--sheet", "x"], "sheet applies to Excel"),
        (["--qi", "urbrur,sex", "--k", "5000"], "fewer than k = 5000"),
        (["--qi", "urbrur,sex", "--strata", "sex"], "both a key and a stratum"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    testdata: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "x.csv"
    code, text = _run(
        ["suppress", str(testdata), *args, "--other", "insensitive", "--output", str(out)]
    )
    assert code == 2, text
    lines = [x for x in text.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], text
    assert not out.exists()


def test_a_refused_release_leaves_every_output_as_it_was(testdata: Path, tmp_path: Path) -> None:
    out, rep = tmp_path / "x.csv", tmp_path / "x.json"
    out.write_text("old\n")
    rep.write_text("{}\n")
    code, text = _run(
        [
            "suppress",
            str(testdata),
            "--qi",
            KEYS,
            "--k",
            "3",
            "--other",
            "insensitive",
            "--fail-on-risk",
            "--output",
            str(out),
            "--report",
            str(rep),
        ]
    )
    assert code == 3, text
    assert out.read_text() == "old\n" and rep.read_text() == "{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv", "x.json"]


def test_a_database_table_output_is_refused_on_an_engine(testdata: Path, tmp_path: Path) -> None:
    settings = anonlab.SuppressSettings(
        input=str(testdata),
        qi=["sex"],
        other="insensitive",
        engine="dask",
        output=f"sqlite:///{tmp_path / 'x.db'}",
        output_table="release",
    )
    with pytest.raises(AnonlabError, match="not a database table"):
        anonlab.run_suppress(settings)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("engine", "advice"),
    [
        ("numpy", "or give a file output (not a folder)"),
        ("dask", "or use engine 'numpy' with a file output"),
    ],
)
def test_a_database_input_is_refused_on_an_engine_with_advice_that_fits(
    testdata: Path, tmp_path: Path, engine: str, advice: str
) -> None:
    """The NumPy engine runs for a folder output: its refusal of a database input offered
    "use engine 'numpy' with a file output", the engine it was on."""
    database = tmp_path / "t.db"
    settings = anonlab.SuppressSettings(
        input=f"sqlite:///{database}",
        table="t",
        qi=["sex"],
        other="insensitive",
        engine=engine,
        output=f"{tmp_path / 'release'}/",
    )
    with pytest.raises(AnonlabError, match="is a database") as refused:
        anonlab.run_suppress(settings)
    assert str(refused.value).endswith(advice)
    assert list(tmp_path.iterdir()) == []


def test_missing_cells_of_the_input_are_blanks_from_the_start(
    testdata: Path, tmp_path: Path
) -> None:
    # the one reader gives a missing cell as an empty text: a blank, not a value
    table = pd.read_csv(testdata)
    table.loc[::50, "roof"] = None
    table.loc[::70, "hhcivil"] = None
    source = tmp_path / "holes.parquet"
    table.to_parquet(source)
    out, rep = tmp_path / "out.parquet", tmp_path / "out.json"
    code, text = _run(
        [
            "suppress",
            str(source),
            "--qi",
            KEYS,
            "--k",
            "3",
            "--strata",
            "hhcivil",
            "--quiet",
            "--other",
            "insensitive",
            "--output",
            str(out),
            "--report",
            str(rep),
        ]
    )
    assert code == 0, text
    report = json.loads(rep.read_text())
    assert report["blank_before_per_key"]["roof"] == 92
    released = pd.read_parquet(out)
    new = released["roof"].isna() & table["roof"].notna()
    assert int(new.sum()) == report["suppressed_per_key"]["roof"]
    code, text = _run(["verify", str(rep)])
    assert code == 0, text
