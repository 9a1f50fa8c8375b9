"""Steering the optimum: level bounds, the list of best transformations, and applying one.

The bounded searches are checked against two references: the exhaustive search
within the same bounds, and the minimum over the acceptable nodes inside the
bounds of an exhaustive search of the whole lattice (which shares no bounds
code). The problems are drawn so that the optimum within the bounds is not
their lowest node (``k`` between the smallest the lowest node fails and the
largest the highest node passes, as :func:`gen_strategies.hard_k` does for
the whole lattice).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.dataset import Dataset
from anonlab.errors import AnonlabError
from anonlab.generalize import Generalizer, anonymize
from anonlab.hierarchy import Hierarchy
from anonlab.lattice import STRATEGIES
from anonlab.lattice.alternatives import best_nodes
from anonlab.lattice.freqset import FrequencyEngine
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.metrics import LossContext, metric_by_name
from anonlab.lattice.search import SearchContext, SearchResult
from anonlab.privacy import KAnonymity, max_suppressed
from anonlab.privacy.base import Criterion
from anonlab.privacy.diversity import DistinctLDiversity
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import GeneralizeSettings
from anonlab.runs.generalize_steps import ModelCheck, verify_release
from anonlab.verify.generalization import check_level_bounds
from gen_strategies import class_sizes, limit_of, qi_table, same_loss, skewed_column

PROFILE = settings(
    max_examples=int(os.environ.get("ANONLAB_EXAMPLES", "15")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
METRICS_CHECKED = ["precision", "loss", "discernibility_with_suppression", "entropy"]
runner = CliRunner()

Bounded = tuple[pd.DataFrame, dict[str, Hierarchy], list[int], list[int], int, float]


# ---------------------------------------------------------------------------
# random bounded problems
# ---------------------------------------------------------------------------


@st.composite
def bounds_for(draw: st.DrawFn, heights: list[int]) -> tuple[list[int], list[int]]:
    """A lower and an upper level per dimension, ``0 <= low <= high <= height``."""
    lows, highs = [], []
    for h in heights:
        a, b = draw(st.integers(0, h)), draw(st.integers(0, h))
        lows.append(min(a, b))
        highs.append(max(a, b))
    return lows, highs


@st.composite
def bounded_problem(draw: st.DrawFn) -> Bounded:
    """A table, hierarchies, bounds, and a k hard within the bounds (see the module text)."""
    table, hiers = draw(qi_table(max_qis=3, max_lattice=64, min_rows=6, max_rows=30))
    n = table.shape[0]
    table["s"] = draw(skewed_column(n, ["a", "b", "c"]))
    lows, highs = draw(bounds_for([h.height for h in hiers.values()]))
    suppression = draw(st.sampled_from([0.0, 0.05, 0.1, 0.25]))
    limit = limit_of(suppression, n)
    qis = table[list(hiers)]
    bottom = class_sizes(qis, hiers, tuple(lows))
    top = class_sizes(qis, hiers, tuple(highs))

    def fails(sizes: Any, k: int) -> bool:
        return int(sizes[sizes < k].sum()) > limit

    k_lo = next((k for k in range(1, n + 1) if fails(bottom, k)), None)
    k_hi = max((k for k in range(1, n + 1) if not fails(top, k)), default=1)
    if k_lo is None or k_lo > k_hi:
        reject()  # the lowest node passes whatever the top passes: nothing to search
    return table, hiers, lows, highs, draw(st.integers(k_lo, k_hi)), suppression


def _context(
    ds: Dataset, criteria: list[Criterion], suppression: float, metric: str, lattice: Lattice
) -> SearchContext:
    engine = FrequencyEngine(ds, sensitive=("s",))
    chosen = metric_by_name(metric, LossContext(ds, engine.base_tuples, engine.bottom.counts))
    return SearchContext(lattice, engine, criteria, max_suppressed(suppression, ds.n), chosen)


def _search(
    ds: Dataset,
    criteria: list[Criterion],
    suppression: float,
    metric: str,
    strategy: str,
    lows: list[int] | None,
    highs: list[int] | None,
) -> tuple[SearchContext, SearchResult] | None:
    """One strategy's search (``None``: no acceptable node)."""
    lattice = Lattice(highs if highs is not None else ds.heights, lows)
    ctx = _context(ds, criteria, suppression, metric, lattice)
    try:
        return ctx, STRATEGIES[strategy](ctx)
    except AnonlabError as exc:
        assert "no generalization satisfies" in str(exc)
        return None


