"""The presence models: delta-presence and k-map, as ARX 3.9 defines them.

Both judge a class of the table to release against the *population* it was
drawn from. A node's :class:`ClassStats` then carries, for each class, its
records in the table to release (``counts``, ARX's ``count``) and in the
population (``population``, ARX's ``pcount``); a class may hold population
records only (``counts == 0``).

* **delta-presence** (Nergiz, Atzori and Clifton, "Hiding the presence of
  individuals from shared databases", SIGMOD 2007; ARX ``DPresence``): the
  probability that a population record of a class is in the research subset,
  ``delta = count / pcount`` (0 for a class with no subset record), must lie
  in ``[dmin, dmax]``. The classes judged are the population's at the node,
  ``count`` their research-subset records *before* suppression (ARX
  ``HashGroupify.addInternal``). A class with subset records outside the
  range is suppressed (those records count against the limit) and that is
  all: the release then holds none of its records, but it is not judged
  again as a class of delta 0. A class of population records only cannot be
  suppressed, so when its delta of 0 is below ``dmin`` the whole node fails
  (:meth:`DeltaPresence.acceptable`; ARX ``HashGroupify.analyzeAll``,
  ``entry.count == 0``), unless a criterion declares a minimal class size,
  which ARX checks first and which such a class never reaches
  (:func:`whole_node_conditions_judged`). ARX declares it monotone with
  generalization (``delta`` of merged classes is a weighted mean of theirs)
  but not with suppression.
* **k-map** (Sweeney; ARX ``KMap``): every released class must match at least
  ``k`` population records. With a population table, ``pcount >= k``. With an
  estimator, the population is modelled: ARX derives ``k'`` from the
  sampling fraction ``f = n / N`` and the significance level (Poisson, after
  Pannekoek, or zero-truncated Poisson, after El Emam) and checks
  ``count >= k'``. Monotone both ways.

How the datasets are built (ARX ``DataSubset.create(data, subset)``): for
delta-presence the table given is the population and ``subset`` holds the
research subset's records, matched to the table's rows as a multiset on all
columns (each subset row takes the first unused table row equal to it); for
k-map with a population the table given is the sample and ``population`` a
table with at least its quasi-identifiers, in which every sample record must
appear (as a multiset on the quasi-identifiers). Either way the
:class:`~anonlab.dataset.Dataset` built here holds the *research subset /
sample* as its table (what is released) and the population's codes in
``Dataset.population``, so both models are the same computation. ARX releases
every row of its input with the rows outside the subset suppressed; anonlab's
release holds the research subset's records only, in the table's row order,
which is what ARX releases without its suppressed rows. The suppression limit
counts subset records (ARX: ``floor(limit * |subset|)``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.dataset import NO_ROLES, Dataset, Roles, as_text
from anonlab.errors import AnonlabError, present
from anonlab.hierarchy import Hierarchy
from anonlab.io import read_table
from anonlab.parameters import check_k
from anonlab.paths import PathLike
from anonlab.privacy.base import ClassStats, Criterion

#: a table given as a file, a folder or a URL (read with :func:`anonlab.io.read_table`) or a frame
TableSource = PathLike | pd.DataFrame

ESTIMATORS = ("poisson", "zero-truncated-poisson")


def _source_text(source: TableSource | None) -> str | None:
    """How a table source is reported: its path, or a note for a DataFrame."""
    if source is None:
        return None
    if isinstance(source, pd.DataFrame):
        return f"<DataFrame of {len(source)} rows>"
    return str(source)


def _released(stats: ClassStats, outliers: NDArray[Any]) -> NDArray[Any]:
    """Classes of the release: records of the table, not suppressed."""
    return np.asarray(~outliers & (stats.counts > 0))


def _population(stats: ClassStats, model: str) -> NDArray[Any]:
    """The classes' population counts; an error when the search did not provide them."""
    if stats.population is None:
        raise AnonlabError(
            f"{model} needs the population counts of each class: build the "
            "dataset with anonlab.privacy.presence.population_dataset",
            parameter="criteria",
        )
    return stats.population


