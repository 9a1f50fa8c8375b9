"""The library's own invariants fail as TypeError naming what broke, never as assert."""

from __future__ import annotations

import pytest

from anonlab.errors import expect_type, present


def test_present_returns_a_set_value_and_names_a_missing_one() -> None:
    assert present(0, "the count") == 0
    with pytest.raises(TypeError, match=r"^the shared cut is not set$"):
        present(None, "the shared cut")


def test_expect_type_returns_the_value_and_names_the_wrong_type() -> None:
    assert expect_type(3, int, "the seed") == 3
    with pytest.raises(TypeError, match=r"^the seed is a str, not a int$"):
        expect_type("3", int, "the seed")
