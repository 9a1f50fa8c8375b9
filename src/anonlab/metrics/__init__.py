"""Quality of masked data: the EM4ADOM information-loss, risk and trade-off measures.

Names are imported on first use, so that importing one light module (the
trade-off constants, say) does not load the record-linkage machinery
(SciPy's k-d tree) with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as they are, for type checkers
    from anonlab.metrics.em4adom import Evaluation
    from anonlab.metrics.evaluation import evaluate
    from anonlab.metrics.tradeoff import disclosure_risk, score

_EXPORTS = {
    "Evaluation": "anonlab.metrics.em4adom",
    "evaluate": "anonlab.metrics.evaluation",
    "disclosure_risk": "anonlab.metrics.tradeoff",
    "score": "anonlab.metrics.tradeoff",
}

__all__ = ["Evaluation", "disclosure_risk", "evaluate", "score"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'anonlab.metrics' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
