"""Cell suppression: sdcMicro's ``localSuppression``/``kAnon`` (docs/suppression.md).

:func:`suppress` blanks single key cells until every combination of the keys is
k-anonymous, a blank matching every value (sdcMicro's ``alpha``); the method works on
the table's frequency set of key tuples (:mod:`anonlab.suppression.local`).
"""

from __future__ import annotations

from anonlab.suppression.method import DEFAULT_ALPHA, SuppressionResult, suppress

__all__ = ["DEFAULT_ALPHA", "SuppressionResult", "suppress"]