# ---------------------------------------------------------------------------
# delta-presence


class DeltaPresence(Criterion):
    """(dmin, dmax)-presence (ARX ``DPresence``) against the population the table is part of.

    ``delta = count / pcount`` of each class of the population (0 when the
    class has no record of the research subset; ``count`` taken before
    suppression) must satisfy ``dmin <= delta <= dmax`` (docs/privacy_models.md).
    A failing class with subset records is an outlier (:meth:`outliers`), one
    without fails the node (:meth:`acceptable`, judged as
    :func:`model_acceptable` says). ``subset`` is the research subset (a file
    or a DataFrame) for :func:`population_dataset`; the criterion itself reads
    the counts of :attr:`ClassStats.population`.
    """

    name = "delta-presence"
    monotone_with_generalization = True
    monotone_with_suppression = False
    needs_population = True
    condition_monotone = True

    def __init__(self, dmin: float, dmax: float, subset: TableSource | None = None) -> None:
        for label, value in (("dmin", dmin), ("dmax", dmax)):
            if not 0.0 <= float(value) <= 1.0:  # also refuses NaN
                raise AnonlabError(
                    f"delta-presence {label} must be from 0 to 1 (got {value}): "
                    "it bounds the probability that a population record is in "
                    "the research subset",
                    parameter="criteria",
                )
        if float(dmin) > float(dmax):
            raise AnonlabError(
                f"delta-presence dmin = {dmin} is larger than dmax = {dmax}: give dmin <= dmax",
                parameter="criteria",
            )
        self.dmin = float(dmin)
        self.dmax = float(dmax)
        self.subset = subset

    def __repr__(self) -> str:
        return f"DeltaPresence(dmin={self.dmin}, dmax={self.dmax})"

    def parameters(self) -> dict[str, Any]:
        """``{"dmin", "dmax", "subset"}``."""
        return {"dmin": self.dmin, "dmax": self.dmax, "subset": _source_text(self.subset)}

    def bind(self, dataset: Dataset) -> None:
        """Require a dataset built with the research subset and its population."""
        if dataset.population is None:
            raise AnonlabError(
                f"{self.name} needs the research subset: give subset (the "
                "table is then the population it was drawn from)",
                parameter="criteria",
            )

    def delta(self, stats: ClassStats) -> NDArray[Any]:
        """``count / pcount`` of each class, 0 where ``count == 0`` (ARX ``isAnonymous``)."""
        population = _population(stats, self.name)
        counts = stats.counts.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = counts / population.astype(np.float64)
        return np.where(stats.counts == 0, 0.0, ratio)

    def _violates(self, stats: ClassStats) -> NDArray[Any]:
        delta = self.delta(stats)
        return np.asarray(~((delta >= self.dmin) & (delta <= self.dmax)))

    def outliers(self, stats: ClassStats) -> NDArray[Any]:
        """Subset classes whose ``delta`` is outside ``[dmin, dmax]``.

        Classes of population records only are never outliers: ARX suppresses
        only classes that hold subset records.
        """
        return np.asarray(self._violates(stats) & (stats.counts > 0))

    def acceptable(self, stats: ClassStats, outliers: NDArray[Any]) -> bool:
        """No class of population records only violates the model (its ``delta`` is 0).

        Such a class cannot be suppressed; ARX then rejects the transformation.
        Independent of ``outliers``.
        """
        return not bool(np.any(self._violates(stats) & (stats.counts == 0)))

    def achieved(self, stats: ClassStats, outliers: NDArray[Any]) -> dict[str, Any]:
        """The range of ``delta`` over the released classes and the population-only classes."""
        delta = self.delta(stats)
        seen = delta[_released(stats, outliers) | (stats.counts == 0)]
        return {
            "dmin": float(seen.min()) if seen.size else None,
            "dmax": float(seen.max()) if seen.size else None,
            "population_only_classes": int(np.count_nonzero(stats.counts == 0)),
        }


