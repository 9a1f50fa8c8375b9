"""Privacy models checked on a node's equivalence classes (see :mod:`anonlab.privacy.base`).

The models of ARX 3.9 (docs/privacy_models.md), importable from here:
:class:`KAnonymity`; :class:`DistinctLDiversity`, :class:`EntropyLDiversity`,
:class:`RecursiveCLDiversity` (:mod:`~anonlab.privacy.diversity`);
:class:`EqualDistanceTCloseness`, :class:`HierarchicalDistanceTCloseness`,
:class:`OrderedDistanceTCloseness` (:mod:`~anonlab.privacy.closeness`);
:class:`BasicBetaLikeness`, :class:`EnhancedBetaLikeness`,
:class:`DeltaDisclosure` (:mod:`~anonlab.privacy.likeness`);
:class:`DeltaPresence`, :class:`Inclusion`, :class:`KMap` (:mod:`~anonlab.privacy.presence`);
:class:`ProfitabilityProsecutor`, :class:`ProfitabilityJournalist`,
:class:`ProfitabilityProsecutorNoAttack`, :class:`ProfitabilityJournalistNoAttack`
(:mod:`~anonlab.privacy.profitability`);
:class:`AverageRisk`, :class:`SampleUniqueness`, :class:`PopulationUniqueness`
(:mod:`~anonlab.privacy.riskbased`). Their modules are imported on first use.
:func:`build_criterion` and :func:`normalize_criterion` read a model as the
settings spell it (:mod:`anonlab.privacy.spec`).
"""

from __future__ import annotations

import importlib
from typing import Any

from anonlab.parameters import check_k
from anonlab.privacy.base import (
    ClassStats,
    Criterion,
    KAnonymity,
    SensitiveHistograms,
    check_suppression,
    max_suppressed,
    model_monotone,
)
from anonlab.privacy.spec import (
    MODELS,
    build_criteria,
    build_criterion,
    normalize_criteria,
    normalize_criterion,
    parse_criterion_flag,
)

#: each model class exported here -> the module that defines it (imported on first use)
_LAZY = {
    "DistinctLDiversity": "diversity",
    "EntropyLDiversity": "diversity",
    "RecursiveCLDiversity": "diversity",
    "EqualDistanceTCloseness": "closeness",
    "HierarchicalDistanceTCloseness": "closeness",
    "OrderedDistanceTCloseness": "closeness",
    "BasicBetaLikeness": "likeness",
    "EnhancedBetaLikeness": "likeness",
    "DeltaDisclosure": "likeness",
    "DeltaPresence": "presence",
    "Inclusion": "presence",
    "KMap": "presence",
    "ProfitabilityProsecutor": "profitability",
    "ProfitabilityJournalist": "profitability",
    "ProfitabilityProsecutorNoAttack": "profitability",
    "ProfitabilityJournalistNoAttack": "profitability",
    "AverageRisk": "riskbased",
    "SampleUniqueness": "riskbased",
    "PopulationUniqueness": "riskbased",
}


def __getattr__(name: str) -> Any:
    """A model class, imported from its module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'anonlab.privacy' has no attribute '{name}'")
    return getattr(importlib.import_module(f"anonlab.privacy.{module}"), name)


__all__ = [
    "MODELS",
    "AverageRisk",
    "BasicBetaLikeness",
    "ClassStats",
    "Criterion",
    "DeltaDisclosure",
    "DeltaPresence",
    "DistinctLDiversity",
    "EnhancedBetaLikeness",
    "EntropyLDiversity",
    "EqualDistanceTCloseness",
    "HierarchicalDistanceTCloseness",
    "Inclusion",
    "KAnonymity",
    "KMap",
    "OrderedDistanceTCloseness",
    "PopulationUniqueness",
    "ProfitabilityJournalist",
    "ProfitabilityJournalistNoAttack",
    "ProfitabilityProsecutor",
    "ProfitabilityProsecutorNoAttack",
    "RecursiveCLDiversity",
    "SampleUniqueness",
    "SensitiveHistograms",
    "build_criteria",
    "build_criterion",
    "check_k",
    "check_suppression",
    "max_suppressed",
    "model_monotone",
    "normalize_criteria",
    "normalize_criterion",
    "parse_criterion_flag",
]
