"""Helpers shared by every sub-command: one-line errors, progress display, shared options.

The options several commands take (reading, report files, roles, risk) are
defined here once (see the module's option section); a command keeps its own
option only where its meaning differs (e.g. ``apply --report``, the report of
that run beside its REPORT argument).

The settings each group of those options gives are read here too
(:func:`read_overrides`, :func:`role_overrides`, :func:`engine_overrides`; the
risk flags' in :func:`anonlab.cli.release_risk.risk_overrides`): a command
hands them its parameters, ``locals()``, and spreads what they return into its
settings model's ``load``. The pieces of the printed summaries that several
commands share (:func:`figure`, :func:`sensitive_rows`, :func:`verified_and_time`)
are here as well.

A sub-command only parses its options, calls the library and writes outputs.
User errors (:class:`anonlab.errors.AnonlabError`) become one line
``Error: <message>`` on standard error and exit code 2.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

import typer

from anonlab.errors import AnonlabError
from anonlab.progress import ProgressFn

if TYPE_CHECKING:
    from rich.progress import TaskID

P = ParamSpec("P")
R = TypeVar("R")

EXIT_USER_ERROR = 2


def fail(message: str) -> typer.Exit:
    """Print ``Error: message`` on one line to stderr and return the exit to raise."""
    one_line = " ".join(message.split())
    print(f"Error: {one_line}", file=sys.stderr)
    return typer.Exit(EXIT_USER_ERROR)


@overload
def user_errors(func: Callable[P, R], *, flags: dict[str, str] | None = None) -> Callable[P, R]: ...


@overload
def user_errors(
    func: None = None, *, flags: dict[str, str] | None = None
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def user_errors(
    func: Callable[P, R] | None = None, *, flags: dict[str, str] | None = None
) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a command so user errors print one line and exit with code 2.

    A library error about a parameter is shown with the command's flag for it:
    ``flags`` maps parameter names to flags where the flag is not simply
    ``--name`` with dashes for underscores.
    """
    if func is None:
        return lambda f: _wrap_errors(f, flags)
    return _wrap_errors(func, flags)


def _wrap_errors(func: Callable[P, R], flags: dict[str, str] | None) -> Callable[P, R]:
    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except AnonlabError as exc:
            raise fail(exc.for_flags(flags)) from None
        except FileNotFoundError as exc:
            raise fail(f"file not found: {exc.filename}: check the path") from None
        except PermissionError as exc:
            raise fail(f"permission denied: {exc.filename}: choose a writable path") from None
        except IsADirectoryError as exc:
            raise fail(f"'{exc.filename}' is a folder: give a file name") from None
        except OSError as exc:
            raise fail(_os_error_line(exc)) from None
        except MemoryError:
            raise fail(
                "not enough memory for this run, nothing was written: use a smaller "
                "table, fewer columns, or a machine with more memory"
            ) from None
        except UnicodeDecodeError as exc:
            raise fail(f"input is not UTF-8 text ({exc.reason}): re-save it as UTF-8") from None
        except RecursionError:
            raise fail(
                "an input is nested too deeply to read: give a file written by anonlab"
            ) from None
        except KeyboardInterrupt:
            raise fail("interrupted: nothing was written") from None

    return wrapper


def _os_error_line(exc: OSError) -> str:
    """One line for an operating-system error (disk full, read-only folder...)."""
    where = f" '{exc.filename}'" if exc.filename else ""
    reason = exc.strerror or type(exc).__name__
    return f"cannot read or write{where}: {reason}; nothing was written"


@contextlib.contextmanager
def progress_display(quiet: bool) -> Iterator[ProgressFn | None]:
    """A Rich progress display for the library's ``progress`` calls, on a terminal only.

    Yields ``None`` (no display) with ``--quiet`` or when standard error is
    not a terminal. Each distinct step name gets its own line, removed when
    the display ends.
    """
    if quiet:  # nothing to show: Rich is not even imported
        yield None
        return
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    display = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    tasks: dict[str, TaskID] = {}

    def update(step: str, done: int, total: int | None) -> None:
        if step not in tasks:
            tasks[step] = display.add_task(step, total=total)
        display.update(tasks[step], completed=done, total=total)

    with display:
        yield update


# ---------------------------------------------------------------------------
# Options that several commands share, each defined once. A command takes one
# as a parameter's default, e.g. ``delimiter: str | None = DELIMITER``; a
# value of ``None`` means "not given", so a TOML config's value is kept.
# ---------------------------------------------------------------------------