class Inclusion(DeltaPresence):
    """ARX's ``Inclusion``: a research subset released, with no privacy guarantee of its own.

    The data handling of delta-presence without its bounds: the table given
    is the population, ``subset`` the research subset (a file or a DataFrame
    for :func:`population_dataset`), and only the subset's records are
    released and counted (classes, loss, the reference distributions of the
    other models, the suppression limit). It fails no class and no node;
    the other models of the combination decide (docs/privacy_models.md).
    Its monotonicity is delta-presence's, as ARX declares it (``Inclusion``
    extends ``DPresence``).
    """

    name = "inclusion"

    def __init__(self, subset: TableSource | None = None) -> None:
        super().__init__(0.0, 1.0, subset)

    def __repr__(self) -> str:
        return "Inclusion()"

    def parameters(self) -> dict[str, Any]:
        """``{"subset"}``."""
        return {"subset": _source_text(self.subset)}

    def outliers(self, stats: ClassStats) -> NDArray[Any]:
        """No class: inclusion selects records, it judges none (ARX ``isAnonymous``)."""
        return np.zeros(stats.classes, dtype=bool)

    def acceptable(self, stats: ClassStats, outliers: NDArray[Any]) -> bool:
        """Always: ARX's whole-node condition of delta-presence leaves inclusion out."""
        return True

    def achieved(self, stats: ClassStats, outliers: NDArray[Any]) -> dict[str, Any]:
        """The research subset's records and those of them released (not suppressed)."""
        released = _released(stats, outliers)
        return {
            "subset_records": int(stats.counts.sum()),
            "released_records": int(stats.counts[released].sum()),
        }


def model_acceptable(
    criteria: Sequence[Criterion], stats: ClassStats, outliers: NDArray[Any]
) -> bool:
    """The node-level condition of a combination of criteria, besides the suppression limit.

    ARX 3.9 (``HashGroupify.analyzeAll``) rejects a transformation when a
    class with no record of the research subset violates delta-presence. It
    checks each class's size against the model's minimal class size before
    the other criteria and skips them for a smaller class; a class with no
    record is always smaller, so when any criterion declares a minimal class
    size (:meth:`Criterion.minimal_class_size`: k-anonymity, the l-diversity
    models, an estimated k-map) the check never happens and the node is
    judged on the suppression limit alone.
    """
    if not whole_node_conditions_judged(criteria):
        return True
    return all(c.acceptable(stats, outliers) for c in criteria)


def whole_node_conditions_judged(criteria: Sequence[Criterion]) -> bool:
    """Whether ARX 3.9 judges delta-presence's classes without research-subset records.

    ``HashGroupify.isPrivacyModelFulfilled`` compares a class's subset records with the
    model's minimal class size (``ARXConfiguration.getMinimalGroupSize``) before any
    criterion, and ``DPresence`` is judged only on a class that reaches it: a class with no
    record never does. So the condition is judged only when no criterion declares a minimal
    class size (:meth:`Criterion.minimal_class_size`).
    """
    return not any(c.minimal_class_size() is not None for c in criteria)


# ---------------------------------------------------------------------------
# k-map


