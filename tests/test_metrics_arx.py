"""The quality models equal ARX 3.9's, node by node, and their bounds and declarations hold.

The reference values in ``tests/data/arx_metrics/*.json`` were printed by ARX
3.9 itself (``ARXNode.getHighestScore()`` after ``ARXResult.getOutput(node)``,
k-anonymity marking the suppressed classes); each case stores the Java command
that made it. Java is not needed to run these tests.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from anonlab.dataset import Dataset
from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy
from anonlab.lattice.freqset import FrequencyEngine, FrequencySet
from anonlab.lattice.metrics import (
    AGGREGATES,
    METRICS,
    LossContext,
    LossValue,
    Metric,
    NodeClasses,
    java_str,
    loss_text,
    metric_by_name,
)
from anonlab.lattice.metrics.base import hppc_int_order

ROOT = Path(__file__).resolve().parents[1]
REFS = ROOT / "tests" / "data" / "arx_metrics"
#: the metrics that need no parameters of their own (classification and static need theirs)
DATA_ONLY = [name for name, cls in METRICS.items() if not cls.options]
#: metrics whose ARX references are in other modules (tests/test_metrics_arx_more.py; the
#: publisher payout: tests/test_privacy_profitability.py)
ELSEWHERE = {
    "entropy_information_loss",
    "classification",
    "static",
    "publisher_payout",
    "publisher_payout_journalist",
}
DATASETS = tuple(n for n in ("tiny", "small", "adult", "subset") if (REFS / f"{n}.json").exists())


@cache
def reference(name: str) -> dict[str, Any]:
    """One reference file."""
    doc: dict[str, Any] = json.loads((REFS / f"{name}.json").read_text(encoding="utf-8"))
    return doc


ADULT_QIS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "salary-class",
]
#: the tables: data file (ARX's input), quasi-identifiers in ARX's (the file's) order,
#: hierarchy files, and the released research subset when ARX's input is its population
TABLES: dict[str, tuple[str, list[str], str, str | None]] = {
    "tiny": (
        "tests/data/arx_metrics/tiny/tiny.csv",
        ["a", "b", "c"],
        "tests/data/arx_metrics/tiny/hierarchy_{}.csv",
        None,
    ),
    "small": (
        "tests/data/arx_metrics/small/small.csv",
        ["zip", "age", "sex", "job"],
        "tests/data/arx_metrics/small/hierarchy_{}.csv",
        None,
    ),
    "adult": ("data/adult/adult.csv", ADULT_QIS, "data/adult/hierarchy_{}.csv", None),
    "subset": (
        "data/adult/adult.csv",
        ADULT_QIS,
        "data/adult/hierarchy_{}.csv",
        "tests/data/arx_metrics/subset/adult_every_10th.csv",
    ),
}


def read(path: str) -> pd.DataFrame:
    """A ';'-separated table as text."""
    return pd.read_csv(ROOT / path, sep=";", dtype=str, keep_default_na=False)


@cache
def problem(name: str) -> tuple[Dataset, FrequencyEngine, LossContext]:
    """A table's dataset (the subset, with its population, if any), engine and metric context."""
    data, qis, pattern, subset = TABLES[name]
    hierarchies = {q: Hierarchy.from_csv(ROOT / pattern.format(q)) for q in qis}
    if subset is None:
        dataset = Dataset.from_frame(read(data), hierarchies, other="insensitive")
    else:
        dataset = Dataset.from_frame(
            read(subset), hierarchies, other="insensitive", population=read(data)
        )
    engine = FrequencyEngine(dataset)
    return dataset, engine, LossContext(dataset, engine.base_tuples, engine.bottom.counts)


def build(name: str, case: dict[str, Any]) -> Metric:
    """The case's metric."""
    return metric_by_name(
        case["metric"],
        problem(name)[2],
        gs_factor=case.get("gs_factor", 0.5),
        aggregate=case.get("aggregate"),
        weights=case.get("weights"),
    )