#: the TOML settings file of a run
CONFIG = typer.Option(
    None, "--config", help="TOML settings (paths relative to its folder); flags override it."
)
#: a run whose flags change the config's parameters may write to the config's outputs
OVERWRITE = typer.Option(
    False,
    "--overwrite/--no-overwrite",
    help="With --config and a flag that changes its "
    "parameters, write to the config's outputs anyway (default: refused; name --output, "
    "--report... instead).",
)

#: the table a masking command reads (suppress, mask)
INPUT = typer.Argument(None, help="Table (CSV, Parquet, Excel or URL).")

# how an input table is read (anonlab.runs.common.ReadSettings)
DELIMITER = typer.Option(
    None, "--delimiter", help="CSV delimiter (default: sniffed from the header: ',', ';' or tab)."
)
SHEET = typer.Option(None, "--sheet", help="Excel sheet to read (default: the first).")
TABLE = typer.Option(
    None, "--table", help="Database table to read when an input is a SQLAlchemy URL."
)
QUERY = typer.Option(None, "--query", help="SQL query to read when an input is a SQLAlchemy URL.")

#: fsspec's options for inputs and outputs named by URL (anonlab.urls); parsed by
#: :func:`storage_options_of`
STORAGE_OPTION = typer.Option(
    None,
    "--storage-option",
    help="KEY=VALUE: an fsspec option for the inputs and outputs named by URL (s3://, gs://, "
    "abfs://, https://...), e.g. anon=true or endpoint_url=http://localhost:9000; the value "
    "is read as a TOML value when it is one (true, 3), else as text (repeat).",
)

# the files a run writes besides its release, and what it prints
OUTPUT_TABLE = typer.Option(
    None,
    "--output-table",
    help="With --output a SQLAlchemy URL (e.g. sqlite:///out.db): the table to write "
    "the release to, replaced in one transaction (default: none).",
)
REPORT = typer.Option(None, "--report", help="JSON report (default: none).")
HTML = typer.Option(None, "--html", help="Shareable HTML report (default: none).")
QUIET = typer.Option(False, "--quiet", help="No progress display or summary.")

# where a Dask engine runs (docs/engine.md); each command says what --engine does for it
SCHEDULER = typer.Option(
    None,
    "--scheduler",
    help="Dask scheduler to join, tcp://host:port (default: start a local cluster).",
)
DASK_WORKERS = typer.Option(
    None, "--workers", help="Worker processes of the local Dask cluster (default: one per core)."
)
MEMORY_LIMIT = typer.Option(
    None,
    "--memory-limit",
    help="Memory of each Dask worker, e.g. 4GB (default: Dask's share of this machine's memory).",
)
VERIFY = typer.Option(
    None,
    "--verify/--no-verify",
    help="Re-read the release and check it with "
    "the independent checker before anything is written (default: on).",
)

# the roles of the columns a method does not mask (anonlab.runs.common.RoleSettings)
IDENTIFYING = typer.Option(
    None,
    "--identifying",
    help="Identifying column(s), dropped from "
    "the release (comma-separated or repeated; default: none).",
)
SENSITIVE = typer.Option(
    None,
    "--sensitive",
    help="Sensitive column(s), released as they are; "
    "the risk section gives their l and t (comma-separated or repeated; "
    "default: none).",
)
INSENSITIVE = typer.Option(
    None,
    "--insensitive",
    help="Column(s) released as they are, by choice (comma-separated or repeated; default: none).",
)
OTHER = typer.Option(
    None,
    "--other",
    help="Role of every column given no other role: only 'insensitive' "
    "(released unchanged and listed in the report). Default: such a column is refused.",
)

# the release's risk (anonlab.risk.release.ReleaseRiskSettings)
ATTACKER_COLUMNS = typer.Option(
    None,
    "--attacker-columns",
    help="Columns the attacker is assumed to know, "
    "comma-separated (default: the --qi columns; a command without --qi: every released "
    "column that is not sensitive and not the weights).",
)
MAX_RISK = typer.Option(
    None,
    "--max-risk",
    help="Warn when the highest prosecutor risk of the release is above this (default: 0.2).",
)
FAIL_ON_RISK = typer.Option(
    None,
    "--fail-on-risk/--no-fail-on-risk",
    help="Refuse a release that draws a risk warning: exit code 3, nothing written (default: off).",
)
RISK_THRESHOLD = typer.Option(
    None,
    "--risk-threshold",
    help="Extra threshold for records at risk (repeat; 0.2, 0.1 and 0.05 always).",
)
POPULATION = typer.Option(
    None, "--population", help="Size of the population the table was sampled from (default: none)."
)
SAMPLING_FRACTION = typer.Option(
    None,
    "--sampling-fraction",
    help="Share of the population in the table, e.g. 0.01 (default: none).",
)
WEIGHTS = typer.Option(
    None,
    "--weights",
    help="Column of sampling weights, for sdcMicro's individual risk (default: none).",
)
SENSITIVE_HIERARCHY = typer.Option(
    None,
    "--sensitive-hierarchy",
    help="COLUMN=FILE: hierarchy of a sensitive attribute, for "
    "t-closeness with hierarchical distance (repeat).",
)


