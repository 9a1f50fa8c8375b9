"""Choosing a search: optimal or heuristic, with the heuristic's limits (ARX 3.9's options).

ARX 3.9 (``ARXConfiguration``) offers its optimal search (FLASH) and best-effort searches
(``BEST_EFFORT_BOTTOM_UP``: Lightning, ``BEST_EFFORT_TOP_DOWN``, ``BEST_EFFORT_GENETIC``),
the latter bounded by ``heuristicSearchTimeLimit`` (default 30,000 ms) and
``heuristicSearchStepLimit`` (node checks, default unlimited). Its
``heuristicSearchThreshold`` (default 100,000 nodes) is the largest lattice its optimal
search accepts (``ARXAnonymizer.getAlgorithm`` refuses a larger one). anonlab's ``auto``
turns that threshold into a choice: the optimal ``flash`` search up to the threshold,
Lightning above it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from anonlab.errors import AnonlabError
from anonlab.lattice import HEURISTICS, STRATEGIES
from anonlab.lattice.genetic import GeneticSettings
from anonlab.lattice.heuristic import DEFAULT_THRESHOLD, DEFAULT_TIME_LIMIT, HeuristicLimits
from anonlab.lattice.search import SearchContext, SearchResult

#: the search names: the optimal strategies, the heuristics and ``auto``
SEARCHES = (*STRATEGIES, *HEURISTICS, "auto")
#: the search ``auto`` runs above the threshold
AUTO_HEURISTIC = "lightning"
AUTO_OPTIMAL = "flash"


@dataclass(frozen=True)
class SearchPlan:
    """A validated choice of search (see :func:`plan_search`)."""

    search: str
    limits: HeuristicLimits = field(default_factory=HeuristicLimits)
    threshold: int = DEFAULT_THRESHOLD
    genetic: GeneticSettings = field(default_factory=GeneticSettings)

    def strategy(self, lattice_size: int) -> str:
        """The search run on a lattice of this size (``auto`` resolved)."""
        if self.search != "auto":
            return self.search
        return AUTO_OPTIMAL if lattice_size <= self.threshold else AUTO_HEURISTIC

    def heuristic(self, lattice_size: int) -> bool:
        """Whether the search run on a lattice of this size is a heuristic one."""
        return self.strategy(lattice_size) in HEURISTICS

    def run(self, ctx: SearchContext) -> SearchResult:
        """Run the chosen search on a context (sparse for a heuristic)."""
        name = self.strategy(ctx.lattice.size)
        if name in HEURISTICS:
            return HEURISTICS[name](ctx, self.limits, self.genetic)
        return STRATEGIES[name](ctx)


def plan_search(
    search: str = "flash",
    *,
    time_limit: float | None = None,
    step_limit: int | None = None,
    heuristic_threshold: int | None = None,
    genetic: GeneticSettings | Mapping[str, Any] | None = None,
) -> SearchPlan:
    """Check a search name and its options.

    ``time_limit`` (seconds, default ARX's 30; ``math.inf`` for none) and ``step_limit``
    (node checks, default none) bound a heuristic search (``lightning``, ``top-down``,
    ``genetic``, or ``auto`` above its threshold); ``heuristic_threshold`` (nodes, default
    ARX's 100,000) applies to ``auto``; ``genetic`` (:class:`GeneticSettings` or a dict of
    its fields) to ``genetic``. An option given to a search it does not apply to is an error.
    """
    if search not in SEARCHES:
        raise AnonlabError(
            f"search '{search}' is unknown: choose one of {', '.join(SEARCHES)}", parameter="search"
        )
    optimal = search in STRATEGIES
    for name, value in (("time_limit", time_limit), ("step_limit", step_limit)):
        if value is not None and optimal:
            raise AnonlabError(
                f"{name} bounds the heuristic searches ({', '.join(HEURISTICS)}, or auto), not "
                f"the optimal search '{search}', which always runs to the end: leave it out or "
                "choose a heuristic search",
                parameter=name,
            )
    if heuristic_threshold is not None and search != "auto":
        raise AnonlabError(
            f"heuristic_threshold chooses between the optimal and the heuristic search for "
            f"search 'auto', not for '{search}': leave it out or use search 'auto'",
            parameter="heuristic_threshold",
        )
    if genetic is not None and search != "genetic":
        raise AnonlabError(
            f"the genetic settings apply to search 'genetic', not to '{search}': "
            "leave them out or use search 'genetic'",
            parameter="genetic",
        )
    if heuristic_threshold is not None and (
        isinstance(heuristic_threshold, bool) or heuristic_threshold < 1
    ):
        raise AnonlabError(
            f"heuristic_threshold must be a number of nodes of 1 or more "
            f"(got {heuristic_threshold})",
            parameter="heuristic_threshold",
        )
    if time_limit is not None and isinstance(time_limit, bool):
        raise AnonlabError("time_limit must be a number of seconds", parameter="time_limit")
    seconds: float | None = DEFAULT_TIME_LIMIT if time_limit is None else time_limit
    if seconds is not None and math.isinf(seconds) and seconds > 0:
        seconds = None
    if isinstance(genetic, Mapping):
        unknown = sorted(set(genetic) - set(GeneticSettings.__dataclass_fields__))
        if unknown:
            raise AnonlabError(
                f"unknown genetic setting(s) {', '.join(unknown)}: use "
                f"{', '.join(GeneticSettings.__dataclass_fields__)}",
                parameter="genetic",
            )
        genetic = GeneticSettings(**genetic)
    return SearchPlan(
        search=search,
        limits=HeuristicLimits(seconds, step_limit),
        threshold=DEFAULT_THRESHOLD if heuristic_threshold is None else heuristic_threshold,
        genetic=genetic if genetic is not None else GeneticSettings(),
    )