def _box_losses(
    ds: Dataset,
    criteria: list[Criterion],
    suppression: float,
    metric: str,
    lows: list[int],
    highs: list[int],
) -> list[tuple[Any, tuple[int, ...], Any]]:
    """Every acceptable node inside the bounds, by (loss order, level, vector), judged by an
    exhaustive search of the whole lattice."""
    found = _search(ds, criteria, suppression, metric, "exhaustive", None, None)
    if found is None:
        return []
    ctx, _ = found
    out = []
    for node, loss in ctx.losses.items():
        levels = ctx.lattice.levels(node)
        if all(lo <= a <= hi for a, lo, hi in zip(levels, lows, highs, strict=True)):
            out.append((ctx.sort_key(node, loss), levels, loss))
    return sorted(out)


def _criteria(kind: str, k: int) -> list[Criterion]:
    if kind == "k":
        return [KAnonymity(k)]
    return [KAnonymity(k), DistinctLDiversity("s", 2)]


@pytest.mark.parametrize("kind", ["k", "k+l"])
@pytest.mark.parametrize("metric", METRICS_CHECKED)
@PROFILE
@given(problem=bounded_problem())
def test_every_strategy_is_optimal_within_bounds(kind: str, metric: str, problem: Bounded) -> None:
    frame, hiers, lows, highs, k, suppression = problem
    ds = Dataset.from_frame(frame, hiers, sensitive=["s"])
    criteria = _criteria(kind, k)
    try:
        truth = _box_losses(ds, criteria, suppression, metric, lows, highs)
    except AnonlabError:
        reject()  # a metric not defined for this table (e.g. a single-valued column)
    for strategy in STRATEGIES:
        got = _search(ds, _criteria(kind, k), suppression, metric, strategy, lows, highs)
        if not truth:
            assert got is None, strategy
            continue
        assert got is not None, strategy
        _, result = got
        assert all(lo <= a <= hi for a, lo, hi in zip(result.levels, lows, highs, strict=True))
        _, best_levels, best_loss = truth[0]
        assert same_loss(result.loss, best_loss), (strategy, result.levels, best_levels)
        if strategy == "exhaustive":
            assert result.levels == best_levels  # same tie order: lowest level, then vector


@pytest.mark.parametrize("kind", ["k", "k+l"])
@pytest.mark.parametrize("metric", ["precision", "loss", "discernibility_with_suppression"])
@PROFILE
@given(problem=bounded_problem(), n=st.integers(1, 6))
def test_alternatives_are_the_best_acceptable_nodes(
    kind: str, metric: str, problem: Bounded, n: int
) -> None:
    frame, hiers, lows, highs, k, suppression = problem
    ds = Dataset.from_frame(frame, hiers, sensitive=["s"])
    truth = _box_losses(ds, _criteria(kind, k), suppression, metric, lows, highs)
    if not truth:
        reject()
    for strategy in STRATEGIES:
        got = _search(ds, _criteria(kind, k), suppression, metric, strategy, lows, highs)
        assert got is not None
        ctx, result = got
        listed = best_nodes(ctx, result, n)
        assert listed[0] == result.optimum
        assert len(listed) == min(n, len(truth)), strategy
        assert len(set(listed)) == len(listed)
        losses = [ctx.losses[x] for x in listed]
        for got_loss, (_, _, loss) in zip(losses, truth, strict=False):
            assert same_loss(got_loss, loss), (strategy, losses, truth[:n])
        assert all(ctx.verdict(x).acceptable for x in listed)


# ---------------------------------------------------------------------------
# the bounded lattice itself
# ---------------------------------------------------------------------------


def test_bounded_lattice_holds_exactly_the_nodes_within_bounds() -> None:
    lattice = Lattice([3, 2, 4], [1, 0, 2])
    box = [(a, b, c) for a in range(1, 4) for b in range(3) for c in range(2, 5)]
    assert lattice.size == len(box) == 27
    assert [lattice.levels(x) for x in range(lattice.size)] == box
    assert all(lattice.index(v) == i for i, v in enumerate(box))
    assert lattice.levels(lattice.bottom) == (1, 0, 2)
    assert lattice.levels(lattice.top) == (3, 2, 4)
    assert (lattice.min_level, lattice.max_level) == (3, 9)
    assert lattice.contains((2, 1, 3)) and not lattice.contains((0, 1, 3))
    for node, v in enumerate(box):
        preds = {tuple(x) for x in (lattice.levels(p) for p in lattice.predecessors(node))}
        assert preds == {
            w
            for w in box
            if sum(w) == sum(v) - 1 and all(a <= b for a, b in zip(w, v, strict=True))
        }
        below = {lattice.levels(int(x)) for x in lattice.below(node)}
        assert below == {w for w in box if all(a <= b for a, b in zip(w, v, strict=True))}
        above = {lattice.levels(int(x)) for x in lattice.above(node)}
        assert above == {w for w in box if all(a >= b for a, b in zip(w, v, strict=True))}
    between = [lattice.levels(x) for x in lattice.between(lattice.bottom, lattice.top, 5)]
    assert between == [v for v in box if sum(v) == 5]