#: Loader's exact Stirling-series errors ``log(z!) - (z + 1/2) log(z) + z - log(2 pi)/2`` for
#: ``z = 0, 0.5, ..., 15`` (C. Loader, "Fast and accurate computation of binomial
#: probabilities", 2000), as Commons Math's ``SaddlePointExpansion`` tabulates them
_STIRLING_ERRORS = (
    0.0,
    0.1534264097200273452913848,
    0.0810614667953272582196702,
    0.0548141210519176538961390,
    0.0413406959554092940938221,
    0.03316287351993628748511048,
    0.02767792568499833914878929,
    0.02374616365629749597132920,
    0.02079067210376509311152277,
    0.01848845053267318523077934,
    0.01664469118982119216319487,
    0.01513497322191737887351255,
    0.01387612882307074799874573,
    0.01281046524292022692424986,
    0.01189670994589177009505572,
    0.01110455975820691732662991,
    0.010411265261972096497478567,
    0.009799416126158803298389475,
    0.009255462182712732917728637,
    0.008768700134139385462952823,
    0.008330563433362871256469318,
    0.007934114564314020547248100,
    0.007573675487951840794972024,
    0.007244554301320383179543912,
    0.006942840107209529865664152,
    0.006665247032707682442354394,
    0.006408994188004207068439631,
    0.006171712263039457647532867,
    0.005951370112758847735624416,
    0.005746216513010115682023589,
    0.005554733551962801371038690,
)


def _stirling_error(z: int) -> float:
    """The Stirling-series error of ``log(z!)`` for a whole ``z >= 1``: tabulated below 15,
    else the series ``1/12z - 1/360z^3 + 1/1260z^5 - 1/1680z^7 + 1/1188z^9``."""
    if z < 15:
        return _STIRLING_ERRORS[2 * z]
    z2 = float(z) * float(z)
    return (
        0.083333333333333333333
        - (
            0.00277777777777777777778
            - (
                0.00079365079365079365079365
                - (0.000595238095238095238095238 - 0.0008417508417508417508417508 / z2) / z2
            )
            / z2
        )
        / z2
    ) / z


def _deviance(x: float, mu: float) -> float:
    """Loader's deviance ``x log(x / mu) + mu - x``, by its series when ``x`` is near ``mu``."""
    if abs(x - mu) < 0.1 * (x + mu):
        d = x - mu
        v = d / (x + mu)
        s1 = v * d
        s = math.nan
        ej = 2.0 * x * v
        v *= v
        j = 1
        while s1 != s:
            s = s1
            ej *= v
            s1 = s + ej / (j * 2 + 1)
            j += 1
        return s1
    return x * math.log(x / mu) + mu - x


def poisson_pmf(x: int, mean: float) -> float:
    """``P(X = x)`` for ``X ~ Poisson(mean)`` by Loader's saddle-point expansion.

    ``exp(-stirling(x) - deviance(x, mean) - log(2 pi x) / 2)``, ``exp(-mean)``
    at 0: the form Commons Math 3.6.1's ``PoissonDistribution`` (ARX's) uses,
    so the sums of :func:`derived_k_zero_truncated_poisson` round as ARX's.
    """
    if x < 0:
        return 0.0
    if x == 0:
        return math.exp(-mean)
    return math.exp(
        -_stirling_error(x)
        - _deviance(float(x), mean)
        - 0.5 * math.log(2.0 * math.pi)
        - 0.5 * math.log(x)
    )


def poisson_cdf(x: int, mean: float) -> float:
    """``P(X <= x) = Q(x + 1, mean)``, the regularized upper incomplete gamma function.

    As Commons Math evaluates it: ``1 - P(x + 1, mean)`` when ``mean < x + 2``
    (the series side), else ``Q`` directly. ARX's Poisson k-map stops when
    this reaches ``1 - significance``; with a significance of 0 only a value
    that rounds to exactly 1 stops it, which the ``1 - P`` form decides.
    """
    if x < 0:
        return 0.0
    from scipy import special  # imported only for the estimated k-map

    a = x + 1.0
    if mean < a + 1.0:
        return 1.0 - float(special.gammainc(a, mean))
    return float(special.gammaincc(a, mean))


