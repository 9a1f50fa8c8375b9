"""One run per family: read, apply the method, verify, measure, write.

``run(settings)`` dispatches on the settings' type to the family's run
function; each family's settings model and run function live in the module
of this package named for the family. The command line only maps its flags
to a settings model, calls the run and prints.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from anonlab.errors import AnonlabError
from anonlab.runs.common import RunResult

if TYPE_CHECKING:
    from anonlab.progress import ProgressFn
    from anonlab.settings import Settings

__all__ = ["RunResult", "run"]

#: settings class (module and name) -> (the run's module, run function); imported only when
#: that family runs
_RUNS: dict[str, tuple[str, str]] = {
    "anonlab.runs.generalize_settings.GeneralizeSettings": (
        "anonlab.runs.generalize",
        "run_generalize",
    ),
    "anonlab.runs.generalize_settings.ApplySettings": ("anonlab.runs.apply", "run_apply"),
    "anonlab.runs.hierarchy.HierarchySettings": ("anonlab.runs.hierarchy", "run_hierarchy"),
    "anonlab.runs.hierarchy.ShowHierarchySettings": ("anonlab.runs.hierarchy", "run_show"),
    "anonlab.runs.microaggregate.MicroaggregateSettings": (
        "anonlab.runs.microaggregate",
        "run_microaggregate",
    ),
    "anonlab.runs.microaggregate.EvaluateSettings": ("anonlab.runs.microaggregate", "run_evaluate"),
    "anonlab.runs.microaggregate.TradeoffSettings": ("anonlab.runs.microaggregate", "run_tradeoff"),
    "anonlab.runs.fusion.FuseSettings": ("anonlab.runs.fusion", "run_fuse"),
    "anonlab.runs.fusion.PartySettings": ("anonlab.runs.fusion", "run_party"),
    "anonlab.runs.perturb.PerturbSettings": ("anonlab.runs.perturb", "run_perturb"),
    "anonlab.runs.perturb.InvertSettings": ("anonlab.runs.perturb", "run_invert"),
    "anonlab.runs.perturb.AttackSettings": ("anonlab.runs.perturb", "run_attack"),
    "anonlab.runs.verify.VerifySettings": ("anonlab.runs.verify", "run_verify"),
    "anonlab.runs.suppress.SuppressSettings": ("anonlab.runs.suppress", "run_suppress"),
    "anonlab.runs.mask.MaskSettings": ("anonlab.runs.mask", "run_mask"),
    "anonlab.runs.compare.CompareSettings": ("anonlab.runs.compare", "run_compare"),
}


def run(settings: Settings, *, progress: ProgressFn | None = None) -> RunResult:
    """Run what ``settings`` describe (any family's settings model) and return the result.

    Example: ``run(GeneralizeSettings.load("examples/adult.toml"))``.
    """
    for cls in type(settings).__mro__:
        target = _RUNS.get(f"{cls.__module__}.{cls.__qualname__}")
        if target is not None:
            function = getattr(importlib.import_module(target[0]), target[1])
            result: RunResult = function(settings, progress=progress)
            return result
    raise AnonlabError(
        f"settings of type {type(settings).__name__} name no run: give the "
        "settings of a family, e.g. GeneralizeSettings",
        parameter="settings",
    )
