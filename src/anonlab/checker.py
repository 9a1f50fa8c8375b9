"""The independent checker of generalized releases (now :mod:`anonlab.verify.generalization`).

Kept so that ``from anonlab.checker import check_k_anonymity`` goes on working.
"""

from __future__ import annotations

from anonlab.verify.generalization import check_generalization, check_k_anonymity

__all__ = ["check_generalization", "check_k_anonymity"]
