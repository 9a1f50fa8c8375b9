"""ARX's genetic search (``GeneticAlgorithm``, ARX 3.9; ``BEST_EFFORT_GENETIC``).

An *individual* is a node (a level vector); its fitness is its loss, measured whether it is
acceptable or not (see :mod:`anonlab.lattice.heuristic`). Two sub-populations of
``m + size`` individuals each (``m`` quasi-identifiers, ``size`` the sub-population size):

* the first starts with a "triangle" that covers the lattice, the nodes with the first
  ``i + 1`` quasi-identifiers at their highest level and the others at their lowest
  (``i = 0 .. m-1``), then random nodes; the second with random nodes only (each level
  uniform from lowest to highest, rounded half up);
* every iteration sorts each sub-population by loss (stable: ties keep their order); every
  ``immigration_interval`` iterations, ``int(immigration_fraction) * count`` of the fittest
  individuals move to the other sub-population (ARX casts the fraction to an integer before
  multiplying, so with a fraction below 1 nobody moves: kept as ARX does it);
* the elite (the first ``ceil(elite_fraction * count)``) stays; ``ceil(crossover_fraction *
  count)`` children replace the last individuals, each taking every level from one of two
  parents drawn from the first ``ceil(production_fraction * count)`` individuals with
  probability proportional to ``1 - relative loss`` (0 for the worst, 1 for the best of
  them: :func:`~anonlab.lattice.heuristic.relative_loss`); the rest are mutations of random
  individuals of the sorted population: up to ``ceil(mutation_probability * m)``
  quasi-identifiers (a uniform count from 0, chosen by a shuffle) get a random level.

It runs ``iterations`` iterations or until a limit stops it, and returns the best acceptable
node checked. ARX's random numbers are Java's: with ``seed`` given the draws are those of
``java.util.Random(seed)`` (:mod:`anonlab.lattice.javautil`), so ARX's deterministic mode
(``seed = 0xDEADBEEF``) is reproduced draw for draw; without a seed one is taken from the
operating system.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass

from anonlab.errors import AnonlabError
from anonlab.lattice.heuristic import (
    HeuristicLimits,
    HeuristicRun,
    compare_losses,
    relative_loss,
)
from anonlab.lattice.javautil import EnumeratedSampler, JavaRandom, java_round, shuffle
from anonlab.lattice.search import SearchContext, SearchResult

#: why a genetic search that no limit stopped ended
STOP_ITERATIONS = "iterations done"
#: ARX's deterministic seed (``new Random(0xDEADBEEF)``, the int literal as a Java long)
ARX_SEED = -559038737


@dataclass(frozen=True)
class GeneticSettings:
    """ARX's genetic settings (``ARXConfiguration.getGeneticAlgorithm*``), its defaults."""

    subpopulation_size: int = 100
    iterations: int = 50
    immigration_interval: int = 10
    immigration_fraction: float = 0.2
    elite_fraction: float = 0.2
    crossover_fraction: float = 0.2
    mutation_probability: float = 0.2
    production_fraction: float = 0.2
    seed: int | None = None

    def __post_init__(self) -> None:
        for name in ("subpopulation_size", "iterations", "immigration_interval"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise AnonlabError(
                    f"the genetic setting {name} must be a whole number of 1 or more (got {value})",
                    parameter="genetic",
                )
        for name in (
            "immigration_fraction",
            "elite_fraction",
            "crossover_fraction",
            "mutation_probability",
            "production_fraction",
        ):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0.0 <= value <= 1.0):
                raise AnonlabError(
                    f"the genetic setting {name} must be from 0 to 1 (got {value})",
                    parameter="genetic",
                )


