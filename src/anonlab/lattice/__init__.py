"""The generalization lattice, frequency sets and the search strategies."""

from __future__ import annotations

from collections.abc import Callable

from anonlab.lattice.degree import degree_product_search
from anonlab.lattice.descent import descent_search
from anonlab.lattice.exhaustive import exhaustive_search
from anonlab.lattice.flash import flash_search
from anonlab.lattice.genetic import GeneticSettings, genetic_search
from anonlab.lattice.heuristic import HeuristicLimits
from anonlab.lattice.lightning import lightning_search, top_down_search
from anonlab.lattice.ola import ola_search
from anonlab.lattice.search import SearchContext, SearchResult, sensitive_attributes

#: strategy name (the ``--search`` value) -> search function
STRATEGIES: dict[str, Callable[[SearchContext], SearchResult]] = {
    "exhaustive": exhaustive_search,
    "ola": ola_search,
    "degree": degree_product_search,
    "flash": flash_search,
}

#: heuristic (best-effort) search name -> search function (any lattice size; see
#: :mod:`anonlab.lattice.heuristic`)
HEURISTICS: dict[str, Callable[[SearchContext, HeuristicLimits, GeneticSettings], SearchResult]] = {
    "lightning": lambda ctx, limits, _: lightning_search(ctx, limits),
    "top-down": lambda ctx, limits, _: top_down_search(ctx, limits),
    "genetic": genetic_search,
    "descent": lambda ctx, limits, _: descent_search(ctx, limits),
}

__all__ = [
    "HEURISTICS",
    "STRATEGIES",
    "GeneticSettings",
    "HeuristicLimits",
    "SearchContext",
    "SearchResult",
    "sensitive_attributes",
]
