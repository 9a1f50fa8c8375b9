"""ARX's ``inclusion`` model (issue 22): a research subset released without delta bounds.

ARX 3.9's ``Inclusion`` is a ``DPresence`` whose classes always pass: the loaded table is
the population, only the research subset's records are counted (classes, loss, the
suppression limit) and released. Hand-made cases here; ARX's own four cases on Adult are
in ``tests/test_arx_golden.py``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.dataset import Roles
from anonlab.errors import AnonlabError
from anonlab.generalize import anonymize, model_dataset, resolve_criteria
from anonlab.hierarchy import Hierarchy
from anonlab.privacy.base import Criterion, KAnonymity
from anonlab.privacy.presence import DeltaPresence, Inclusion
from anonlab.verify.criteria import check_criteria
from anonlab.verify.generalization import check_generalization, expected_stars

HIER = {
    "zip": Hierarchy.from_rows(
        [["4790", "479*", "*"], ["4791", "479*", "*"], ["4801", "480*", "*"], ["4802", "480*", "*"]]
    ),
    "age": Hierarchy.from_rows([["20", "<40", "*"], ["30", "<40", "*"], ["50", ">=40", "*"]]),
}
#: the population: 8 records; the research subset is rows 0, 1, 3 and 4
POPULATION = pd.DataFrame(
    {
        "zip": ["4790", "4791", "4790", "4801", "4802", "4790", "4801", "4802"],
        "age": ["20", "30", "20", "50", "50", "20", "30", "50"],
        "s": ["a", "b", "a", "c", "a", "a", "b", "c"],
    }
)
SUBSET = POPULATION.iloc[[4, 0, 3, 1]].reset_index(drop=True)  # in any order


def _release(original: pd.DataFrame, levels: dict[str, int]) -> pd.DataFrame:
    """``original`` generalized at ``levels``."""
    out = original.copy()
    for column, level in levels.items():
        out[column] = [HIER[column].label(str(v), level) for v in original[column]]
    return out


def _problems(
    original: pd.DataFrame,
    release: pd.DataFrame,
    levels: dict[str, int],
    specs: list[dict[str, object]],
) -> list[str]:
    """The independent checker's findings: row by row, then the models."""
    return check_generalization(original, release, HIER, levels, max_suppressed=0) + check_criteria(
        original,
        release,
        specs,
        list(levels),
        0,
        expected_star=expected_stars(original, HIER, levels),
        population=POPULATION,
        hierarchies=HIER,
        levels=levels,
    )


def test_inclusion_releases_the_subset_and_judges_nothing() -> None:
    """The subset's 4 records alone, in the table's order; 2-anonymity is judged on them
    (the population's other records are in no class): (479*, <40) and (480*, >=40) hold
    two each, while in the whole population (480*, <40) holds one record. The optimum,
    loss and release equal delta-presence's with the bounds [0, 1]."""
    criteria: list[Criterion] = [Inclusion(SUBSET), KAnonymity(2)]
    dataset = model_dataset(POPULATION, HIER, criteria, roles=Roles.of(sensitive=["s"]))
    result = anonymize(dataset, criteria=criteria, metric="loss")
    assert result.transformation == {"zip": 1, "age": 1}
    assert result.release is not None
    subset_in_order = POPULATION.iloc[[0, 1, 3, 4]].reset_index(drop=True)
    assert result.release.reset_index(drop=True).to_dict("records") == _release(
        subset_in_order, {"zip": 1, "age": 1}
    ).to_dict("records")
    plain = [KAnonymity(2)]
    whole = anonymize(
        model_dataset(POPULATION, HIER, plain, roles=Roles.of(sensitive=["s"])),
        criteria=plain,
        metric="loss",
    )
    assert whole.transformation != result.transformation
    bounds: list[Criterion] = [DeltaPresence(0.0, 1.0, SUBSET), KAnonymity(2)]
    same = anonymize(
        model_dataset(POPULATION, HIER, bounds, roles=Roles.of(sensitive=["s"])),
        criteria=bounds,
        metric="loss",
    )
    assert same.transformation == result.transformation
    assert same.information_loss == result.information_loss
    alone: list[Criterion] = [Inclusion(SUBSET)]
    bottom = anonymize(
        model_dataset(POPULATION, HIER, alone, roles=Roles.of(sensitive=["s"])),
        criteria=alone,
        metric="loss",
    )
    assert bottom.transformation == {"zip": 0, "age": 0}