def node_at(name: str, levels: list[int] | tuple[int, ...], k: int) -> NodeClasses:
    """The node's classes with the k-anonymity outliers marked (what ARX suppresses).

    Classes of population records only are never outliers (ARX's ``analyzeAll``).
    """
    engine = problem(name)[1]
    fs = engine.roll_up(engine.bottom, levels)
    return NodeClasses(fs, (fs.counts < k) & (fs.counts > 0))


def parse(text: str) -> LossValue:
    """An ARX value as printed: a double, or a rank vector ``[a, b, ...]``."""
    if text.startswith("["):
        return tuple(float(x) for x in text[1:-1].split(","))
    return float(text)


def case_ids(name: str) -> list[tuple[str, int]]:
    """(dataset, case index) pairs of a reference file."""
    return [(name, i) for i in range(len(reference(name)["cases"]))]


def describe(param: tuple[str, int]) -> str:
    """A readable test id for a case."""
    name, i = param
    case = reference(name)["cases"][i]
    extras = [
        f"{key}={case[key]}"
        for key in ("suppression", "gs_factor", "aggregate")
        if case.get(key) is not None
    ]
    if case.get("weights"):
        extras.append("weighted")
    return f"{name}-{case['metric']}-" + "-".join(extras)


ALL_CASES = [c for name in DATASETS for c in case_ids(name)]


@pytest.mark.parametrize("param", ALL_CASES, ids=[describe(c) for c in ALL_CASES])
def test_value_equals_arx(param: tuple[str, int]) -> None:
    """Every stored node: our value prints exactly as ARX's, and the per-attribute vector too.

    One exception: with a population table, ARX sums the KL divergence over
    the population rows it matched to the subset (the first rows with the
    same content), anonlab over the subset's rows in their order; the sums
    agree to 1e-12 relative.
    """
    name, index = param
    case = reference(name)["cases"][index]
    metric = build(name, case)
    assert case["nodes"], "the reference case has no node"
    mismatches = []
    for row in case["nodes"]:
        node = node_at(name, row["levels"], case["k"])
        got = metric.value(node)
        if TABLES[name][3] is not None and case["metric"] == "kl_divergence":
            assert isinstance(got, float)
            assert got == pytest.approx(float(row["loss"]), rel=1e-12), row["levels"]
        elif loss_text(got) != row["loss"]:
            mismatches.append((row["levels"], loss_text(got), row["loss"]))
        per = metric.per_attribute(node)
        if row["values"] is None:
            assert per is None
        else:
            assert per is not None
            assert [java_str(v) for v in per.values()] == row["values"], row["levels"]
    assert mismatches == []


def test_references_cover_every_metric_and_aggregate() -> None:
    """The reference files exercise every metric on every dataset and every aggregate."""
    for name in DATASETS:
        doc = reference(name)
        data, qis, pattern, subset = TABLES[name]
        assert (doc["data"], doc["qis"], doc.get("subset")) == (data, qis, subset)
        assert doc["hierarchies"] == {q: pattern.format(q) for q in qis}
        cases = doc["cases"]
        assert {c["metric"] for c in cases} == set(METRICS) - ELSEWHERE
        if subset is not None:  # the population's classes without records are there
            assert int((problem(name)[1].bottom.counts == 0).sum()) > 0
            continue
        assert {c.get("aggregate") for c in cases} >= set(AGGREGATES)
        assert any(c.get("weights") for c in cases)
        assert {c.get("gs_factor", 0.5) for c in cases if c["metric"] == "loss"} >= {
            0.0,
            0.3,
            0.5,
            0.8,
            1.0,
        }
        # suppressed records occur at some stored nodes (else the variants were not tested)
        k = cases[0]["k"]
        assert any(node_at(name, r["levels"], k).suppressed > 0 for r in cases[0]["nodes"])


