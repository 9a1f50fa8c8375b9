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

import numpy as np

from anonlab.errors import AnonlabError


class Criterion(ABC):
    """A privacy model checked on equivalence-class counts."""

    monotone: bool = True

    @abstractmethod
    def outliers(self, counts: np.ndarray) -> np.ndarray:
        """Boolean mask of the classes that violate the criterion (to be suppressed)."""

    @abstractmethod
    def describe(self) -> dict[str, object]:
        """The criterion's parameters, for reports."""


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
        if self.k < 1:
            raise AnonlabError(f"k must be at least 1 (got {self.k}): use e.g. --k 5")

    def outliers(self, counts: np.ndarray) -> np.ndarray:
        """Classes with fewer than ``k`` records."""
        return counts < self.k

    def describe(self) -> dict[str, object]:
        """``{"model": "k-anonymity", "k": k}``."""
        return {"model": "k-anonymity", "k": self.k}


def max_suppressed(limit: float, n: int) -> int:
    """Largest number of records a suppression limit (fraction of ``n``) allows."""
    if not 0.0 <= limit <= 1.0 or math.isnan(limit):
        raise AnonlabError(
            f"suppression limit {limit} is outside [0, 1]: give a fraction, e.g. --suppression 0.01"
        )
    return math.floor(limit * n + 1e-9)


def check_k(k: int, n: int) -> None:
    """Reject k < 1 or k larger than the number of records."""
    if k < 1:
        raise AnonlabError(f"k must be at least 1 (got {k}): use e.g. --k 5")
    if k > n:
        raise AnonlabError(
            f"k = {k} is larger than the table's {n} records: choose k <= {n}"
        )
