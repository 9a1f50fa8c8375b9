"""The privacy-criterion interface and the checks every criterion shares.

A node of the lattice is judged on its equivalence classes (:class:`ClassStats`):
their sizes, per-class histograms of each sensitive attribute, and, when a
population table or research subset is given, the population count of each
class. A *class-based* criterion marks the classes that violate it; ARX 3.9
suppresses those classes, and the node is acceptable when at most the
suppression limit's records are suppressed (ARX's ``HashGroupify.analyzeAll``).
A *sample-based* criterion (the risk thresholds) then judges the classes that
remain as a whole and may suppress further classes (:meth:`Criterion.enforce`).

Each criterion declares, as ARX does, whether it is monotone over the lattice
(if a node satisfies it, so does every generalization of it) when no record may
be suppressed (``monotone_with_generalization``) and when records may be
(``monotone_with_suppression``). The searches tag nodes predictively only where
that holds.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.parameters import check_k

if TYPE_CHECKING:
    from anonlab.dataset import Dataset


@dataclass(frozen=True)
class SensitiveHistograms:
    """Per-class histograms of one sensitive attribute, as sparse (class, value, count) triples.

    Triples are sorted by class, then value code; only non-zero counts are
    kept. ``values`` index the attribute's dictionary
    (:class:`anonlab.dataset.EncodedSensitive`), ``global_counts`` is the
    attribute's histogram over all records of the table (released or not),
    the reference distribution of t-closeness, beta-likeness and
    delta-disclosure in ARX.
    """

    classes: NDArray[Any]  # (pairs,) int64 class of each triple
    values: NDArray[Any]  # (pairs,) int64 value code
    counts: NDArray[Any]  # (pairs,) int64 records of the class with the value
    global_counts: NDArray[Any]  # (values,) int64 records with each value in the table

    def dense(self, n_classes: int) -> NDArray[Any]:
        """The (classes, values) count matrix (for small attributes and for tests)."""
        out = np.zeros((n_classes, self.global_counts.shape[0]), dtype=np.int64)
        out[self.classes, self.values] = self.counts
        return out


@dataclass(frozen=True)
class ClassStats:
    """What a criterion sees of one node: its classes and their contents.

    ``counts`` are the records of each class in the table to release.
    ``population`` (when a population table or research subset is given: the
    delta-presence and population k-map models) counts each class in the
    population; a class may then have ``counts == 0`` (population records
    only). Such classes are not part of the release: every criterion and
    metric except the presence models must ignore them.
    """

    levels: tuple[int, ...]
    counts: NDArray[Any]  # (classes,) int64
    sensitive: Mapping[str, SensitiveHistograms] = field(default_factory=dict)
    population: NDArray[Any] | None = None  # (classes,) int64
    #: ARX's order among classes of equal size when a sample-based criterion
    #: suppresses classes (:func:`suppression_order`); ``None``: class order
    order: NDArray[Any] | None = None  # (classes,) int64 rank, smaller first
    #: classes whose every quasi-identifier holds ``*`` at this node (ARX's
    #: ``HashGroupify.isCompletelyGeneralized``): the risk models leave them out
    completely_generalized: NDArray[Any] | None = None  # (classes,) bool; None: none
    #: (classes, m) group code of each class in each quasi-identifier at ``levels``, given
    #: only to criteria that read the classes' values (``needs_codes``: the profitability
    #: models' information loss); ``None`` otherwise
    codes: NDArray[Any] | None = None

    @property
    def classes(self) -> int:
        """Number of classes."""
        return int(self.counts.shape[0])

    @property
    def n(self) -> int:
        """Records in the table to release."""
        return int(self.counts.sum())


def suppression_order(
    representatives: NDArray[Any], class_loss: NDArray[Any] | None = None
) -> NDArray[Any]:
    """:attr:`ClassStats.order` as ARX 3.9 builds it (``HashGroupifyDistribution``).

    A sample-based criterion suppresses released classes by increasing size;
    ARX breaks ties by the quality model's loss of each class, unless the
    model is one whose per-class loss only restates the class size (ARX
    leaves out height, precision, the entropy measures, static, AECS and
    discernibility: pass ``class_loss=None`` for those), then by the class's
    *representative*, its first record (smallest row index) in the table to
    release. ``class_loss`` is ``(classes,)`` or, for a vector compared
    lexicographically, ``(classes, d)``. Returns each class's rank.
    """
    keys: list[NDArray[Any]] = [np.asarray(representatives)]
    if class_loss is not None:
        loss = np.asarray(class_loss, dtype=np.float64)
        columns = [loss] if loss.ndim == 1 else [loss[:, j] for j in range(loss.shape[1])]
        keys.extend(reversed(columns))  # np.lexsort sorts by its last key first
    order = np.lexsort(tuple(keys))
    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0], dtype=np.int64)
    return rank


class Criterion(ABC):
    """A privacy model checked on a node's classes.

    Class-based criteria implement :meth:`outliers`; sample-based ones set
    ``sample_based = True`` and implement :meth:`enforce`. ``attribute`` names
    the sensitive attribute a criterion protects (``None`` for the others);
    ``name`` is the model's name in settings and reports.
    """

    name: str = ""
    attribute: str | None = None
    monotone_with_generalization: bool = True
    monotone_with_suppression: bool = True
    sample_based: bool = False
    needs_population: bool = False
    #: whether :meth:`acceptable` alone, which then must not read the outliers, is monotone
    #: with generalization whatever the suppression (delta-presence's: a class of population
    #: records only splits into such classes below a node and merges away above it); the
    #: search then keeps that condition in a non-monotone model's monotone sub-model
    condition_monotone: bool = False

    def monotone(self, suppression_allowed: bool) -> bool:
        """ARX's rule (``ARXConfiguration.getMonotonicityOfPrivacy``): monotone with
        generalization, and also with suppression if records may be suppressed."""
        if suppression_allowed:
            return self.monotone_with_suppression and self.monotone_with_generalization
        return self.monotone_with_generalization

    def bind(self, dataset: Dataset) -> None:
        """Take what the criterion needs from the data, once before the search, and check its
        parameters against it (e.g. ``l`` above the attribute's distinct values); the default
        needs nothing."""
        return None

    @abstractmethod
    def parameters(self) -> dict[str, Any]:
        """The model's parameters as the settings spell them (for the report)."""

    def outliers(self, stats: ClassStats) -> NDArray[Any]:
        """Boolean mask of the classes that violate the criterion (class-based criteria)."""
        return np.zeros(stats.classes, dtype=bool)

    def enforce(self, stats: ClassStats, outliers: NDArray[Any], limit: int) -> NDArray[Any]:
        """Sample-based criteria: the outlier mask after suppressing what the criterion needs.

        ``outliers`` are the classes the class-based criteria suppress already;
        ``limit`` is the most records that may be suppressed (a criterion may
        stop early once it is exceeded). Class-based criteria return
        ``outliers`` unchanged.
        """
        return outliers

    def acceptable(self, stats: ClassStats, outliers: NDArray[Any]) -> bool:
        """Whether the node as a whole may be released, beyond the suppression limit.

        Default ``True``. The presence models override it: in ARX a class of
        population records only (``counts == 0``) that violates delta-presence
        cannot be suppressed, so the whole node fails (``HashGroupify.analyzeAll``).
        The search calls it after the outliers are known; a monotone criterion's
        answer must not turn from ``False`` to ``True`` when more classes are
        suppressed.
        """
        return True

    def minimal_class_size(self) -> int | None:
        """A size every released class must reach, if the criterion implies one (ARX's
        ``getMinimalClassSize``), else ``None``.

        A class-based criterion may declare it only if every class with fewer
        records is one of its outliers (k for k-anonymity, ``ceil(l)`` for the
        l-diversity models). The search then uses k-anonymity with the largest
        such size as a monotone part of a non-monotone model.
        """
        return None

    def implied_class_size(self, bottom: ClassStats) -> int:
        """The fewest records a class needs to have any chance of satisfying the criterion
        (1: no bound known), given the bottom node's classes ``bottom`` (the table's
        distributions).

        Every class with at least one record and fewer than this is an outlier of
        the criterion, whatever its contents. Unlike :meth:`minimal_class_size`
        (ARX's, which ARX applies as outliers of the whole model), it never
        changes a node's outliers: the search only adds it to the model's
        monotone sub-model, to prune (see :mod:`anonlab.privacy.smallest`). The
        default is the minimal class size.
        """
        return self.minimal_class_size() or 1

    def monotone_part(self, bottom: ClassStats) -> Criterion | None:
        """A monotone class-based criterion whose outliers are always outliers of this one
        (a necessary condition), given the bottom node's classes, or ``None``.

        Like :meth:`implied_class_size`, it never changes a node's outliers: the
        search adds it to a non-monotone model's monotone sub-model, to prune.
        The default has none.
        """
        return None

    def holds(self, stats: ClassStats, outliers: NDArray[Any]) -> bool:
        """Whether the released classes (not ``outliers``) satisfy the criterion as a whole.

        Class-based criteria hold when no released class violates them;
        sample-based ones override this with their risk condition.
        """
        released = ~outliers & (stats.counts > 0)
        return not bool(np.any(self.outliers(stats)[released]))

    def achieved(self, stats: ClassStats, outliers: NDArray[Any]) -> dict[str, Any]:
        """The values the release reaches (e.g. the smallest l, the largest t), for the report."""
        return {}


class KAnonymity(Criterion):
    """k-anonymity (Samarati and Sweeney 1998): every class has at least ``k`` records.

    Records in smaller classes are suppressed; with a suppression limit of
    ``s`` (a fraction of the ``n`` records), a node is acceptable when at most
    ``floor(s * n)`` records need suppressing. Monotone with and without
    suppression: generalizing merges classes, so a record in a class of size
    >= k stays in one.
    """

    name = "k-anonymity"

    def __init__(self, k: int) -> None:
        check_k(k)
        self.k = int(k)

    def __repr__(self) -> str:
        return f"KAnonymity(k={self.k})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KAnonymity) and other.k == self.k

    def __hash__(self) -> int:
        return hash(("k-anonymity", self.k))

    def parameters(self) -> dict[str, Any]:
        """``{"k": k}``."""
        return {"k": self.k}

    def minimal_class_size(self) -> int | None:
        """``k``."""
        return self.k

    def outliers(self, stats: ClassStats) -> NDArray[Any]:
        """Classes with fewer than ``k`` records."""
        return np.asarray(stats.counts < self.k)

    def achieved(self, stats: ClassStats, outliers: NDArray[Any]) -> dict[str, Any]:
        """The smallest released class."""
        kept = stats.counts[~outliers & (stats.counts > 0)]
        return {"k": int(kept.min()) if kept.size else None}


def check_suppression(limit: float) -> None:
    """Reject a suppression limit outside [0, 1] (or NaN).

    1 (100 %) is allowed, as in ARX: any class may then be suppressed and the
    metric alone decides between generalizing and suppressing.
    """
    if not 0.0 <= limit <= 1.0 or math.isnan(limit):
        raise AnonlabError(
            f"suppression must be a fraction from 0 to 1 or a percentage such as '1%' (got "
            f"{limit:g}): write 0.01 or 1%",
            parameter="suppression",
        )


def max_suppressed(limit: float, n: int) -> int:
    """Largest number of records a suppression limit allows: ``floor(limit * n)``."""
    check_suppression(limit)
    return math.floor(limit * n + 1e-9)


def model_monotone(criteria: list[Criterion], suppression_allowed: bool) -> bool:
    """Whether a combination of criteria is monotone: every one of them is."""
    return all(c.monotone(suppression_allowed) for c in criteria)