def test_a_lower_bound_above_the_height_is_refused() -> None:
    with pytest.raises(ValueError, match="lower bounds"):
        Lattice([2, 2], [3, 0])


# ---------------------------------------------------------------------------
# the library: anonymize and Generalizer
# ---------------------------------------------------------------------------


def _toy() -> tuple[pd.DataFrame, dict[str, Hierarchy]]:
    """A table whose optimum at k = 8 generalizes ``age`` to 10-year bands (seeded)."""
    rng = np.random.default_rng(7)
    ages = rng.integers(20, 60, size=120)
    frame = pd.DataFrame(
        {
            "age": ages.astype(str),
            "sex": rng.choice(["F", "M"], size=120),
            "s": rng.choice(["x", "y", "z"], size=120),
        }
    )
    ages_all = [str(a) for a in range(20, 60)]
    age = Hierarchy.from_rows(
        [[a, f"{int(a) // 5 * 5}", f"{int(a) // 10 * 10}", "*"] for a in ages_all]
    )
    sex = Hierarchy.from_rows([["F", "*"], ["M", "*"]])
    return frame, {"age": age, "sex": sex}


def test_bounds_move_the_optimum_and_are_reported() -> None:
    frame, hiers = _toy()
    ds = Dataset.from_frame(frame, hiers, sensitive=["s"])
    free = anonymize(ds, 8, 0.0, "flash", "loss")
    assert free.transformation == {"age": 2, "sex": 0}
    capped = anonymize(ds, 8, 0.0, "flash", "loss", max_levels={"age": 1}, alternatives=3)
    assert capped.transformation == {"age": 1, "sex": 1}  # sex pays for the cap on age
    assert capped.level_bounds == {"age": [0, 1], "sex": [0, 1]}
    assert capped.lattice_size == 4
    # only one node within the bounds satisfies the model: the list is shorter than asked
    assert [a["levels"] for a in capped.alternatives] == [{"age": 1, "sex": 1}]
    pinned = anonymize(
        ds, 8, 0.0, "ola", "loss", min_levels={"sex": 1, "age": 3}, max_levels={"sex": 1}
    )
    assert pinned.transformation == {"age": 3, "sex": 1}
    assert pinned.lattice_size == 1


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"max_levels": {"age": 4}},
            "max_level gives 'age' the level 4, outside its hierarchy: give a level from 0 to 3",
        ),
        ({"min_levels": {"age": -1}}, "min_level gives 'age' the level -1"),
        ({"min_levels": {"zip": 1}}, "min_level names 'zip', which is not a quasi-identifier"),
        (
            {"min_levels": {"age": 2}, "max_levels": {"age": 1}},
            "min_level gives 'age' the level 2, above its max_level 1",
        ),
        ({"alternatives": -1}, "alternatives must be 0 or more"),
    ],
)
def test_bad_bounds_are_refused(given: dict[str, Any], message: str) -> None:
    frame, hiers = _toy()
    ds = Dataset.from_frame(frame, hiers, sensitive=["s"])
    with pytest.raises(AnonlabError, match=re.escape(message)):
        anonymize(ds, 8, 0.0, "flash", "loss", **given)


def test_no_solution_within_bounds_is_an_error() -> None:
    frame, hiers = _toy()
    ds = Dataset.from_frame(frame, hiers, sensitive=["s"])
    with pytest.raises(AnonlabError, match="no generalization satisfies"):
        anonymize(ds, 60, 0.0, "flash", "loss", max_levels={"age": 0, "sex": 0})


def test_generalizer_takes_bounds() -> None:
    frame, hiers = _toy()
    g = Generalizer(k=8, metric="loss", max_levels={"age": 1})
    release = g.fit_transform(frame, hiers, sensitive=["s"])
    assert g.transformation_ == {"age": 1, "sex": 1}
    assert set(release["age"]) == {f"{a}" for a in range(20, 60, 5)}
    assert set(release["sex"]) == {"*"}


