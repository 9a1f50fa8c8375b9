"""Privacy criteria evaluated on a node's frequency set.

A criterion says whether a node's equivalence classes satisfy it (after
suppressing the records the suppression limit allows), and declares whether
it is *monotone* over the lattice (if a node satisfies it, so does every
generalization of it), which is what predictive tagging relies on. New
criteria (l-diversity, t-closeness, several QI templates) implement the same
interface.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from numpy.typing import NDArray

from anonlab.errors import AnonlabError


class Criterion(ABC):
    """A privacy model checked on equivalence-class counts."""

    monotone: bool = True

    @abstractmethod
    def outliers(self, counts: NDArray[Any]) -> NDArray[Any]:
        """Boolean mask of the classes that violate the criterion (to be suppressed)."""


@dataclass(frozen=True)
class KAnonymity(Criterion):
    """k-anonymity (Samarati and Sweeney 1998): every class has at least ``k`` records.

    Records in smaller classes are suppressed; with a suppression limit of
    ``s`` (a fraction of the ``n`` records), a node is acceptable when at most
    ``floor(s * n)`` records need suppressing. Monotone: generalizing merges
    classes, so a record in a class of size >= k stays in one.
    """

    k: int
    monotone = True

    def __post_init__(self) -> None:
        check_k(self.k)

    def outliers(self, counts: NDArray[Any]) -> NDArray[Any]:
        """Classes with fewer than ``k`` records."""
        return counts < self.k


def check_suppression(limit: float) -> None:
    """Reject a suppression limit outside [0, 1) (or NaN): 1 would be 100 %, never meant."""
    if not 0.0 <= limit < 1.0 or math.isnan(limit):
        raise AnonlabError(
            f"suppression must be a fraction below 1 or a percentage such as '1%' (got "
            f"{limit:g}): write 0.01 or 1%", parameter="suppression")


def max_suppressed(limit: float, n: int) -> int:
    """Largest number of records a suppression limit allows: ``floor(limit * n)``."""
    check_suppression(limit)
    return math.floor(limit * n + 1e-9)


def check_k(k: int, n: int | None = None) -> None:
    """Reject k < 1, or k larger than the number of records ``n`` when it is given."""
    if k < 1:
        raise AnonlabError(f"k must be at least 1 (got {k}): choose e.g. 5", parameter="k")
    if n is not None and k > n:
        raise AnonlabError(f"k = {k} is larger than the table's {n} records: choose k <= {n}",
                           parameter="k")
