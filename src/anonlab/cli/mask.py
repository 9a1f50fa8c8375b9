"""Sub-command ``mask``: sdcMicro's masking methods (docs/masking.md).

Maps its flags to :class:`anonlab.runs.mask.MaskSettings`, runs it and prints a
summary; the run itself is library code. The method's own parameters are flags
named after sdcMicro's (``--pd 0.8``, ``--recode-method equidistant``): every
``--name VALUE`` the command does not know itself is a parameter of the method
(``--name`` alone is ``true``), checked by the method's parameters model, so that
a method registered in :mod:`anonlab.masking.registry` brings its flags along.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from anonlab.cli.common import (
    ATTACKER_COLUMNS,
    CONFIG,
    DASK_WORKERS,
    DELIMITER,
    FAIL_ON_RISK,
    HTML,
    IDENTIFYING,
    INPUT,
    INSENSITIVE,
    MAX_RISK,
    MEMORY_LIMIT,
    OTHER,
    OUTPUT_TABLE,
    OVERWRITE,
    POPULATION,
    QUERY,
    QUIET,
    REPORT,
    RISK_THRESHOLD,
    SAMPLING_FRACTION,
    SCHEDULER,
    SENSITIVE,
    SENSITIVE_HIERARCHY,
    SHEET,
    TABLE,
    VERIFY,
    WEIGHTS,
    as_text,
    engine_overrides,
    progress_display,
    read_overrides,
    require_an_output,
    role_overrides,
    user_errors,
    verified_and_time,
)
from anonlab.cli.release_risk import RISK_FLAGS, risk_guard, risk_overrides
from anonlab.errors import AnonlabError

MASK_HELP = """Mask columns by one of sdcMicro's masking methods.

--method names the method, --columns the columns it masks; the method's parameters
are flags named after sdcMicro's (docs/masking.md).

pram, post-randomization (sdcMicro pram): --matrix FILE (CSV, the levels naming the
first row and column, rows summing to 1; or COL=FILE), else invariant PRAM with --pd
(default 0.8) and --alpha (default 0.5); --strata COL[,COL]; --seed S.

topbot, top/bottom coding (sdcMicro topBotCoding): --top V [--top-replacement R],
--bottom V [--bottom-replacement R], or sdcMicro's --value V --replacement R --kind
top|bottom.

recode, global recoding (sdcMicro globalRecode): --breaks B1,B2,... or a count with
--recode-method equidistant|logequidistant|equalamount; --labels L1,L2,...

