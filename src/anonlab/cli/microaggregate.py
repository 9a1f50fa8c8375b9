"""Sub-commands ``microaggregate``, ``evaluate`` and ``tradeoff`` (MDAV and EM4ADOM)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer

from anonlab.cli.common import load_toml, merge_settings, user_errors
from anonlab.errors import AnonlabError

MICRO_HELP = """Microaggregate a table with MDAV: groups of k..2k-1 records share their mean.

Numeric columns get their group mean, --nominal columns the group mode, --ordinal
columns the group median; other columns are kept. Example:

  anonlab microaggregate data/sdc/Tarragona.csv --columns all-numeric --k 3
  --output t_k3.csv --report t_k3.json

  anonlab microaggregate big.parquet --k 5 --variant scalable --output big_k5.parquet
"""

EVALUATE_HELP = """Score a masked table against its original with the EM4ADOM measures.

Both tables hold the same records in the same order (any tool's output). Example:

  anonlab evaluate data/sdc/Tarragona.csv t_k3.csv --lambda 0.5,0,0.5 --report eval.json
"""

TRADEOFF_HELP = """Microaggregate for each k, evaluate, and pick k on the R-U map.

Prints k, IL, DR and score per k and marks the lowest score. Example:

  anonlab tradeoff data/sdc/Tarragona.csv --k 3-10 --lambda 0.5,0,0.5
  --plot ru.png --report ru.json
"""

COLUMNS_HELP = "Numeric columns: comma-separated names or all-numeric (default)."
NOMINAL_HELP = "Nominal column(s) (comma-separated or repeated)."
ORDINAL_HELP = "Ordinal column(s) (comma-separated or repeated)."
ORDER_HELP = "Order of an ordinal column's values: COLUMN=v1,v2,... (default: natural order)."


def _config(config: Path | None) -> dict[str, Any]:
    from anonlab.microaggregation.settings import resolve_paths

    return resolve_paths(load_toml(config), config.parent) if config is not None else {}


def _outputs_ok(outputs: dict[str, str | None], inputs: list[str]) -> None:
    from anonlab.io import check_outputs

    if all(o is None for o in outputs.values()):
        raise AnonlabError("nothing to write: give --output, --report, --html and/or --plot")
    check_outputs(outputs, inputs)


def _write_report(report: dict[str, Any], json_path: str | None, html: str | None) -> None:
    from anonlab.io import write_json

    if json_path is not None:
        write_json(report, json_path)
    if html is not None:
        from anonlab.htmlreport import write_html

        write_html(report, html)


def _names(values: list[str] | None) -> list[str] | None:
    from anonlab.settings import split_names

    return split_names(values) if values else None


@user_errors
def microaggregate_command(
    input: Path | None = typer.Argument(None, help="Table to mask (CSV or Parquet)."),
    config: Path | None = typer.Option(None, "--config", help="TOML settings; flags override."),
    delimiter: str | None = typer.Option(None, "--delimiter", help="CSV delimiter (sniffed)."),
    columns: str | None = typer.Option(None, "--columns", help=COLUMNS_HELP),
    nominal: list[str] | None = typer.Option(None, "--nominal", help=NOMINAL_HELP),
    ordinal: list[str] | None = typer.Option(None, "--ordinal", help=ORDINAL_HELP),
    order: list[str] | None = typer.Option(None, "--order", help=ORDER_HELP),
    k: int | None = typer.Option(None, "--k", help="Smallest group size (default 3)."),
    variant: str | None = typer.Option(
        None, "--variant", help="exact (default) or scalable (k-d blocks, numeric only)."
    ),
    block_size: int | None = typer.Option(
        None, "--block-size", help="Largest block of the scalable variant (default 16384)."
    ),
    output: Path | None = typer.Option(None, "--output", help="Masked table (CSV or .parquet)."),
    report: Path | None = typer.Option(None, "--report", help="JSON report."),
    html: Path | None = typer.Option(None, "--html", help="Shareable HTML report."),
    quiet: bool = typer.Option(False, "--quiet", help="No summary output."),
) -> None:
    """Microaggregate a table with MDAV (see --help for an example)."""
    from anonlab.io import read_table, write_table
    from anonlab.microaggregation import microaggregate
    from anonlab.microaggregation.settings import (
        MicroaggregateSettings,
        parse_orders,
        validate,
    )
    from anonlab.report import report_header

    started = time.perf_counter()
    flags = {
        "input": str(input) if input else None, "delimiter": delimiter, "columns": columns,
        "nominal": _names(nominal), "ordinal": _names(ordinal), "orders": parse_orders(order),
        "k": k, "variant": variant, "block_size": block_size,
        "output": str(output) if output else None, "report": str(report) if report else None,
        "html": str(html) if html else None, "quiet": quiet or None,
    }
    s = validate(MicroaggregateSettings, merge_settings(_config(config), flags))
    _outputs_ok({"--output": s.output, "--report": s.report, "--html": s.html}, [s.input])
    frame = read_table(s.input, delimiter=s.delimiter)
    result = microaggregate(frame, s.columns, s.k, nominal=s.nominal, ordinal=s.ordinal,
                            orders=s.orders, variant=s.variant, block_size=s.block_size)
    out = report_header("microaggregate", s.model_dump(exclude={"quiet"}), {"data": s.input})
    out.update(result.summary())
    out["runtime_seconds"] = time.perf_counter() - started
    if s.output is not None:
        write_table(result.masked, s.output, delimiter=_delimiter_of(s.input, s.delimiter))
    _write_report(out, s.report, s.html)
    if not s.quiet:
        sizes = out["group_sizes"]
        ilh = out["measures"].get("ILh")
        print(f"MDAV ({s.variant}) k={s.k}: {out['records']} records in {out['groups']} groups "
              f"of {sizes['min']}..{sizes['max']}"
              + (f"; SSE/SST = {100 * ilh:.4f} %" if ilh is not None else "")
              + f"; {out['runtime_seconds']:.2f} s")


def _delimiter_of(path: str, given: str | None) -> str:
    """The input's CSV delimiter (given or sniffed), so a CSV release keeps it."""
    from anonlab.io import sniff_delimiter

    if given is not None:
        return given
    p = Path(path)
    if p.suffix.lower() in {".parquet", ".pq"}:
        return ","
    return sniff_delimiter(p)


def _measure_settings(s: Any) -> dict[str, Any]:
    return {"lambdas": s.lambda_, "tau": s.tau, "gamma": s.gamma, "interval_p": s.p,
            "workers": s.workers}


@user_errors
def evaluate_command(
    original: Path | None = typer.Argument(None, help="Original table (CSV or Parquet)."),
    masked: Path | None = typer.Argument(None, help="Masked table, same rows in the same order."),
    config: Path | None = typer.Option(None, "--config", help="TOML settings; flags override."),
    delimiter: str | None = typer.Option(None, "--delimiter", help="CSV delimiter (sniffed)."),
    columns: str | None = typer.Option(None, "--columns", help=COLUMNS_HELP),
    nominal: list[str] | None = typer.Option(None, "--nominal", help=NOMINAL_HELP),
    ordinal: list[str] | None = typer.Option(None, "--ordinal", help=ORDINAL_HELP),
    order: list[str] | None = typer.Option(None, "--order", help=ORDER_HELP),
    lambda_: str | None = typer.Option(
        None, "--lambda", help="ILs weights l1,l2,l3 of IL1, IL2, IL3 (default 1/3 each)."
    ),
    tau: str | None = typer.Option(None, "--tau", help="DR weights of DLD, ID (default 0.5,0.5)."),
    gamma: str | None = typer.Option(
        None, "--gamma", help="score weights of IL, DR (default 0.5,0.5)."
    ),
    p: str | None = typer.Option(
        None, "--p", help="ID interval size(s) in percent: 5, 1,5,10 or 1-10 (default: mean "
        "over 1-10)."
    ),
    workers: int | None = typer.Option(None, "--workers", help="Threads for DLD (default 1)."),
    report: Path | None = typer.Option(None, "--report", help="JSON report."),
    html: Path | None = typer.Option(None, "--html", help="Shareable HTML report."),
    quiet: bool = typer.Option(False, "--quiet", help="No table output."),
) -> None:
    """Score a masked table with the EM4ADOM measures (see --help for an example)."""
    from anonlab.io import read_table
    from anonlab.metrics import evaluate
    from anonlab.microaggregation.settings import (
        EvaluateSettings,
        parse_orders,
        parse_weights,
        validate,
    )
    from anonlab.report import report_header

    started = time.perf_counter()
    flags = {
        "original": str(original) if original else None,
        "masked": str(masked) if masked else None, "delimiter": delimiter, "columns": columns,
        "nominal": _names(nominal), "ordinal": _names(ordinal), "orders": parse_orders(order),
        "lambda": parse_weights(lambda_), "tau": parse_weights(tau),
        "gamma": parse_weights(gamma), "p": p, "workers": workers,
        "report": str(report) if report else None, "html": str(html) if html else None,
        "quiet": quiet or None,
    }
    s = validate(EvaluateSettings, merge_settings(_config(config), flags))
    outputs = {"--report": s.report, "--html": s.html}
    if any(o is not None for o in outputs.values()):
        _outputs_ok(outputs, [s.original, s.masked])
    frame = read_table(s.original, delimiter=s.delimiter)
    masked_frame = read_table(s.masked, delimiter=s.delimiter)
    result = evaluate(frame, masked_frame, s.columns, nominal=s.nominal,
                      ordinal=s.ordinal, orders=s.orders, **_measure_settings(s))
    out = report_header("evaluate", s.model_dump(exclude={"quiet"}, by_alias=True),
                        {"original": s.original, "masked": s.masked})
    out.update(result.summary())
    out["runtime_seconds"] = time.perf_counter() - started
    _write_report(out, s.report, s.html)
    if not s.quiet:
        _print_measures(result.measures)


def _print_measures(measures: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="EM4ADOM measures", show_header=True)
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, value in measures.items():
        if isinstance(value, float):
            table.add_row(name, f"{value:.6g}")
    Console().print(table)


@user_errors
def tradeoff_command(
    input: Path | None = typer.Argument(None, help="Table to mask (CSV or Parquet)."),
    config: Path | None = typer.Option(None, "--config", help="TOML settings; flags override."),
    delimiter: str | None = typer.Option(None, "--delimiter", help="CSV delimiter (sniffed)."),
    columns: str | None = typer.Option(None, "--columns", help=COLUMNS_HELP),
    nominal: list[str] | None = typer.Option(None, "--nominal", help=NOMINAL_HELP),
    ordinal: list[str] | None = typer.Option(None, "--ordinal", help=ORDINAL_HELP),
    order: list[str] | None = typer.Option(None, "--order", help=ORDER_HELP),
    k: str | None = typer.Option(None, "--k", help="k values: 3-10 (default), 3,5,10 or 5."),
    variant: str | None = typer.Option(None, "--variant", help="exact (default) or scalable."),
    block_size: int | None = typer.Option(
        None, "--block-size", help="Largest block of the scalable variant (default 16384)."
    ),
    lambda_: str | None = typer.Option(
        None, "--lambda", help="ILs weights l1,l2,l3 (default 1/3 each; the paper 0.5,0,0.5)."
    ),
    tau: str | None = typer.Option(None, "--tau", help="DR weights of DLD, ID (default 0.5,0.5)."),
    gamma: str | None = typer.Option(
        None, "--gamma", help="score weights of IL, DR (default 0.5,0.5)."
    ),
    p: str | None = typer.Option(None, "--p", help="ID interval size(s) in percent (1-10)."),
    workers: int | None = typer.Option(None, "--workers", help="Threads for DLD (default 1)."),
    plot: Path | None = typer.Option(None, "--plot", help="R-U map as PNG."),
    report: Path | None = typer.Option(None, "--report", help="JSON report."),
    html: Path | None = typer.Option(None, "--html", help="Shareable HTML report."),
    quiet: bool = typer.Option(False, "--quiet", help="No table output."),
) -> None:
    """Pick k by the IL/DR trade-off and the R-U map (see --help for an example)."""
    from anonlab.io import read_table
    from anonlab.metrics.tradeoff import ru_axes, ru_map_png
    from anonlab.microaggregation.settings import (
        TradeoffSettings,
        parse_orders,
        parse_weights,
        validate,
    )
    from anonlab.microaggregation.sweep import run_tradeoff
    from anonlab.report import report_header

    started = time.perf_counter()
    flags = {
        "input": str(input) if input else None, "delimiter": delimiter, "columns": columns,
        "nominal": _names(nominal), "ordinal": _names(ordinal), "orders": parse_orders(order),
        "k": k, "variant": variant, "block_size": block_size,
        "lambda": parse_weights(lambda_), "tau": parse_weights(tau),
        "gamma": parse_weights(gamma), "p": p, "workers": workers,
        "plot": str(plot) if plot else None, "report": str(report) if report else None,
        "html": str(html) if html else None, "quiet": quiet or None,
    }
    s = validate(TradeoffSettings, merge_settings(_config(config), flags))
    outputs = {"--report": s.report, "--html": s.html, "--plot": s.plot}
    if any(o is not None for o in outputs.values()):
        _outputs_ok(outputs, [s.input])
    frame = read_table(s.input, delimiter=s.delimiter)
    result = run_tradeoff(frame, s.k, s.columns, nominal=s.nominal, ordinal=s.ordinal,
                          orders=s.orders, variant=s.variant, block_size=s.block_size,
                          **_measure_settings(s))
    out = report_header("tradeoff", s.model_dump(exclude={"quiet"}, by_alias=True),
                        {"data": s.input})
    out.update(result)
    out["runtime_seconds"] = time.perf_counter() - started
    if s.plot is not None:
        loss, risk = ru_axes(result["points"])
        ru_map_png(result["points"], s.plot, title=f"R-U map: {Path(s.input).name}",
                   x_key=loss, y_key=risk)
    _write_report(out, s.report, s.html)
    if not s.quiet:
        _print_points(result)


def _print_points(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from anonlab.metrics.tradeoff import ru_axes

    loss, _ = ru_axes(result["points"])
    shown = ("IL", "DR", "score") if loss == "IL" else ("ZIL", "ILR", "DLD")
    table = Table(title="Trade-off per k (lowest score marked)")
    for name in ("k", *shown):
        table.add_column(name, justify="right")
    table.add_column("")
    for row in result["points"]:
        mark = "◀ best" if row["k"] == result.get("best_k") else ""
        cells = [f"{row[c]:.6g}" if isinstance(row.get(c), float) else str(row.get(c))
                 for c in shown]
        table.add_row(str(row["k"]), *cells, mark)
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``microaggregate``, ``evaluate`` and ``tradeoff`` to ``app``."""
    app.command("microaggregate", help=MICRO_HELP)(microaggregate_command)
    app.command("evaluate", help=EVALUATE_HELP)(evaluate_command)
    app.command("tradeoff", help=TRADEOFF_HELP)(tradeoff_command)