def derived_k_poisson(k: int, mean: float, significance: float) -> tuple[int, float]:
    """ARX ``KMap.calculateKPoisson``: the k' to check in the sample, and the type I error.

    Counts ``c = 0, 1, ...`` until ``P(X <= c - 1) >= 1 - significance`` for
    ``X ~ Poisson(mean)``, ``mean = f k``, stopping once ``c`` reaches ``k``
    (then the error is 0); returns ``c + 1`` as ARX does.
    """
    threshold = 1.0 - significance
    counter = 0
    value = 0.0
    while value < threshold:
        value = poisson_cdf(counter, mean)
        counter += 1
        if counter >= k:
            value = 1.0
            break
    return counter + 1, 1.0 - value


def derived_k_zero_truncated_poisson(k: int, mean: float, significance: float) -> tuple[int, float]:
    """ARX ``KMap.calculateKZeroPoisson``: k' under the zero-truncated Poisson distribution.

    Adds ``P(X = c) / (1 - P(X = 0))`` for ``c = 1, 2, ...`` until the sum
    reaches ``1 - significance`` or ``c`` reaches ``k``; returns the counter
    after the last term, as ARX does.
    """
    threshold = 1.0 - significance
    norm = 1.0 - poisson_pmf(0, mean)
    counter = 1
    value = 0.0
    while value < threshold:
        value += poisson_pmf(counter, mean) / norm
        counter += 1
        if counter >= k:
            value = 1.0
            break
    return counter, 1.0 - value


