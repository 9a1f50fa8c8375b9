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

#: settings class name -> (module, run function); imported only when that family runs
_RUNS: dict[str, tuple[str, str]] = {
    "GeneralizeSettings": ("anonlab.runs.generalize", "run_generalize"),
    "ApplySettings": ("anonlab.runs.apply", "run_apply"),
    "HierarchySettings": ("anonlab.runs.hierarchy", "run_hierarchy"),
    "ShowHierarchySettings": ("anonlab.runs.hierarchy", "run_show"),
    "MicroaggregateSettings": ("anonlab.runs.microaggregate", "run_microaggregate"),
    "EvaluateSettings": ("anonlab.runs.microaggregate", "run_evaluate"),
    "TradeoffSettings": ("anonlab.runs.microaggregate", "run_tradeoff"),
    "FuseSettings": ("anonlab.runs.fusion", "run_fuse"),
    "PartySettings": ("anonlab.runs.fusion", "run_party"),
    "PerturbSettings": ("anonlab.runs.perturb", "run_perturb"),
    "InvertSettings": ("anonlab.runs.perturb", "run_invert"),
    "AttackSettings": ("anonlab.runs.perturb", "run_attack"),
    "VerifySettings": ("anonlab.runs.verify", "run_verify"),
}
#: settings classes defined apart from their run's module
_SETTINGS_HOME = {
    "GeneralizeSettings": "anonlab.runs.generalize_settings",
    "ApplySettings": "anonlab.runs.generalize_settings",
}


def run(settings: Settings, *, progress: ProgressFn | None = None) -> RunResult:
    """Run what ``settings`` describe (any family's settings model) and return the result.

    Example: ``run(GeneralizeSettings.load("examples/adult.toml"))``.
    """
    for cls in type(settings).__mro__:
        target = _RUNS.get(cls.__name__)
        if target is not None and cls.__module__ == _SETTINGS_HOME.get(cls.__name__, target[0]):
            function = getattr(importlib.import_module(target[0]), target[1])
            result: RunResult = function(settings, progress=progress)
            return result
    raise AnonlabError(
        f"settings of type {type(settings).__name__} name no run: give the "
        "settings of a family, e.g. GeneralizeSettings",
        parameter="settings",
    )
