"""Step 8, Export: every output of a run, the release in other formats, the value mappings
and the settings that repeat the run from the command line.

``settings.toml`` holds the run's settings values with its outputs named
beside the file (``release.csv``, ``report.json``, ``report.html``), so that
``anonlab generalize --config settings.toml`` (or the family's command) run in
the folder it is saved to writes the same release. An ``apply`` run (another
node of the solution space, or levels of the user's choice) has no ``--config`` on the
command line: its ``settings.toml`` is the generalize run's settings with
``min_level`` and ``max_level`` fixed at the levels it released (a search that
can only find them), and the page gives the ``anonlab apply ... --node N``
(``--levels``) line too.

``risk`` and ``fuse`` read no settings file (``--config``): their runs' folders hold
``command.sh``, the equivalent command line, and the page offers it instead of
``settings.toml``, with the outputs named beside it as well (``report.json``, and
fusion's ``release.csv`` and ``report.html``). Compare's risk-utility map
(``plot.png``) downloads as an image.

The release as Parquet, Excel or a database table is the released CSV read
back as text and written by the library's one writer
(:func:`anonlab.io.write_table`: a file is written whole and renamed, a
database table replaced inside one transaction), so a failed write leaves
nothing behind. The value mappings pair each quasi-identifier's original
value with its released value record by record (the release keeps the
input's rows in order) and count the records of each pair.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from anonlab.errors import AnonlabError, present
from anonlab.ui.forms import OUTPUT_NAMES, text
from anonlab.ui.jobs import DONE, Job
from anonlab.ui.pages.explore import quasi_identifiers, read_pair, source_job
from anonlab.ui.pages.runs import job_of, jobs_of
from anonlab.ui.templating import render

#: the release's other formats: form value -> file name in the run's folder
FORMATS = {"parquet": "release.parquet", "xlsx": "release.xlsx"}
#: the files of a run folder that may be downloaded
DOWNLOADS = {
    *OUTPUT_NAMES.values(),
    *FORMATS.values(),
    "mappings.csv",
    "settings.toml",
    "command.sh",
}
#: the commands without ``--config``: their runs are repeated by a command line (command.sh)
LINE_COMMANDS = ("risk", "fuse")
#: each download's media type
MEDIA = {
    ".csv": "text/csv; charset=utf-8",
    ".json": "application/json",
    ".html": "text/html; charset=utf-8",
    ".toml": "application/toml; charset=utf-8",
    ".sh": "text/x-shellscript; charset=utf-8",
    ".png": "image/png",
    ".parquet": "application/vnd.apache.parquet",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}


def done(job: Job) -> Job:
    """``job``, refused with one line unless it is done."""
    if job.status != DONE or job.result is None:
        raise AnonlabError(f"run {job.id} is {job.status}: export a run that is done")
    return job


def beside(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with each output file named by its bare name (beside the TOML file)."""
    return {
        k: (OUTPUT_NAMES[k] if k in OUTPUT_NAMES and v is not None else v)
        for k, v in values.items()
    }


def export_settings(request: Request, job: Job) -> tuple[str, dict[str, Any]]:
    """The command and settings values that repeat ``job`` with ``anonlab CMD --config``."""
    if job.command != "apply":
        return job.command, beside(job.values)
    source, _ = source_job(jobs_of(request), job)
    if source is None:
        raise AnonlabError(
            f"run {job.id} applied a report of another session: its settings are in its "
            "report's parameters"
        )
    # the levels the apply run released
    levels = present(job.result, "the run's result").report["transformation"]
    values = beside(source.values)
    values.pop("alternatives", None)
    values["min_level"] = dict(levels)
    values["max_level"] = dict(levels)
    return "generalize", values


