"""metrics/compare: the utility loss and the linkage risk against plain-Python references."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy
from anonlab.metrics.compare import (
    linkage_probabilities,
    measure_release,
    numeric_figures,
    read_columns,
)

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult"
QI = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
]

#: a small hierarchy over the colours: level 1 warm/cold, level 2 '*'
COLOURS = Hierarchy.from_rows(
    [
        ["red", "warm", "*"],
        ["orange", "warm", "*"],
        ["blue", "cold", "*"],
        ["green", "cold", "*"],
    ]
)


def _reference(
    original: pd.DataFrame, release: pd.DataFrame, hierarchy: Hierarchy
) -> tuple[list[float], list[float]]:
    """Each record's linkage probability and each cell's loss, one pair at a time (module
    text of anonlab.metrics.compare), for a table of 'colour' (categorical with
    ``hierarchy``), 'x' (numeric) and 'grade' (ordinal texts)."""
    x = original["x"].astype(float)
    span, sd = x.max() - x.min(), x.std(ddof=1)
    grades = sorted(original["grade"].unique())
    rank = {g: i for i, g in enumerate(grades)}
    leaves = {
        label: {v for v in hierarchy.values for lv in (1, 2) if hierarchy.label(v, lv) == label}
        for label in ("warm", "cold", "*")
    }
    colours = sorted(original["colour"].unique())

    def cell(column: str, value: object, label: str) -> tuple[float, float]:
        """(distance, loss) of one released cell against one original value."""
        if label in ("*", ""):
            return 0.0, 1.0
        if column == "x":
            gap = abs(float(label) - float(value))  # type: ignore[arg-type]
            return gap / sd, min(1.0, gap / span)
        if column == "colour":
            if label in colours:
                return float(label != value), float(label != value)
            covered = value in leaves[label]
            return float(not covered), (len(leaves[label] & set(colours)) - 1) / (len(colours) - 1)
        if label in grades:
            return float(label != value), float(label != value)
        lo, hi = label[1:-1].split(", ")
        inside = rank[lo] <= rank[str(value)] <= rank[hi]
        return float(not inside), (rank[hi] - rank[lo]) / (len(grades) - 1)

    n = len(original)
    columns = ["colour", "x", "grade"]
    texts = release.astype(str)
    probabilities: list[float] = []
    losses: list[float] = []
    for i in range(n):
        distances = [
            sum(cell(c, original[c].iloc[i], texts[c].iloc[r])[0] for c in columns)
            for r in range(n)
        ]
        least = min(distances)
        at = [r for r in range(n) if distances[r] == least]
        probabilities.append((i in at) / len(at))
        losses.extend(cell(c, original[c].iloc[i], texts[c].iloc[i])[1] for c in columns)
    return probabilities, losses


def _random_pair(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An original table and a release mixing every kind of cell (module text)."""
    rng = np.random.default_rng(seed)
    n = 40
    original = pd.DataFrame(
        {
            "colour": rng.choice(["red", "orange", "blue", "green"], n),
            "x": rng.integers(0, 20, n),
            "grade": rng.choice(["a", "b", "c", "d", "e"], n),
        }
    )
    colour: list[str] = []
    x: list[str] = []
    grade: list[str] = []
    for i in range(n):
        c, g = str(original["colour"].iloc[i]), str(original["grade"].iloc[i])
        v = int(original["x"].iloc[i])
        pick = rng.integers(0, 4)
        colour.append(
            [c, COLOURS.label(c, 1), "*", str(rng.choice(["red", "orange", "blue", "green"]))][pick]
        )
        x.append(str([v, v + int(rng.integers(-3, 4)), v, v][pick]) if pick != 2 else "*")
        lo, hi = sorted([g, str(rng.choice(["a", "b", "c", "d", "e"]))])
        grade.append([g, f"[{lo}, {hi}]", "", g][pick])
    return original, pd.DataFrame({"colour": colour, "x": x, "grade": grade})


@pytest.mark.parametrize("seed", range(6))
def test_loss_and_linkage_equal_a_pair_by_pair_reference(seed: int) -> None:
    original, release = _random_pair(seed)
    columns = read_columns(original, release, ["colour", "x", "grade"], {"colour": COLOURS})
    probabilities, measured = linkage_probabilities(columns, sample=len(original))
    want_p, want_loss = _reference(original, release, COLOURS)
    assert list(measured) == list(range(len(original)))
    np.testing.assert_allclose(probabilities, want_p, rtol=0, atol=1e-12)
    loss = np.stack([c.cell_loss() for c in columns], axis=1).reshape(-1)
    np.testing.assert_allclose(loss, want_loss, rtol=0, atol=1e-12)
    figures = measure_release(original, release, ["colour", "x", "grade"], {"colour": COLOURS})
    assert figures["utility_loss"]["overall"] == pytest.approx(float(np.mean(want_loss)))
    assert figures["linkage"]["mean"] == pytest.approx(float(np.mean(want_p)))
    share = float(np.mean(np.asarray(want_p) >= 0.2))
    assert figures["linkage"]["at_risk"] == pytest.approx(share)


