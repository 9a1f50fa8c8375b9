"""sdcMicro's microaggregation methods other than MDAV (issue 25): onedims, pca, rmd, clustpca
and influence with the aggregates mean, median, trim and onestep, and strata.

The fixtures (tests/data/sdcmicro_microaggregation/sdcmicro_5.8.1.json) are sdcMicro 5.8.1's
releases, made by make_fixtures.R in the same folder (its header says how): for the
deterministic methods (onedims, pca, and clustpca and influence, whose CLARA draws from its
own generator) the md5 of the released values printed with 17 significant digits, which
anonlab must give bit for bit; for rmd (a random MCD) the information loss over seeds, which
anonlab must match statistically.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import anonlab
from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.microaggregation.aggregates import fixed_labels, ordered_aggregates
from anonlab.microaggregation.methods import (
    column_order,
    onedims_release,
    pca_order,
    radix_order,
    stratum_rows,
)
from anonlab.verify.microaggregation import check_microaggregation

HERE = Path(__file__).resolve().parent / "data" / "sdcmicro_microaggregation"
FIXTURES = json.loads((HERE / "sdcmicro_5.8.1.json").read_text())
runner = CliRunner()


def _frames(data_dir: Path) -> dict[str, pd.DataFrame]:
    return {
        "Tarragona": pd.read_csv(data_dir / "sdc" / "Tarragona.csv"),
        "Census": pd.read_csv(data_dir / "sdc" / "CASCrefmicrodata.csv"),
        "testdata2": pd.read_csv(HERE / "testdata2.csv"),
        "Tarragona100": pd.read_csv(data_dir / "sdc" / "Tarragona.csv").head(100),
    }


def _names(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _text(values: np.ndarray) -> str:
    return "\n".join(",".join(format(v, ".17g") for v in row) for row in values)


def _sse_sst(x: np.ndarray, m: np.ndarray) -> float:
    """The fixtures' information loss: standardized by the original's mean and sd (n - 1)."""
    mean, sd = x.mean(axis=0), x.std(axis=0, ddof=1)
    z, zm = (x - mean) / sd, (m - mean) / sd
    return float(((z - zm) ** 2).sum() / (z**2).sum())


def _release(frame: pd.DataFrame, case: dict[str, Any], seed: int = 1) -> np.ndarray:
    columns = _names(case["columns"])
    result = anonlab.microaggregate(
        frame[columns + _names(case.get("strata"))],
        columns,
        case["k"],
        method=case["method"],
        aggr=case["measure"],
        trim=case["trim"],
        strata=_names(case.get("strata")),
        seed=seed if case["method"] == "rmd" else None,
    )
    released: np.ndarray = result.masked[columns].to_numpy(dtype=float)
    return released


DETERMINISTIC = FIXTURES["cases"]


def _case_id(case: dict[str, Any]) -> str:
    strata = "+".join(_names(case.get("strata")))
    return (
        f"{case['data']}-{case['method']}-k{case['k']}-{case['measure']}"
        + (f"-by-{strata}" if strata else "")
        + ("-one-column" if isinstance(case["columns"], str) else "")
    )


@pytest.mark.parametrize("case", DETERMINISTIC, ids=_case_id)
def test_release_equals_sdcmicros_bit_for_bit(case: dict[str, Any], data_dir: Path) -> None:
    frame = _frames(data_dir)[case["data"]]
    released = _release(frame, case)
    text = _text(released)
    if "released" in case:  # the small cases hold sdcMicro's release itself
        assert text == case["released"]
    assert hashlib.md5(text.encode()).hexdigest() == case["md5"]
    assert np.allclose(released.sum(axis=0), case["column_sums"], rtol=1e-13)
    if "groups" in case:
        assert pd.factorize(pd.Series(text.split("\n")))[0].tolist() == case["groups"]


@pytest.mark.slow
def test_rmd_matches_sdcmicro_over_seeds(data_dir: Path) -> None:
    """rmd's loss over seeds 1..20: the mean within 3 standard errors of sdcMicro's and
    within 0.2 % of it (sdcMicro's draws are R's covMcd; anonlab's its own FastMCD's).
    Slow: 20 rmd releases of Tarragona."""
    theirs = np.asarray(FIXTURES["rmd"]["Tarragona"]["sse_sst"])
    frame = _frames(data_dir)["Tarragona"]
    x = frame.to_numpy(dtype=float)
    ours = np.asarray(
        [
            _sse_sst(
                x,
                anonlab.microaggregate(frame, k=3, method="rmd", seed=seed).masked.to_numpy(
                    dtype=float
                ),
            )
            for seed in range(1, 21)
        ]
    )
    se = math.sqrt(ours.var(ddof=1) / ours.size + theirs.var(ddof=1) / theirs.size)
    assert abs(ours.mean() - theirs.mean()) <= 3 * se
    assert abs(ours.mean() - theirs.mean()) <= 0.002 * theirs.mean()


def test_rmd_repeats_with_its_seed(data_dir: Path) -> None:
    frame = _frames(data_dir)["Tarragona"]
    first = anonlab.microaggregate(frame, k=3, method="rmd", seed=7).masked
    again = anonlab.microaggregate(frame, k=3, method="rmd", seed=7).masked
    pd.testing.assert_frame_equal(first, again)
    other = anonlab.microaggregate(frame, k=3, method="rmd", seed=1).masked
    assert not first.equals(other)
    with pytest.raises(AnonlabError, match="give a seed"):
        anonlab.microaggregate(frame, k=3, method="rmd")


@pytest.mark.parametrize("method", ["onedims", "pca", "rmd", "clustpca", "influence", "mdav"])
@pytest.mark.parametrize("aggr", ["mean", "median", "trim", "onestep"])
def test_every_release_passes_the_independent_checker(
    method: str, aggr: str, data_dir: Path
) -> None:
    if method == "mdav" and aggr != "mean":
        pytest.skip("MDAV releases group means")
    frame = pd.read_csv(HERE / "testdata2.csv")
    columns = ["expend", "income", "savings"]
    for strata in ([], ["urbrur"]):
        result = anonlab.microaggregate(
            frame,
            columns,
            3,
            method=method,
            aggr=aggr,
            trim=0.2,
            strata=strata,
            seed=2 if method == "rmd" else None,
        )
        problems = check_microaggregation(
            frame,
            result.masked,
            3,
            numeric=columns,
            aggr=aggr,
            trim=0.2,
            per_column=method == "onedims",
            strata=strata,
        )
        assert problems == []
        tampered = result.masked.copy()
        tampered.loc[5, "income"] += 1.0
        assert check_microaggregation(
            frame,
            tampered,
            3,
            numeric=columns,
            aggr=aggr,
            trim=0.2,
            per_column=method == "onedims",
            strata=strata,
        )


def test_groups_and_strata(data_dir: Path) -> None:
    """Fixed groups of k, the last k..2k-1; strata are released as they are, groups never
    cross them; a single column is individual ranking whatever the method (sdcMicro)."""
    assert fixed_labels(11, 3).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2]
    assert fixed_labels(4, 3).tolist() == [0, 0, 0, 0]
    with pytest.raises(AnonlabError):
        fixed_labels(2, 3)
    frame = pd.read_csv(HERE / "testdata2.csv")
    result = anonlab.microaggregate(frame, ["expend", "income"], 3, method="pca", strata="urbrur")
    assert result.masked["urbrur"].equals(frame["urbrur"])
    for group in np.unique(result.labels):
        assert frame["urbrur"][result.labels == group].nunique() == 1
    assert result.summary()["strata"] == ["urbrur"]
    one = anonlab.microaggregate(frame, ["income"], 3, method="rmd", seed=1).masked["income"]
    ranked = anonlab.microaggregate(frame, ["income"], 3, method="onedims").masked["income"]
    assert one.equals(ranked)
    with pytest.raises(AnonlabError, match=r"the stratum relat = \d+ holds 1 record\(s\)"):
        anonlab.microaggregate(frame, ["income"], 3, method="pca", strata="relat")
    rows = stratum_rows(frame, ["urbrur", "sex"])
    assert sorted(np.concatenate(rows).tolist()) == list(range(len(frame)))


def test_mdav_within_strata_releases_group_means(data_dir: Path) -> None:
    frame = pd.read_csv(HERE / "testdata2.csv")
    columns = ["expend", "income", "savings"]
    result = anonlab.microaggregate(frame, columns, 3, strata=["urbrur"])
    assert result.summary()["method"] == "MDAV"
    assert check_microaggregation(frame, result.masked, 3, numeric=columns, strata=["urbrur"]) == []


def test_aggregates_on_a_hand_computed_group() -> None:
    """R: mean(c(1, 2, 3, 10)) = 4; median 2.5; mean(x, trim = 0.25) = 2.5; onestep: median
    2.5, MAD 1.4826 * 1 = 1.4826, clip at 2.5 + 2.0188 * 1.4826 = 5.4931, mean 2.873."""
    block = np.asarray([[1.0], [2.0], [3.0], [10.0]])
    assert ordered_aggregates(block, 4, "mean")[0, 0] == 4.0
    assert ordered_aggregates(block, 4, "median")[0, 0] == 2.5
    assert ordered_aggregates(block, 4, "trim", 0.25)[0, 0] == 2.5
    clip = 2.5 + 3 / 1.486 * 1.4826
    assert ordered_aggregates(block, 4, "onestep")[0, 0] == pytest.approx((6 + clip) / 4)


def test_pca_order_fixes_the_components_sign() -> None:
    """R's princomp makes the first loading non-negative: the order runs up the first column
    when it is positively correlated with the component."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal(50)
    x = np.column_stack([base, -base + 0.1 * rng.standard_normal(50)])
    order = pca_order(x)
    assert np.all(np.diff(x[order, 0]) > -0.5)
    assert x[order[0], 0] == x[:, 0].min() or x[order[-1], 0] == x[:, 0].max()