def test_the_report_entry() -> None:
    """The report names the model and its subset, calls it satisfied, and counts the
    subset's records and those released."""
    criteria: list[Criterion] = [Inclusion(SUBSET), KAnonymity(2)]
    dataset = model_dataset(POPULATION, HIER, criteria, roles=Roles.of(sensitive=["s"]))
    entry = anonymize(dataset, criteria=criteria, metric="loss").criteria[0]
    assert entry["model"] == "inclusion"
    assert entry["satisfied"] is True
    assert entry["achieved"] == {"subset_records": 4, "released_records": 4}
    assert set(entry["parameters"]) == {"subset"}


def test_bad_input_is_one_error() -> None:
    """inclusion without a subset, or next to delta-presence (one research subset), is
    refused before the search."""
    with pytest.raises(AnonlabError, match="model 'inclusion' needs subset"):
        resolve_criteria(["inclusion"])
    with pytest.raises(
        AnonlabError, match="delta-presence and inclusion each name the research subset: give one"
    ):
        resolve_criteria(
            [
                {"model": "inclusion", "subset": "s.csv"},
                {"model": "delta-presence", "dmin": 0, "dmax": 1, "subset": "s.csv"},
            ]
        )
    with pytest.raises(AnonlabError, match="the inclusion subset is not a subset of the table"):
        stranger = pd.DataFrame({"zip": ["4791"], "age": ["50"], "s": ["a"]})
        model_dataset(POPULATION, HIER, [Inclusion(stranger)], roles=Roles.of(sensitive=["s"]))
    with pytest.raises(AnonlabError, match="inclusion needs subset"):
        model_dataset(POPULATION, HIER, [Inclusion()], roles=Roles.of(sensitive=["s"]))


def test_cli_without_a_subset_is_one_error_line(tmp_path: Path) -> None:
    """``--criterion inclusion`` with no subset: one ``Error:`` line naming it."""
    table = tmp_path / "t.csv"
    POPULATION.to_csv(table, index=False)
    paths = []
    for name, hierarchy in HIER.items():
        path = tmp_path / f"h_{name}.csv"
        path.write_text("\n".join(";".join(r) for r in hierarchy.rows) + "\n")
        paths += ["--qi", f"{name}={path}"]
    result = CliRunner().invoke(
        app,
        [
            "generalize",
            str(table),
            *paths,
            "--insensitive",
            "s",
            "--criterion",
            "inclusion",
            "--output",
            str(tmp_path / "out.csv"),
        ],
    )
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "inclusion" in lines[0] and "subset" in lines[0]


def test_checker_accepts_the_release_and_refuses_tampered_ones() -> None:
    """The independent checker: the subset at its levels holds; a record from outside the
    subset released (in place of a subset record, or in addition, making a class larger
    than the population's) and a record in the wrong class are refused."""
    original = POPULATION.iloc[[0, 1, 3, 4]].reset_index(drop=True)
    specs: list[dict[str, object]] = [
        {"model": "inclusion", "subset": "subset.csv"},
        {"model": "k-anonymity", "k": 2},
    ]
    levels = {"zip": 1, "age": 1}
    good = _release(original, levels)
    assert _problems(original, good, levels, specs) == []
    # population row 7 (4802, 50, c) for subset row 4 (4802, 50, a): not the subset's record
    swapped = good.copy()
    swapped.loc[3, "s"] = "c"
    assert _problems(original, swapped, levels, specs) == ["column 's' was changed"]
    # the (479*, <40) record twice more: the population has 4 such, the release 2 + 3
    extra = pd.concat([good, good.iloc[[0, 0, 0]]], ignore_index=True)
    claimed = pd.concat([original, original.iloc[[0, 0, 0]]], ignore_index=True)
    found = check_criteria(
        claimed,
        extra,
        specs[:1],
        list(levels),
        0,
        expected_star=expected_stars(claimed, HIER, levels),
        population=POPULATION,
        hierarchies=HIER,
        levels=levels,
    )
    assert len(found) == 1 and found[0].startswith("model 'inclusion': ")
    assert "not of the research subset" in found[0]
    # a record in the wrong class: (4791, 30) shown as (479*, >=40)
    wrong = good.copy()
    wrong.loc[1, "age"] = ">=40"
    problems = _problems(original, wrong, levels, specs)
    assert problems[0] == "column 'age' row 2: released '>=40', expected '<40'"
    assert any(p.startswith("model 'inclusion': class zip=479*, age=>=40") for p in problems)
