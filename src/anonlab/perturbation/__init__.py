"""Distance-preserving perturbation for privacy-preserving clustering (docs/formulas.md §4).

``perturb`` z-scores the chosen numeric columns and transforms them by OBT
(pairs/triples with matrices from a seeded library meeting a privacy level),
RBT (pairwise rotations in a security range), one full random rotation, or a
geometric perturbation (rotation, translation, noise). ``invert`` undoes it
with the key. ``privacy_measures`` gives S, R, P per block; ``run_attacks``
measures what an attacker recovers; ``clustering_agreement`` checks that
clusters survive.
"""

from __future__ import annotations

from anonlab.perturbation.attacks import RecoverableReleaseWarning, run_attacks
from anonlab.perturbation.evaluate import (
    clustering_agreement,
    perturbation_summary,
    privacy_measures,
)
from anonlab.perturbation.key import Block, IrreversibleReleaseWarning, PerturbationKey
from anonlab.perturbation.library import MatrixLibrary
from anonlab.perturbation.measures import (
    direction_privacy,
    distance_privacy,
    privacy_level,
    trace_privacy,
)
from anonlab.perturbation.transforms import Perturbation, invert, perturb

invert_perturbation = invert  # the name under which ``anonlab`` exports it

__all__ = [
    "Block",
    "IrreversibleReleaseWarning",
    "MatrixLibrary",
    "Perturbation",
    "PerturbationKey",
    "RecoverableReleaseWarning",
    "clustering_agreement",
    "direction_privacy",
    "distance_privacy",
    "invert",
    "invert_perturbation",
    "perturb",
    "perturbation_summary",
    "privacy_level",
    "privacy_measures",
    "run_attacks",
    "trace_privacy",
]