class _Genetic:
    """One run of the genetic search."""

    def __init__(
        self, ctx: SearchContext, limits: HeuristicLimits, settings: GeneticSettings
    ) -> None:
        self.run = HeuristicRun(ctx, limits)
        self.lattice = ctx.lattice
        self.settings = settings
        seed = settings.seed if settings.seed is not None else secrets.randbits(63)
        self.random = JavaRandom(seed)
        self.lows = list(ctx.lattice._low_list)
        self.highs = list(ctx.lattice._height_list)

    def individual(self, levels: list[int]) -> int:
        """The node of a level vector, checked (``getIndividual``)."""
        node = self.lattice.index(levels)
        self.run.check(node)
        return node

    def random_level(self, dim: int) -> int:
        """A uniform level of one quasi-identifier (``getRandomGeneralizationLevel``)."""
        span = self.highs[dim] - self.lows[dim]
        return self.lows[dim] + int(java_round(self.random.next_double() * span))

    def random_levels(self) -> list[int]:
        return [self.random_level(d) for d in range(len(self.highs))]

    def sort(self, population: list[int]) -> None:
        """Ascending loss, stable (Java's ``List.sort``)."""
        population.sort(key=lambda node: _Key(self.run.loss(node)))

    def parents(self, population: list[int], production: int, count: int) -> list[int]:
        """``count`` draws among the first ``production`` individuals, fitness-weighted."""
        pool = population[:production]
        losses = [self.run.loss(node) for node in pool]
        low = high = losses[0]
        for loss in losses[1:]:
            if compare_losses(low, loss) > 0:
                low = loss
            if compare_losses(high, loss) < 0:
                high = loss
        weights = [1.0 - relative_loss(loss, low, high) for loss in losses]
        sampler = EnumeratedSampler(self.random, pool, weights)
        return [sampler.sample() for _ in range(count)]

    def mutant(self, node: int) -> int:
        """A mutation of an individual (``getMutatedIndividual``)."""
        levels = list(self.lattice.levels(node))
        most = math.ceil(self.settings.mutation_probability * len(levels))
        count = self.random.next_int(most + 1)
        places = list(range(len(levels)))
        shuffle(places, self.random)
        for place in places[:count]:
            levels[place] = self.random_level(place)
        return self.individual(levels)

    def iterate(self, population: list[int]) -> None:
        """One generation of a sub-population (``iterateSubpopulation``)."""
        s = self.settings
        old = list(population)
        k = len(population)
        crossovers = math.ceil(s.crossover_fraction * k)
        elite = math.ceil(s.elite_fraction * k)
        production = math.ceil(s.production_fraction * k)
        first = self.parents(population, production, crossovers)
        second = self.parents(population, production, crossovers)
        for c in range(crossovers):
            a, b = self.lattice.levels(first[c]), self.lattice.levels(second[c])
            child = [(a if self.random.next_double() < 0.5 else b)[i] for i in range(len(a))]
            if self.run.must_stop():
                return
            population[k - c - 1] = self.individual(child)
        for m in range(elite, k - crossovers):
            if self.run.must_stop():  # only without crossovers: the step limit holds exactly
                return
            population[m] = self.mutant(old[self.random.next_int(k)])
            if self.run.must_stop():
                return

    def search(self) -> bool:
        """ARX's ``traverse``; whether a limit stopped it."""
        s, run = self.settings, self.run
        m = len(self.highs)
        k = m + s.subpopulation_size
        moving = int(s.immigration_fraction) * k
        first: list[int] = []
        for i in range(k):
            # the "triangle" first: the first i + 1 quasi-identifiers at their highest level
            levels = self.highs[: i + 1] + self.lows[i + 1 :] if i < m else self.random_levels()
            if run.must_stop():
                return True
            first.append(self.individual(levels))
        second: list[int] = []
        for _ in range(k):
            levels = self.random_levels()
            if run.must_stop():
                return True
            second.append(self.individual(levels))
        for t in range(s.iterations):
            self.sort(first)
            self.sort(second)
            if t % s.immigration_interval == 0 and moving > 0:
                _move(first, second, moving)
                _move(second, first, moving)
                self.sort(first)
                self.sort(second)
            self.iterate(first)
            self.iterate(second)
            if run.must_stop():
                return True
        return False


class _Key:
    """A loss as a sort key in the order of ``InformationLoss.compareTo``."""

    __slots__ = ("loss",)

    def __init__(self, loss: object) -> None:
        self.loss = loss

    def __lt__(self, other: _Key) -> bool:
        return compare_losses(self.loss, other.loss) < 0  # type: ignore[arg-type]


def _move(source: list[int], target: list[int], count: int) -> None:
    """Move the first ``count`` individuals of ``source`` to the end of ``target``."""
    for _ in range(min(count, len(source))):
        target.append(source.pop(0))


def genetic_search(
    ctx: SearchContext, limits: HeuristicLimits, settings: GeneticSettings | None = None
) -> SearchResult:
    """ARX's genetic search; the best node found."""
    genetic = _Genetic(ctx, limits, settings or GeneticSettings())
    if not genetic.search():
        genetic.run.stopped_by = STOP_ITERATIONS
    return genetic.run.result("genetic")
