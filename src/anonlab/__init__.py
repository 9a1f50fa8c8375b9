"""anonlab: privacy-preserving data publishing.

Generalization over hierarchies (k-anonymity with optimal lattice search),
microaggregation with the EM4ADOM quality model, multi-party fusion by top-down
specialization, and distance-preserving perturbation for clustering.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
