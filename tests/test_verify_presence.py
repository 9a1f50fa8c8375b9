"""The independent checker's delta-presence (anonlab.verify.criteria) is ARX 3.9's (issue 22).

ARX judges the classes of the *population* at a transformation, counting each
class's research-subset records before suppression (``HashGroupify``): a class
with subset records outside ``[dmin, dmax]`` is suppressed and not judged
again; a class without any (delta 0) fails the transformation when below
``dmin``, unless a model of the combination has a minimal class size, which
ARX checks first. The checker is compared with ARX's verdict on every node of
the small lattices of ``tests/data/arx_population`` (ARX 3.9 run on them), with
hand-made releases, and with the definition written out in
``tests/reference_models.py``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import reference_models as reference
from anonlab.dataset import Dataset
from anonlab.hierarchy import Hierarchy
from anonlab.privacy.spec import MODELS, build_criterion
from anonlab.verify.criteria import check_criteria, declares_minimal_class_size, research_rows
from anonlab.verify.generalization import expected_stars

DATA = Path(__file__).resolve().parent / "data" / "arx_population"
ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"


#: lattices run in the quick suite: a class suppressed whole at an anonymous node (1005),
#: population classes without subset records next to k-anonymity (2001)
QUICK = ("dpresence-1005", "dpresencek-2001")


def _arx_cases() -> list[Any]:
    """ARX 3.9's verdict on every node of small random lattices: delta-presence alone and
    with k-anonymity (``make_cases.py``; each node's suppressed subset records too)."""
    params = []
    for name in ("dpresence", "dpresencek"):
        for case in json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))["cases"]:
            label = f"{name}-{case['seed']}"
            params.append(
                pytest.param(case, id=label, marks=[] if label in QUICK else [pytest.mark.slow])
            )
    return params


def _specs(models: list[str]) -> list[dict[str, Any]]:
    """The harness's model texts (``dpresence:DMIN:DMAX``, ``kanon:K``) as settings spell them."""
    specs: list[dict[str, Any]] = []
    for text in models:
        parts = text.split(":")
        if parts[0] == "dpresence":
            specs.append(
                {
                    "model": "delta-presence",
                    "dmin": float(parts[1]),
                    "dmax": float(parts[2]),
                    "subset": "subset.csv",
                }
            )
        else:
            assert parts[0] == "kanon", text
            specs.append({"model": "k-anonymity", "k": int(parts[1])})
    return specs


def _release(
    original: pd.DataFrame,
    hierarchies: dict[str, Hierarchy],
    levels: dict[str, int],
    suppressed: list[int],
) -> pd.DataFrame:
    """``original`` at ``levels``, the rows ``suppressed`` '*' in every quasi-identifier."""
    release = original.copy()
    for column, level in levels.items():
        release[column] = [hierarchies[column].label(str(v), level) for v in original[column]]
    release.loc[suppressed, list(levels)] = "*"
    return release


def _problems(
    population: pd.DataFrame,
    original: pd.DataFrame,
    release: pd.DataFrame,
    specs: list[dict[str, Any]],
    hierarchies: dict[str, Hierarchy],
    levels: dict[str, int],
    limit: int,
) -> list[str]:
    return check_criteria(
        original,
        release,
        specs,
        list(levels),
        limit,
        expected_star=expected_stars(original, hierarchies, levels),
        population=population,
        hierarchies=hierarchies,
        levels=levels,
    )


@pytest.mark.parametrize("case", _arx_cases())
def test_every_node_as_arx_judges_it(case: dict[str, Any]) -> None:
    """The release ARX makes at each node (its suppressed records '*') passes the checker
    exactly when ARX finds the node anonymous."""
    columns = case["columns"]
    population = pd.DataFrame(case["rows"], columns=columns)
    rows = research_rows(population, pd.DataFrame(case["subset"], columns=columns))
    assert rows is not None
    original = population.iloc[rows].reset_index(drop=True)
    hierarchies = {c: Hierarchy.from_rows(r) for c, r in case["hierarchies"].items()}
    specs = _specs(case["models"])
    limit = math.floor(case["suppression"] * len(original) + 1e-9)
    for node in case["nodes"]:
        levels = dict(zip(hierarchies, node["levels"], strict=True))
        release = _release(original, hierarchies, levels, node["suppressed"])
        problems = _problems(population, original, release, specs, hierarchies, levels, limit)
        assert (problems == []) == node["anonymous"], (node["levels"], problems)


