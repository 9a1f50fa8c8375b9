"""The masking family: sdcMicro's masking methods (docs/masking.md).

:func:`mask` applies one method, chosen by name from :mod:`anonlab.masking.registry`
(``pram``, ``topbot``, ``recode`` and the numeric methods registered there), to a
table in memory; :func:`anonlab.runs.mask.run_mask` is the run with roles, the
independent check, measures, risk and outputs.
"""

from __future__ import annotations

from anonlab.masking.method import MaskResult, mask
from anonlab.masking.registry import MaskingMethod, get_method, method_names

__all__ = ["MaskResult", "MaskingMethod", "get_method", "mask", "method_names"]
