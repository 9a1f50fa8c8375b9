"""The fusion engine against a naive reference, the independent checker and split runs."""

from __future__ import annotations

import itertools
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.fusion import scores
from anonlab.fusion.channel import quantize
from anonlab.fusion.config import config_from_dict
from anonlab.fusion.engine import fuse, specialize_table
from anonlab.fusion.messages import Instructions
from anonlab.fusion.taxonomy import build_taxonomy, interval_label
from anonlab.fusion.templates import SharedCut, Template
from anonlab.hierarchy import Hierarchy
from anonlab.verify.fusion import check_templates

# ------------------------------------------------------------------ random problems


@st.composite
def problems(draw: st.DrawFn) -> dict[str, Any]:
    """A small random table, random taxonomies (1-2 inner levels) and templates."""
    n = draw(st.integers(8, 36))
    n_cat = draw(st.integers(1, 3))
    n_num = draw(st.integers(0, 2))
    n_classes = draw(st.integers(2, 3))
    columns: dict[str, list[str]] = {}
    taxonomies: dict[str, list[list[str]] | str] = {}
    for i in range(n_cat):
        n_leaves = draw(st.integers(2, 6))
        leaves = [f"c{i}v{j}" for j in range(n_leaves)]
        g1 = [draw(st.integers(0, 2)) for _ in leaves]
        two = draw(st.booleans())
        g2 = {g: draw(st.integers(0, 1)) for g in set(g1)}
        rows = []
        for leaf, g in zip(leaves, g1, strict=True):
            row = [leaf, f"c{i}g{g}"]
            if two:
                row.append(f"c{i}h{g2[g]}")
            rows.append([*row, "*"])
        taxonomies[f"cat{i}"] = rows
        columns[f"cat{i}"] = [draw(st.sampled_from(leaves)) for _ in range(n)]
    for i in range(n_num):
        top = draw(st.sampled_from([6, 30]))
        columns[f"num{i}"] = [str(draw(st.integers(0, top))) for _ in range(n)]
        taxonomies[f"num{i}"] = "continuous"
    columns["extra"] = [str(draw(st.integers(0, 3))) for _ in range(n)]
    columns["cls"] = [f"k{draw(st.integers(0, n_classes - 1))}" for _ in range(n)]
    attrs = [a for a in columns if a not in ("extra", "cls")]
    templates = []
    for _ in range(draw(st.integers(1, 2))):
        qid = draw(st.lists(st.sampled_from(attrs), min_size=1, max_size=len(attrs), unique=True))
        templates.append({"qid": qid, "k": draw(st.integers(1, 5))})
    frame = pd.DataFrame(columns)
    frame.insert(0, "id", [str(100 + i) for i in draw(st.permutations(range(n)))])
    return {
        "frame": frame,
        "taxonomies": taxonomies,
        "templates": templates,
        "attrs": [*attrs, "extra"],
    }


def _settings(problem: dict[str, Any], folder: Path, score: str) -> dict[str, Any]:
    taxes = {}
    for a, rows in problem["taxonomies"].items():
        if rows == "continuous":
            taxes[a] = "continuous"
        else:
            path = folder / f"{a}.csv"
            path.write_text("\n".join(";".join(r) for r in rows) + "\n")
            taxes[a] = str(path)
    used = {a for t in problem["templates"] for a in t["qid"]}
    return {
        "fusion": {"class": "cls", "id": "id", "score": score},
        "templates": problem["templates"],
        "taxonomies": {a: p for a, p in taxes.items() if a in used},
        "sensitivity": {"default": 4, "attributes": {"cat0": 2}},
    }