def test_radix_order_is_rs_order() -> None:
    """The radix sort's order is a stable sort's (R's ``order``: ties by row) on ties,
    doubles equal but in their last bits, signed zeros (which tie), infinities,
    subnormals and huge numbers; a column holding a NaN is ranked with its NaNs last, in
    row order; each sorted value is its row's (a -0.0 stays -0.0)."""
    rng = np.random.default_rng(11)
    for n in (1, 2, 5, 300, 5000):
        whole = rng.integers(-3, 4, n).astype(float)
        zeros = np.where(whole == 0, np.where(rng.random(n) < 0.5, -0.0, 0.0), whole)
        infinite = np.where(rng.random(n) < 0.2, np.inf, rng.standard_normal(n))
        infinite[rng.random(n) < 0.2] = -np.inf
        # doubles a few units in the last place apart (equal in their upper 48 bits), and
        # apart in bit 16 (a carry into the upper bits), of both signs
        base = rng.choice(rng.standard_normal(7), n).view(np.uint64)
        steps = rng.integers(0, 4, n).astype(np.uint64)
        near = (base + steps).view(np.float64)
        carry = (base | np.uint64(0xFFFF)) + steps
        rows = [
            near,
            carry.view(np.float64),
            rng.standard_normal(n),
            zeros,
            infinite,
            rng.standard_normal(n) * 1e-310,
            np.round(rng.standard_normal(n), 1) * 1e300,
            -np.abs(whole),
        ]
        for values in rows:
            stable = np.argsort(values, kind="stable")
            assert np.array_equal(radix_order(values), stable)
            assert np.array_equal(column_order(values), stable)
    # 20,000 normals, and 20,000 values of 7 digits in [1000, 1001) (many close values)
    for values in (rng.standard_normal(20_000), 1000 + rng.integers(0, 10**6, 20_000) / 1e6):
        assert np.array_equal(radix_order(values), np.argsort(values, kind="stable"))
    nan = np.asarray([np.nan, 1.0, np.nan, 0.0, -0.0, 1.0])
    assert column_order(nan).tolist() == [3, 4, 1, 5, 0, 2]
    # each sorted value is its row's: the middle of 0.0, -0.0, 0.0 (rows 0, 1, 2) is -0.0
    released, labels = onedims_release(
        np.asarray([[0.0], [-0.0], [0.0], [5.0], [6.0], [7.0]]), 3, "median", 0.0
    )
    assert np.signbit(released[:3, 0]).all() and labels[:, 0].tolist() == [0, 0, 0, 1, 1, 1]


