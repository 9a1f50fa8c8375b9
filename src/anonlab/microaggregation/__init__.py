"""Microaggregation: MDAV (exact, mixed-type and a block variant for large tables)."""

from anonlab.microaggregation.masking import MicroaggregationResult, microaggregate
from anonlab.microaggregation.mdav import mdav_labels
from anonlab.microaggregation.scalable import scalable_mdav_labels

__all__ = ["MicroaggregationResult", "mdav_labels", "microaggregate", "scalable_mdav_labels"]