def lattice_nodes(name: str) -> list[tuple[int, ...]]:
    """Every level vector of a dataset's lattice."""
    dataset = problem(name)[0]
    return list(itertools.product(*[range(q.height + 1) for q in dataset.qis]))


def le(a: LossValue, b: LossValue) -> bool:
    """``a <= b`` for two floats or two rank tuples."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return a <= b
    if not isinstance(a, tuple) and not isinstance(b, tuple):
        return a <= b
    raise TypeError(f"cannot compare {a!r} with {b!r}")


def below_or_equal(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """``b`` is ``a`` or a generalization of it."""
    return all(x <= y for x, y in zip(a, b, strict=True))


VARIANTS: list[dict[str, Any]] = [
    {},
    {"gs_factor": 0.1},
    {"gs_factor": 0.9},
    {"gs_factor": 0.0},
    {"gs_factor": 1.0},
    {"aggregate": "rank"},
    {"aggregate": "max"},
    {"aggregate": "geometric_mean"},
    {"aggregate": "arithmetic_mean", "weights": {"a": 3.0}},
]


def variant_metrics() -> list[tuple[str, str, dict[str, Any]]]:
    """(table, metric, options): every valid variant on the tiny table, defaults on the small."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    for name in DATA_ONLY:
        cls = METRICS[name]
        out.append(("small", name, {}))
        for v in VARIANTS:
            if "gs_factor" in v and not cls.takes_gs_factor:
                continue
            if ("aggregate" in v or "weights" in v) and not cls.multi_dimensional:
                continue
            out.append(("tiny", name, v))
    return out


@pytest.mark.parametrize(
    ("table", "metric_name", "options"),
    variant_metrics(),
    ids=[f"{t}-{m}-{o}" for t, m, o in variant_metrics()],
)
@pytest.mark.parametrize("k", [1, 3])
def test_bounds_hold_for_all_generalizations(
    table: str, metric_name: str, options: dict[str, Any], k: int
) -> None:
    """lower_bound(x) and level_bounds[x] never exceed the value of x or of any node above x.

    ``k = 1`` suppresses nothing (ARX's "monotonic with generalization"
    setting), ``k = 3`` suppresses small classes. Declared monotonicity holds.
    """
    metric = metric_by_name(metric_name, problem(table)[2], **options)
    nodes = lattice_nodes(table)
    classes = {n: node_at(table, n, k) for n in nodes}
    values = {n: metric.value(c) for n, c in classes.items()}
    bounds = {n: metric.lower_bound(c) for n, c in classes.items()}
    level_table = metric.level_bounds(np.array(nodes, dtype=np.int64))
    for i, a in enumerate(nodes):
        data_free = None if level_table is None else metric.bound_at(level_table, i)
        if data_free is not None:
            assert le(data_free, bounds[a]), a
        for b in nodes:
            if not below_or_equal(a, b):
                continue
            assert le(bounds[a], values[b]), (a, b)
            if data_free is not None:
                assert le(data_free, values[b]), (a, b)
            if metric.monotone(k > 1):
                assert le(values[a], values[b]), (a, b)


@pytest.mark.parametrize("metric_name", DATA_ONLY)
def test_suppression_changes_only_the_non_monotone_metrics(metric_name: str) -> None:
    """Metrics ARX declares monotone with suppression ignore which classes are suppressed."""
    metric = metric_by_name(metric_name, problem("small")[2])
    levels = (1, 1, 0, 1)
    engine = problem("small")[1]
    fs = engine.roll_up(engine.bottom, levels)
    plain = metric.value(NodeClasses(fs, np.zeros(fs.classes, dtype=bool)))
    some = metric.value(NodeClasses(fs, fs.counts < 4))
    assert NodeClasses(fs, fs.counts < 4).suppressed > 0
    if metric.monotone_with_suppression:
        assert some == plain
    else:
        assert some != plain