class KMap(Criterion):
    """k-map (ARX ``KMap``): every released class matches at least ``k`` population records.

    Give either ``population`` (a population table, a file or a DataFrame, for
    :func:`population_dataset`; the classes' population counts must reach
    ``k``) or ``estimator`` (``"poisson"`` or ``"zero-truncated-poisson"``)
    with ``significance`` and ``population_size``: ARX then checks
    k-anonymity with a derived ``k' <= k`` (:meth:`bind`).
    """

    name = "k-map"
    monotone_with_generalization = True
    monotone_with_suppression = True

    def __init__(
        self,
        k: int,
        *,
        population: TableSource | None = None,
        estimator: str | None = None,
        significance: float | None = None,
        population_size: int | None = None,
    ) -> None:
        check_k(k)
        self.k = int(k)
        if (population is None) == (estimator is None):
            raise AnonlabError(
                "k-map needs either population (a table of the population) or "
                "estimator ('poisson' or 'zero-truncated-poisson', with "
                "significance and population_size), not both",
                parameter="criteria",
            )
        if estimator is not None:
            if estimator not in ESTIMATORS:
                raise AnonlabError(
                    f"k-map estimator must be 'poisson' or "
                    f"'zero-truncated-poisson' (got {estimator!r})",
                    parameter="criteria",
                )
            if significance is None or population_size is None:
                raise AnonlabError(
                    "k-map with an estimator needs significance (e.g. 0.01) and "
                    "population_size (the size of the population the table "
                    "was drawn from)",
                    parameter="criteria",
                )
            if not 0.0 <= float(significance) <= 1.0:
                raise AnonlabError(
                    f"k-map significance must be from 0 to 1 (got {significance}): e.g. 0.01",
                    parameter="criteria",
                )
            if int(population_size) < 1 or int(population_size) != population_size:
                raise AnonlabError(
                    f"k-map population_size must be a positive whole number (got "
                    f"{population_size})",
                    parameter="criteria",
                )
        elif significance is not None or population_size is not None:
            raise AnonlabError(
                "k-map with a population table takes no significance or "
                "population_size: they belong to an estimator",
                parameter="criteria",
            )
        self.population = population
        self.estimator = estimator
        self.significance = None if significance is None else float(significance)
        self.population_size = None if population_size is None else int(population_size)
        self.needs_population = population is not None
        self.derived_k: int | None = None
        self.type_i_error: float | None = None

    def __repr__(self) -> str:
        if self.estimator is None:
            return f"KMap(k={self.k}, population=...)"
        return (
            f"KMap(k={self.k}, estimator={self.estimator!r}, "
            f"significance={self.significance}, population_size={self.population_size})"
        )

    def parameters(self) -> dict[str, Any]:
        """``k`` and either ``population`` or the estimator's settings."""
        if self.estimator is None:
            return {"k": self.k, "population": _source_text(self.population)}
        return {
            "k": self.k,
            "estimator": self.estimator,
            "significance": self.significance,
            "population_size": self.population_size,
        }

    def bind(self, dataset: Dataset) -> None:
        """Check the dataset; with an estimator, derive ``k'`` (ARX ``KMap.initialize``).

        ``f = n / N`` with ``n`` the rows of ARX's input table (the
        population table when the dataset has one, else the table),
        ``k' = min(k, derived, n)``.
        """
        if self.estimator is None:
            if dataset.population is None:
                raise AnonlabError(
                    "k-map with a population needs the population table: give population",
                    parameter="criteria",
                )
            return
        population_size = present(self.population_size, "k-map's population_size")
        significance = present(self.significance, "k-map's significance")
        rows = dataset.n if dataset.population is None else int(dataset.population.shape[0])
        if population_size < rows:
            raise AnonlabError(
                f"k-map population_size {population_size} is smaller than "
                f"the table's {rows} records: give the size of the population "
                "the table was drawn from",
                parameter="criteria",
            )
        mean = rows / population_size * self.k
        if self.estimator == "poisson":
            derived, error = derived_k_poisson(self.k, mean, significance)
        else:
            derived, error = derived_k_zero_truncated_poisson(self.k, mean, significance)
        self.derived_k = min(self.k, derived, rows)
        self.type_i_error = error

    def _threshold(self) -> int:
        if self.derived_k is None:
            raise AnonlabError(
                "k-map with an estimator must be bound to the dataset before "
                "the search (call bind)",
                parameter="criteria",
            )
        return self.derived_k

    def outliers(self, stats: ClassStats) -> NDArray[Any]:
        """Classes of the table with fewer than ``k`` population records (or ``k'`` records)."""
        if self.estimator is None:
            return np.asarray((_population(stats, self.name) < self.k) & (stats.counts > 0))
        return np.asarray((stats.counts < self._threshold()) & (stats.counts > 0))

    def minimal_class_size(self) -> int | None:
        """``k'`` for an estimated k-map once bound (ARX ``getMinimalClassSize``), else ``None``."""
        return self.derived_k if self.estimator is not None else None

    def achieved(self, stats: ClassStats, outliers: NDArray[Any]) -> dict[str, Any]:
        """The smallest population count of a released class; for an estimator, the smallest
        released class, ``k'`` and the type I error."""
        released = _released(stats, outliers)
        if self.estimator is None:
            matched = _population(stats, self.name)[released]
            return {"k": int(matched.min()) if matched.size else None}
        sizes = stats.counts[released]
        return {
            "smallest_class": int(sizes.min()) if sizes.size else None,
            "derived_k": self.derived_k,
            "type_i_error": self.type_i_error,
        }


# ---------------------------------------------------------------------------
# datasets with a population


