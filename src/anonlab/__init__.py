"""anonlab: privacy-preserving data publishing.

Generalization over hierarchies (k-anonymity with optimal lattice search),
microaggregation with the EM4ADOM quality model, multi-party fusion by top-down
specialization, and distance-preserving perturbation for clustering.

Public names are imported lazily, so ``import anonlab`` stays cheap and a
method family's dependencies load only when that family is used.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "AnonlabError": "anonlab.errors",
    "Role": "anonlab.dataset",
    "Dataset": "anonlab.dataset",
    "Hierarchy": "anonlab.hierarchy",
    "interval_hierarchy": "anonlab.hierarchy",
    "redaction_hierarchy": "anonlab.hierarchy",
    "grouping_hierarchy": "anonlab.hierarchy",
    "KAnonymity": "anonlab.privacy",
    "Generalizer": "anonlab.generalize",
    "GeneralizationResult": "anonlab.generalize",
    "anonymize": "anonlab.generalize",
    "apply_transformation": "anonlab.generalize",
    "check_k_anonymity": "anonlab.checker",
    "check_generalization": "anonlab.checker",
    "read_table": "anonlab.io",
    "write_table": "anonlab.io",
}

__all__ = [
    "AnonlabError",
    "Dataset",
    "GeneralizationResult",
    "Generalizer",
    "Hierarchy",
    "KAnonymity",
    "Role",
    "__version__",
    "anonymize",
    "apply_transformation",
    "check_generalization",
    "check_k_anonymity",
    "grouping_hierarchy",
    "interval_hierarchy",
    "read_table",
    "redaction_hierarchy",
    "write_table",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'anonlab' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