def settings_text(request: Request, job: Job) -> str:
    """``settings.toml`` of ``job``: a comment with the command, then the values."""
    import tomli_w

    command, values = export_settings(request, job)
    lines = [f"# anonlab {command} --config settings.toml   (run {job.id} of the web app)"]
    if job.command == "apply":
        lines.append(f"# the levels run {job.id} released, as the search's only choice")
    if "/uploads/" in str(values.get("input", "")):
        lines.append("# input is the app's copy of the upload, removed when the app stops:")
        lines.append("# point it at your file")
    values = {**values, "input": _without_password(values.get("input"), lines)}
    plain = {k: v for k, v in values.items() if v is not None}
    return "\n".join(lines) + "\n" + tomli_w.dumps(plain)


def command_text(job: Job) -> str:
    """``command.sh`` of a ``risk`` or ``fuse`` run: a comment, then the command line that
    repeats it, its outputs named beside the file (as the family's page builds it)."""
    from anonlab.ui.pages.families import fuse_command_line, risk_command_line

    outputs = {k: OUTPUT_NAMES[k] for k in OUTPUT_NAMES if job.values.get(k) is not None}
    lines = [
        f"# run {job.id} of the web app; {job.command} reads no settings file: this command "
        "line repeats it, writing its outputs beside this file"
    ]
    source = "table" if job.command == "risk" else "config"
    if "/uploads/" in str(job.values.get(source, "")):
        lines.append(f"# {source} is the app's copy of the upload, removed when the app stops:")
        lines.append("# point it at your file")
    values = {**job.values, source: _without_password(job.values.get(source), lines)}
    if job.command == "risk":
        line = risk_command_line({**values, **outputs})
    else:
        line = fuse_command_line(values, outputs)
    return "\n".join([*lines, line]) + "\n"


def _without_password(source: Any, lines: list[str]) -> Any:
    """A database URL with its password masked (a note added to ``lines``); else as it is."""
    from anonlab.database import is_database_url, masked

    if not isinstance(source, str) or not is_database_url(source) or masked(source) == source:
        return source
    lines.append("# the database password is masked: write it in (or use a URL without one)")
    return masked(source)


def apply_line(job: Job) -> str | None:
    """The command line of an apply run (``apply`` reads no ``--config``)."""
    if job.command != "apply":
        return None
    words = ["anonlab", "apply", job.values["report_in"], job.values["input"]]
    if job.values.get("node") is not None:
        words += ["--node", str(job.values["node"])]
    else:
        levels = job.values.get("levels") or {}
        words += ["--levels", ",".join(f"{c}={lv}" for c, lv in levels.items())]
    if job.values.get("delimiter"):
        words += ["--delimiter", job.values["delimiter"]]
    for name in ("table", "query", "sheet"):
        if job.values.get(name):
            words += [f"--{name}", job.values[name]]
    words += ["--output", "release.csv", "--report", "report.json", "--html", "report.html"]
    return shlex.join(words)


async def page(request: Request) -> Response:
    job = done(job_of(request))
    files = [n for n in (*OUTPUT_NAMES.values(),) if (job.folder / n).is_file()]
    return render(
        request,
        "export.html",
        job=job,
        files=files,
        formats=FORMATS,
        mappings=job.command in ("generalize", "apply"),
        apply_line=apply_line(job),
        command_line=job.command in LINE_COMMANDS,
        message=None,
    )


def _download(path: Path) -> Response:
    media = MEDIA.get(path.suffix, "application/octet-stream")
    inline = path.suffix == ".html"
    return FileResponse(
        path,
        media_type=media,
        filename=path.name,
        content_disposition_type="inline" if inline else "attachment",
    )


