"""Report figures, drawn with matplotlib and inlined in the HTML as SVG.

matplotlib is imported inside the functions (and only its object-oriented
``Figure``, never ``pyplot``), so importing this module is cheap and no GUI
backend or global state is involved; ``savefig`` renders with Agg/SVG.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

COLORS = {
    "all": "#c9ced6",
    "checked": "#4c78a8",
    "anonymous": "#59a14f",
    "minimal": "#f28e2b",
    "optimum": "#d62728",
    "bar": "#4c78a8",
    "accent": "#d62728",
}


def new_figure(width: float = 7.0, height: float = 3.2) -> Any:
    """A bare matplotlib Figure (no pyplot) with the report's text style."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig


def _style(ax: Any) -> None:
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.tick_params(labelsize=8)
    ax.xaxis.label.set_size(9)
    ax.yaxis.label.set_size(9)
    ax.title.set_size(10)


def svg_data_uri(fig: Any) -> str:
    """The figure as a ``data:image/svg+xml;base64,...`` URI, the same for the same figure.

    No date is written and element ids are salted with a fixed string, so a
    report always renders to the same page.
    """
    import matplotlib

    buf = io.BytesIO()
    # labels come from the data (column names, values): '$' is a character, not mathtext
    with matplotlib.rc_context({"svg.hashsalt": "anonlab", "text.parse_math": False}):
        _plain_text(fig)
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _plain_text(fig: Any) -> None:
    """Draw every text of ``fig`` as it is written: no mathtext between '$' signs.

    Texts made while drawing (tick labels) take ``text.parse_math = False``
    from the ``rc_context`` the figure is saved in.
    """
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)


def png_bytes(fig: Any, dpi: int = 150) -> bytes:
    """The figure as PNG bytes."""
    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context({"text.parse_math": False}):
        _plain_text(fig)
        fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def save_png(fig: Any, path: Path) -> None:
    """Write the figure as a PNG file atomically."""
    from anonlab.io import atomic_write

    data = png_bytes(fig)
    atomic_write(path, lambda tmp: tmp.write_bytes(data))


def class_size_figure(class_sizes: Mapping[int, int], k: int | None) -> Any:
    """Equivalence classes by size: number of classes (left) and of records (right).

    Sizes are binned on a logarithmic scale when they span more than two
    orders of magnitude; a dashed line marks k.
    """
    import numpy as np

    sizes = np.array(sorted(class_sizes), dtype=float)
    counts = np.array([class_sizes[int(s)] for s in sorted(class_sizes)], dtype=float)
    fig = new_figure(7.2, 3.0)
    axes = fig.subplots(1, 2)
    lo, hi = float(sizes.min()), float(sizes.max())
    log = hi / max(lo, 1.0) > 100
    if log:
        edges = np.unique(np.geomspace(lo, hi + 1, num=min(30, len(sizes) + 1)))
    else:
        edges = np.arange(lo, hi + 2) - 0.5 if hi - lo < 40 else np.linspace(lo, hi + 1, 31)
    for ax, weights, ylabel in (
        (axes[0], counts, "equivalence classes"),
        (axes[1], counts * sizes, "records in these classes"),
    ):
        ax.hist(sizes, bins=edges, weights=weights, color=COLORS["bar"], edgecolor="white",
                linewidth=0.5)
        if log:
            ax.set_xscale("log")
        if k is not None:
            ax.axvline(k, color=COLORS["accent"], linestyle="--", linewidth=1)
            ax.annotate(f"k = {k}", (k, 1), xycoords=("data", "axes fraction"),
                        xytext=(2, 2), textcoords="offset points", fontsize=8,
                        color=COLORS["accent"], va="bottom")
        ax.set_xlabel("class size (records sharing one combination)")
        ax.set_ylabel(ylabel)
        _style(ax)
    return fig


def _level(row: Mapping[str, Any], index: int) -> int:
    """A lattice row's level, its position when the row does not say."""
    level = row.get("level")
    return int(level) if level is not None else index


def lattice_figure(levels: Sequence[Mapping[str, Any]]) -> Any:
    """Lattice nodes by level: all, checked, anonymous, k-minimal; the optimum starred."""
    import numpy as np

    lv = np.array([_level(r, i) for i, r in enumerate(levels)])
    series = [
        ("nodes", "all nodes", COLORS["all"]),
        ("checked", "checked", COLORS["checked"]),
        ("anonymous", "known anonymous", COLORS["anonymous"]),
        ("k_minimal", "k-minimal", COLORS["minimal"]),
    ]
    present = [s for s in series if all(r.get(s[0]) is not None for r in levels)]
    fig = new_figure(7.2, 3.2)
    ax = fig.subplots()
    width = 0.8 / max(len(present), 1)
    top = 1.0
    for j, (key, label, color) in enumerate(present):
        values = np.array([float(r[key]) for r in levels])
        top = max(top, float(values.max()) if values.size else 1.0)
        ax.bar(lv + (j - (len(present) - 1) / 2) * width, values, width=width, label=label,
               color=color)
    optimum = [_level(r, i) for i, r in enumerate(levels) if r.get("optimum")]
    if optimum:
        ax.plot(optimum, [top * 1.8] * len(optimum), marker="*", markersize=12, linestyle="",
                color=COLORS["optimum"], label="optimum's level")
    ax.set_yscale("symlog", linthresh=1)
    ax.set_ylim(0, top * 3)
    ax.set_xlabel("lattice level (sum of generalization levels)")
    ax.set_ylabel("nodes")
    ax.set_xticks(lv)
    if present or optimum:
        fig.legend(fontsize=8, frameon=False, ncols=len(present) + 1,
                   loc="outside upper center")
    _style(ax)
    return fig