def with_empty_class(fs: FrequencySet, ctx: LossContext) -> FrequencySet:
    """The frequency set plus a class without records (as a population adds).

    Its key is the first combination of the node's groups that no class has.
    """
    cards = [q.cardinality(lv) for q, lv in zip(ctx.qis, fs.levels, strict=True)]
    present = {tuple(row) for row in fs.keys.tolist()}
    for combo in itertools.product(*[range(c) for c in cards]):
        key = ctx.layout.pack(np.array([combo], dtype=np.int64))
        if tuple(key[0].tolist()) not in present:
            break
    keys = np.vstack([fs.keys, key])
    return FrequencySet(
        levels=fs.levels,
        keys=keys,
        counts=np.append(fs.counts, 0).astype(np.int64),
        base_index=None,
    )


@pytest.mark.parametrize("metric_name", DATA_ONLY)
@pytest.mark.parametrize("outlier", [False, True])
def test_classes_without_records_count_for_nothing(metric_name: str, outlier: bool) -> None:
    """A class with counts == 0 (population only) changes no value or bound, suppressed or not."""
    _, engine, ctx = problem("tiny")
    metric = metric_by_name(metric_name, ctx)
    fs = engine.roll_up(engine.bottom, (1, 1, 0))
    node = NodeClasses(fs, fs.counts < 3)
    extra = with_empty_class(fs, ctx)
    padded = NodeClasses(extra, np.append(node.outliers, outlier))
    assert padded.suppressed == node.suppressed
    assert metric.value(padded) == metric.value(node)
    assert metric.lower_bound(padded) == metric.lower_bound(node)


def test_loss_by_hand() -> None:
    """ARX's loss on the tiny table at node (1, 0, 0), from the definition.

    Attribute a at level 1: groups A (a1, a2: share 2/5) and B (a3, a4: 2/5);
    b and c at level 0: share 1/8 and 1/3 per value.
    """
    dataset, _, ctx = problem("tiny")
    metric = metric_by_name("loss", ctx, aggregate="arithmetic_mean")
    node = node_at("tiny", (1, 0, 0), 2)
    n = dataset.n
    released = ~node.outliers
    counts = node.fs.counts
    vec = metric.per_attribute(node)
    assert vec is not None
    # attribute c: released records cost 1/3 each, suppressed ones 1; normalized by (n - n/3)
    s = int(counts[~released].sum())
    expected_c = ((n - s) / 3 + s - n / 3) / (n - n / 3)
    assert vec["c"] == pytest.approx(expected_c, abs=1e-10)
    assert math.floor(vec["c"] * 1e10) == vec["c"] * 1e10  # rounded down to 10 decimals
    assert metric.value(node) == pytest.approx(sum(vec.values()) / 3, abs=1e-12)


def test_discernibility_and_aecs_by_hand() -> None:
    """DM*, DM and AECS from their definitions on the small table."""
    dataset, _, ctx = problem("small")
    node = node_at("small", (1, 1, 1, 1), 3)
    c = node.fs.counts
    kept = c[~node.outliers]
    s = node.suppressed
    assert s > 0
    assert metric_by_name("discernibility", ctx).value(node) == float((c * c).sum())
    assert metric_by_name("discernibility_with_suppression", ctx).value(node) == float(
        (kept * kept).sum() + s * dataset.n
    )
    assert metric_by_name("aecs", ctx).value(node) == pytest.approx(dataset.n / (len(kept) + 1))
    # gs 0.3: suppression factor 0.6, generalization factor 1 (ARX swaps them for AECS)
    assert metric_by_name("aecs", ctx, gs_factor=0.3).value(node) == pytest.approx(
        dataset.n / (0.6 * len(kept) + 1.0)
    )


