"""What every family's run shares: its result, stored paths, the report files.

A run reads its input, applies its method, verifies the release, measures it
and writes release, JSON report and HTML through one
:class:`anonlab.outputs.Outputs`, so that it writes all of its outputs or none.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, Protocol, Self, TypeVar

from pydantic import Field, field_validator, model_validator

from anonlab.errors import AnonlabError
from anonlab.outputs import Outputs
from anonlab.paths import is_url, lost_slash
from anonlab.settings import Settings, split_names

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.database import DatabaseTarget
    from anonlab.dataset import Roles
    from anonlab.engine.base import Engine

P = ParamSpec("P")
R = TypeVar("R")
SettingsT = TypeVar("SettingsT")

PATHS_RELATIVE = "relative to the report's folder"
PATHS_ABSOLUTE = "absolute"


@dataclass
class RunResult:
    """What a run produced: its report, the release (when it makes one) and the files written."""

    report: dict[str, Any]
    release: pd.DataFrame | None = None
    written: list[Path] = field(default_factory=list)


def stored_path(path: str | os.PathLike[str] | None, report: Path | None) -> str | None:
    """How a report records ``path``: relative to the report's folder, or absolute.

    A SQLAlchemy URL is kept, its password masked. Without a report file the path is
    absolute, so a report made in memory and written later stays usable.
    """
    if path is None:
        return None
    if report is not None and lost_slash(report) is not None:
        report = None  # a report at a URL (s3:/b/r.json as a Path): its paths absolute
    text = str(path)
    if "://" in text:
        from anonlab.database import masked

        return masked(_absolute_sqlite(text))  # a report never holds a database password
    absolute = Path(text).resolve()
    if report is None:
        return str(absolute)
    return os.path.relpath(absolute, report.resolve().parent)


def stored_paths(
    values: Mapping[str, Any], names: Iterable[str], report: Path | None
) -> dict[str, Any]:
    """``values`` with each of ``names`` that holds a path, or a mapping of paths, stored as
    :func:`stored_path` stores it; the other values as they are."""
    out = dict(values)
    for name in names:
        value = out.get(name)
        if isinstance(value, str):
            out[name] = stored_path(value, report)
        elif isinstance(value, dict):
            out[name] = {k: stored_path(str(v), report) for k, v in value.items()}
    return out


def data_inputs(settings: Settings) -> dict[str, Any]:
    """The files a run reads as its report's header lists them: the data file (``None`` for
    a URL) and each sensitive attribute's hierarchy."""
    source = getattr(settings, "input", None)
    return {
        "data": source if isinstance(source, str) and "://" not in source else None,
        **{f"hierarchy:{c}": p for c, p in getattr(settings, "sensitive_hierarchies", {}).items()},
    }


def _absolute_sqlite(url: str) -> str:
    """A SQLite URL with a relative file (``sqlite:///rel.db``) made absolute, so that a
    report read from another folder still names the same database; other URLs as given."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or url.startswith(prefix + "/"):
        return url
    file, sep, query = url[len(prefix) :].partition("?")
    if not file or file == ":memory:":
        return url
    return f"{prefix}{Path(file).resolve()}{sep}{query}"


def paths_convention(report: Path | None) -> str:
    """The report's ``paths`` key: how the paths in it are to be read."""
    return PATHS_RELATIVE if report is not None and lost_slash(report) is None else PATHS_ABSOLUTE


def resolve_stored_path(stored: str, report_file: Path, paths: str | None) -> Path:
    """The path a report recorded, as a path usable from the current folder.

    ``paths`` is the report's ``paths`` key; reports of earlier versions have
    none and recorded paths as given (relative to where they ran): those are
    tried against the report's folder first, then the current folder.
    """
    p = Path(stored)
    if p.is_absolute():
        return p
    beside = report_file.resolve().parent / p
    if paths == PATHS_RELATIVE or beside.exists():
        return beside
    return p


