"""Fusion scores by hand on tiny inputs (docs/formulas.md §3)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonlab.fusion import scores
from anonlab.fusion.channel import NO_CANDIDATE, SCORE_SCALE, LocalNetwork, plain_argmax, quantize
from anonlab.fusion.config import config_from_dict
from anonlab.fusion.provider import load_provider
from anonlab.fusion.templates import SharedCut


def h(*p: float) -> float:
    return -sum(x * math.log2(x) for x in p if x > 0)


def test_entropy_and_info_gain_by_hand() -> None:
    assert scores.entropy(np.array([2, 2]))[()] == pytest.approx(1.0)
    assert scores.entropy(np.array([4, 0]))[()] == pytest.approx(0.0)
    # parent 3 yes / 3 no; children (3 yes, 1 no) and (0 yes, 2 no)
    counts = np.array([[3, 1], [0, 2]])
    expected = 1.0 - (4 / 6) * h(3 / 4, 1 / 4) - (2 / 6) * 0.0
    assert scores.info_gain(counts) == pytest.approx(expected)
    assert scores.split_info(np.array([4, 2])) == pytest.approx(h(4 / 6, 2 / 6))
    assert scores.gain_ratio(counts) == pytest.approx(expected / h(4 / 6, 2 / 6))
    assert scores.gain_ratio(np.array([[3, 3], [0, 0]])) == 0.0


def test_best_threshold_midpoint_and_ties() -> None:
    x = np.array([1.0, 2.0, 3.0, 10.0, 11.0])
    y = np.array([0, 0, 0, 1, 1])
    t, gain = scores.best_threshold(x, y, 2) or (0.0, 0.0)
    assert t == pytest.approx(6.5)
    assert gain == pytest.approx(h(3 / 5, 2 / 5))
    assert scores.best_threshold(np.array([4.0, 4.0]), np.array([0, 1]), 2) is None
    # all thresholds equally useless: the smallest wins
    t2, g2 = scores.best_threshold(np.array([1.0, 2.0, 3.0]), np.array([0, 0, 0]), 2) or (0, 1)
    assert (t2, g2) == (1.5, 0.0)
    # an exact tie that floating point breaks either way: the smaller threshold wins
    x3 = np.array([1.0, 1, 1, 1, 2, 2, 3])
    y3 = np.array([0, 1, 2, 2, 1, 1, 0])
    t3, g3 = scores.best_threshold(x3, y3, 3) or (0.0, 0.0)
    assert t3 == 1.5
    assert g3 == pytest.approx(h(2 / 7, 3 / 7, 2 / 7) - 4 / 7 - 3 / 7 * math.log2(3))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 2)), min_size=1, max_size=60), st.data()
)
def test_best_split_over_a_domain_equals_best_threshold_of_a_subset(
    pairs: list[tuple[int, int]], data: st.DataObject
) -> None:
    values = np.array([p[0] for p in pairs], dtype=np.float64)
    classes = np.array([p[1] for p in pairs])
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs))))
    domain = np.unique(values)
    counts = np.zeros((domain.size, 3), dtype=np.int64)
    np.add.at(counts, (np.searchsorted(domain, values[keep]), classes[keep]), 1)
    assert scores.best_split(domain, counts) == scores.best_threshold(
        values[keep], classes[keep], 3
    )


def test_g_factors_sum_to_one_and_match_formula() -> None:
    g = scores.g_factors({"a": 0.2, "b": 0.3, "c": 0.5})
    assert g == pytest.approx({"a": 0.8 / 2, "b": 0.7 / 2, "c": 0.5 / 2})
    assert sum(g.values()) == pytest.approx(1.0)
    assert scores.g_factors({"a": 0.7}) == {"a": 1.0}
    assert scores.g_factors({"a": 0.0, "b": 0.0}) == {"a": 0.5, "b": 0.5}


def test_quantize_and_plain_argmax() -> None:
    assert quantize(None) == NO_CANDIDATE
    assert quantize(1.0) == SCORE_SCALE
    assert quantize(0.0) == 0
    assert 0 < quantize(5e-324) < quantize(1e-300) < quantize(0.5) < SCORE_SCALE
    with pytest.raises(ValueError, match="not normalized"):
        quantize(1.5)
    assert plain_argmax({0: 5, 1: 7, 2: 7}) == 1
    assert plain_argmax({0: NO_CANDIDATE, 1: NO_CANDIDATE}) is None
    assert plain_argmax({0: NO_CANDIDATE, 1: 0}) == 1
    net = LocalNetwork(["a", "b", "h"], n_providers=2)
    assert net.private is False and net.local_providers == (0, 1)
    net.send(0, b"12345")
    assert net.bytes_sent() == {"a": 5, "b": 0, "h": 0}


def _tiny(tmp_path, score: str):  # type: ignore[no-untyped-def]
    """Six records, a categorical attribute with a 2-level taxonomy, one number."""
    tax = tmp_path / "colour.csv"
    tax.write_text("red;warm;*\norange;warm;*\nblue;cold;*\ngreen;cold;*\n")
    frame = pd.DataFrame(
        {
            "id": ["1", "2", "3", "4", "5", "6"],
            "colour": ["red", "orange", "red", "blue", "green", "blue"],
            "size": ["1", "2", "3", "7", "8", "9"],
            "cls": ["y", "y", "y", "n", "n", "y"],
        }
    )
    data = {
        "fusion": {"class": "cls", "id": "id", "score": score},
        "templates": [{"qid": ["colour", "size"], "k": 2}],
        "taxonomies": {"colour": str(tax), "size": "continuous"},
        "sensitivity": {"default": 4, "values": {"colour": {"red": 1}}},
        "parties": [{"id": "a", "file": "x", "columns": ["colour", "size"], "factor": 1.0}],
    }
    config = config_from_dict(data, tmp_path, min_providers=1)
    state = load_provider(config, 0, frame)
    cut = SharedCut(6, ("colour", "size"), state.templates, {"colour": "*", "size": "*"})
    state.attach(cut)
    return state


def test_first_round_candidates_by_hand(tmp_path) -> None:  # type: ignore[no-untyped-def]
    state = _tiny(tmp_path, "tds")
    colour = state.candidates[("colour", 0)]
    # warm = {red, orange, red}: 3 y; cold = {blue, green, blue}: 1 y 2 n
    parent = h(4 / 6, 2 / 6)
    gain = parent - 0.5 * 0.0 - 0.5 * h(1 / 3, 2 / 3)
    assert colour.child_labels == ("warm", "cold")
    assert colour.gain == pytest.approx(gain)
    assert colour.ratio == pytest.approx(gain / 1.0)
    # s(v): leaf levels red 1, orange/blue/green 4 -> sum 13
    assert colour.s == pytest.approx(13.0)
    size = state.candidates[("size", 0)]
    # values 1,2,3 (y y y) | 7,8,9 (n n y): best split at 5
    assert size.child_labels == ("[1, 5)", "[5, 9]")
    assert size.gain == pytest.approx(gain)
    # both would leave groups of 3 (k = 2): valid; AnonyLoss = 6 - 3 = 3
    q = state.score_round()
    assert q == quantize(gain / (3 + 1) / 1.0)
    assert state.best is colour  # tie: the first attribute wins


def test_sensitivity_score_by_hand(tmp_path) -> None:  # type: ignore[no-untyped-def]
    state = _tiny(tmp_path, "sensitivity")
    gains = state.attribute_gains()
    # raw colour: red 2y, orange 1y, blue 1y 1n, green 1n
    parent = h(4 / 6, 2 / 6)
    assert gains["colour"] == pytest.approx(parent - (2 / 6) * h(0.5, 0.5))
    state.g = scores.g_factors(gains)
    q = state.score_round()
    colour, size = state.candidates[("colour", 0)], state.candidates[("size", 0)]
    s_colour = colour.ratio * 1.0 * state.g["colour"] * 13
    s_size = size.ratio * 1.0 * state.g["size"] * (4 * 6)  # 6 distinct values at level 4
    bound = 5.0 * 6
    assert q == quantize(max(s_colour, s_size) / bound)


@given(st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=1.0))
@settings(max_examples=300, deadline=None)
def test_quantize_keeps_order_and_tells_close_scores_apart(a: float, b: float) -> None:
    qa, qb = quantize(a), quantize(b)
    assert 0 <= qa <= SCORE_SCALE
    if a < b:
        assert qa <= qb
    if a > 0 and b > a * (1 + 1e-8):  # a relative difference of 1e-8 survives at any size
        assert qa < qb