def test_entropy_variants_by_hand() -> None:
    """Monotonic entropy ignores suppression; the other adds the suppressed block's entropy."""
    dataset, _, ctx = problem("tiny")
    node = node_at("tiny", (0, 1, 1), 3)
    assert node.suppressed > 0
    plain = metric_by_name("entropy", ctx).per_attribute(node)
    full = metric_by_name("entropy_with_suppression", ctx).per_attribute(node)
    assert plain is not None and full is not None
    for dim, q in enumerate(dataset.qis):
        level = node.levels[dim]
        a = q.frequencies[q.frequencies > 0].astype(float)
        codes = q.level_codes[level][q.frequencies > 0]
        b = np.bincount(codes, weights=a)[codes]
        assert plain[q.name] == pytest.approx(float((a * np.log2(b / a)).sum()), abs=1e-9)
        groups = ctx.group_codes(node.fs, dim)[node.outliers]
        cg = np.bincount(groups, weights=node.fs.counts[node.outliers].astype(float))
        cg = cg[cg > 0]
        block = float((cg * np.log2(node.suppressed / cg)).sum())
        assert full[q.name] == pytest.approx(plain[q.name] + block, abs=1e-9)


def test_rank_is_a_descending_tuple_with_arx_text_and_scalar() -> None:
    """Rank values are tuples compared lexicographically; the report adds ARX's mean."""
    _, _, ctx = problem("tiny")
    metric = metric_by_name("loss", ctx, aggregate="rank")
    low = metric.value(node_at("tiny", (1, 0, 0), 2))
    high = metric.value(node_at("tiny", (2, 3, 1), 2))
    assert isinstance(low, tuple) and isinstance(high, tuple)
    assert list(low) == sorted(low, reverse=True)
    assert high == (1.0, 1.0, 1.0) and low < high
    report = metric.report(node_at("tiny", (1, 0, 0), 2))
    vec = list(report["per_attribute"].values())
    assert report["arx"] == loss_text(low) and report["value"] == list(low)
    assert report["scalar"] == pytest.approx(math.prod(v + 1 for v in vec) ** (1 / len(vec)) - 1)
    bounds = metric.level_bounds(np.array([[0, 0, 0], [2, 3, 1]]))
    assert bounds is not None and bounds.shape == (2, 3)
    assert isinstance(metric.bound_at(bounds, 1), tuple)


def test_java_number_text() -> None:
    """Double.toString's layout."""
    assert [java_str(x) for x in (1.0, 0.5, 100.0, 1e7, 1.5e-4, 0.001, 0.0, 2.5e22)] == [
        "1.0",
        "0.5",
        "100.0",
        "1.0E7",
        "1.5E-4",
        "0.001",
        "0.0",
        "2.5E22",
    ]
    assert loss_text((0.5, 0.25)) == "[0.5, 0.25]"


@pytest.mark.parametrize(
    ("kwargs", "parameter", "fragment"),
    [
        ({"name": "information"}, "metric", "unknown"),
        ({"name": "loss", "gs_factor": 1.5}, "gs_factor", "from 0 to 1"),
        ({"name": "loss", "gs_factor": -0.1}, "gs_factor", "from 0 to 1"),
        ({"name": "loss", "gs_factor": float("nan")}, "gs_factor", "from 0 to 1"),
        ({"name": "height", "gs_factor": 0.3}, "gs_factor", "not to 'height'"),
        ({"name": "loss", "aggregate": "median"}, "aggregate", "unknown"),
        ({"name": "discernibility", "aggregate": "sum"}, "aggregate", "not to 'discernibility'"),
        ({"name": "loss", "weights": {"zzz": 1.0}}, "weights", "not a quasi-identifier"),
        ({"name": "loss", "weights": {"a": -1.0}}, "weights", ">= 0"),
        ({"name": "aecs", "weights": {"a": 2.0}}, "weights", "not to 'aecs'"),
        ({"name": "normalized_entropy", "gs_factor": 0.2}, "gs_factor", "not to"),
    ],
)
def test_bad_settings_name_the_parameter(
    kwargs: dict[str, Any], parameter: str, fragment: str
) -> None:
    """Each bad setting is one AnonlabError naming its parameter first."""
    ctx = problem("tiny")[2]
    args = dict(kwargs)
    name = args.pop("name")
    with pytest.raises(AnonlabError) as err:
        metric_by_name(name, ctx, **args)
    assert err.value.parameter == parameter
    assert str(err.value).startswith(parameter)
    assert fragment in str(err.value)