def test_a_seeded_sample_links_the_sampled_records_as_the_whole_table_does() -> None:
    original, release = _random_pair(11)
    columns = read_columns(original, release, ["colour", "x", "grade"], {"colour": COLOURS})
    everyone, _ = linkage_probabilities(columns, sample=len(original))
    some, measured = linkage_probabilities(columns, sample=15, seed=3)
    again, measured_again = linkage_probabilities(columns, sample=15, seed=3)
    assert len(measured) == 15 and list(measured) == list(measured_again)
    np.testing.assert_array_equal(some, everyone[measured])
    np.testing.assert_array_equal(some, again)
    figures = measure_release(
        original, release, ["colour", "x", "grade"], {"colour": COLOURS}, sample=15, seed=3
    )
    assert figures["linkage"]["sampled"] and figures["linkage"]["records_measured"] == 15


@pytest.fixture(scope="module")
def adult_k5() -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Hierarchy], dict[str, object]]:
    """Adult's full-domain 5-anonymous release with nothing suppressed, and its report."""
    from anonlab.io import read_table
    from anonlab.runs import run
    from anonlab.runs.generalize_settings import GeneralizeSettings

    qi = {c: str(ADULT / f"hierarchy_{c}.csv") for c in QI}
    settings = GeneralizeSettings(
        input=str(ADULT / "adult.csv"), delimiter=";", qi=qi, sensitive=["salary-class"], k=5
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run(settings)
    assert result.release is not None and result.report["suppressed_records"] == 0
    original = read_table(ADULT / "adult.csv", delimiter=";")
    hierarchies = {c: Hierarchy.from_csv(p) for c, p in qi.items()}
    return original, result.release, hierarchies, result.report


def test_a_generalization_is_linked_as_its_prosecutor_risk_and_loses_its_gcp(
    adult_k5: tuple[pd.DataFrame, pd.DataFrame, dict[str, Hierarchy], dict[str, object]],
) -> None:
    original, release, hierarchies, report = adult_k5
    columns = read_columns(original, release, QI, hierarchies)
    probabilities, _ = linkage_probabilities(columns, sample=len(original))
    sizes = release[QI].astype(str).groupby(QI, observed=True)[QI[0]].transform("size")
    np.testing.assert_allclose(probabilities, 1.0 / sizes.to_numpy(), rtol=0, atol=1e-15)
    figures = measure_release(original, release, QI, hierarchies, sample=len(original))
    risk = report["risk"]
    assert isinstance(risk, dict)
    assert figures["linkage"]["mean"] == pytest.approx(risk["prosecutor"]["average"], abs=1e-12)
    assert figures["linkage"]["highest"] == pytest.approx(risk["prosecutor"]["highest"])
    loss = report["loss"]
    assert isinstance(loss, dict)
    assert figures["utility_loss"]["overall"] == pytest.approx(loss["gcp"], abs=1e-12)
    for name in QI:
        assert figures["utility_loss"]["per_column"][name] == pytest.approx(
            loss["ncp"][name], abs=1e-12
        )
    assert figures["numeric"]["applicable"] is False
    assert figures["suppressed_records"] == 0


def test_numeric_figures_are_sdcmicros_il1_il1s_and_eigen() -> None:
    from anonlab.metrics import evaluate

    rng = np.random.default_rng(5)
    original = pd.DataFrame(rng.normal(size=(60, 3)) * [1, 5, 20], columns=["a", "b", "c"])
    masked = original + rng.normal(size=(60, 3))
    columns = read_columns(original, masked, ["a", "b", "c"])
    figures = numeric_figures(columns)
    il1 = evaluate(original, masked, columns=["a", "b", "c"]).summary()["measures"]["IL1"]
    assert figures["applicable"] and figures["IL1"] == pytest.approx(il1)
    sd = original.std(ddof=1).to_numpy()
    il1s = float((np.abs(original - masked) / (np.sqrt(2) * sd)).to_numpy().sum())
    assert figures["IL1s"] == pytest.approx(il1s)
    e = np.sort(np.linalg.eigvalsh(np.corrcoef(original.to_numpy(), rowvar=False)))[::-1]
    em = np.sort(np.linalg.eigvalsh(np.corrcoef(masked.to_numpy(), rowvar=False)))[::-1]
    assert figures["eigen"] == pytest.approx(float(np.sum(np.abs(e - em) / e)))
    same = numeric_figures(read_columns(original, original, ["a", "b", "c"]))
    assert same["IL1"] == 0 and same["eigen"] == pytest.approx(0, abs=1e-12)


def test_an_unreadable_label_and_a_shorter_release_are_one_line_errors() -> None:
    original = pd.DataFrame({"c": ["x", "y", "z"]})
    with pytest.raises(AnonlabError, match="'what' is no original value"):
        measure_release(original, pd.DataFrame({"c": ["x", "y", "what"]}), ["c"])
    with pytest.raises(AnonlabError, match="holds 2 records, the table 3"):
        measure_release(original, pd.DataFrame({"c": ["x", "y"]}), ["c"])
    with pytest.raises(AnonlabError, match="threshold must lie in"):
        measure_release(original, original, ["c"], threshold=0.0)