def test_onedims_checker_takes_a_union_of_groups() -> None:
    """Two groups of one column that release the same one-step value are one group to the
    checker ({-4, 0, 0} and {0, 0, 9} both release 0): the union's value is 0 too."""
    frame = pd.DataFrame({"a": [0.0, -4.0, 0.0, 9.0, 0.0, 0.0, 7.0, 8.0, 10.0]})
    for aggr in ("onestep", "trim", "median"):
        result = anonlab.microaggregate(frame, ["a"], 3, method="onedims", aggr=aggr, trim=0.34)
        released = result.masked["a"].to_numpy()
        assert np.count_nonzero(released == 0.0) == 6
        assert (
            check_microaggregation(
                frame, result.masked, 3, numeric=["a"], aggr=aggr, trim=0.34, per_column=True
            )
            == []
        )
        wrong = result.masked.copy()
        wrong.loc[1, "a"] = 0.5
        assert check_microaggregation(
            frame, wrong, 3, numeric=["a"], aggr=aggr, trim=0.34, per_column=True
        )


def _cli(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def test_command_releases_sdcmicros_values_and_verifies(tmp_path: Path) -> None:
    case = next(
        c for c in FIXTURES["cases"] if c["method"] == "pca" and c.get("strata") == "urbrur"
    )
    out, report = tmp_path / "pca.csv", tmp_path / "pca.json"
    code, text = _cli(
        [
            "microaggregate",
            str(HERE / "testdata2.csv"),
            "--columns",
            "expend,income,savings",
            "--other",
            "insensitive",
            "--method",
            "pca",
            "--aggr",
            "median",
            "--strata",
            "urbrur",
            "--k",
            "3",
            "--output",
            str(out),
            "--report",
            str(report),
            "--html",
            str(tmp_path / "pca.html"),
        ]
    )
    assert code == 0, text
    assert "pca, median, strata urbrur k=3: 93 records" in text and "release verified" in text
    released = pd.read_csv(out)[["expend", "income", "savings"]].to_numpy(dtype=float)
    assert _text(released) == case["released"]
    content = json.loads(report.read_text())
    assert content["method"] == "pca" and content["aggr"] == "median"
    assert content["strata"] == ["urbrur"] and content["per_column"] is False
    code, text = _cli(["verify", str(report)])
    assert code == 0 and "holds" in text and "within strata urbrur" in text
    tampered = pd.read_csv(out)
    tampered["income"] = tampered["income"] + np.where(tampered.index == 0, 10.0, 0.0)
    tampered.to_csv(out, index=False)
    code, text = _cli(["verify", str(report)])
    assert code != 0 and "does not hold" in text


def test_command_from_toml_with_onedims(tmp_path: Path, data_dir: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        f'input = "{data_dir / "sdc" / "Tarragona.csv"}"\nk = 4\nmethod = "onedims"\n'
        'aggr = "trim"\ntrim = 0.25\noutput = "od.csv"\nreport = "od.json"\n'
    )
    code, text = _cli(["microaggregate", "--config", str(config)])
    assert code == 0, text
    report = json.loads((tmp_path / "od.json").read_text())
    assert report["per_column"] is True and report["trim"] == 0.25
    case = next(c for c in FIXTURES["cases"] if c["method"] == "onedims" and c["k"] == 4)
    released = pd.read_csv(tmp_path / "od.csv").to_numpy(dtype=float)
    assert hashlib.md5(_text(released).encode()).hexdigest() == case["md5"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--method", "rmd", "--engine", "dask"], "Error: method 'rmd' runs in memory only"),
        (["--method", "pca", "--variant", "scalable"], "is MDAV's"),
        (["--method", "pcaa"], "Input should be 'mdav', 'onedims'"),
        (["--aggr", "median"], "method 'mdav' releases group means"),
        (["--method", "pca", "--trim", "0.6"], "--trim"),
        (["--method", "pca", "--strata", "nope"], "strata"),
        (["--method", "pca", "--strata", "SALES", "--identifying", "SALES"], "identifying"),
        (["--method", "influence", "--seed", "3"], "seed applies to method 'rmd' only"),
    ],
)
def test_command_refuses_in_one_line(
    extra: list[str], message: str, tmp_path: Path, data_dir: Path
) -> None:
    out = tmp_path / "x.csv"
    code, text = _cli(
        ["microaggregate", str(data_dir / "sdc" / "Tarragona.csv"), "--output", str(out), *extra]
    )
    assert code != 0 and message in text, text
    assert text.strip().startswith("Error:") and len(text.strip().splitlines()) == 1
    assert not out.exists()