noise, noise addition (sdcMicro addNoise): --noise N (percent of each column's SD;
default 50, sdcMicro's 150), --noise-method
additive|correlated|correlated2|restr|romm|outdect, --delta, --p; --seed S.

rankswap, rank swapping (sdcMicro rankSwap): --p (percent of the records), --r0 or
--k0 (default --r0 0.95), --top-percent and --bottom-percent (default 5), --extremes
permute|mean (mean: sdcMicro's top/bottom means); --seed S.

shuffle, data shuffling (sdcMicro shuffle): --predictors COL[,COL] (the formula's
right side), --shuffle-method ds|mvn|mlm; --seed S.

Every other column needs a role, as in microaggregate (--other insensitive releases
them as they are). The release is re-read and checked by an independent checker
before anything is written. Example:

  anonlab mask data/sdc/testdata.csv --method pram --columns roof,walls
  --seed 1 --other insensitive --output t_pram.csv --report t_pram.json
"""

FLAGS = {"input": "the INPUT argument", **RISK_FLAGS}


def method_flags(args: list[str]) -> dict[str, Any]:
    """``--name VALUE`` / ``--name=VALUE`` / ``--name`` pairs to parameters (dashes to
    underscores; a flag given twice gives a list)."""
    params: dict[str, Any] = {}
    i = 0
    while i < len(args):
        token = args[i]
        if not token.startswith("--") or len(token) == 2:
            raise AnonlabError(
                f"unexpected argument '{token}': method parameters are given as --name VALUE"
            )
        name, sep, value = token[2:].partition("=")
        if not sep:
            following = args[i + 1] if i + 1 < len(args) else None
            if following is not None and not following.startswith("--"):
                value = following
                i += 1
            else:
                value = "true"
        key = name.replace("-", "_")
        if key in params:
            previous = params[key]
            params[key] = [*(previous if isinstance(previous, list) else [previous]), value]
        else:
            params[key] = value
        i += 1
    return params


@user_errors(flags=FLAGS)
def mask_command(
    ctx: typer.Context,
    input: str | None = INPUT,
    config: Path | None = CONFIG,
    overwrite: bool = OVERWRITE,
    delimiter: str | None = DELIMITER,
    sheet: str | None = SHEET,
    table: str | None = TABLE,
    query: str | None = QUERY,
    method: str | None = typer.Option(
        None,
        "--method",
        help="Masking method: pram, topbot, recode, noise, rankswap, shuffle (see above).",
    ),
    columns: list[str] | None = typer.Option(
        None, "--columns", help="Columns to mask, comma-separated or repeated."
    ),
    seed: int | None = typer.Option(
        None,
        "--seed",
        help="Seed of a method that draws random numbers (pram, noise, rankswap, shuffle).",
    ),
    identifying: list[str] | None = IDENTIFYING,
    sensitive: list[str] | None = SENSITIVE,
    insensitive: list[str] | None = INSENSITIVE,
    other: str | None = OTHER,
    engine: str | None = typer.Option(
        None,
        "--engine",
        help="numpy (this process, the default) or dask: with dask or a folder --output "
        "ending in /, topbot, recode with given breaks, pram with --matrix and additive "
        "noise run piece by piece; the other methods are refused.",
    ),
    scheduler: str | None = SCHEDULER,
    workers: int | None = DASK_WORKERS,
    memory_limit: str | None = MEMORY_LIMIT,
    output: str | None = typer.Option(
        None,
        "--output",
        help="Release, format by extension, or a folder ending in / of Parquet parts "
        "(an engine run; default: none).",
    ),
    output_table: str | None = OUTPUT_TABLE,
    report: Path | None = REPORT,
    html: Path | None = HTML,
    verify: bool | None = VERIFY,
    attacker_columns: str | None = ATTACKER_COLUMNS,
    max_risk: float | None = MAX_RISK,
    fail_on_risk: bool | None = FAIL_ON_RISK,
    risk_threshold: list[float] | None = RISK_THRESHOLD,
    population: float | None = POPULATION,
    sampling_fraction: float | None = SAMPLING_FRACTION,
    weights: str | None = WEIGHTS,
    sensitive_hierarchy: list[str] | None = SENSITIVE_HIERARCHY,
    quiet: bool = QUIET,
) -> None:
    """Mask columns by an sdcMicro masking method (see --help for an example)."""
    from anonlab.runs.mask import MaskSettings, run_mask

    parameters = method_flags(list(ctx.args))
    s = MaskSettings.load(
        config,
        overwrite=overwrite,
        input=as_text(input),
        **read_overrides(locals()),
        method=method,
        columns=columns,
        seed=seed,
        parameters=parameters or None,
        **role_overrides(locals()),
        **engine_overrides(locals()),
        output=output,
        output_table=output_table,
        report=as_text(report),
        html=as_text(html),
        verify=verify,
        **risk_overrides(locals()),
    )
    require_an_output(s.output, s.output_table, s.report, s.html)
    with risk_guard(FLAGS), progress_display(quiet) as progress:
        out = run_mask(s, progress=progress).report
    if not quiet:
        print(
            f"mask {out['method']} ({out['sdcmicro']}): {', '.join(out['masked_columns'])} "
            f"of {out['records']} records"
            + (", seed given (kept out of the report)" if out.get("seed_given") else "")
            + verified_and_time(out)
        )


def register(app: typer.Typer) -> None:
    """Add ``mask`` to ``app``."""
    app.command(
        "mask",
        help=MASK_HELP,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(mask_command)
