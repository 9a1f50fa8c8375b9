"""Risk thresholds on the whole release: average risk, sample and population uniqueness.

These are ARX 3.9's *sample-based* criteria (``RiskBasedCriterion``): they
judge the distribution of the sizes of the released classes as a whole, not
class by class. After the class-based criteria have chosen their outliers,
:meth:`RiskCriterion.enforce` suppresses further classes, as ARX's
``HashGroupifyDistribution.suppressWhileNotFulfilledBinary`` does:

1. the *distribution* holds the classes that are released (not outliers,
   with records of the table) and not *completely generalized* (every
   quasi-identifier ``*``, :attr:`ClassStats.completely_generalized`): ARX
   counts the latter as suppressed for the risk figures but not in its count
   of suppressed records;
2. if the risk condition holds, nothing more is suppressed;
3. otherwise the classes are sorted by size, ties broken by
   :attr:`ClassStats.order` (ARX: the quality model's loss of the class, then
   its first record), and a binary search over the number ``p`` of smallest
   classes to suppress runs exactly as ARX's does (including its last step,
   which may suppress one more class without checking again); a step whose
   condition fails with more than ``limit`` records suppressed ends it.

The node is then acceptable when at most the suppression limit's records
are suppressed: like ARX, the risk condition is not checked once more, which
matters only for a condition that is not monotone in ``p`` (population
uniqueness).

The conditions (``n`` released records in ``u`` classes, ``c_1`` of size 1):

* average re-identification risk (ARX ``AverageReidentificationRisk``,
  basic form): ``1 / (n / u) <= threshold``;
* sample uniqueness (ARX ``SampleUniqueness``): ``c_1 / n <= threshold``;
* population uniqueness (ARX ``PopulationUniqueness``): the estimated
  share of population uniques ``uniques / N <= threshold`` and positive, or
  0 with ``c_1 = 0``; the estimators are those of
  :mod:`anonlab.risk.population` (Dankar's rule without the Zayatz fallback
  when Pitman fails, as ARX's criterion asks for it).

An empty distribution (everything suppressed) satisfies every condition.
ARX declares the first two monotone both ways, population uniqueness not
monotone with suppression and monotone with generalization for Zayatz's
estimator only.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.dataset import Dataset
from anonlab.errors import AnonlabError, present
from anonlab.privacy.base import ClassStats, Criterion
from anonlab.risk.classes import size_distribution
from anonlab.risk.population import ITERATIONS_PER_TRY, MODELS, UniquenessEstimates


class SizeDistribution:
    """The sizes of the classes a risk condition judges: ``n`` records in ``u`` classes."""

    def __init__(self, sizes: NDArray[Any]) -> None:
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.records = int(self.sizes.sum())
        self.classes = int(self.sizes.shape[0])

    @property
    def empty(self) -> bool:
        """No record left (ARX ``isEmpty``)."""
        return self.records == 0

    def of_size(self, size: int) -> int:
        """Number of classes of that size."""
        return int(np.count_nonzero(self.sizes == size))

    def fraction_in_size(self, size: int) -> float:
        """Share of records in classes of that size (ARX
        ``getFractionOfRecordsInClassesOfSize``)."""
        if self.records == 0:
            return 0.0
        return float(self.of_size(size)) * float(size) / float(self.records)

    def histogram(self) -> dict[int, int]:
        """``{size: classes}`` (ARX ``getHistogram``)."""
        return size_distribution(self.sizes)


def _eligible(stats: ClassStats, outliers: NDArray[Any]) -> NDArray[Any]:
    """Classes the risk models see: released, with records, not completely generalized."""
    mask = ~outliers & (stats.counts > 0)
    if stats.completely_generalized is not None:
        mask &= ~np.asarray(stats.completely_generalized, dtype=bool)
    return np.asarray(mask)


def _counted_suppressed(stats: ClassStats, outliers: NDArray[Any]) -> int:
    """Records ARX counts as suppressed before the risk models act (completely generalized
    classes excluded, ``HashGroupifyDistribution``'s constructor)."""
    mask = outliers.copy()
    if stats.completely_generalized is not None:
        mask &= ~np.asarray(stats.completely_generalized, dtype=bool)
    return int(stats.counts[mask].sum())


def suppression_prefix(fulfilled: Any, suppressed: NDArray[Any], limit: int) -> int:
    """How many of the sorted classes ARX's binary search leaves suppressed.

    ``fulfilled(p)`` says whether the condition holds with the first ``p``
    classes suppressed; ``suppressed[p]`` is the number of records ARX then
    counts as suppressed; a step whose condition fails with more than
    ``limit`` of them aborts (ARX ``State.ABORT``). Reproduces
    ``suppressWhileNotFulfilledBinary`` step by step, including Java's
    integer division and its final unchecked step.
    """
    length = int(suppressed.shape[0]) - 1
    if length == 0:
        return 0

    def state(p: int) -> str:
        if fulfilled(p):
            return "fulfilled"
        return "abort" if int(suppressed[p]) > limit else "not"

    low, high = 0, length - 1
    mid = (low + high) // 2
    p = mid + 1
    current = "abort"
    while low <= high:
        current = state(p)
        if current == "abort":
            break
        if current == "fulfilled":
            high = mid - 1
        else:
            low = mid + 1
        mid = int((low + high) / 2)  # Java's division truncates toward zero
        p = mid + 1
    if current != "abort" and state(p) == "not" and mid + 1 < length:
        p = mid + 2
    return p


class RiskCriterion(Criterion):
    """A threshold on a risk of the whole release (ARX ``RiskBasedCriterion``)."""

    sample_based = True

    def __init__(self, threshold: float) -> None:
        if not 0.0 <= float(threshold) <= 1.0:  # also refuses NaN
            raise AnonlabError(
                f"{self.name} threshold must be from 0 to 1 (got {threshold})", parameter="criteria"
            )
        self.threshold = float(threshold)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(threshold={self.threshold})"

    def parameters(self) -> dict[str, Any]:
        """``{"threshold": t}``."""
        return {"threshold": self.threshold}

    @abstractmethod
    def fulfilled(self, distribution: SizeDistribution) -> bool:
        """The risk condition on the classes of ``distribution`` (ARX ``isFulfilled``)."""

    @abstractmethod
    def measure(self, distribution: SizeDistribution) -> dict[str, Any]:
        """The risk figure the condition bounds, for the report."""

    def enforce(self, stats: ClassStats, outliers: NDArray[Any], limit: int) -> NDArray[Any]:
        """Suppress the smallest released classes in ARX's order until the condition holds.

        See the module's description; returns the new outlier mask.
        """
        outliers = np.asarray(outliers, dtype=bool)
        eligible = np.flatnonzero(_eligible(stats, outliers))
        sizes = stats.counts[eligible].astype(np.int64)
        if self.fulfilled(SizeDistribution(sizes)) or eligible.size == 0:
            return outliers
        rank = (
            np.arange(stats.classes, dtype=np.int64)
            if stats.order is None
            else np.asarray(stats.order, dtype=np.int64)
        )
        order = np.lexsort((rank[eligible], sizes))
        sorted_sizes = sizes[order]
        suppressed = _counted_suppressed(stats, outliers) + np.concatenate(
            [[0], np.cumsum(sorted_sizes)]
        )

        def fulfilled(p: int) -> bool:
            return self.fulfilled(SizeDistribution(sorted_sizes[p:]))

        p = suppression_prefix(fulfilled, suppressed, limit)
        out = outliers.copy()
        out[eligible[order[:p]]] = True
        return out

    def holds(self, stats: ClassStats, outliers: NDArray[Any]) -> bool:
        """The risk condition on the released classes."""
        return self.fulfilled(SizeDistribution(stats.counts[_eligible(stats, outliers)]))

    def achieved(self, stats: ClassStats, outliers: NDArray[Any]) -> dict[str, Any]:
        """The risk figure of the released classes."""
        return self.measure(SizeDistribution(stats.counts[_eligible(stats, outliers)]))


class AverageRisk(RiskCriterion):
    """Average re-identification risk at most ``threshold`` (ARX ``AverageReidentificationRisk``).

    The average prosecutor risk of the released records, ``u / n``, computed
    as ARX does: ``1 / (n / u)``.
    """

    name = "average-risk"
    monotone_with_generalization = True
    monotone_with_suppression = True

    @staticmethod
    def risk(distribution: SizeDistribution) -> float:
        """``1 / (n / u)``; 0 when nothing is released."""
        if distribution.empty:
            return 0.0
        return 1.0 / (float(distribution.records) / float(distribution.classes))

    def fulfilled(self, distribution: SizeDistribution) -> bool:
        """Empty, or ``1 / (n / u) <= threshold``."""
        return distribution.empty or self.risk(distribution) <= self.threshold

    def measure(self, distribution: SizeDistribution) -> dict[str, Any]:
        """``{"average_risk": ...}``."""
        return {"average_risk": self.risk(distribution)}


class SampleUniqueness(RiskCriterion):
    """Share of sample uniques at most ``threshold`` (ARX ``SampleUniqueness``): ``c_1 / n``."""

    name = "sample-uniqueness"
    monotone_with_generalization = True
    monotone_with_suppression = True

    def fulfilled(self, distribution: SizeDistribution) -> bool:
        """``c_1 / n <= threshold`` (0 when nothing is released)."""
        return distribution.fraction_in_size(1) <= self.threshold

    def measure(self, distribution: SizeDistribution) -> dict[str, Any]:
        """``{"sample_uniqueness": ...}``."""
        return {"sample_uniqueness": distribution.fraction_in_size(1)}


def java_round(value: float) -> int:
    """Java's ``Math.round`` for a double: ``floor(value + 0.5)``."""
    return math.floor(value + 0.5)


class PopulationUniqueness(RiskCriterion):
    """Estimated share of population uniques at most ``threshold`` (ARX ``PopulationUniqueness``).

    ``estimator`` is ``"pitman"``, ``"zayatz"``, ``"snb"`` or ``"dankar"``
    (ARX's default); the population size is ``population_size``, or
    ``round(n / sampling_fraction)`` with ``n`` the table's records (ARX
    ``ARXPopulationModel.create(n, f)``). ``iterations_per_try`` is ARX's
    solver setting (``ARXSolverConfiguration.iterationsPerTry``, 1000 by
    default; ARX's own tests use 15).
    """

    name = "population-uniqueness"
    monotone_with_suppression = False

    def __init__(
        self,
        threshold: float,
        estimator: str = "dankar",
        *,
        sampling_fraction: float | None = None,
        population_size: int | None = None,
        iterations_per_try: int = ITERATIONS_PER_TRY,
    ) -> None:
        super().__init__(threshold)
        if estimator not in MODELS:
            raise AnonlabError(
                f"population-uniqueness estimator must be one of "
                f"{', '.join(MODELS)} (got {estimator!r})",
                parameter="criteria",
            )
        if (sampling_fraction is None) == (population_size is None):
            raise AnonlabError(
                "population-uniqueness needs either sampling_fraction or "
                "population_size (not both)",
                parameter="criteria",
            )
        if sampling_fraction is not None and not 0.0 < float(sampling_fraction) <= 1.0:
            raise AnonlabError(
                f"population-uniqueness sampling_fraction must be above 0 and at "
                f"most 1 (got {sampling_fraction})",
                parameter="criteria",
            )
        if population_size is not None and (
            int(population_size) < 1 or int(population_size) != population_size
        ):
            raise AnonlabError(
                f"population-uniqueness population_size must be a positive whole "
                f"number (got {population_size})",
                parameter="criteria",
            )
        if int(iterations_per_try) < 1:
            raise AnonlabError(
                f"population-uniqueness iterations_per_try must be at least 1 "
                f"(got {iterations_per_try})",
                parameter="criteria",
            )
        self.estimator = estimator
        self.monotone_with_generalization = estimator == "zayatz"
        self.sampling_fraction = None if sampling_fraction is None else float(sampling_fraction)
        self.population_size = None if population_size is None else int(population_size)
        self.iterations_per_try = int(iterations_per_try)
        self.size: int | None = self.population_size

    def __repr__(self) -> str:
        return f"PopulationUniqueness(threshold={self.threshold}, estimator={self.estimator!r})"

    def parameters(self) -> dict[str, Any]:
        """Threshold, estimator and the population's size or sampling fraction."""
        out: dict[str, Any] = {"threshold": self.threshold, "estimator": self.estimator}
        if self.population_size is not None:
            out["population_size"] = self.population_size
        else:
            out["sampling_fraction"] = self.sampling_fraction
        if self.iterations_per_try != ITERATIONS_PER_TRY:
            out["iterations_per_try"] = self.iterations_per_try
        return out

    def bind(self, dataset: Dataset) -> None:
        """Fix the population size ``N`` (from the sampling fraction if that is given)."""
        if self.sampling_fraction is not None:
            self.size = java_round(dataset.n / self.sampling_fraction)
        self.size = present(self.size, "population-uniqueness population_size")
        if self.size < dataset.n:
            raise AnonlabError(
                f"population-uniqueness population_size {self.size} is smaller "
                f"than the table's {dataset.n} records: give the size of the "
                "population the table was drawn from",
                parameter="criteria",
            )

    def _population_size(self) -> int:
        if self.size is None:
            raise AnonlabError(
                "population-uniqueness with a sampling fraction must be bound to "
                "the dataset before the search (call bind)",
                parameter="criteria",
            )
        return self.size

    def estimate(self, distribution: SizeDistribution) -> tuple[float, str]:
        """ARX's fraction of population uniques and the model used (``"none"`` if it failed).

        Dankar's rule without the Zayatz fallback, as ARX's criterion calls
        it: when Pitman fails at ``f <= 0.1`` the fraction is negative, so the
        condition fails.
        """
        size = self._population_size()
        estimates = UniquenessEstimates(
            distribution.histogram(), size, iterations_per_try=self.iterations_per_try
        )
        if self.estimator == "dankar":
            uniques, model = estimates.dankar(fallback=False)
        else:
            uniques, model = estimates.value(self.estimator), self.estimator
        return uniques / float(size), model

    def fulfilled(self, distribution: SizeDistribution) -> bool:
        """Empty; an estimate in ``(0, threshold]``; or an estimate of 0 and no sample uniques."""
        if distribution.empty:
            return True
        fraction, _ = self.estimate(distribution)
        if 0.0 < fraction <= self.threshold:
            return True
        return fraction == 0.0 and distribution.fraction_in_size(1) == 0.0

    def measure(self, distribution: SizeDistribution) -> dict[str, Any]:
        """``{"population_uniqueness": share or None, "model": ...}``."""
        if distribution.empty:
            return {"population_uniqueness": 0.0, "model": "none"}
        fraction, model = self.estimate(distribution)
        return {"population_uniqueness": fraction if fraction >= 0.0 else None, "model": model}