def ru_map_figure(
    points: Sequence[Mapping[str, float]],
    x_key: str,
    y_key: str,
    label_key: str,
    chosen: Any = None,
    x_label: str | None = None,
    y_label: str | None = None,
    title: str | None = None,
) -> Any:
    """An R-U map: one point per setting (e.g. k), the chosen one marked.

    This is the one R-U map drawing of anonlab: the HTML report, ``--plot``
    and the benchmarks use it (risk ``y_key`` against loss ``x_key``).
    """
    fig = new_figure(7.2, 3.6)
    _draw_ru(fig.subplots(), points, x_key, y_key, label_key, chosen, x_label, y_label, title)
    return fig


def ru_maps_figure(panels: Sequence[Mapping[str, Any]]) -> Any:
    """R-U maps side by side, each drawn as :func:`ru_map_figure` draws one.

    Each panel maps the keyword arguments of :func:`ru_map_figure` (``points``,
    ``x_key``, ``y_key``, ``label_key``, and optionally ``chosen``,
    ``x_label``, ``y_label``, ``title``).
    """
    fig = new_figure(3.8 * len(panels), 3.6)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels, strict=True):
        _draw_ru(ax, panel["points"], panel["x_key"], panel["y_key"], panel["label_key"],
                 panel.get("chosen"), panel.get("x_label"), panel.get("y_label"),
                 panel.get("title"))
    return fig


def _draw_ru(
    ax: Any,
    points: Sequence[Mapping[str, float]],
    x_key: str,
    y_key: str,
    label_key: str,
    chosen: Any,
    x_label: str | None,
    y_label: str | None,
    title: str | None,
) -> None:
    """Draw one R-U map on ``ax``: the points joined in order, labelled, the chosen one circled."""
    xs = [float(p[x_key]) for p in points]
    ys = [float(p[y_key]) for p in points]
    ax.plot(xs, ys, marker="o", color=COLORS["bar"], linewidth=1, markersize=5)
    for p, x, y in zip(points, xs, ys, strict=True):
        ax.annotate(str(p.get(label_key, "")), (x, y), xytext=(4, 4), textcoords="offset points",
                    fontsize=7)
        if chosen is not None and p.get(label_key) == chosen:
            ax.plot([x], [y], marker="o", markersize=13, markerfacecolor="none",
                    markeredgecolor=COLORS["accent"], markeredgewidth=2,
                    label=f"chosen {label_key} = {chosen}")
    if chosen is not None:
        ax.legend(fontsize=8, frameon=False)
    ax.set_xlabel(x_label or x_key)
    ax.set_ylabel(y_label or y_key)
    if title:
        ax.set_title(title)
    if all(math.isfinite(v) for v in xs + ys):
        ax.margins(0.08)
    _style(ax)


def bar_figure(labels: Sequence[str], values: Sequence[float], ylabel: str,
               title: str | None = None) -> Any:
    """A plain bar chart (one bar per label)."""
    fig = new_figure(6.4, 2.8)
    ax = fig.subplots()
    ax.bar(range(len(values)), [float(v) for v in values], color=COLORS["bar"])
    ax.set_xticks(range(len(values)), [str(x) for x in labels], rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    _style(ax)
    return fig


PALETTE = ("#4c78a8", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac")


def stacked_bar_figure(labels: Sequence[str], series: Mapping[str, Sequence[float]],
                       xlabel: str, legend_title: str | None = None) -> Any:
    """Horizontal bars per label, stacked by series (e.g. specializations by party)."""
    import numpy as np

    fig = new_figure(6.4, 1.0 + 0.32 * max(len(labels), 2))
    ax = fig.subplots()
    y = np.arange(len(labels))
    left = np.zeros(len(labels))
    for i, (name, values) in enumerate(series.items()):
        widths = np.array([float(v) for v in values])
        ax.barh(y, widths, left=left, label=str(name), color=PALETTE[i % len(PALETTE)],
                height=0.6)
        left += widths
    from matplotlib.ticker import MaxNLocator

    ax.set_yticks(y, [str(s) for s in labels])
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=8, frameon=False, title=legend_title, title_fontsize=8,
              loc="lower right")
    _style(ax)
    return fig


def grouped_bar_figure(labels: Sequence[str], series: Mapping[str, Sequence[float]],
                       ylabel: str) -> Any:
    """Bars per label, one beside the other for each series (e.g. within 10 % and 25 %)."""
    import numpy as np

    fig = new_figure(7.2, 3.2)
    ax = fig.subplots()
    x = np.arange(len(labels))
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, [float(v) for v in values],
               width=width, label=str(name), color=PALETTE[i % len(PALETTE)])
    ax.set_xticks(x, [str(s) for s in labels], rotation=35, ha="right")
    ax.set_ylabel(ylabel)
    if len(series) > 1:
        ax.legend(fontsize=8, frameon=False)
    _style(ax)
    return fig


def add_hline(fig: Any, y: float, label: str) -> None:
    """A dashed horizontal reference line on the figure's first axes."""
    ax = fig.axes[0]
    ax.axhline(y, color=COLORS["accent"], linestyle="--", linewidth=1)
    ax.annotate(label, (0, y), xycoords=("axes fraction", "data"), xytext=(2, 2),
                textcoords="offset points", fontsize=8, color=COLORS["accent"], va="bottom")