# ---------------------------------------------------------------------------
# the verifier
# ---------------------------------------------------------------------------


def test_check_level_bounds_finds_levels_outside() -> None:
    assert check_level_bounds({"age": 1, "sex": 0}, {"sex": 0}, {"age": 1}) == []
    assert check_level_bounds({"age": 2}, {}, {"age": 1}) == [
        "column 'age' is released at level 2, above its max_level 1"
    ]
    assert check_level_bounds({"age": 0}, {"age": 1}, {}) == [
        "column 'age' is released at level 0, below its min_level 1"
    ]
    assert check_level_bounds({"age": 0}, {"zip": 1}, {}) == [
        "a level bound names 'zip', which is not a released quasi-identifier"
    ]


def test_verification_refuses_a_release_outside_the_bounds() -> None:
    frame, hiers = _toy()
    g = Generalizer(k=8, metric="loss")
    release = g.fit_transform(frame, hiers, sensitive=["s"])
    level = g.transformation_["age"]
    model = ModelCheck([{"model": "k-anonymity", "k": 8}], 0, None, {}, {"age": level - 1})
    with pytest.raises(AnonlabError, match="above its max_level"):
        verify_release(frame, release, hiers, g.transformation_, [], model)
    fine = ModelCheck([{"model": "k-anonymity", "k": 8}], 0, None, {}, {"age": level})
    verify_release(frame, release, hiers, g.transformation_, [], fine)


# ---------------------------------------------------------------------------
# settings, command line, apply
# ---------------------------------------------------------------------------


def write_toy(folder: Path) -> dict[str, str]:
    """The seeded toy table as ``toy.csv`` and its hierarchy files; the QI paths."""
    frame, hiers = _toy()
    frame.to_csv(folder / "toy.csv", index=False)
    paths = {}
    for name, h in hiers.items():
        path = folder / f"h_{name}.csv"
        path.write_text(h.to_csv_text(), encoding="utf-8")
        paths[name] = str(path)
    return paths


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def test_settings_and_toml_tables(tmp_path: Path) -> None:
    qi = write_toy(tmp_path)
    config = tmp_path / "toy.toml"
    config.write_text(
        f'input = "toy.csv"\nsensitive = ["s"]\nk = 8\nmetric = "loss"\n'
        f'report = "toy.json"\nalternatives = 2\n[qi]\nage = "{qi["age"]}"\n'
        f'sex = "{qi["sex"]}"\n[max_level]\nage = 2\n[min_level]\nsex = 1\n'
    )
    settings_ = GeneralizeSettings.load(config)
    assert settings_.max_level == {"age": 2} and settings_.min_level == {"sex": 1}
    result = run_generalize(settings_)
    report = result.report
    assert report["transformation"] == {"age": 1, "sex": 1}
    assert report["level_bounds"] == {"age": [0, 2], "sex": [1, 1]}
    assert report["parameters"]["max_level"] == {"age": 2}
    assert len(report["alternatives"]) == 2
    assert json.loads((tmp_path / "toy.json").read_text())["alternatives"] == report["alternatives"]


def test_settings_refuse_a_bound_on_a_column_that_is_no_qi(tmp_path: Path) -> None:
    qi = write_toy(tmp_path)
    with pytest.raises(AnonlabError, match="max_level names 'zip'"):
        GeneralizeSettings(input=str(tmp_path / "toy.csv"), qi=qi, max_level={"zip": 1})


def test_engine_path_keeps_the_bounds(tmp_path: Path) -> None:
    qi = write_toy(tmp_path)
    settings_ = GeneralizeSettings(
        input=str(tmp_path / "toy.csv"),
        qi=qi,
        sensitive=["s"],
        k=8,
        metric="loss",
        max_level={"age": 1},
        output=str(tmp_path / "parts") + "/",
        report=str(tmp_path / "e.json"),
    )
    report = run_generalize(settings_).report
    assert report["transformation"]["age"] <= 1
    assert report["level_bounds"]["age"] == [0, 1]
    assert report["verified"] is True


def _generalize_args(tmp_path: Path, qi: dict[str, str], *extra: str) -> list[str]:
    return [
        "generalize",
        str(tmp_path / "toy.csv"),
        "--qi",
        f"age={qi['age']}",
        "--qi",
        f"sex={qi['sex']}",
        "--sensitive",
        "s",
        "--k",
        "8",
        "--metric",
        "loss",
        *extra,
    ]


