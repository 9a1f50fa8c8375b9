"""The perturbation checker passes every method's release and catches every tampering."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.perturbation import perturb
from anonlab.perturbation.key import content_digest
from anonlab.verify import check_perturbation, verify_report
from anonlab.verify.perturbation import key_digest

pytestmark = pytest.mark.filterwarnings("ignore::anonlab.perturbation.RecoverableReleaseWarning")
runner = CliRunner()
TARRAGONA = Path(__file__).resolve().parents[1] / "data" / "sdc" / "Tarragona.csv"
METHODS = ("obt", "rbt", "rotation", "gdp")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path, Path]]:
    """``anonlab perturb`` of Tarragona with each method: (report, release, key)."""
    folder = tmp_path_factory.mktemp("perturb")
    out = {}
    for method in METHODS:
        report, release, key = (
            folder / f"{method}.json",
            folder / f"{method}.csv",
            folder / f"{method}_key.json",
        )
        result = runner.invoke(
            app,
            [
                "perturb",
                str(TARRAGONA),
                "--method",
                method,
                "--seed",
                "3",
                "--output",
                str(release),
                "--key",
                str(key),
                "--report",
                str(report),
                "--attack-records",
                "100",
                "--quiet",
            ],
        )
        assert result.exit_code == 0, result.output
        out[method] = (report, release, key)
    return out


def _cli(report: Path, release: Path | None = None, key: Path | None = None) -> tuple[int, str]:
    args = ["verify", str(report)]
    args += ["--release", str(release)] if release else []
    args += ["--key", str(key)] if key else []
    result = runner.invoke(app, args)
    return result.exit_code, result.output


@pytest.mark.parametrize("method", METHODS)
def test_every_method_holds_with_its_key(
    runs: dict[str, tuple[Path, Path, Path]], method: str
) -> None:
    report, _, key = runs[method]
    result = verify_report(report, key=key)
    assert result.ok, result.findings
    assert "the key undoes it to the input" in result.summary
    code, text = _cli(report, key=key)
    assert code == 0 and "holds" in text and len(text.strip().splitlines()) == 1


@pytest.mark.parametrize("method", ["obt", "rbt", "rotation"])
def test_orthogonal_methods_hold_by_distances_alone(
    runs: dict[str, tuple[Path, Path, Path]], method: str
) -> None:
    result = verify_report(runs[method][0])
    assert result.ok and "all 347,361 pairs" in result.summary and "no key" in result.summary


def test_gdp_without_its_key_cannot_be_checked(runs: dict[str, tuple[Path, Path, Path]]) -> None:
    with pytest.raises(AnonlabError, match="key is needed: a gdp release adds noise"):
        verify_report(runs["gdp"][0])
    code, text = _cli(runs["gdp"][0])
    assert code == 2 and text.startswith("Error: --key is needed")


def _tamper_release(release: Path, folder: Path, edit: Any) -> Path:
    frame = pd.read_csv(release, dtype=str, keep_default_na=False)
    # an edit changes the frame in place (returns None) or returns the edited frame
    edited = edit(frame)
    frame = frame if edited is None else edited
    out = folder / "tampered.csv"
    frame.to_csv(out, index=False)
    return out


def _swap(frame: pd.DataFrame) -> None:
    """Two released values of one numeric column trade places."""
    frame.loc[[3, 400], "SALES"] = frame.loc[[400, 3], "SALES"].to_numpy()


def _nudge(frame: pd.DataFrame) -> None:
    frame.at[7, "TREASURY"] = repr(float(str(frame.at[7, "TREASURY"])) + 1e-6)


def _rotate_all(frame: pd.DataFrame) -> None:
    """Another rotation of the whole release keeps every distance: only the key can tell."""
    values = frame.to_numpy(dtype=float)
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((values.shape[1],) * 2))
    frame.loc[:, :] = [[repr(float(v)) for v in row] for row in values @ q]


@pytest.mark.parametrize("method", ["obt", "rotation"])
@pytest.mark.parametrize(
    ("edit", "finding"),
    [
        (_swap, "between their z-scores"),
        (_nudge, "between their z-scores"),
        (_rotate_all, "undoing the release with the key gives"),
        (lambda f: f.drop(columns=["SALES"]), "column 'SALES' of the input is missing"),
    ],
)
def test_tampered_release_is_caught(
    runs: dict[str, tuple[Path, Path, Path]], tmp_path: Path, method: str, edit: Any, finding: str
) -> None:
    report, release, key = runs[method]
    bad = _tamper_release(release, tmp_path, edit)
    result = verify_report(report, release=bad, key=key)
    assert not result.ok and any(finding in f for f in result.findings), result.findings
    code, text = _cli(report, bad, key)
    assert code == 1 and "does not hold" in text and len(text.strip().splitlines()) == 1


def test_tampered_gdp_release_is_caught_by_its_key(
    runs: dict[str, tuple[Path, Path, Path]], tmp_path: Path
) -> None:
    report, release, key = runs["gdp"]
    bad = _tamper_release(release, tmp_path, _swap)
    result = verify_report(report, release=bad, key=key)
    # the rotation mixes SALES into every column: records 4 and 401 come back wrong throughout
    assert result.findings == tuple(
        f for f in result.findings if "undoing the release with the key gives" in f
    )
    assert "of record 4, but the input holds" in result.findings[0]
    assert "(26 values differ)" in result.findings[0]


def _edited_key(key: Path, folder: Path, edit: Any, reseal: bool = False) -> Path:
    data = json.loads(key.read_text())
    edit(data)
    if reseal:  # as someone who edits on purpose and recomputes the digest would
        data.pop("sha256")
        data["sha256"] = content_digest(data)
    out = folder / "edited_key.json"
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize(
    ("edit", "reseal", "finding"),
    [
        (
            lambda d: d["stds"].__setitem__(0, d["stds"][0] * 1.01),
            False,
            "the key file was changed after it was written",
        ),
        (
            lambda d: d["stds"].__setitem__(0, d["stds"][0] * 1.01),
            True,
            "the key's deviation of column",
        ),
        (lambda d: d["means"].__setitem__(1, d["means"][1] + 3), True, "the key's mean of column"),
        (lambda d: d["blocks"][0]["matrix"][0].__setitem__(0, 0.5), True, "is not orthogonal"),
        (lambda d: d.__setitem__("records", 10), True, "the key is for 10 records"),
        (lambda d: d.__setitem__("method", "rbt"), True, "the key is for method 'rbt'"),
        (lambda d: d["blocks"].reverse(), False, "changed after it was written"),
    ],
)
def test_edited_key_is_caught(
    runs: dict[str, tuple[Path, Path, Path]], tmp_path: Path, edit: Any, reseal: bool, finding: str
) -> None:
    report, _, key = runs["obt"]
    bad = _edited_key(key, tmp_path, edit, reseal)
    result = verify_report(report, key=bad)
    assert not result.ok and any(finding in f for f in result.findings), result.findings
    code, text = _cli(report, key=bad)
    assert code == 1 and "does not hold" in text


def test_both_sides_compute_the_same_digest(runs: dict[str, tuple[Path, Path, Path]]) -> None:
    data = json.loads(runs["rbt"][2].read_text())
    assert key_digest(data) == data["sha256"]


def test_the_key_of_another_release_is_caught(runs: dict[str, tuple[Path, Path, Path]]) -> None:
    report = runs["obt"][0]
    result = verify_report(report, key=runs["rotation"][2])
    assert any("the key is for method 'rotation'" in f for f in result.findings)


def _large(n: int = 5_000) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        rng.lognormal(size=(n, 4)) * [1, 100, 1e4, 3], columns=["a", "b", "c", "d"]
    )
    frame["zip"] = [f"{i:05d}" for i in range(n)]
    p = perturb(frame, ["a", "b", "c", "d"], "obt", seed=4)
    return frame.astype(str), p.release.astype(str), json.loads(json.dumps(p.key.to_dict()))


def test_large_release_checks_every_record() -> None:
    """Above 2,000 records: random pairs, and every record with a near one along a direction."""
    original, release, key = _large()
    result = check_perturbation(original, release, ["a", "b", "c", "d"], "obt", key=key)
    assert result == []
    for row in (0, 1234, 4999):  # with only 10 random pairs, each record is still checked
        wrong = release.copy()
        wrong.at[row, "a"] = repr(float(str(wrong.at[row, "a"])) * (1 + 1e-6))
        problems = check_perturbation(original, wrong, ["a", "b", "c", "d"], "obt", pairs=10)
        assert problems and "between their z-scores" in problems[0]
        assert f"records {row + 1} and" in problems[0] or f"and {row + 1} is" in problems[0]


def test_pass_through_columns_must_not_change() -> None:
    original, release, key = _large(300)
    release.loc[17, "zip"] = "99999"
    problems = check_perturbation(original, release, ["a", "b", "c", "d"], "obt", key=key)
    assert problems == [
        "column 'zip' is not masked but changed: row 18 holds '99999', the input '00017'"
    ]
