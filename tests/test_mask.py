"""``anonlab mask`` (issue 25): the framework, PRAM, topbot and recode; end to end, the
independent checker against tampered releases, and errors in one line."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import anonlab
from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.io import read_table
from anonlab.masking.registry import method_names
from anonlab.runs.mask import MaskSettings, run_mask
from anonlab.verify.masking import check_masking

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
TESTDATA = ROOT / "data" / "sdc" / "testdata.csv"


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return read_table(TESTDATA)


def _matrix_file(tmp_path: Path, rows: list[list[float]], levels: list[str]) -> Path:
    path = tmp_path / "m.csv"
    lines = ["," + ",".join(levels)]
    lines += [
        f"{lv}," + ",".join(repr(x) for x in row) for lv, row in zip(levels, rows, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


ROOF = ["2", "4", "5", "6", "9"]
ROOF_MATRIX = [
    [0.9, 0.05, 0.05, 0, 0],
    [0.1, 0.8, 0.05, 0.05, 0],
    [0, 0.2, 0.7, 0.1, 0],
    [0, 0, 0.3, 0.6, 0.1],
    [0.25, 0.25, 0, 0, 0.5],
]


# ---------------------------------------------------------------------------
# the command, TOML and Python
# ---------------------------------------------------------------------------


def test_pram_from_the_command_line_writes_a_verified_release(tmp_path: Path) -> None:
    before = _sha(TESTDATA)
    out, rep, html = tmp_path / "t.csv", tmp_path / "t.json", tmp_path / "t.html"
    code, text = _run(
        [
            "mask", str(TESTDATA), "--method", "pram", "--columns", "roof,walls", "--seed", "1",
            "--strata", "urbrur", "--pd", "0.7", "--alpha", "0.6", "--other", "insensitive",
            "--output", str(out), "--report", str(rep), "--html", str(html),
        ]
    )  # fmt: skip
    assert code == 0, text
    assert (
        "mask pram (pram): roof, walls of 4580 records, seed given (kept out of the report); "
        "release verified" in text
    )
    assert _sha(TESTDATA) == before
    report = json.loads(rep.read_text())
    assert report["command"] == "mask" and report["verified"] is True
    assert report["seed"] is None and report["seed_given"] is True  # the seed stays private
    assert report["parameters"]["seed"] is None and '"seed": 1' not in rep.read_text()
    assert report["parameters"]["parameters"] == {
        "matrix": None, "pd": [0.7], "alpha": [0.6], "strata": ["urbrur"]
    }  # fmt: skip
    roof = report["masking"]["columns"]["roof"]
    assert roof["levels"] == ROOF and len(roof["matrices"]) == 2  # one per stratum
    assert sum(t["count"] for t in roof["transitions"]) == 4580
    assert "ZIL" in json.dumps(report["measures"]) or "zil" in json.dumps(report["measures"])
    assert "prosecutor" in report["risk"]
    assert 0 < report["risk_pram"]["prosecutor_highest"] <= report["risk"]["prosecutor"]["highest"]
    assert "<html" in html.read_text().lower()
    release = read_table(out)
    original = read_table(TESTDATA)
    assert (
        (release.drop(columns=["roof", "walls"]) == original.drop(columns=["roof", "walls"]))
        .all()
        .all()
    )
    code, text = _run(["verify", str(rep)])
    assert code == 0 and "redrawn from the seed" not in text, text
    code, text = _run(["verify", str(rep), "--seed", "1"])
    assert code == 0 and "redrawn from the seed" in text, text
    code, text = _run(["verify", str(rep), "--seed", "2"])  # another draw: refused
    assert code != 0, text


def test_toml_command_line_and_python_give_one_release(tmp_path: Path, frame: pd.DataFrame) -> None:
    matrix = _matrix_file(tmp_path, ROOF_MATRIX, ROOF)
    config = tmp_path / "mask.toml"
    config.write_text(
        f'input = "{TESTDATA}"\nmethod = "pram"\ncolumns = ["roof"]\nseed = 7\n'
        'other = "insensitive"\noutput = "a.csv"\n[parameters]\nmatrix = "m.csv"\n'
    )
    code, text = _run(["mask", "--config", str(config)])
    assert code == 0, text
    code, text = _run(
        [
            "mask", str(TESTDATA), "--method", "pram", "--columns", "roof", "--seed", "7",
            "--matrix", str(matrix), "--other", "insensitive", "--output", str(tmp_path / "b.csv"),
        ]
    )  # fmt: skip
    assert code == 0, text
    python = anonlab.mask(frame, method="pram", columns="roof", seed=7, matrix=str(matrix))
    a, b = read_table(tmp_path / "a.csv"), read_table(tmp_path / "b.csv")
    assert a.equals(b)
    assert a["roof"].tolist() == python.release["roof"].tolist()
    settings = MaskSettings.load(config)
    again = run_mask(settings).release
    assert again is not None and again["roof"].tolist() == a["roof"].tolist()


def test_topbot_and_recode_from_the_command_line(tmp_path: Path) -> None:
    rep = tmp_path / "r.json"
    code, text = _run(
        [
            "mask", str(TESTDATA), "--method", "recode", "--columns", "age", "--breaks", "6",
            "--recode-method", "equalAmount", "--other", "insensitive", "--report", str(rep),
        ]
    )  # fmt: skip
    assert code == 0, text
    report = json.loads(rep.read_text())
    assert (
        report["masking"]["recode_method"] == "equalamount" and report["sdcmicro"] == "globalRecode"
    )
    code, text = _run(
        [
            "mask", str(TESTDATA), "--method", "topbot", "--columns", "income,expend",
            "--top", "500000", "--top-replacement", "1000", "--bottom", "10", "--other",
            "insensitive", "--output", str(tmp_path / "t.csv"), "--report", str(rep),
        ]
    )  # fmt: skip
    assert code == 0, text
    release = read_table(tmp_path / "t.csv")
    income = release["income"].astype(float)
    assert (
        income.max() <= 500000
        and (income == 1000).sum()
        == json.loads(rep.read_text())["masking"]["coded"]["income"]["top_coded"]
    )
    code, text = _run(["verify", str(rep)])
    assert code == 0, text


# ---------------------------------------------------------------------------
# PRAM
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("pd_", "alpha", "strata"), [(0.8, 0.5, []), (0.5, 1.0, ["urbrur"])])
def test_invariant_pram_keeps_the_marginals_in_expectation(
    frame: pd.DataFrame, pd_: float, alpha: float, strata: list[str]
) -> None:
    """Over 300 seeds the mean released count of each level is within four standard
    errors of the original count (and of each stratum's, with strata)."""
    runs = 300
    original = frame["walls"].value_counts()
    counts = np.array(
        [
            anonlab.mask(frame, "pram", "walls", seed=s, pd=pd_, alpha=alpha, strata=strata)
            .release["walls"]
            .value_counts()
            .reindex(original.index, fill_value=0)
            .to_numpy()
            for s in range(runs)
        ],
        dtype=np.float64,
    )
    mean, se = counts.mean(axis=0), counts.std(axis=0, ddof=1) / np.sqrt(runs)
    assert np.all(np.abs(mean - original.to_numpy()) <= 4 * se + 1e-9), (mean, original)
    assert counts.std(axis=0).max() > 0  # the release does vary


def test_the_invariant_matrix_is_sdcmicros_construction(frame: pd.DataFrame) -> None:
    """pd = 1 makes P the identity, so R = I and the release is the original; alpha = 0
    too; the matrix is invariant (p R = p) and its rows sum to 1."""
    for params in ({"pd": 1.0}, {"alpha": 0.0}):
        result = anonlab.mask(frame, "pram", "roof", seed=3, **params)
        assert result.release["roof"].tolist() == frame["roof"].tolist()
    result = anonlab.mask(frame, "pram", "roof", seed=3)
    matrix = np.asarray(result.section["columns"]["roof"]["matrices"][0]["matrix"])
    shares = frame["roof"].value_counts(normalize=True).reindex(ROOF).to_numpy()
    assert np.allclose(shares @ matrix, shares) and np.allclose(matrix.sum(axis=1), 1)
    assert np.all(np.diag(matrix) >= 0.5)  # alpha 0.5: at least 1 - alpha on the diagonal


def test_the_same_seed_gives_the_same_release_and_the_report_counts_it(
    frame: pd.DataFrame,
) -> None:
    a = anonlab.mask(frame, "pram", "roof,walls", seed=11)
    b = anonlab.mask(frame, "pram", "roof,walls", seed=11)
    c = anonlab.mask(frame, "pram", "roof,walls", seed=12)
    assert a.release.equals(b.release) and not a.release.equals(c.release)
    entry = a.section["columns"]["roof"]
    pairs = pd.crosstab(frame["roof"], a.release["roof"])
    for t in entry["transitions"]:
        assert pairs.loc[t["from"], t["to"]] == t["count"]
    assert entry["changed"] == int((frame["roof"] != a.release["roof"]).sum())


def test_a_given_matrix_is_followed_and_checked(tmp_path: Path, frame: pd.DataFrame) -> None:
    identity = _matrix_file(tmp_path, np.eye(5).tolist(), ROOF)
    result = anonlab.mask(frame, "pram", "roof", seed=1, matrix=str(identity))
    assert result.release["roof"].tolist() == frame["roof"].tolist()
    bad = [row[:] for row in ROOF_MATRIX]
    bad[2][2] = 0.6
    with pytest.raises(AnonlabError, match=r"row '5' sums to 0\.9"):
        anonlab.mask(frame, "pram", "roof", seed=1, matrix=str(_matrix_file(tmp_path, bad, ROOF)))
    short = _matrix_file(tmp_path, np.eye(4).tolist(), ROOF[:4])
    with pytest.raises(AnonlabError, match="lacks level"):
        anonlab.mask(frame, "pram", "roof", seed=1, matrix=str(short))
    # a zero entry is never drawn: level 2 goes to 2, 4 or 5 only
    result = anonlab.mask(
        frame, "pram", "roof", seed=5, matrix=str(_matrix_file(tmp_path, ROOF_MATRIX, ROOF))
    )
    assert set(result.release["roof"][frame["roof"] == "2"]) <= {"2", "4", "5"}


# ---------------------------------------------------------------------------
# topbot and recode
# ---------------------------------------------------------------------------


def test_topbot_codes_only_beyond_the_limits(frame: pd.DataFrame) -> None:
    result = anonlab.mask(frame, "topbot", "age", value=80, replacement=81, kind="top")
    age, coded = frame["age"].astype(float), result.release["age"].astype(float)
    assert (coded[age > 80] == 81).all() and (coded[age <= 80] == age[age <= 80]).all()
    both = anonlab.mask(frame, "topbot", "age", top=70, bottom=5, bottom_replacement=0)
    coded = both.release["age"].astype(float)
    assert coded.max() == 70 and (coded[age < 5] == 0).all()
    with pytest.raises(AnonlabError, match="give a limit"):
        anonlab.mask(frame, "topbot", "age")


def test_recode_keeps_a_value_on_the_lowest_break(frame: pd.DataFrame) -> None:
    """sdcMicro releases age 0 as NA with breaks starting at 0; anonlab keeps it in [0,9]."""
    result = anonlab.mask(frame, "recode", "age", breaks=[0, 9, 19, 29, 39, 49, 59, 69, 100])
    released = result.release["age"]
    assert (released[frame["age"] == "0"] == "[0,9]").all()
    assert released.isin(result.section["columns"]["age"]["labels"]).all()
    assert "sdcMicro releases them as missing" in result.section["columns"]["age"]["notes"][0]
    with pytest.raises(AnonlabError, match="outside the breaks"):
        anonlab.mask(frame, "recode", "age", breaks=[1, 50, 100])
    labelled = anonlab.mask(frame, "recode", "age", breaks="-1,40,100", labels="young,old")
    assert set(labelled.release["age"]) == {"young", "old"}


# ---------------------------------------------------------------------------
# the independent checker
# ---------------------------------------------------------------------------


def _report(result: anonlab.MaskResult, params: dict[str, Any]) -> dict[str, Any]:
    return {
        **result.summary(),
        "seed": result.seed,
        "parameters": {"parameters": params},
    }


def test_the_checker_catches_tampered_releases(tmp_path: Path, frame: pd.DataFrame) -> None:
    pram = anonlab.mask(frame, "pram", "roof", seed=4)
    report = _report(pram, {})
    assert check_masking(frame, pram.release, ["roof"], report) == []
    tampered = pram.release.copy()
    tampered.loc[0, "roof"] = "7"  # not a level
    assert "not one of its levels" in check_masking(frame, tampered, ["roof"], report)[0]
    tampered = pram.release.copy()
    row = int(np.flatnonzero(pram.release["roof"] == "4")[0])
    tampered.loc[row, "roof"] = "2"  # another level: the seed's draw and the counts say no
    problems = check_masking(frame, tampered, ["roof"], report)
    assert any("transition counts" in p for p in problems)
    no_counts = copy.deepcopy(report)
    del no_counts["masking"]["columns"]["roof"]["transitions"][:]
    assert check_masking(frame, pram.release, ["roof"], no_counts)
    reseeded = {**report, "seed": 5}
    assert "the seed's draw gives" in check_masking(frame, pram.release, ["roof"], reseeded)[0]
    odd = copy.deepcopy(report)
    odd["masking"]["columns"]["roof"]["matrices"][0]["matrix"][1][1] += 0.01
    assert "sums to" in check_masking(frame, pram.release, ["roof"], odd)[0]
    tampered = pram.release.copy()
    tampered.loc[3, "walls"] = "9"  # an unmasked column
    assert (
        "is not masked but record 4 changed" in check_masking(frame, tampered, ["roof"], report)[0]
    )

    top = anonlab.mask(frame, "topbot", "age", top=80, top_replacement=81)
    params: dict[str, Any] = {"top": 80, "top_replacement": 81}
    assert check_masking(frame, top.release, ["age"], _report(top, params)) == []
    tampered = top.release.copy()
    tampered.loc[int(np.flatnonzero(frame["age"].astype(float) > 80)[0]), "age"] = "85"
    assert "must be coded 81" in check_masking(frame, tampered, ["age"], _report(top, params))[0]

    rec = anonlab.mask(frame, "recode", "age", breaks=[-1, 20, 40, 60, 100])
    params = {"breaks": [-1, 20, 40, 60, 100]}
    assert check_masking(frame, rec.release, ["age"], _report(rec, params)) == []
    tampered = rec.release.copy()
    tampered.loc[0, "age"] = "(-1,20]" if tampered.loc[0, "age"] != "(-1,20]" else "(20,40]"
    assert "its interval is" in check_masking(frame, tampered, ["age"], _report(rec, params))[0]
    wrong = copy.deepcopy(_report(rec, params))
    wrong["masking"]["columns"]["age"]["breaks"][1] = 21
    assert "do not match the breaks" in check_masking(frame, rec.release, ["age"], wrong)[0]


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "pram", "--columns", "roof", "--pdd", "1"], "'pdd' is not a parameter"),
        (["--method", "noisy", "--columns", "roof"], "not a masking method"),
        (["--method", "pram", "--columns", "roof", "--pd", "2"], "pd"),
        (["--method", "pram", "--columns", "roof", "--engine", "dask"], "in memory only"),
        (["--method", "recode", "--columns", "roof", "--breaks", "1,1"], "repeat"),
        (["--method", "topbot", "--columns", "urbrur,roof"], "give a limit"),
    ],
)
def test_errors_are_one_line_and_write_nothing(
    tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "o.csv"
    code, text = _run(
        ["mask", str(TESTDATA), *args, "--other", "insensitive", "--output", str(out)]
    )
    assert code == 2 and message in text, text
    assert len(text.strip().splitlines()) == 1 and not out.exists()


def test_every_registered_method_is_a_choice() -> None:
    assert {"pram", "topbot", "recode"} <= set(method_names())


def test_the_documented_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    """docs/masking.md: the first command's line and the counts of its six intervals."""
    page = (ROOT / "docs" / "masking.md").read_text()
    shown_line = re.search(r"```text\n(mask recode[^\n]*)\n```", page)
    shown_counts = re.search(r"```json\n(\{\"\[-1,15\][^\n]*)\n```", page)
    assert shown_line is not None and shown_counts is not None
    rep = tmp_path / "age6.json"
    code, text = _run(
        [
            "mask", str(TESTDATA), "--method", "recode", "--columns", "age", "--breaks", "6",
            "--other", "insensitive", "--output", str(tmp_path / "age6.csv"), "--report", str(rep),
        ]
    )  # fmt: skip
    assert code == 0, text
    line = next(x for x in text.splitlines() if x.startswith("mask recode"))
    assert re.sub(r"; [0-9.]+ s$", "", line) == shown_line.group(1)
    counts = json.loads(rep.read_text())["masking"]["columns"]["age"]["counts"]
    assert counts == json.loads(shown_counts.group(1))


def test_the_pram_risk_accounts_for_the_matrix(tmp_path: Path) -> None:
    """risk_pram: each record's chance of keeping its value (the matrix diagonal at its
    released value) over its released class size, computed here by hand."""
    table = tmp_path / "t.csv"
    table.write_text("k,x\n" + "".join(f"{v},{i}\n" for i, v in enumerate("aaabbc" * 5)))
    matrix = _matrix_file(
        tmp_path, [[0.8, 0.2, 0.0], [0.4, 0.6, 0.0], [0.0, 0.0, 1.0]], ["a", "b", "c"]
    )
    settings = MaskSettings(
        input=str(table),
        max_risk=1.0,
        method="pram",
        columns=["k"],
        seed=3,
        parameters={"matrix": str(matrix)},
        other="insensitive",
    )
    result = run_mask(settings)
    assert result.release is not None
    released = result.release["k"].tolist()
    diagonal = {"a": 0.8, "b": 0.6, "c": 1.0}
    risks = [diagonal[y] / released.count(y) for y in released]
    section = result.report["risk_pram"]
    assert section["prosecutor_highest"] == pytest.approx(max(risks))
    assert section["prosecutor_average"] == pytest.approx(sum(risks) / len(risks))
    assert section["prosecutor_highest"] <= result.report["risk"]["prosecutor"]["highest"]


def test_topbot_writes_no_input_and_shares_an_uncoded_column() -> None:
    """Numbers coded into one array for all columns: the input frame stays as it was, a
    column with nothing beyond the limit is released as it is, the others are coded."""
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({f"x{j}": rng.lognormal(5, 1, 2000).round(2) for j in range(3)})
    frame["small"] = 1.5
    frame["whole"] = (frame["x0"] * 10).round().astype("int64")
    before = frame.copy(deep=True)
    result = anonlab.mask(frame, "topbot", ["x0", "x1", "x2", "small", "whole"], top=400.0)
    pd.testing.assert_frame_equal(frame, before)
    for name in ("x0", "x1", "x2"):
        expected = before[name].where(before[name] <= 400.0, 400.0)
        pd.testing.assert_series_equal(result.release[name], expected)
        assert result.section["coded"][name]["top_coded"] == int((before[name] > 400).sum())
    pd.testing.assert_series_equal(result.release["small"], before["small"])
    assert result.release["whole"].dtype == np.int64
    assert result.release["whole"].max() == 400


@pytest.mark.parametrize("breaks", [4, [0, 50, 200, 1e6], list(np.linspace(0, 1e6, 50))])
def test_recode_labels_the_same_from_numbers_and_from_text(tmp_path: Path, breaks: Any) -> None:
    """The intervals found by comparison passes (or a binary search for many breaks), as
    a categorical from numbers and as text (an Arrow dictionary decoded) from the reader's
    text: the same labels record by record, a missing value missing, the counts right."""
    rng = np.random.default_rng(9)
    frame = pd.DataFrame({"x": rng.lognormal(5, 1, 3000).round(2)})
    frame.loc[::17, "x"] = np.nan
    path = tmp_path / "x.csv"
    frame.to_csv(path, index=False)
    from_numbers = anonlab.mask(frame, "recode", "x", breaks=breaks)
    from_text = anonlab.mask(read_table(path), "recode", "x", breaks=breaks)
    numbers = from_numbers.release["x"].astype(object).where(frame["x"].notna(), "")
    assert list(numbers) == list(from_text.release["x"])
    entry = from_text.section["columns"]["x"]
    counted = pd.Series(from_text.release["x"]).value_counts()
    assert {k: v for k, v in entry["counts"].items() if v} == {
        k: int(v) for k, v in counted.items() if k != ""
    }
    assert from_numbers.section == from_text.section


@pytest.mark.parametrize("power", [990, -990])
@pytest.mark.parametrize(
    "method", ["additive", "correlated", "correlated2", "restr", "romm", "outdect"]
)
def test_noise_on_numbers_near_1e300_or_1e_300_is_released_and_verified(
    tmp_path: Path, method: str, power: int
) -> None:
    """A table of numbers near 1e298 or 1e-298 (their squares overflow or underflow): the
    command releases it, the independent check accepts it (its SDs are taken on the
    columns scaled by a power of two), and ``anonlab verify`` re-checks it. Before, the
    check refused additive and outdect releases (an infinite or NaN SD) and correlated
    crashed on the infinite covariance or added no noise to numbers near 1e-298."""
    rng = np.random.default_rng(3)
    x = np.ldexp(rng.lognormal(size=(300, 3)), power)
    source = tmp_path / "big.csv"
    pd.DataFrame(x, columns=["a", "b", "c"]).to_csv(source, index=False, float_format="%.17g")
    out, rep = tmp_path / "out.csv", tmp_path / "r.json"
    code, text = _run(
        [
            "mask", str(source), "--method", "noise", "--noise-method", method, "--columns",
            "a,b,c", "--seed", "1", "--output", str(out), "--report", str(rep),
        ]
    )  # fmt: skip
    assert code == 0, text
    released = read_table(out)[["a", "b", "c"]].to_numpy(dtype=np.float64)
    assert np.isfinite(released).all() and np.any(released != x)
    code, text = _run(["verify", str(rep)])
    assert code == 0, text