def test_cli_lists_alternatives_and_apply_releases_one(tmp_path: Path) -> None:
    qi = write_toy(tmp_path)
    code, text = _run(
        _generalize_args(
            tmp_path,
            qi,
            "--max-level",
            "age=2",
            "--alternatives",
            "3",
            "--report",
            str(tmp_path / "g.json"),
        )
    )
    assert code == 0, text
    assert "3 best transformations (anonlab apply --node N)" in text
    assert "level bounds" in text and "age 0..2" in text
    report = json.loads((tmp_path / "g.json").read_text())
    listed = report["alternatives"]
    assert [a["node"] for a in listed] == [1, 2, 3]
    assert all(a["levels"]["age"] <= 2 for a in listed)
    assert all(0 < a["highest_prosecutor_risk"] <= 1 / 8 for a in listed)
    second = listed[1]["levels"]
    code, text = _run(
        [
            "apply",
            str(tmp_path / "g.json"),
            str(tmp_path / "toy.csv"),
            "--node",
            "2",
            "--output",
            str(tmp_path / "n2.csv"),
            "--report",
            str(tmp_path / "n2.json"),
        ]
    )
    assert code == 0, text
    assert "anonlab apply" in text and "{" not in text
    assert f"age={second['age']}, sex={second['sex']}" in text
    applied = json.loads((tmp_path / "n2.json").read_text())
    assert applied["transformation"] == second
    assert applied["verified"] is True and "risk" in applied
    assert applied["suppressed_records"] == listed[1]["suppressed_records"]


def test_apply_levels_and_its_errors(tmp_path: Path) -> None:
    qi = write_toy(tmp_path)
    code, text = _run(
        _generalize_args(
            tmp_path, qi, "--max-level", "age=2", "--report", str(tmp_path / "g.json"), "--quiet"
        )
    )
    assert code == 0, text
    base = ["apply", str(tmp_path / "g.json"), str(tmp_path / "toy.csv")]
    code, text = _run([*base, "--levels", "age=2,sex=1", "--output", str(tmp_path / "l.csv")])
    assert code == 0, text
    release = pd.read_csv(tmp_path / "l.csv", dtype=str)
    assert set(release["sex"]) == {"*"}
    for args, message in [
        (["--levels", "age=3"], "Error: --levels gives 'age' the level 3, above its max_level 2"),
        (["--levels", "zip=1"], "Error: --levels names 'zip', which is not a quasi-identifier"),
        (["--levels", "age"], "Error: --levels 'age' is not COLUMN=LEVEL"),
        (["--node", "1"], "Error: --node 1 is not in the alternatives of report"),
        (["--node", "1", "--levels", "age=1"], "Error: --levels and node both choose"),
    ]:
        code, text = _run([*base, *args, "--output", str(tmp_path / "x.csv")])
        assert code == 2, (args, text)
        assert text.strip().splitlines()[-1].startswith(message), (args, text)
        assert len(text.strip().splitlines()) == 1, text
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--max-level", "age=7"],
            "Error: --max-level gives 'age' the level 7, outside its "
            "hierarchy: give a level from 0 to 3",
        ),
        (
            ["--min-level", "age=2", "--max-level", "age=1"],
            "Error: --min-level gives 'age' the level 2, above its max_level 1",
        ),
        (
            ["--max-level", "zip=1"],
            "Error: --max-level names 'zip', which is not a quasi-identifier",
        ),
        (["--min-level", "age=-1"], "Error: --min-level 'age=-1' is not COLUMN=LEVEL"),
        (["--alternatives", "-2"], "Error: "),
    ],
)
def test_cli_refuses_bad_bounds_in_one_line(tmp_path: Path, flags: list[str], message: str) -> None:
    qi = write_toy(tmp_path)
    code, text = _run(
        _generalize_args(tmp_path, qi, *flags, "--report", str(tmp_path / "bad.json"))
    )
    assert code == 2, text
    lines = text.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), text
    assert not (tmp_path / "bad.json").exists()


def test_alternatives_losses_never_decrease(tmp_path: Path) -> None:
    frame, hiers = _toy()
    ds = Dataset.from_frame(frame, hiers, sensitive=["s"])
    result = anonymize(ds, 3, 0.05, "flash", "precision_with_suppression", alternatives=8)
    losses = [a["loss"] for a in result.alternatives]
    assert losses == sorted(losses) and len(losses) == 6  # (0, 0) and (0, 1) fail
    assert isinstance(result.search.loss, float)
    assert math.isclose(losses[0], result.search.loss)
