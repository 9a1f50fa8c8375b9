"""Independent checks of releases, one per method family, and the report dispatcher.

Each checker re-derives what the release must be from the original table and
the published parameters with plain pandas and NumPy, and shares no code with
the method that made the release (no import of the lattice, generalization,
microaggregation, perturbation or fusion engines), so that a bug in a method
cannot hide itself. Each returns a list of findings, one line each, naming
the class, group, pair or column that fails; an empty list means the release
holds.

* :func:`check_k_anonymity`, :func:`check_generalization`: generalization;
* :func:`check_microaggregation`: group sizes, means, modes and lower medians;
* :func:`check_perturbation`: distances and undoing with the key;
* :func:`check_fusion`: every anonymity template of a fused table;
* :func:`verify_report`: any of these for a release on disk, from its JSON report.

See ``docs/verify.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as they are, for type checkers
    from anonlab.verify.fusion import check_fusion
    from anonlab.verify.generalization import check_generalization, check_k_anonymity
    from anonlab.verify.microaggregation import check_microaggregation
    from anonlab.verify.perturbation import check_perturbation
    from anonlab.verify.report import VerifyResult, verify_report

# imported on first use: a run loads its own family's checker only
_EXPORTS = {
    "VerifyResult": "anonlab.verify.report",
    "check_fusion": "anonlab.verify.fusion",
    "check_generalization": "anonlab.verify.generalization",
    "check_k_anonymity": "anonlab.verify.generalization",
    "check_microaggregation": "anonlab.verify.microaggregation",
    "check_perturbation": "anonlab.verify.perturbation",
    "verify_report": "anonlab.verify.report",
}

__all__ = [
    "VerifyResult",
    "check_fusion",
    "check_generalization",
    "check_k_anonymity",
    "check_microaggregation",
    "check_perturbation",
    "verify_report",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'anonlab.verify' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
