"""The certainty penalties of a release (anonlab.metrics.certainty) against cell-by-cell sums,
and the same figures whichever method made the release."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy
from anonlab.io import read_table
from anonlab.metrics.certainty import classes_loss, frame_classes
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import GeneralizeSettings

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
Recoding = Literal["full-domain", "mondrian"]
QIS = ("sex", "age", "race", "marital-status", "education", "workclass")

#: a two-level hierarchy over six values: pairs, then everything
PAIRS = Hierarchy.from_rows([(v, p, "*") for v, p in zip("abcdef", "AABBCC", strict=True)])


def _cell(value: str, label: str, numbers: list[float]) -> float:
    """One cell's NCP written out for the test's two columns (module text of certainty)."""
    if label in ("", "*"):
        return 1.0
    if label == value:
        return 0.0
    if label.startswith("["):
        lo, hi = (float(x) for x in label[1:-1].split(", "))
        return (hi - lo) / (max(numbers) - min(numbers))
    covered = [row[0] for row in PAIRS.rows if label in row]
    return (len(covered) - 1) / 5


@pytest.mark.parametrize("seed", range(8))
def test_gcp_is_the_mean_of_cell_penalties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 200
    letters = rng.choice(list("abcdef"), n)
    numbers = rng.integers(0, 50, n).astype(float)
    numbers[:2] = (0.0, 49.0)  # the column's range is [0, 49]
    letters[:6] = list("abcdef")  # every value in the domain
    pair = dict(zip("abcdef", "AABBCC", strict=True))
    released_letter = [
        rng.choice([v, pair[v], "*", ""]) if i >= 6 else v for i, v in enumerate(letters)
    ]
    released_number = []
    for x in numbers:
        lo = float(rng.integers(0, int(x) + 1))
        hi = float(rng.integers(int(x), 50))
        released_number.append(rng.choice([f"{x:g}", f"[{lo:g}, {hi:g}]"]))
    release = pd.DataFrame({"letter": released_letter, "number": released_number})
    spread = list(numbers)
    expected = {
        "letter": np.mean([_cell(v, r, []) for v, r in zip(letters, released_letter, strict=True)]),
        "number": np.mean(
            [_cell(f"{v:g}", r, spread) for v, r in zip(numbers, released_number, strict=True)]
        ),
    }
    domains = {"letter": list("abcdef"), "number": [f"{x:g}" for x in numbers]}
    loss = classes_loss(
        frame_classes(release, ["letter", "number"]),
        ["letter", "number"],
        domains,
        {"letter": PAIRS},
    )
    assert loss["ncp"] == pytest.approx(expected, abs=1e-12)
    assert loss["gcp"] == pytest.approx(np.mean(list(expected.values())), abs=1e-12)


def test_discernibility_and_class_size() -> None:
    classes: dict[tuple[str, ...], int] = {("a", "1"): 3, ("b", "1"): 2, ("*", "*"): 4}
    loss = classes_loss(classes, ["x", "y"], {"x": ["a", "b"], "y": ["1"]}, {})
    assert loss["discernibility"] == 3 * 3 + 2 * 2 + 4 * 9
    assert loss["average_class_size"] == 2.5


def test_a_value_no_cell_can_hold_is_refused() -> None:
    with pytest.raises(AnonlabError, match="'zz' is no original value"):
        classes_loss({("zz",): 1}, ["x"], {"x": ["a", "b"]}, {"x": PAIRS})


def _adult(tmp_path: Path, recoding: Recoding, output: str) -> dict[str, object]:
    qi = {q: str(ADULT / f"hierarchy_{q}.csv") for q in QIS}
    if recoding == "mondrian":
        qi["age"] = ""
    settings = GeneralizeSettings(
        input=str(ADULT / "adult.csv"),
        delimiter=";",
        qi=qi,
        insensitive=["salary-class"],
        other="insensitive",
        k=10,
        suppression=0.0 if recoding == "mondrian" else 0.01,
        recoding=recoding,
        output=str(tmp_path / output),
        report=str(tmp_path / f"{output}.json"),
    )
    run_generalize(settings)
    report: dict[str, object] = json.loads((tmp_path / f"{output}.json").read_text())
    return report


@pytest.mark.parametrize("recoding", ["full-domain", "mondrian"])
def test_each_method_reports_what_the_release_loses(tmp_path: Path, recoding: Recoding) -> None:
    """The report's GCP is the release's, however the method computed it."""
    report = _adult(tmp_path, recoding, "release.csv")
    release = read_table(tmp_path / "release.csv")
    original = read_table(ADULT / "adult.csv", delimiter=";")
    domains = {q: [str(v) for v in original[q].unique()] for q in QIS}
    hierarchies = {
        q: Hierarchy.from_csv(ADULT / f"hierarchy_{q}.csv")
        for q in QIS
        if not (recoding == "mondrian" and q == "age")
    }
    measured = classes_loss(frame_classes(release, list(QIS)), list(QIS), domains, hierarchies)
    loss = report["loss"]
    assert isinstance(loss, dict)
    assert loss["gcp"] == pytest.approx(measured["gcp"], abs=1e-12)
    assert loss["discernibility"] == measured["discernibility"]
    assert loss["average_class_size"] == pytest.approx(measured["average_class_size"])


def test_cell_suppression_loses_its_blank_cells(tmp_path: Path) -> None:
    """A suppress release's GCP is its blanked cells over its key cells (each blank 1)."""
    from anonlab.runs.suppress import SuppressSettings, run_suppress

    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    testdata = ADULT.parents[0] / "sdc" / "testdata.csv"
    with pytest.warns(Warning):  # blanks count as values in the risk section
        result = run_suppress(
            SuppressSettings(input=str(testdata), qi=keys, k=3, other="insensitive")
        )
    report = result.report
    blanks = report["cells_suppressed"]
    assert report["loss"]["gcp"] == pytest.approx(blanks / (report["records"] * len(keys)))
