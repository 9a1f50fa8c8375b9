"""Re-identification risk of any table, against the columns an attacker is assumed to know.

``measure_risk(frame, attacker_columns, ...)`` returns the ``risk`` section
every report carries; ``risk_warnings(section)`` lists what should stop a
release. Definitions follow ARX 3.9 and sdcMicro 5.8 (see ``docs/risk.md``).
"""

from __future__ import annotations

from anonlab.risk.classes import Classes, equivalence_classes, size_distribution
from anonlab.risk.measure import (
    DEFAULT_MAX_RISK,
    DEFAULT_THRESHOLDS,
    measure_risk,
    risk_warnings,
    warn_release_risk,
)

__all__ = [
    "DEFAULT_MAX_RISK",
    "DEFAULT_THRESHOLDS",
    "Classes",
    "equivalence_classes",
    "measure_risk",
    "risk_warnings",
    "size_distribution",
    "warn_release_risk",
]