def as_text(value: Path | str | None) -> str | None:
    """A path or text flag as the text a settings model takes (``None`` stays ``None``)."""
    return None if value is None else str(value)


def key_value(item: str) -> tuple[str, str] | None:
    """A ``KEY=VALUE`` flag's key and value, stripped (``None`` when it has no ``=`` or either
    side is empty): the caller says what it expected."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip() or not value.strip():
        return None
    return key.strip(), value.strip()


def storage_options_of(items: list[str] | None) -> dict[str, Any] | None:
    """``--storage-option KEY=VALUE`` flags as fsspec's options (``None``: none given).

    A value that is a TOML value (``true``, ``3``, ``1.5``, ``"text"``) is that value, any
    other is text, so ``anon=true`` gives ``{"anon": True}`` and
    ``endpoint_url=http://host:9000`` the text.
    """
    if not items:
        return None
    import tomllib

    options: dict[str, Any] = {}
    for item in items:
        key, eq, text = item.partition("=")
        if not eq or not key.strip():
            raise AnonlabError(
                f"storage_option '{item}' is not KEY=VALUE: give e.g. anon=true",
                parameter="storage_option",
            )
        try:
            value: Any = tomllib.loads(f"v = {text.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        options[key.strip()] = value
    return options


# ---------------------------------------------------------------------------
# The settings a group of shared flags gives. A command passes its parameters
# (``locals()``, the flags as Typer gave them) and spreads the result into its
# settings model's ``load``; a value of ``None`` is "not given" there.
# ---------------------------------------------------------------------------


def read_overrides(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The reading settings (:class:`anonlab.runs.common.ReadSettings`) of the flags
    ``--delimiter``, ``--sheet``, ``--table``, ``--query`` and, for a command that takes it,
    ``--storage-option``."""
    out = {name: flags[name] for name in ("delimiter", "sheet", "table", "query")}
    if "storage_option" in flags:
        out["storage_options"] = storage_options_of(flags["storage_option"])
    return out


def role_overrides(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The roles (:class:`anonlab.runs.common.RoleSettings`) of the flags ``--identifying``,
    ``--sensitive``, ``--insensitive`` and ``--other``."""
    return {name: flags[name] for name in ("identifying", "sensitive", "insensitive", "other")}


def engine_overrides(flags: Mapping[str, Any]) -> dict[str, Any]:
    """Where a run's passes run (:class:`anonlab.runs.common.EngineSettings`): the flags
    ``--engine``, ``--scheduler``, ``--workers`` and ``--memory-limit``."""
    return {name: flags[name] for name in ("engine", "scheduler", "workers", "memory_limit")}


def flag_of(flags: Mapping[str, str], name: str) -> str:
    """How a command spells a library parameter: ``flags``'s entry, else ``--name``."""
    return flags.get(name, "--" + name.replace("_", "-"))


def figure(value: Any, digits: int = 4) -> str:
    """A figure of a printed summary to ``digits`` significant digits ('-' when there is none,
    e.g. no record left); a list (ARX's rank aggregate) item by item."""
    if isinstance(value, list):
        return "[" + ", ".join(figure(v, digits) for v in value) + "]"
    return "-" if value is None else f"{float(value):.{digits}g}"


def sensitive_rows(table: Any, risk: Mapping[str, Any]) -> None:
    """A summary table's rows of the release's sensitive attributes: distinct l and t."""
    for column, figures in (risk.get("sensitive") or {}).items():
        table.add_row(
            f"sensitive '{column}'",
            f"distinct l {figure(figures['distinct_l'])}, t {figure(figures['t_equal'])}",
        )


def require_an_output(*outputs: object, give: str = "--output, --report and/or --html") -> None:
    """Refuse a run that would write nothing: ``outputs`` are its outputs (``None``: not
    given); the message names the flags to ``give``."""
    if all(output is None for output in outputs):
        raise AnonlabError(f"nothing to write: give {give}")


def verified_and_time(report: Mapping[str, Any]) -> str:
    """The end of a one-line summary: whether the release was verified, and the run time."""
    verified = "; release verified" if report.get("verified") else ""
    return f"{verified}; {report['runtime_seconds']:.2f} s"