def _text_frame(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The columns as text (missing as the empty string), as the encoders compare values."""
    return pd.DataFrame({c: as_text(frame[c]).to_numpy(dtype=object) for c in columns})


def _occurrence_keys(
    left: pd.DataFrame, right: pd.DataFrame
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]]:
    """Group ids of the rows of two text frames on shared tuples, and each row's occurrence rank.

    Returns ``(left_key, left_rank, right_key, right_rank)``: equal tuples get
    the same key; the rank counts earlier rows with the same tuple.
    """
    both = pd.concat([left, right], ignore_index=True)
    key: NDArray[Any]
    if both.shape[1] == 0:
        key = np.zeros(len(both), dtype=np.int64)
    else:
        key = both.groupby(list(both.columns), sort=False).ngroup().to_numpy(dtype=np.int64)
    lk, rk = key[: len(left)], key[len(left) :]
    lr = pd.Series(lk).groupby(lk).cumcount().to_numpy(dtype=np.int64)
    rr = pd.Series(rk).groupby(rk).cumcount().to_numpy(dtype=np.int64)
    return lk, lr, rk, rr


def _describe_row(frame: pd.DataFrame, row: int, columns: Sequence[str]) -> str:
    """``col=value, ...`` of one row (at most six columns)."""
    shown = [f"{c}={frame.at[row, c]!s}" for c in columns[:6]]
    if len(columns) > 6:
        shown.append("...")
    return ", ".join(shown)


def match_rows(
    table: pd.DataFrame, part: pd.DataFrame, columns: Sequence[str]
) -> tuple[NDArray[Any], int | None]:
    """Match each row of ``part`` to a distinct row of ``table`` equal to it on ``columns``.

    ARX's ``DataSubset.create``: each row, in order, takes the first unused
    table row equal to it. Returns the table row of each ``part`` row and
    the first ``part`` row (0-based) that has no match left, or ``None``.
    """
    left = _text_frame(table, columns)
    right = _text_frame(part, columns)
    lk, lr, rk, rr = _occurrence_keys(left, right)
    width = int(max(lr.max(initial=0), rr.max(initial=0))) + 1
    table_pos = pd.Series(np.arange(len(table), dtype=np.int64), index=lk * width + lr)
    found = table_pos.reindex(rk * width + rr)
    missing = np.flatnonzero(found.isna().to_numpy())
    if missing.size:
        return np.zeros(0, dtype=np.int64), int(missing[0])
    return found.to_numpy(dtype=np.int64), None


def _renumbered(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with rows numbered from 0 and column names as text."""
    out = frame.reset_index(drop=True)
    out.columns = [str(c) for c in out.columns]
    return out


def presence_dataset(
    table: pd.DataFrame,
    subset: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy | PathLike],
    *,
    roles: Roles = NO_ROLES,
    source: str | None = None,
    model: str = "delta-presence",
) -> Dataset:
    """A delta-presence (or inclusion) dataset: ``table`` is the population, ``subset`` the
    research subset.

    ``subset`` must have the table's columns; its rows are matched to the
    table's as a multiset on all columns (:func:`match_rows`). The dataset's
    table is the matched rows in the table's order (what is released), its
    ``population`` the codes of all rows of ``table``. ``model`` names the
    criterion in messages.
    """
    columns = [str(c) for c in table.columns]
    subset = _renumbered(subset)
    if sorted(subset.columns) != sorted(columns):
        lacking = [c for c in columns if c not in subset.columns]
        extra = [c for c in subset.columns if c not in columns]
        what = (
            f"lacks {', '.join(lacking)}"
            if lacking
            else f"has columns the table does not: {', '.join(extra)}"
        )
        raise AnonlabError(
            f"the {model} subset must have the table's columns, but it "
            f"{what}: give the research subset's rows of the table",
            parameter="subset",
        )
    table = _renumbered(table)
    rows, bad = match_rows(table, subset, columns)
    if bad is not None:
        raise AnonlabError(
            f"the {model} subset is not a subset of the table: row "
            f"{bad + 1} ({_describe_row(subset, bad, columns)}) has no record of "
            "the table left to match (each subset row must be a distinct row of "
            "the table): give the research subset's rows of the table",
            parameter="subset",
        )
    frame = table.iloc[np.sort(rows)].reset_index(drop=True)
    return Dataset.from_frame(
        frame,
        hierarchies,
        **roles.keywords(),
        source=source,
        population=table,
    )