# ------------------------------------------------------------------- by hand

HIER = {
    "q": Hierarchy.from_rows(
        [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"], ["4", "3-4", "*"]]
    )
}
POPULATION = pd.DataFrame({"q": ["1", "1", "2", "2", "3", "3", "3", "3", "4", "4"]})


def _presence(dmin: float, dmax: float) -> dict[str, Any]:
    return {"model": "delta-presence", "dmin": dmin, "dmax": dmax, "subset": "subset.csv"}


def test_a_class_whose_subset_records_are_all_suppressed_is_not_judged_again() -> None:
    """At level 0 the class q=2 holds both population records (delta 1 > dmax): ARX
    suppresses them and the node holds, though the release keeps no record of the class
    (the checker used to count its delta as 0, below dmin, and refuse ARX's optimum)."""
    original = pd.DataFrame({"q": ["1", "2", "2", "3", "4"]})
    release = pd.DataFrame({"q": ["1", "*", "*", "3", "4"]})
    levels = {"q": 0}
    spec = [_presence(0.25, 0.5)]
    assert _problems(POPULATION, original, release, spec, HIER, levels, 2) == []
    assert _problems(POPULATION, original, release, spec, HIER, levels, 1) == [
        "2 records are suppressed but the limit is 1"
    ]
    shown = pd.DataFrame({"q": ["1", "2", "2", "3", "4"]})
    assert (
        "class q=2 (2 records, rows 2, 3) has delta outside [0.25, 0.5]"
        in _problems(POPULATION, original, shown, spec, HIER, levels, 2)[0]
    )


def test_a_population_class_without_subset_records() -> None:
    """q=4 has two population records and no subset record: delta 0, below dmin = 0.1,
    which fails the release, unless a model with a minimal class size is combined (ARX
    then never judges such a class); with dmin = 0 it holds."""
    original = pd.DataFrame({"q": ["1", "2", "3"]})
    release = original.copy()
    levels = {"q": 0}
    problems = _problems(POPULATION, original, release, [_presence(0.1, 0.5)], HIER, levels, 0)
    assert problems == [
        "model 'delta-presence': population records with generalized values 4 "
        "hold no record of the research subset, so their delta is 0, below "
        "dmin = 0.1"
    ]
    assert _problems(POPULATION, original, release, [_presence(0.0, 0.5)], HIER, levels, 0) == []
    for other in (
        {"model": "k-anonymity", "k": 1},
        {
            "model": "k-map",
            "k": 1,
            "estimator": "poisson",
            "significance": 0.01,
            "population_size": 100,
        },
    ):
        assert (
            _problems(POPULATION, original, release, [_presence(0.1, 0.5), other], HIER, levels, 0)
            == []
        ), other
    # k-map on the population table gives ARX no minimal class size
    kmap = {"model": "k-map", "k": 1, "population": "population.csv"}
    assert (
        _problems(POPULATION, original, release, [_presence(0.1, 0.5), kmap], HIER, levels, 0)
        == problems
    )
    # a level above, q=3-4 holds a subset record
    assert (
        _problems(
            POPULATION,
            original,
            _release(original, HIER, {"q": 1}, []),
            [_presence(0.1, 0.5)],
            HIER,
            {"q": 1},
            0,
        )
        == []
    )


def _example(name: str) -> dict[str, Any]:
    """A spec of model ``name`` with the example parameters of its registry entry."""
    model = MODELS[name]
    spec: dict[str, Any] = {"model": name}
    if model.sensitive:
        spec["attribute"] = "s"
    for key, param in model.params.items():
        if param.required:
            spec[key] = json.loads(param.example)
    if "hierarchy" in spec:  # read when the criterion is built
        spec["hierarchy"] = str(ADULT / "hierarchy_occupation.csv")
    for group in model.one_of:  # the first of the parameters one of which is needed
        spec[group[0]] = json.loads(model.params[group[0]].example)
    return spec


def test_the_minimal_class_sizes_are_the_searchs() -> None:
    """The checker's list of models with a minimal class size (its own, sharing no code) is
    the search's: those whose criterion declares one once bound (ARX's
    ``isMinimalClassSizeAvailable``)."""
    frame = pd.DataFrame({"q": ["1", "2", "3", "4"], "s": ["a", "b", "a", "b"]})
    dataset = Dataset.from_frame(frame, HIER, sensitive=["s"])
    specs = [_example(name) for name in MODELS]
    specs.append(
        {
            "model": "k-map",
            "k": 3,
            "estimator": "zero-truncated-poisson",
            "significance": 0.05,
            "population_size": 400,
        }
    )
    specs.append(
        {
            "model": "k-map",
            "k": 3,
            "estimator": "poisson",
            "significance": 0.05,
            "population_size": 400,
        }
    )
    for spec in specs:
        criterion = build_criterion(spec)
        if spec["model"] == "k-map" and "estimator" in spec:
            criterion.bind(dataset)
        declared = criterion.minimal_class_size() is not None
        assert declared == declares_minimal_class_size(spec), spec


# ------------------------------------------------ against the definition written out


def _random_problem(
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Hierarchy]]:
    """A population of two quasi-identifiers and a research subset drawn from it."""
    n = int(rng.integers(6, 40))
    population = pd.DataFrame(
        {
            "q1": rng.choice(["a", "b", "c", "d"], n),
            "q2": rng.choice(["x", "y", "z"], n, p=[0.5, 0.3, 0.2]),
        }
    )
    picked = np.sort(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False))
    hierarchies = {
        "q1": Hierarchy.from_rows(
            [["a", "ab", "*"], ["b", "ab", "*"], ["c", "cd", "*"], ["d", "cd", "*"]]
        ),
        "q2": Hierarchy.from_rows([["x", "*"], ["y", "*"], ["z", "*"]]),
    }
    return population, population.iloc[picked].reset_index(drop=True), hierarchies