def test_normalized_entropy_needs_two_values_per_attribute() -> None:
    """ARX divides by zero for a single-valued attribute: refused, naming the metric."""
    frame = pd.DataFrame({"a": ["x", "x", "x"], "b": ["1", "2", "1"]})
    ha = Hierarchy.from_rows([["x", "*"], ["y", "*"]])
    hb = Hierarchy.from_rows([["1", "*"], ["2", "*"]])
    ds = Dataset.from_frame(frame, {"a": ha, "b": hb})
    with pytest.raises(AnonlabError, match="single value") as err:
        metric_by_name("normalized_entropy", LossContext(ds))
    assert err.value.parameter == "metric"
    # for a report: ARX's value (0 / 0 is NaN, which ARX's sum turns into Double.MAX_VALUE)
    metric = metric_by_name("normalized_entropy", LossContext(ds), allow_undefined=True)
    engine = FrequencyEngine(ds)
    node = NodeClasses(engine.bottom, np.zeros(engine.bottom.classes, dtype=bool))
    per = metric.per_attribute(node)
    assert per is not None and math.isnan(per["a"])
    assert metric.value(node) == sys.float_info.max


def test_weights_follow_arx_defaults() -> None:
    """Unnamed attributes weigh 0.5 (ARX's default); all weights are divided by the largest."""
    ctx = problem("tiny")[2]
    node = node_at("tiny", (1, 2, 0), 2)
    plain = metric_by_name("loss", ctx, aggregate="sum")
    vec = plain.per_attribute(node)
    assert vec is not None
    weighted = metric_by_name("loss", ctx, aggregate="sum", weights={"a": 2.0})
    assert weighted.value(node) == pytest.approx(vec["a"] + (vec["b"] + vec["c"]) / 4)
    same = metric_by_name("loss", ctx, aggregate="sum", weights={"a": 0.5, "b": 0.5})
    assert same.value(node) == plain.value(node)
    zero = metric_by_name("loss", ctx, aggregate="sum", weights={"a": 0, "b": 0, "c": 0})
    assert zero.value(node) == plain.value(node)


def test_kl_divergence_is_not_monotone() -> None:
    """ARX's KL divergence can fall under generalization, so it is declared non-monotone."""
    frame = pd.DataFrame(
        {
            "q0": ["v1", "v0", "v0", "v0", "v2", "v2", "v1"],
            "q1": ["v1", "v0", "v0", "v0", "v1", "v1", "v1"],
        }
    )
    flat = {
        str(q): Hierarchy.from_rows([[v, "*"] for v in sorted(set(frame[q]))])
        for q in frame.columns
    }
    ds = Dataset.from_frame(frame, flat)
    engine = FrequencyEngine(ds)
    metric = metric_by_name("kl_divergence", LossContext(ds))
    low, high = (engine.roll_up(engine.bottom, lv) for lv in ((1, 0), (1, 1)))
    nothing = np.zeros(low.classes, dtype=bool)
    assert le(metric.value(NodeClasses(high, nothing[:1])), metric.value(NodeClasses(low, nothing)))
    assert metric.value(NodeClasses(high, nothing[:1])) != metric.value(NodeClasses(low, nothing))
    assert not metric.monotone(False) and not metric.monotone(True)


def test_hash_map_order_matches_hppc() -> None:
    """The emulated iteration order of ARX's int hash map equals the one Java printed."""
    doc = json.loads((REFS / "hppc_order.json").read_text(encoding="utf-8"))
    assert len(doc["cases"]) >= 50
    for case in doc["cases"]:
        distinct = list(dict.fromkeys(case["inserted"]))
        assert hppc_int_order(distinct) == case["iteration"]