async def download(request: Request) -> Response:
    """One file of a run's folder (release, report, HTML, or a format made for export)."""
    job = done(job_of(request))
    name = request.path_params["name"]
    if name not in DOWNLOADS:
        raise AnonlabError(f"'{name}' is not a file a run writes")
    if name in ("command.sh", "settings.toml"):
        repeats = "command.sh" if job.command in LINE_COMMANDS else "settings.toml"
        if name != repeats:
            raise AnonlabError(f"a {job.command} run has no {name}: download {repeats}")
    if name == "command.sh":
        return PlainTextResponse(
            command_text(job),
            media_type=MEDIA[".sh"],
            headers={"Content-Disposition": 'attachment; filename="command.sh"'},
        )
    if name == "settings.toml":
        return PlainTextResponse(
            settings_text(request, job),
            media_type=MEDIA[".toml"],
            headers={"Content-Disposition": 'attachment; filename="settings.toml"'},
        )
    if name == "mappings.csv":
        return _download(await run_in_threadpool(write_mappings, job))
    path = job.folder / name
    if not path.is_file():
        raise AnonlabError(f"run {job.id} wrote no {name}")
    return _download(path)


def value_mappings(job: Job) -> Any:
    """Per quasi-identifier, each (original, released) pair of values and its records."""
    import pandas as pd

    result = present(job.result, "the run's result")
    original, release = read_pair(job)
    if len(original) != len(release):
        raise AnonlabError(
            f"run {job.id}'s release has {len(release)} rows for {len(original)} input rows: "
            "its values cannot be paired"
        )
    parts = []
    for column in quasi_identifiers(result.report):
        pairs = pd.DataFrame(
            {
                "original": original[column].astype(str).to_numpy(),
                "released": release[column].astype(str).to_numpy(),
            }
        )
        counted = pairs.groupby(["original", "released"], sort=True).size()
        part = counted.rename("records").reset_index()
        part.insert(0, "attribute", column)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def write_mappings(job: Job) -> Path:
    """``mappings.csv`` in the run's folder (written once, by the library's writer)."""
    from anonlab.io import write_table

    path = job.folder / "mappings.csv"
    if not path.is_file():
        write_table(value_mappings(job), path)
    return path


def release_text(job: Job) -> Any:
    """The release as written (CSV), read back as text."""
    from anonlab.io import read_table

    path = job.folder / OUTPUT_NAMES["output"]
    if not path.is_file():
        raise AnonlabError(f"run {job.id} wrote no release")
    return read_table(path)


def write_format(job: Job, fmt: str) -> Path:
    """The release as ``fmt`` (``parquet`` or ``xlsx``) in the run's folder."""
    from anonlab.io import write_table

    path = job.folder / FORMATS[fmt]
    if not path.is_file():
        write_table(release_text(job), path)
    return path


def write_database(job: Job, url: str, table: str) -> None:
    """The release as table ``table`` of the database ``url`` (replaced in one transaction)."""
    from anonlab.io import write_table

    write_table(release_text(job), url, table=table)


async def export(request: Request) -> Response:
    """The release as Parquet or Excel (a download), or into a database table."""
    from anonlab.database import is_database_url, masked

    job = done(job_of(request))
    form = await request.form()
    fmt = text(form, "format")
    if fmt in FORMATS:
        return _download(await run_in_threadpool(write_format, job, fmt))
    if fmt != "database":
        raise AnonlabError(f"format '{fmt}' is unknown: parquet, xlsx or database")
    url, table = text(form, "url"), text(form, "table")
    if url is None or not is_database_url(url):
        raise AnonlabError(
            f"'{masked(url or '')}' is not a SQLAlchemy URL: e.g. sqlite:///release.db"
        )
    if table is None:
        raise AnonlabError("name the database table to write the release to")
    await run_in_threadpool(write_database, job, url, table)
    files = [n for n in OUTPUT_NAMES.values() if (job.folder / n).is_file()]
    return render(
        request,
        "export.html",
        job=job,
        files=files,
        formats=FORMATS,
        mappings=job.command in ("generalize", "apply"),
        apply_line=apply_line(job),
        command_line=job.command in LINE_COMMANDS,
        message=f"The release was written to table '{table}' of {masked(url)}.",
    )


ROUTES: list[BaseRoute] = [
    Route("/runs/{id}/export", page, methods=["GET"]),
    Route("/runs/{id}/export", export, methods=["POST"]),
    Route("/runs/{id}/files/{name}", download, methods=["GET"]),
]
