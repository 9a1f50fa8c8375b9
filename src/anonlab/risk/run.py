"""The ``risk`` run: measure any table (another tool's release too) and write its JSON report.

:func:`run_risk` reads the table, measures it with
:func:`~anonlab.risk.measure.measure_risk`, issues a
:class:`~anonlab.errors.ReleaseRiskWarning` for each of
:func:`~anonlab.risk.measure.risk_warnings`, and writes the report through
:class:`~anonlab.outputs.Outputs` (nothing is written when anything fails).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from anonlab.errors import AnonlabError
from anonlab.io import PathLike
from anonlab.outputs import Outputs
from anonlab.risk.measure import (
    DEFAULT_MAX_RISK,
    DEFAULT_THRESHOLDS,
    measure_risk,
    warn_release_risk,
)
from anonlab.runs.common import RunResult, paths_convention, stage_report, stored_path

KNOWLEDGE_DEFAULT = "every column that is not sensitive and not the weights"
KNOWLEDGE_GIVEN = "the columns given as attacker_columns"


def default_attacker_columns(
    columns: Sequence[str], sensitive: Sequence[str], weights: str | None
) -> list[str]:
    """What the attacker knows by default: every column but the sensitive ones and the weights."""
    return [c for c in columns if c not in sensitive and c != weights]


def _check_qi(columns: Sequence[str], qi: Sequence[str], sensitive: Sequence[str]) -> None:
    """Quasi-identifiers exist, are named once, and are not sensitive."""
    if not qi:
        raise AnonlabError("qi is empty: name the quasi-identifiers, e.g. qi=['age', 'sex']",
                           parameter="qi")
    missing = [c for c in qi if c not in columns]
    if missing:
        raise AnonlabError(f"qi names columns the table does not have: {', '.join(missing)} "
                           f"(its columns are: {', '.join(columns)})", parameter="qi")
    both = [c for c in qi if c in sensitive]
    if both:
        raise AnonlabError(f"qi and sensitive both name {', '.join(both)}: give each column one "
                           "role", parameter="qi")


def run_risk(
    table: PathLike,
    qi: Sequence[str],
    *,
    attacker_columns: Sequence[str] | None = None,
    sensitive: Sequence[str] = (),
    weights: str | None = None,
    population_size: float | None = None,
    sampling_fraction: float | None = None,
    thresholds: Sequence[float] = (),
    hierarchies: Mapping[str, PathLike] | None = None,
    max_risk: float = DEFAULT_MAX_RISK,
    delimiter: str | None = None,
    report: PathLike | None = None,
) -> RunResult:
    """Measure the re-identification risk of ``table`` and write the JSON ``report`` if asked.

    ``thresholds`` are added to the default 0.2, 0.1 and 0.05. Without
    ``attacker_columns`` the attacker knows every column that is neither
    sensitive nor the weights; the report says which. Returns the report; a
    :class:`~anonlab.errors.ReleaseRiskWarning` is issued for each warning.
    """
    from anonlab.io import read_table
    from anonlab.report import report_header

    started = time.perf_counter()
    report_path = Path(report) if report is not None else None
    trees = {str(c): Path(p) for c, p in (hierarchies or {}).items()}
    with Outputs({"report": report_path}, inputs=[table, *trees.values()]) as outputs:
        frame = read_table(table, delimiter=delimiter)
        columns = [str(c) for c in frame.columns]
        _check_qi(columns, qi, sensitive)
        given = bool(attacker_columns)
        attacker = (list(attacker_columns or ()) if given
                    else default_attacker_columns(columns, sensitive, weights))
        levels = [*DEFAULT_THRESHOLDS, *thresholds]
        section = measure_risk(frame, attacker, sensitive=sensitive, weights=weights,
                               population_size=population_size,
                               sampling_fraction=sampling_fraction, thresholds=levels,
                               hierarchies=trees)
        messages = warn_release_risk(section, max_risk, stacklevel=2)
        params: dict[str, Any] = {
            "table": stored_path(table, report_path),
            "qi": list(qi),
            "attacker_columns": attacker if given else None,
            "sensitive": list(sensitive),
            "weights": weights,
            "population_size": population_size,
            "sampling_fraction": sampling_fraction,
            "thresholds": [float(t) for t in thresholds],
            "hierarchies": {c: stored_path(p, report_path) for c, p in trees.items()},
            "max_risk": max_risk,
            "delimiter": delimiter,
            "report": stored_path(report_path, report_path),
        }
        inputs: dict[str, PathLike | None] = {"data": table,
                                              **{f"hierarchy:{c}": p for c, p in trees.items()}}
        result = report_header("risk", params, inputs)
        result["paths"] = paths_convention(report_path)
        result["roles"] = {
            "quasi_identifying": list(qi),
            "sensitive": list(sensitive),
            "weights": weights,
            "other": [c for c in columns
                      if c not in qi and c not in sensitive and c != weights],
        }
        result["attacker_knowledge"] = KNOWLEDGE_GIVEN if given else KNOWLEDGE_DEFAULT
        result["risk"] = section
        result["warnings"] = messages
        result["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, result)
        written = outputs.commit()
    return RunResult(report=result, written=written)
