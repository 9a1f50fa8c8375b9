"""What the privacy models of a sensitive attribute share (l-diversity, t-closeness, likeness).

Each model judges every equivalence class of a node on the class's histogram
of one sensitive attribute (:class:`~anonlab.privacy.base.SensitiveHistograms`:
sparse ``(class, value, count)`` triples sorted by class, then value code) and,
for t-closeness, beta-likeness and delta-disclosure, against the attribute's
distribution over the whole table. ARX 3.9 computes that distribution once,
before the search, over every record of the table (or of the research subset
when delta-presence defines one: ``DataManager.getDistribution``); suppressing
records later does not change it. In anonlab the table of a
:class:`~anonlab.dataset.Dataset` is that subset already, so the reference is
``SensitiveHistograms.global_counts``.

The helpers here work on all classes at once: per-class sums are
``np.bincount`` over the triples' class column (it adds in array order, so a
class's sum is accumulated value by value, as ARX's loop over a class does),
per-class maxima ``np.maximum.at``. No loop runs over classes.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.privacy.base import ClassStats, Criterion, SensitiveHistograms

if TYPE_CHECKING:
    from anonlab.dataset import Dataset, EncodedSensitive


def model_error(model: str, attribute: str, text: str) -> AnonlabError:
    """The one-line error about a model's parameter (``parameter="criteria"``)."""
    return AnonlabError(f"{model} on '{attribute}': {text}", parameter="criteria")


def check_number(model: str, attribute: str, name: str, value: object) -> float:
    """``value`` as a finite float; an error naming the model and the parameter otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise model_error(model, attribute, f"{name} must be a number (got {value!r})")
    number = float(value)
    if not math.isfinite(number):
        raise model_error(model, attribute, f"{name} must be a finite number (got {value!r})")
    return number


def check_attribute(model: str, attribute: object) -> str:
    """The sensitive attribute's name: a non-empty string."""
    if not isinstance(attribute, str) or not attribute:
        raise AnonlabError(
            f"{model} needs the name of a sensitive attribute (got {attribute!r}): give attribute",
            parameter="criteria",
        )
    return attribute


def per_class_sum(h: SensitiveHistograms, weights: NDArray[Any], n_classes: int) -> NDArray[Any]:
    """Sum of ``weights`` (one per triple) over each class's triples, in triple order."""
    return np.bincount(h.classes, weights=weights, minlength=n_classes).astype(np.float64)


def per_class_count(h: SensitiveHistograms, n_classes: int) -> NDArray[Any]:
    """Number of distinct sensitive values in each class."""
    return np.bincount(h.classes, minlength=n_classes).astype(np.int64)


def per_class_any(h: SensitiveHistograms, flags: NDArray[Any], n_classes: int) -> NDArray[Any]:
    """Whether any triple of a class has its flag set."""
    out = np.zeros(n_classes, dtype=bool)
    out[h.classes[flags]] = True
    return out


def per_class_max(h: SensitiveHistograms, values: NDArray[Any], n_classes: int) -> NDArray[Any]:
    """Largest of ``values`` (one per triple) in each class; ``-inf`` for a class with none."""
    out = np.full(n_classes, -np.inf)
    np.maximum.at(out, h.classes, values)
    return out


def class_starts(h: SensitiveHistograms, n_classes: int) -> NDArray[Any]:
    """Index of each class's first triple (``n_classes + 1`` entries, the last = pairs)."""
    return np.searchsorted(h.classes, np.arange(n_classes + 1, dtype=np.int64)).astype(np.int64)


def global_frequencies(h: SensitiveHistograms) -> NDArray[Any]:
    """The attribute's relative frequencies over the table: ARX's ``count / total`` in doubles."""
    counts = np.asarray(h.global_counts, dtype=np.float64)
    total = float(counts.sum())
    return counts / total if total > 0 else counts


def released(stats: ClassStats, outliers: NDArray[Any]) -> NDArray[Any]:
    """Classes of the release: records of the table (``counts > 0``) and not suppressed."""
    return np.asarray(~np.asarray(outliers, dtype=bool) & (stats.counts > 0))


def lowest(values: NDArray[Any], mask: NDArray[Any]) -> float | None:
    """Smallest of ``values[mask]`` as a float (``None`` when nothing is released)."""
    kept = values[mask]
    return float(kept.min()) if kept.size else None