def kmap_dataset(
    sample: pd.DataFrame,
    population: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy | PathLike],
    *,
    roles: Roles = NO_ROLES,
    source: str | None = None,
) -> Dataset:
    """A k-map dataset: ``sample`` is the table to release, ``population`` the population.

    ``population`` needs at least the quasi-identifiers; every record of the
    sample must be one of its records (matched as a multiset on the
    quasi-identifiers).
    """
    qis = [str(c) for c in hierarchies]
    population = _renumbered(population)
    lacking = [c for c in qis if c not in population.columns]
    if lacking:
        raise AnonlabError(
            f"the k-map population lacks the quasi-identifier column(s) "
            f"{', '.join(lacking)}: it needs at least every quasi-identifier",
            parameter="population",
        )
    sample = _renumbered(sample)
    absent = [c for c in qis if c not in sample.columns]
    if absent:
        raise AnonlabError(
            f"unknown column '{absent[0]}' (given as quasi-identifier): the table "
            f"has {', '.join(sample.columns)}"
        )
    _, bad = match_rows(population, sample, qis)
    if bad is not None:
        raise AnonlabError(
            f"the k-map population does not contain every record of the table: "
            f"row {bad + 1} ({_describe_row(sample, bad, qis)}) has no record of "
            "the population left to match: the table must be a sample of the "
            "population",
            parameter="population",
        )
    return Dataset.from_frame(
        sample,
        hierarchies,
        **roles.keywords(),
        source=source,
        population=population[qis],
    )


def _load(source: TableSource, read_options: Mapping[str, Any] | None) -> pd.DataFrame:
    """A table source as a DataFrame (files read as text by :func:`anonlab.io.read_table`)."""
    if isinstance(source, pd.DataFrame):
        return source.copy()
    return read_table(
        Path(source) if not isinstance(source, Path) else source, **dict(read_options or {})
    )


def population_dataset(
    frame: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy | PathLike],
    criteria: Sequence[Criterion],
    *,
    roles: Roles = NO_ROLES,
    source: str | None = None,
    read_options: Mapping[str, Any] | None = None,
) -> Dataset:
    """The dataset the criteria need: with a research subset or a population table, or plain.

    A :class:`DeltaPresence` (or :class:`Inclusion`) makes ``frame`` the
    population and its ``subset`` the table to release (:func:`presence_dataset`); a
    :class:`KMap` with a population keeps ``frame`` as the table and adds its
    population (:func:`kmap_dataset`). With both, k-map's population is
    delta-presence's table, so k-map may not name another one. Without
    either, :meth:`Dataset.from_frame`. ``read_options`` are passed to
    :func:`anonlab.io.read_table` for files.
    """
    presence = [
        c for c in criteria if isinstance(c, DeltaPresence) or getattr(c, "defines_subset", False)
    ]
    kmaps = [c for c in criteria if isinstance(c, KMap) and c.population is not None]
    if len(presence) > 1:
        raise AnonlabError(
            f"give one research subset: {' and '.join(c.name for c in presence)} "
            "each name one (ARX takes one of delta-presence and inclusion)",
            parameter="criteria",
        )
    if len(kmaps) > 1:
        raise AnonlabError(
            "give k-map with a population once: a table has one population", parameter="criteria"
        )
    if presence:
        name = presence[0].name
        if kmaps:
            raise AnonlabError(
                f"with {name} the table is the population, so k-map takes no "
                "population of its own: drop k-map's population or use an "
                "estimator",
                parameter="criteria",
            )
        subset = getattr(presence[0], "subset", None)
        if subset is None:
            raise AnonlabError(
                f"{name} needs subset (the research subset's rows of the table)",
                parameter="criteria",
            )
        return presence_dataset(
            frame, _load(subset, read_options), hierarchies, roles=roles, source=source, model=name
        )
    if kmaps:
        population = kmaps[0].population
        if population is None:
            raise TypeError("k-map's population is not set")
        return kmap_dataset(
            frame, _load(population, read_options), hierarchies, roles=roles, source=source
        )
    return Dataset.from_frame(frame, hierarchies, **roles.keywords(), source=source)
