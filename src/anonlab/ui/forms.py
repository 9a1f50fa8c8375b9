"""From a page's form to a run: settings values, the family's settings model, a job.

Every page that runs something builds the settings values a TOML file would
hold for the command (``input``, roles, method parameters), and calls
:func:`start_run`: the values get outputs in the run's own folder, are
validated by the command's settings model (the CLI's, so the same checks and
the same one-line errors), and run as a job. ``settings.toml`` in the run's
folder holds the values, so ``anonlab COMMAND --config settings.toml`` repeats
the run from the command line.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse

from anonlab.errors import AnonlabError
from anonlab.progress import ProgressFn
from anonlab.runs.common import RunResult
from anonlab.settings import Settings, validate_settings
from anonlab.ui.jobs import Job, JobStore
from anonlab.ui.workspace import Workspace

#: command -> its settings model (module, class), as the CLI's ``--config`` reads it
SETTINGS_OF: dict[str, tuple[str, str]] = {
    "generalize": ("anonlab.runs.generalize_settings", "GeneralizeSettings"),
    "apply": ("anonlab.runs.generalize_settings", "ApplySettings"),
    "microaggregate": ("anonlab.runs.microaggregate", "MicroaggregateSettings"),
    "suppress": ("anonlab.runs.suppress", "SuppressSettings"),
    "mask": ("anonlab.runs.mask", "MaskSettings"),
    "perturb": ("anonlab.runs.perturb", "PerturbSettings"),
    "fuse": ("anonlab.runs.fusion", "FuseSettings"),
    "compare": ("anonlab.runs.compare", "CompareSettings"),
}

#: the outputs a run from the app writes, by settings field (file names in the run's folder):
#: perturbation's secret key (the private folder is the custodian's) and compare's R-U map too
OUTPUT_NAMES = {
    "output": "release.csv",
    "report": "report.json",
    "html": "report.html",
    "key": "key.json",
    "plot": "plot.png",
}


def settings_model(command: str) -> type[Settings]:
    """The settings model of ``command`` (``generalize``, ``mask``, ...)."""
    try:
        module, name = SETTINGS_OF[command]
    except KeyError:
        raise AnonlabError(f"unknown command '{command}'") from None
    model: type[Settings] = getattr(importlib.import_module(module), name)
    return model


def with_outputs(values: Mapping[str, Any], folder: Path, model: type[Settings]) -> dict[str, Any]:
    """``values`` with every output the model has (release, report, HTML) in ``folder``.

    An output the values already name (a release as Parquet, say) is kept; one they give as
    ``None`` is not written (a Mondrian run has no class-size plot).
    """
    out = dict(values)
    for field_name, file_name in OUTPUT_NAMES.items():
        if field_name in model.model_fields and field_name not in out:
            out[field_name] = str(folder / file_name)
    return out


def write_settings_toml(values: Mapping[str, Any], path: Path) -> None:
    """``values`` as the TOML file the CLI's ``--config`` reads (absolute paths)."""
    import tomli_w

    plain = {k: v for k, v in values.items() if v is not None}
    path.write_text(tomli_w.dumps(plain), encoding="utf-8")


def start_run(request: Request, command: str, values: Mapping[str, Any]) -> RedirectResponse:
    """Validate ``values`` for ``command``, start the run, and go to its page."""
    workspace: Workspace = request.app.state.workspace
    jobs: JobStore = request.app.state.jobs
    job = new_job(workspace, command, values)
    jobs.start(job)
    return RedirectResponse(f"/runs/{job.id}", status_code=303)


def new_job(workspace: Workspace, command: str, values: Mapping[str, Any]) -> Job:
    """A job running ``command`` on ``values`` in a fresh run folder (not started)."""
    from anonlab.runs import run

    model = settings_model(command)
    job_id = workspace.new_id("r")
    folder = workspace.folder("runs") / job_id
    folder.mkdir(mode=0o700)
    full = with_outputs(values, folder, model)
    settings = validate_settings(model, full)
    write_settings_toml(full, folder / "settings.toml")

    def work(progress: ProgressFn) -> RunResult:
        return run(settings, progress=progress)

    return Job(id=job_id, command=command, values=full, work=work, folder=folder)


def text(form: FormData, name: str) -> str | None:
    """A form field's text, stripped; ``None`` when absent or empty."""
    value = form.get(name)
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def number(form: FormData, name: str, kind: type[int] | type[float] = float) -> Any:
    """A form field as a number of ``kind``; ``None`` when empty; one line when not a number."""
    value = text(form, name)
    if value is None:
        return None
    try:
        return kind(value)
    except ValueError:
        raise AnonlabError(f"{name}: '{value}' is not a number", parameter=name) from None