def stage_report(outputs: Outputs, report: dict[str, Any], *, internal: bool = False) -> None:
    """Stage the JSON report (``report``) and the HTML page (``html``) that were asked for.

    The page looks up the input files the report names (e.g. hierarchies)
    beside the report first, where its relative paths point, then in the
    current folder.
    """
    from anonlab.io import to_json_text

    report["outputs"] = outputs_section(outputs)
    if "report" in outputs:
        text = to_json_text(report)
        outputs.stage("report", lambda tmp: tmp.write_text(text, encoding="utf-8"))
    if "html" in outputs:
        from anonlab.htmlreport import render_html

        target = outputs.path("report")
        dirs = [] if target is None else [target.resolve().parent]
        page = render_html(report, internal=internal, base_dirs=[*dirs, Path.cwd()])
        outputs.stage("html", lambda tmp: tmp.write_text(page, encoding="utf-8"))


def outputs_section(outputs: Outputs) -> dict[str, Any]:
    """The report's ``outputs``: everything the run writes, so a reader knows what it describes.

    A file or folder is stored as :func:`stored_path` stores paths (relative
    to the report's folder); a database table as ``{"url": ..., "table": ...}``,
    the URL without its password; the release (``output``) comes first. A
    perturbation's key is left out: a report never names it.
    """
    from anonlab.database import DatabaseTarget

    report = outputs.path("report")
    section: dict[str, Any] = {}
    for name in sorted(outputs.names(), key=lambda name: name != "output"):
        target = outputs.target(name)
        if name == "key" or target is None:
            continue
        if isinstance(target, DatabaseTarget):
            section[name] = {"url": stored_path(target.url, report), "table": target.table}
        else:
            section[name] = stored_path(target, report)
    return section


def stage_release(
    outputs: Outputs,
    release: pd.DataFrame,
    check: Callable[[pd.DataFrame], None] | None = None,
    *,
    categorical: bool = False,
) -> pd.DataFrame:
    """Stage the release as output ``output`` and return it as written.

    The release is written to its temporary file in the format of its target
    (the extension, or Parquet for a database table), read back by the one
    reader as the target would be read, and checked by ``check`` (an
    independent checker raising on a failure) before it counts as staged.
    Without an ``output`` the release in memory is checked and returned.
    Risk and reports are measured on what this returns: the table as written.
    ``categorical`` reads it back with its text columns as categoricals
    (``strings="dictionary"``: the same texts, one code per row), which a
    release of few distinct values per column (a generalization) is grouped
    and checked on far faster and in less memory; its records expected to repeat, each
    distinct line of a CSV release is parsed once (``read_table(repeated=True)``).
    """
    from anonlab.io import read_table, write_table

    target = outputs.target("output")
    if target is None:
        if check is not None:
            check(release)
        return release
    written: list[pd.DataFrame] = []

    def write(tmp: Path) -> None:
        write_table(release, tmp, format_of=target)
        back = read_table(
            tmp,
            format_of=target,
            strings="dictionary" if categorical else "python",
            repeated=categorical,
        )
        if check is not None:
            check(back)
        written.append(back)

    outputs.stage("output", write)
    return written[-1]


def file_of(source: Any) -> str | None:
    """A run's input as a file path or a file URL (``s3://...``): ``None`` for a DataFrame, a
    database URL or nothing (what :class:`~anonlab.outputs.Outputs` guards against being
    overwritten)."""
    if isinstance(source, str) and ("://" not in source or is_url(source)):
        return source
    return None


def reads_urls(
    run: Callable[Concatenate[SettingsT, P], R],
) -> Callable[Concatenate[SettingsT, P], R]:
    """A run function that opens the URLs it reads and writes with its settings'
    ``storage_options`` (:func:`anonlab.urls.using_storage_options`)."""

    @functools.wraps(run)
    def with_options(settings: SettingsT, /, *args: P.args, **kwargs: P.kwargs) -> R:
        from anonlab.urls import using_storage_options

        with using_storage_options(getattr(settings, "storage_options", None)):
            return run(settings, *args, **kwargs)

    return with_options


def is_folder_output(output: str | None) -> bool:
    """Whether a release output names a folder of Parquet parts (an engine's release): a path
    ending in ``/``, or an existing folder holding an earlier such release (Parquet parts and
    nothing else). A file output is told without importing the engines."""
    if output is None:
        return False
    if output.endswith(("/", os.sep)):
        return True
    if is_url(output):
        from anonlab.outputs import is_release_url

        return is_release_url(output)
    if not Path(output).is_dir():
        return False
    from anonlab.staging import holds_release

    return holds_release(Path(output))