def highest(values: NDArray[Any], mask: NDArray[Any]) -> float | None:
    """Largest of ``values[mask]`` as a float (``None`` when nothing is released)."""
    kept = values[mask]
    return float(kept.max()) if kept.size else None


class SensitiveCriterion(Criterion):
    """A class-based model that protects one sensitive attribute.

    Subclasses implement :meth:`violations` on the attribute's histograms;
    :meth:`outliers` restricts it to classes with released records (a class of
    population records only holds no sensitive value and is never an outlier,
    as in ARX where only classes of the research subset are suppressed).
    :meth:`bind` looks the attribute up in the dataset once before the search
    (an error if it is not a sensitive column) and lets subclasses validate
    their parameters against the data.
    """

    def __init__(self, attribute: str) -> None:
        self.attribute: str = check_attribute(self.name, attribute)
        self._encoded: EncodedSensitive | None = None
        #: the table's counts (as bytes) and the smallest passing class found for them
        self._implied: tuple[bytes, int] | None = None

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.parameters().items())
        return f"{type(self).__name__}(attribute={self.attribute!r}, {args})"

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and isinstance(other, SensitiveCriterion)
            and other.attribute == self.attribute
            and other.parameters() == self.parameters()
        )

    def __hash__(self) -> int:
        return hash((self.name, self.attribute, repr(sorted(self.parameters().items()))))

    def error(self, text: str) -> AnonlabError:
        """An error about this model's parameters."""
        return model_error(self.name, self.attribute, text)

    def bind(self, dataset: Dataset) -> None:
        """Look the sensitive attribute up in ``dataset`` and check the parameters against it."""
        encoded = dataset.sensitive_attribute(self.attribute)
        self.bind_values(encoded)
        self._encoded = encoded
        self._implied = None

    def bind_values(self, encoded: EncodedSensitive) -> None:
        """Data-level checks and precomputation; the default has none."""

    @property
    def encoded(self) -> EncodedSensitive | None:
        """The attribute as bound (``None`` before :meth:`bind`)."""
        return self._encoded

    def histograms(self, stats: ClassStats) -> SensitiveHistograms:
        """The node's histograms of this criterion's attribute."""
        try:
            return stats.sensitive[self.attribute]
        except KeyError:
            raise AnonlabError(
                f"{self.name} on '{self.attribute}': the node's classes carry no histogram of "
                f"'{self.attribute}': give the column the sensitive role",
                parameter="criteria",
            ) from None

    def implied_class_size(self, bottom: ClassStats) -> int:
        """The larger of the minimal class size and :meth:`smallest_class` for the table's
        distribution of the attribute (as the bottom node's histograms carry it), kept
        for that distribution."""
        size = super().implied_class_size(bottom)
        h = bottom.sensitive.get(self.attribute)
        if h is None:
            return size
        key = np.asarray(h.global_counts, dtype=np.int64).tobytes()
        if self._implied is None or self._implied[0] != key:
            self._implied = (key, self.smallest_class(h))
        return max(size, self._implied[1])

    def monotone_part(self, bottom: ClassStats) -> Criterion | None:
        """:meth:`coverage` for the table's distribution of the attribute, if any."""
        h = bottom.sensitive.get(self.attribute)
        return None if h is None else self.coverage(h)

    def coverage(self, h: SensitiveHistograms) -> Criterion | None:
        """The values a class must hold for the model to have a chance, as a monotone
        criterion (:class:`anonlab.privacy.smallest.ValueCoverage`), against the table's
        distribution of ``h``; ``None`` if the model gives no such condition."""
        return None

    def smallest_class(self, h: SensitiveHistograms) -> int:
        """The smallest size at which some class can satisfy the model, against the table's
        distribution of ``h`` (see :mod:`anonlab.privacy.smallest`); 1 if the model gives
        no bound."""
        return 1

    @abstractmethod
    def violations(self, stats: ClassStats, h: SensitiveHistograms) -> NDArray[Any]:
        """Boolean mask of the classes whose histogram violates the model."""

    def outliers(self, stats: ClassStats) -> NDArray[Any]:
        """Classes with released records that violate the model (ARX ``isAnonymous`` false)."""
        if stats.classes == 0:
            return np.zeros(0, dtype=bool)
        mask = self.violations(stats, self.histograms(stats))
        return np.asarray(mask & (stats.counts > 0))