def _split(attrs: list[str], parts: int, seed: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    order = list(attrs)
    while True:
        owner = rng.integers(0, parts, len(order))
        if len(set(owner.tolist())) == parts:
            return [[a for a, o in zip(order, owner, strict=True) if o == p] for p in range(parts)]


# ------------------------------------------------------------------ naive reference


def _reference(  # noqa: C901, PLR0912, PLR0915 (one plain function on purpose: the oracle)
    problem: dict[str, Any], folder: Path, score: str
) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """Plain TDS recomputed from scratch every round (one provider, factor 1)."""
    frame = problem["frame"].copy()
    frame["_key"] = pd.to_numeric(frame["id"])
    frame = frame.sort_values("_key").reset_index(drop=True).drop(columns="_key")
    settings_ = _settings(problem, folder, score)
    qid = [a for a in problem["attrs"] if a in settings_["taxonomies"]]
    y_labels, y = np.unique(frame["cls"].to_numpy(), return_inverse=True)
    n, c = len(frame), len(y_labels)
    taxes = {
        a: build_taxonomy(Hierarchy.from_csv(p), a)
        for a, p in settings_["taxonomies"].items()
        if p != "continuous"
    }
    leaves = {a: np.array([t.values.index(v) for v in frame[a]]) for a, t in taxes.items()}
    nums = {a: frame[a].astype(float).to_numpy() for a in qid if a not in taxes}
    # nodes per attribute: (label, private info, records mask, specialized?)
    nodes: dict[str, list[dict[str, Any]]] = {}
    for a in qid:
        if a in taxes:
            nodes[a] = [{"label": taxes[a].labels[0], "info": 0, "done": False}]
        else:
            x = nums[a]
            nodes[a] = [{"label": "*", "info": (x.min(), x.max(), True), "done": False}]
    cur = {a: np.zeros(n, dtype=int) for a in qid}
    listed = [(t["qid"], t["k"]) for t in settings_["templates"]]
    # a template whose QID lies inside another's with no larger k is dropped (the first of
    # identical ones stays); it never binds, but it would change AnonyLoss's mean
    templates = [
        (q, k)
        for i, (q, k) in enumerate(listed)
        if not any(
            set(q) <= set(q2) and k <= k2 and (set(q) != set(q2) or k != k2 or j < i)
            for j, (q2, k2) in enumerate(listed)
            if j != i
        )
    ]

    def labels_frame(state: dict[str, NDArray[Any]], names: dict[str, list[str]]) -> pd.DataFrame:
        return pd.DataFrame({a: [names[a][v] for v in state[a]] for a in qid})

    def smallest(table: pd.DataFrame, q: list[str]) -> int:
        return int(table[q].value_counts().min())

    def gain_of(assign: NDArray[Any], mask: NDArray[Any]) -> tuple[float, float]:
        kids = sorted(set(assign[mask].tolist()))
        counts = np.array(
            [[np.sum((assign == kid) & mask & (y == cl)) for cl in range(c)] for kid in kids]
        )
        return scores.info_gain(counts), scores.gain_ratio(counts)

    def gain_of_column(values: NDArray[Any]) -> float:
        kinds = sorted(set(values.tolist()))
        counts = np.array([[np.sum((values == v) & (y == cl)) for cl in range(c)] for v in kinds])
        return scores.info_gain(counts)

    gains = {}
    for a in problem["attrs"]:
        if a in taxes:
            gains[a] = gain_of_column(leaves[a])
        elif not pd.to_numeric(frame[a], errors="coerce").notna().all():
            gains[a] = gain_of_column(frame[a].to_numpy())
        else:
            x = frame[a].astype(float).to_numpy()
            top = 0.0
            for t in sorted(set(x.tolist()))[1:]:
                below = [u for u in sorted(set(x.tolist())) if u < t][-1]
                top = max(top, gain_of_column((x >= (below + t) / 2).astype(int)))
            gains[a] = top
    g = scores.g_factors(gains)
    max_leaves = max([len(t.values) for t in taxes.values()], default=1)
    bound = scores.score_bound(score, "sum", n, c, max_leaves)
    history = []
    while True:
        names = {a: [nd["label"] for nd in nodes[a]] for a in qid}
        table = labels_frame(cur, names)
        best_q = -1
        best: tuple[Any, ...] | None = None
        for a in qid:
            for v, nd in enumerate(nodes[a]):
                mask = cur[a] == v
                if nd["done"] or not mask.any():
                    continue
                if a in taxes:
                    tax = taxes[a]
                    kids = tax.children[nd["info"]]
                    if not kids:
                        continue
                    depth = int(tax.depth[nd["info"]])
                    assign = np.array(
                        [
                            kids.index(int(tax.ancestors[leaf, depth + 1])) if m else -1
                            for leaf, m in zip(leaves[a], mask, strict=True)
                        ]
                    )
                    child_labels = [tax.labels[k] for k in kids]
                    infos = list(kids)
                    under = tax.ancestors[:, depth] == nd["info"]
                    s_value = float(4 * under.sum() - (2 * under[:].sum() if a == "cat0" else 0))
                else:
                    x = nums[a]
                    distinct = sorted(set(x[mask].tolist()))
                    if len(distinct) < 2:
                        continue
                    best_t, best_gain = None, -1.0
                    for lo_v, hi_v in itertools.pairwise(distinct):
                        t = (lo_v + hi_v) / 2
                        ig, _ = gain_of(np.where(mask, (x >= t).astype(int), -1), mask)
                        if ig > best_gain + 1e-12:
                            best_t, best_gain = t, ig
                    assert best_t is not None
                    lo, hi, closed = nd["info"]
                    assign = np.where(mask, (x >= best_t).astype(int), -1)
                    child_labels = [
                        interval_label(lo, best_t, False),
                        interval_label(best_t, hi, closed),
                    ]
                    infos = [(lo, best_t, False), (best_t, hi, closed)]
                    s_value = 4.0 * len(distinct)
                new_names = dict(names)
                new_names[a] = names[a] + child_labels
                trial = dict(cur)
                trial[a] = np.where(mask, len(names[a]) + assign, cur[a])
                new_table = labels_frame(trial, new_names)
                if any(smallest(new_table, q) < k for q, k in templates):
                    continue
                ig, ratio = gain_of(assign, mask)
                if score == "tds":
                    losses = [
                        smallest(table, q) - smallest(new_table, q) for q, _ in templates if a in q
                    ]
                    raw = ig / (float(np.mean(losses)) + 1)
                else:
                    raw = ratio * 1.0 * g[a] * s_value
                q_score = quantize(raw / bound)
                if q_score > best_q:
                    best_q = q_score
                    best = (a, v, assign, child_labels, infos)
        if best is None:
            break
        a, v, assign, child_labels, infos = best
        history.append((a, nodes[a][v]["label"]))
        nodes[a][v]["done"] = True
        base = len(nodes[a])
        for label, info in zip(child_labels, infos, strict=True):
            nodes[a].append({"label": label, "info": info, "done": False})
        cur[a] = np.where(cur[a] == v, base + assign, cur[a])
    names = {a: [nd["label"] for nd in nodes[a]] for a in qid}
    out = frame.drop(columns=["id"]).copy()
    for a in qid:
        out[a] = [names[a][v] for v in cur[a]]
    return out, history


@settings(max_examples=60, deadline=None)
@given(problems(), st.sampled_from(["tds", "sensitivity"]))
def test_engine_matches_naive_reference(problem: dict[str, Any], score: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        frame = problem["frame"]
        settings_ = _settings(problem, folder, score)
        if score == "sensitivity":
            settings_["sensitivity"] = {"default": 4, "attributes": {"cat0": 2}}
        result = specialize_table(frame[["id", *problem["attrs"], "cls"]], settings_)
        expected, history = _reference(problem, folder, score)
        got = [(s["attribute"], s["value"]) for s in result.specializations]
        assert got == history
        cols = [*problem["attrs"], "cls"]
        pd.testing.assert_frame_equal(
            result.table[cols].reset_index(drop=True),
            expected[cols].reset_index(drop=True),
            check_dtype=False,
        )
        templates = [(t["qid"], t["k"]) for t in problem["templates"]]
        assert check_templates(result.table, templates) == []
        # the final cut applied to the raw table gives the released values back
        raw = frame.assign(_key=pd.to_numeric(frame["id"])).sort_values("_key")
        again = result.generalize(raw[cols].reset_index(drop=True))
        pd.testing.assert_frame_equal(again, result.table[cols], check_dtype=False)


@settings(max_examples=40, deadline=None)
@given(problems(), st.integers(2, 3), st.integers(0, 1000))
def test_fused_equals_single_party_tds(problem: dict[str, Any], parts: int, seed: int) -> None:
    attrs = problem["attrs"]
    if len(attrs) < parts:
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        frame = problem["frame"]
        settings_ = _settings(problem, folder, "tds")
        groups = _split(attrs, parts, seed)
        order = [c for cols in groups for c in cols]
        # ties go to the lowest provider, then its column order: the single party's
        # columns are the providers' columns one after the other
        single = specialize_table(frame[["id", *order, "cls"]], settings_)
        parties = [
            {"id": f"p{i}", "file": f"p{i}.csv", "columns": cols} for i, cols in enumerate(groups)
        ]
        rng = np.random.default_rng(seed)
        frames = {}
        for i, cols in enumerate(groups):
            part = frame[["id", *cols, "cls"]]
            frames[f"p{i}"] = part.iloc[rng.permutation(len(part))]  # own row order
        config = config_from_dict({**settings_, "parties": parties}, folder)
        fused = fuse(config, frames)
        pd.testing.assert_frame_equal(fused.table[[*order, "cls"]], single.table[[*order, "cls"]])
        assert [(s["attribute"], s["value"]) for s in fused.specializations] == [
            (s["attribute"], s["value"]) for s in single.specializations
        ]
        assert fused.private is False


def test_fuse_templates_hold_and_covered_template_dropped(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "id": [str(i) for i in range(12)],
            "a": ["x", "y"] * 6,
            "b": [str(i % 4) for i in range(12)],
            "cls": ["p", "q", "q", "p"] * 3,
        }
    )
    data = {
        "fusion": {"class": "cls", "id": "id", "score": "tds", "keep_id": True},
        "templates": [{"qid": ["a"], "k": 2}, {"qid": ["a", "b"], "k": 3}],
        "taxonomies": {"a": "continuous_placeholder", "b": "continuous"},
        "parties": [
            {"id": "p", "file": "p.csv", "columns": ["a"]},
            {"id": "q", "file": "q.csv", "columns": ["b"]},
        ],
    }
    tax = tmp_path / "a.csv"
    tax.write_text("x;*\ny;*\n")
    data["taxonomies"] = {"a": str(tax), "b": "continuous"}
    config = config_from_dict(data, tmp_path)
    kept, notes = config.effective_templates()
    assert [t.qid for t in kept] == [["a", "b"]]
    assert "template 1 <a; k=2> is covered by template 2 <a, b; k=3>" in notes[0]
    result = fuse(config, {"p": frame[["id", "a", "cls"]], "q": frame[["id", "b", "cls"]]})
    assert list(result.table.columns) == ["id", "a", "b", "cls"]
    assert check_templates(result.table, [(["a"], 2), (["a", "b"], 3)]) == []
    assert result.templates[0]["smallest_group"] >= 3
    assert result.dropped_templates == notes
    assert result.bytes_sent["p"] + result.bytes_sent["q"] > 0


def test_independent_checker_finds_small_groups() -> None:
    table = pd.DataFrame({"a": ["x", "x", "y"], "b": ["1", "1", "2"]})
    assert check_templates(table, [(["a"], 1)]) == []
    problems_ = check_templates(table, [(["a", "b"], 2)])
    assert problems_ and "smallest 1" in problems_[0]
    assert "no column 'z'" in check_templates(table, [(["z"], 1)])[0]


def test_taxonomy_collapses_single_child_chains() -> None:
    hier = Hierarchy.from_rows(
        [["a", "A", "AA", "*"], ["b", "A", "AA", "*"], ["c", "C", "AA", "*"]]
    )
    tax = build_taxonomy(hier, "t")
    # the root '*' has one child 'AA': the tree starts at AA; C has one leaf: it is 'c'
    assert tax.labels[0] == "AA"
    assert [tax.labels[k] for k in tax.children[0]] == ["A", "c"]
    assert tax.leaf_count(0) == 3
    several = build_taxonomy(Hierarchy.from_rows([["a", "X"], ["b", "Y"], ["c", "Y"]]), "t")
    assert several.labels[0] == "*"  # virtual root above several tops


def test_shared_cut_rejects_out_of_step_instructions() -> None:
    cut = SharedCut(4, ("a",), (Template(("a",), 1),), {"a": "*"})
    ok = Instructions("a", 0, "*", ("x", "y"), (np.array([0, 1]), np.array([2, 3])))
    bad = [
        (Instructions("z", 0, "*", ("x",), (np.arange(4),)), "not a quasi-identifier"),
        (Instructions("a", 5, "*", ("x",), (np.arange(4),)), "unknown value id"),
        (Instructions("a", 0, "?", ("x",), (np.arange(4),)), "where this party has"),
        (Instructions("a", 0, "*", ("x",), (np.arange(3),)), "has 4"),
        (
            Instructions("a", 0, "*", ("x", "y"), (np.array([0, 0]), np.array([2, 3]))),
            "do not hold",
        ),
        (Instructions("a", 0, "*", ("x",), (np.array([0, 1, 2, 9]),)), "has 4"),
    ]
    for instr, message in bad:
        with pytest.raises(AnonlabError, match=message):
            cut.check(instr)
    assert cut.apply(ok) == [1, 2]
    assert cut.smallest(0) == 2 and list(cut.column_labels("a")) == ["x", "x", "y", "y"]


def test_too_few_records_for_k(tmp_path: Path) -> None:
    with pytest.raises(AnonlabError, match="fewer than k = 9"):
        SharedCut(4, ("a",), (Template(("a",), 9),), {"a": "*"})


def test_cut_generalizes_a_test_table(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "id": [str(i) for i in range(20)],
            "n": [str(i) for i in range(20)],
            "cls": ["a"] * 10 + ["b"] * 10,
        }
    )
    result = specialize_table(
        frame,
        {
            "fusion": {"class": "cls", "id": "id", "score": "tds"},
            "templates": [{"qid": ["n"], "k": 5}],
            "taxonomies": {"n": "continuous"},
        },
    )
    assert result.table["n"].iloc[0] == "[0, 9.5)"
    test = pd.DataFrame({"n": ["-3", "9", "10", "40"]})
    out = result.generalize(test)
    assert list(out["n"]) == ["[0, 9.5)", "[0, 9.5)", "[9.5, 19]", "[9.5, 19]"]
    assert math.isclose(result.rounds_per_second * result.time_seconds, result.rounds)


def test_categorical_cut_covers_values_absent_from_training(tmp_path: Path) -> None:
    tax = tmp_path / "colour.csv"
    tax.write_text("red;warm;*\norange;warm;*\npurple;warm;*\nblue;cold;*\ngreen;cold;*\n")
    frame = pd.DataFrame(
        {
            "id": [str(i) for i in range(12)],
            "colour": ["red", "orange"] * 3 + ["blue", "green"] * 3,
            "cls": ["y"] * 6 + ["n"] * 6,
        }
    )
    result = specialize_table(
        frame,
        {
            "fusion": {"class": "cls", "id": "id", "score": "tds"},
            "templates": [{"qid": ["colour"], "k": 3}],
            "taxonomies": {"colour": str(tax)},
        },
    )
    assert result.cut["colour"] == ["blue", "green", "orange", "red"]
    first = result.specializations[0]
    assert first["value"] == "*" and first["children"] == ["warm", "cold"]
    out = result.generalize(pd.DataFrame({"colour": ["purple", "green"]}))
    assert list(out["colour"]) == ["purple", "green"]
    with pytest.raises(AnonlabError, match="'pink'"):
        result.generalize(pd.DataFrame({"colour": ["pink"]}))
