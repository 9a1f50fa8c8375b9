"""Review findings on the fusion engine: each test failed before its fix."""

from __future__ import annotations

import numpy as np

from anonlab.fusion.messages import Instructions, decode_instructions, encode_instructions
from anonlab.fusion.taxonomy import build_taxonomy
from anonlab.hierarchy import Hierarchy


def test_sibling_labels_stay_distinct_when_a_leaf_is_named_like_a_group() -> None:
    # leaf 'X' is alone in group 'Y' (a chain collapsed to its leaf) while 'X' is also
    # the group of a and b: the two children of the root must not both read 'X'
    tax = build_taxonomy(Hierarchy.from_rows([["a", "X", "*"], ["b", "X", "*"],
                                              ["X", "Y", "*"]]), "t")
    kids = [tax.labels[c] for c in tax.children[0]]
    assert sorted(kids) == ["X", "Y"]
    # the networked parties accept the instructions the engine builds from them
    instr = Instructions("t", 0, "*", tuple(kids), (np.array([0, 1]), np.array([2])))
    assert decode_instructions(encode_instructions(instr)).children == tuple(kids)
    # the collapsed chain still covers leaf 'X' alone
    y = tax.children[0][kids.index("Y")]
    assert tax.leaf_count(y) == 1 and not tax.children[y]