def _keys(
    frame: pd.DataFrame, hierarchies: dict[str, Hierarchy], levels: dict[str, int]
) -> list[tuple[str, ...]]:
    return [
        tuple(hierarchies[c].label(str(v), levels[c]) for c, v in zip(levels, row, strict=True))
        for row in frame[list(levels)].itertuples(index=False, name=None)
    ]


@pytest.mark.parametrize("seed", range(3))
def test_random_releases_against_the_definition_written_out(seed: int) -> None:
    """Random nodes, random whole classes suppressed (the suppression limit never binds):
    the checker's verdict is :func:`reference_models.delta_presence_holds`."""
    rng = np.random.default_rng(seed)
    for _ in range(25):
        population, original, hierarchies = _random_problem(rng)
        # not the top node, where suppressed records look like its one class (all '*')
        levels = {"q1": int(rng.integers(0, 3)), "q2": int(rng.integers(0, 2))}
        if levels == {"q1": 2, "q2": 1}:
            levels["q2"] = 0
        keys = _keys(original, hierarchies, levels)
        gone = {c for c in sorted(set(keys)) if rng.random() < 0.3}
        suppressed = [i for i, key in enumerate(keys) if key in gone]
        dmin, dmax = sorted(float(x) for x in rng.choice([0.0, 0.1, 0.3, 0.5, 0.8, 1.0], 2))
        specs = [_presence(dmin, dmax)]
        if rng.random() < 0.5:
            specs.append({"model": "k-anonymity", "k": 1})  # fails no released class
        release = _release(original, hierarchies, levels, suppressed)
        problems = _problems(
            population, original, release, specs, hierarchies, levels, len(original)
        )
        expected = reference.delta_presence_holds(
            _keys(population, hierarchies, levels),
            keys,
            [k for i, k in enumerate(keys) if i not in set(suppressed)],
            dmin,
            dmax,
            judge_empty=len(specs) == 1,
        )
        assert (problems == []) == expected, (levels, dmin, dmax, gone, problems)
