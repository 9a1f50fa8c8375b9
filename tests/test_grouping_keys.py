"""The one mixed-radix key packer: packing and unpacking give back the codes, in key order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from anonlab.grouping import pack_codes, unpack_codes


@settings(max_examples=50, deadline=None)
@given(
    radix=st.lists(st.integers(1, 50), min_size=1, max_size=6),
    rows=st.integers(0, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_unpack_gives_back_what_pack_packed(radix: list[int], rows: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    columns = [rng.integers(0, size, rows, dtype=np.int64) for size in radix]
    keys = pack_codes(columns, radix)
    assert all(
        np.array_equal(a, b) for a, b in zip(unpack_codes(keys, radix), columns, strict=True)
    )
    # the key orders rows as their code tuples do (lexicographically, first column first)
    order = np.lexsort(columns[::-1])
    assert np.all(np.diff(keys[order]) >= 0)
