"""anonlab: privacy-preserving data publishing.

Generalization over hierarchies (k-anonymity with optimal lattice search),
microaggregation with the EM4ADOM quality model, multi-party fusion by top-down
specialization, and distance-preserving perturbation for clustering.

Public names are imported lazily, so ``import anonlab`` stays cheap and a
method family's dependencies load only when that family is used.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "run": "anonlab.runs",
    "RunResult": "anonlab.runs",
    "AnonlabError": "anonlab.errors",
    "ReleaseRiskWarning": "anonlab.errors",
    "ReleaseRiskError": "anonlab.errors",
    "Role": "anonlab.dataset",
    "assign_roles": "anonlab.dataset",
    "Dataset": "anonlab.dataset",
    "Hierarchy": "anonlab.hierarchy",
    "interval_hierarchy": "anonlab.hierarchy",
    "redaction_hierarchy": "anonlab.hierarchy",
    "grouping_hierarchy": "anonlab.hierarchy",
    "KAnonymity": "anonlab.privacy",
    "Generalizer": "anonlab.generalize",
    "GeneralizationResult": "anonlab.generalize",
    "anonymize": "anonlab.generalize",
    "apply_transformation": "anonlab.generalize",
    "check_k_anonymity": "anonlab.checker",
    "check_generalization": "anonlab.checker",
    "GeneralizeSettings": "anonlab.runs.generalize",
    "ApplySettings": "anonlab.runs.generalize",
    "run_generalize": "anonlab.runs.generalize",
    "run_apply": "anonlab.runs.generalize",
    "Criterion": "anonlab.privacy",
    "read_table": "anonlab.io",
    "write_table": "anonlab.io",
    # microaggregation and EM4ADOM
    "microaggregate": "anonlab.microaggregation",
    "MicroaggregationResult": "anonlab.microaggregation",
    "mdav_labels": "anonlab.microaggregation",
    "scalable_mdav_labels": "anonlab.microaggregation",
    "run_microaggregate": "anonlab.runs.microaggregate",
    "run_evaluate": "anonlab.runs.microaggregate",
    "run_tradeoff": "anonlab.runs.microaggregate",
    "MicroaggregateSettings": "anonlab.runs.microaggregate",
    "EvaluateSettings": "anonlab.runs.microaggregate",
    "TradeoffSettings": "anonlab.runs.microaggregate",
    "evaluate": "anonlab.metrics",
    "Evaluation": "anonlab.metrics",
    # multi-party fusion
    "fuse": "anonlab.fusion.engine",
    "specialize_table": "anonlab.fusion.engine",
    "FusionResult": "anonlab.fusion.engine",
    "FusionConfig": "anonlab.fusion.config",
    "load_fusion_config": "anonlab.fusion.config:load_config",
    "check_templates": "anonlab.fusion.check",
    "FuseSettings": "anonlab.runs.fusion",
    "PartySettings": "anonlab.runs.fusion",
    "run_fuse": "anonlab.runs.fusion",
    "run_party": "anonlab.runs.fusion",
    "SecureMax": "anonlab.fusion.secure_max",
    "make_certificates": "anonlab.fusion.certs",
    # perturbation
    "perturb": "anonlab.perturbation",
    "invert_perturbation": "anonlab.perturbation",
    "MatrixLibrary": "anonlab.perturbation",
    "PerturbationKey": "anonlab.perturbation",
    "RecoverableReleaseWarning": "anonlab.perturbation",
    "run_attacks": "anonlab.perturbation",
    "privacy_measures": "anonlab.perturbation",
    "clustering_agreement": "anonlab.perturbation",
    "PerturbSettings": "anonlab.runs.perturb",
    "InvertSettings": "anonlab.runs.perturb",
    "AttackSettings": "anonlab.runs.perturb",
    "run_perturb": "anonlab.runs.perturb",
    "run_invert": "anonlab.runs.perturb",
    "run_attack": "anonlab.runs.perturb",
    # reports
    "render_html": "anonlab.htmlreport",
    "load_report": "anonlab.htmlreport",
    "write_html": "anonlab.htmlreport",
    "write_plot": "anonlab.htmlreport",
}

__all__ = [
    "AnonlabError",
    "ApplySettings",
    "AttackSettings",
    "Criterion",
    "Dataset",
    "EvaluateSettings",
    "Evaluation",
    "FuseSettings",
    "FusionConfig",
    "FusionResult",
    "GeneralizationResult",
    "GeneralizeSettings",
    "Generalizer",
    "Hierarchy",
    "InvertSettings",
    "KAnonymity",
    "MatrixLibrary",
    "MicroaggregateSettings",
    "MicroaggregationResult",
    "PartySettings",
    "PerturbSettings",
    "PerturbationKey",
    "RecoverableReleaseWarning",
    "ReleaseRiskError",
    "ReleaseRiskWarning",
    "Role",
    "RunResult",
    "SecureMax",
    "TradeoffSettings",
    "__version__",
    "anonymize",
    "apply_transformation",
    "assign_roles",
    "check_generalization",
    "check_k_anonymity",
    "check_templates",
    "clustering_agreement",
    "evaluate",
    "fuse",
    "grouping_hierarchy",
    "interval_hierarchy",
    "invert_perturbation",
    "load_fusion_config",
    "load_report",
    "make_certificates",
    "mdav_labels",
    "microaggregate",
    "perturb",
    "privacy_measures",
    "read_table",
    "redaction_hierarchy",
    "render_html",
    "run",
    "run_apply",
    "run_attack",
    "run_attacks",
    "run_evaluate",
    "run_fuse",
    "run_generalize",
    "run_invert",
    "run_microaggregate",
    "run_party",
    "run_perturb",
    "run_tradeoff",
    "scalable_mdav_labels",
    "specialize_table",
    "write_html",
    "write_plot",
    "write_table",
]


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'anonlab' has no attribute '{name}'")
    module, _, attribute = target.partition(":")  # "module:attribute" exports under another name
    return getattr(importlib.import_module(module), attribute or name)


def __dir__() -> list[str]:
    return sorted(__all__)