def input_tables(source: str | None, table: str | None) -> list[DatabaseTarget]:
    """The database table a run reads, so that no output may replace it (none for files)."""
    from anonlab.database import DatabaseTarget, is_database_url

    if source is None or table is None or not is_database_url(source):
        return []
    return [DatabaseTarget(str(source), table)]


class ReadSettings(Settings):
    """How a run's table(s) are read (see :func:`anonlab.io.read_table`).

    ``delimiter`` is the CSV delimiter (sniffed when not given), ``sheet`` an
    Excel sheet, ``table`` or ``query`` the database table or SQL query to read
    when the source is a SQLAlchemy URL. ``storage_options`` are fsspec's
    options for the inputs and outputs named by URL (``s3://``, ``gs://``...;
    :mod:`anonlab.urls`), e.g. ``{"anon": True}`` or ``{"key": ..., "secret": ...}``;
    they are never written to a report.
    """

    delimiter: str | None = None
    sheet: str | None = None
    table: str | None = None
    query: str | None = None
    #: fsspec's options for inputs and outputs named by URL (credentials, endpoint...): never
    #: written to a report
    storage_options: dict[str, Any] = Field(default_factory=dict, exclude=True)

    def read_options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`anonlab.io.read_table`: the delimiter, and the others
        that were given."""
        options: dict[str, Any] = {"delimiter": self.delimiter}
        for name in ("sheet", "table", "query"):
            value = getattr(self, name)
            if value is not None:
                options[name] = value
        return options


class EngineSettings(ReadSettings):
    """Where the passes over the rows run (docs/engine.md; generalize, perturb, invert).

    ``engine`` ``"numpy"`` (this process) or ``"dask"``: a cluster joined at
    ``scheduler`` (``tcp://host:port``) or started locally with ``workers``
    processes of ``memory_limit`` each (``"4GB"``). On an engine (``dask``, a
    folder ``output`` ending in ``/``, or a Dask DataFrame ``input``) the
    release is written as partitioned Parquet by the engine; the rows are
    never held here.
    """

    engine: Literal["numpy", "dask"] = "numpy"
    scheduler: str | None = None
    workers: int | None = Field(default=None, ge=1)
    memory_limit: str | int | None = None

    @field_validator("memory_limit")
    @classmethod
    def _memory_limit(cls, value: str | int | None) -> str | int | None:
        from anonlab.engine.base import parse_memory_limit

        parse_memory_limit(value)  # one line naming memory_limit if it is no amount
        return value

    @model_validator(mode="after")
    def _dask_options(self) -> Self:
        """``scheduler`` and ``workers`` say where Dask runs: refused with engine numpy."""
        for name in ("scheduler", "workers"):
            if self.engine != "dask" and getattr(self, name) is not None:
                raise AnonlabError(
                    f"{name} applies to engine 'dask' only: set engine = "
                    f"'dask' or leave {name} out",
                    parameter=name,
                )
        return self


class EngineRelease(Protocol):
    """The settings of a run whose release an engine may write (:func:`check_engine_io`)."""

    @property
    def engine(self) -> str: ...
    @property
    def input(self) -> Any: ...
    @property
    def sheet(self) -> str | None: ...
    @property
    def table(self) -> str | None: ...
    @property
    def query(self) -> str | None: ...
    @property
    def output(self) -> str | None: ...
    @property
    def output_table(self) -> str | None: ...


def check_engine_io(settings: EngineRelease, *, file_output: bool = False) -> None:
    """Refuse, before any work, what the engines do not read or write: a database, an Excel
    sheet, a query as input; a database table as output (``file_output``: the run also
    gathers the engine's parts into a file, which the message offers)."""
    from anonlab.database import is_database_url, masked

    engine = f"engine '{settings.engine}'"
    if is_database_url(settings.input):
        other = (  # the NumPy engine runs for a folder output; a file output, in memory
            "give a file output (not a folder)"
            if settings.engine == "numpy"
            else "use engine 'numpy' with a file output"
        )
        raise AnonlabError(
            f"input '{masked(settings.input)}' is a database: {engine} reads Parquet files, "
            f"folders and globs and CSV files; export the table to Parquet, or {other}",
            parameter="input",
        )
    for name in ("sheet", "table", "query"):
        if getattr(settings, name) is not None:
            raise AnonlabError(
                f"{name} applies to Excel and database inputs, which {engine} does not read: "
                "leave it out",
                parameter=name,
            )
    if settings.output_table is not None or (
        settings.output is not None and is_database_url(settings.output)
    ):
        raise AnonlabError(
            f"{engine} writes the release as a folder of Parquet parts, not a database table: "
            f"give a folder (ending in /){' or a file' if file_output else ''} as output",
            parameter="output",
        )


def open_run_engine(settings: EngineSettings) -> Engine:
    """The engine ``settings`` name, opened (close it): ``workers`` counts a local Dask
    cluster's worker processes, so it is passed on with engine ``"dask"`` only."""
    from anonlab.engine import open_engine

    return open_engine(
        settings.engine,
        scheduler=settings.scheduler,
        workers=settings.workers if settings.engine == "dask" else None,
        memory_limit=settings.memory_limit,
    )


class RoleSettings(Settings):
    """The roles of the columns a method does not mask (the masked ones are the QIs).

    ``identifying`` columns are dropped from the release, ``sensitive`` and
    ``insensitive`` ones released as they are; ``other="insensitive"``
    releases every column named nowhere as it is (and the report lists
    them); without it such a column is refused.
    """

    identifying: list[str] = Field(default_factory=list)
    sensitive: list[str] = Field(default_factory=list)
    insensitive: list[str] = Field(default_factory=list)
    other: Literal["insensitive"] | None = None

    @field_validator("identifying", "sensitive", "insensitive", mode="before")
    @classmethod
    def _role_names(cls, value: Any) -> Any:
        """``"a,b"`` or ``["a", "b,c"]`` to a list of names."""
        return split_names(value) if isinstance(value, str | list | tuple) else value

    @property
    def roles(self) -> Roles:
        """The four settings as one :class:`~anonlab.dataset.Roles`."""
        return roles_of(self)


def roles_of(settings: Any) -> Roles:
    """The :class:`~anonlab.dataset.Roles` of settings with the four role fields."""
    from anonlab.dataset import Roles

    return Roles.of(settings.identifying, settings.sensitive, settings.insensitive, settings.other)


def stage_plot(outputs: Outputs, report: Mapping[str, Any]) -> None:
    """Stage the PNG of the report's main figure (the HTML page's) as ``plot``, if asked for."""
    if "plot" not in outputs:
        return
    from anonlab.htmlreport import main_figure
    from anonlab.htmlreport.plots import png_bytes

    data = png_bytes(main_figure(report))
    outputs.stage("plot", lambda tmp: tmp.write_bytes(data))


#: the bytes of a CSV input whose lines give the mean line length of :func:`estimated_rows`
_SAMPLE_BYTES = 1 << 20


def estimated_rows(source: str, delimiter: str | None) -> int:
    """The records of a CSV or Parquet input, ``0`` for any other (a database, a workbook).

    Parquet: the footers' row counts. CSV: the file's bytes over the mean length of the
    lines in its first MiB, an estimate within a few percent on tables whose line lengths
    do not drift along the file (only compared with a threshold a factor away).
    """
    from anonlab.database import is_database_url
    from anonlab.engine.table import CsvPiece, ParquetPiece, open_table

    if is_database_url(source) or "://" in source:
        return 0
    try:
        table = open_table(source, delimiter=delimiter, csv_block=None)
    except AnonlabError:
        return 0  # an Excel workbook, or an input the run's own reader will refuse
    rows = 0
    for piece in table.pieces:
        if isinstance(piece, ParquetPiece):
            rows += _parquet_rows(piece)
        elif isinstance(piece, CsvPiece):
            rows += _csv_rows(Path(piece.path))
    return rows


def _parquet_rows(piece: Any) -> int:
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(piece.path).metadata
    groups = range(meta.num_row_groups) if piece.row_groups is None else piece.row_groups
    return int(sum(meta.row_group(g).num_rows for g in groups))


def _csv_rows(path: Path) -> int:
    size = path.stat().st_size
    with path.open("rb") as fh:
        sample = fh.read(_SAMPLE_BYTES)
    lines = sample.count(b"\n")
    if lines == 0 or size <= len(sample):
        return max(lines, 1)
    return int(size * lines / len(sample))