def _documented(marker: str, fence: str) -> list[str]:
    """The lines of the first ``fence`` block after ``marker`` (or after the section title)
    in docs/em4adom.md."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "em4adom.md").read_text()
    start = text.index(marker)
    block = text[text.index(f"```{fence}\n", start) + len(fence) + 4 :]
    return block[: block.index("```")].splitlines()


def test_documented_output(tmp_path: Path, data_dir: Path, monkeypatch: Any) -> None:
    """docs/em4adom.md, "Other methods": its commands print its lines (the seconds apart)."""
    import re
    import shlex

    repo = data_dir.parent
    commands = " ".join(
        line.rstrip("\\").strip()
        for line in _documented("## Other methods: onedims, pca, rmd", "bash")
        if not line.startswith("t=")
    ).split("anonlab ")[1:]
    monkeypatch.chdir(tmp_path)
    printed: list[str] = []
    for command in commands:
        args = [
            str(repo / a) if a.startswith(("data/", "tests/")) else a
            for a in shlex.split(command.replace("$t", "data/sdc/Tarragona.csv"))
        ]
        code, text = _cli(args)
        assert code == 0, text
        printed += [
            re.sub(r"; [0-9.]+ s$", "", line)
            for line in text.splitlines()
            if line and not line.startswith(("Warning", "released unchanged"))
        ]
    assert printed == _documented("<!-- microaggregation-methods-output -->", "text")
