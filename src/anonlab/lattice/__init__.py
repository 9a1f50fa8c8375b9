"""The generalization lattice, frequency sets and the search strategies."""

from __future__ import annotations

from collections.abc import Callable

from anonlab.lattice.degree import degree_product_search
from anonlab.lattice.exhaustive import exhaustive_search
from anonlab.lattice.flash import flash_search
from anonlab.lattice.ola import ola_search
from anonlab.lattice.search import SearchContext, SearchResult, sensitive_attributes

#: strategy name (the ``--search`` value) -> search function
STRATEGIES: dict[str, Callable[[SearchContext], SearchResult]] = {
    "exhaustive": exhaustive_search,
    "ola": ola_search,
    "degree": degree_product_search,
    "flash": flash_search,
}

__all__ = ["STRATEGIES", "SearchContext", "SearchResult", "sensitive_attributes"]
