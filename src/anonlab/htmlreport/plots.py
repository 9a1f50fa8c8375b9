"""Report figures, drawn with matplotlib and inlined in the HTML as SVG.

matplotlib is imported inside the functions (and only its object-oriented
``Figure``, never ``pyplot``), so importing this module is cheap and no GUI
backend or global state is involved; ``savefig`` renders with Agg/SVG.

Every text is drawn as plain text (a '$' from the data is a character, not
mathtext), so a logarithmic axis gets its own tick formatter
(:func:`plain_log_axis`: ``10``, ``100``, ``1,000``, ``1e5``) instead of
matplotlib's mathtext ``10^{n}``; and before a figure is saved, tick labels
that overprint are turned upright or thinned out (:func:`save_uncluttered`).
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# the least space between two tick labels, in points (a third of an 8 pt character)
GAP = 3.0

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

    # labels come from the data (column names, values): '$' is a character, not mathtext
    with matplotlib.rc_context({"svg.hashsalt": "anonlab", "text.parse_math": False}):
        _plain_text(fig)
        data = save_uncluttered(fig, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(data).decode("ascii")


def _plain_text(fig: Any) -> None:
    """Draw every text of ``fig`` as it is written: no mathtext between '$' signs.

    Texts made while drawing (tick labels) take ``text.parse_math = False``
    from the ``rc_context`` the figure is saved in.
    """
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)


def plain_number(value: float) -> str:
    """A tick value as plain text: ``10``, ``100``, ``1,000``, ``10,000``, then ``1e5``.

    Magnitudes from 10^5 on (and below 10^-3) are written m·10^e as ``me``
    (``1e5``, ``2.5e6``, ``1e-4``): short, and no mathtext. Whole numbers below
    that get thousands separators, as the report's tables print them; other
    numbers keep 4 significant digits (``0.5``, ``0.01``).
    """
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    magnitude = abs(value)
    if magnitude >= 1e5 or magnitude < 1e-3:
        mantissa, exponent = f"{value:.3e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent)}"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.4g}"


def _plain_log_formatter() -> Any:
    """matplotlib's ``LogFormatter`` choice of which ticks to label, in plain text.

    ``LogFormatter`` decides per tick whether it is labelled (the decades;
    also 2 and 5 times them when the axis spans about one decade); the label
    itself is :func:`plain_number`.
    """
    from matplotlib.ticker import LogFormatter

    class PlainLogFormatter(LogFormatter):
        def __call__(self, x: float, pos: int | None = None) -> str:
            return plain_number(float(x)) if super().__call__(x, pos) else ""

    return PlainLogFormatter(base=10.0, labelOnlyBase=False)


def plain_log_axis(axis: Any) -> None:
    """Label a log or symlog ``axis`` in plain text (call after ``set_xscale``/``set_yscale``).

    Major ticks (the decades 10^n) read ``1``, ``10``, ``100``, ``1,000``,
    ...; minor ticks are labelled only when the axis spans about one decade,
    as matplotlib's own log formatter does.
    """
    axis.set_major_formatter(_plain_log_formatter())
    axis.set_minor_formatter(_plain_log_formatter())


def plain_count_axis(axis: Any) -> None:
    """Tick a linear axis of counts at whole numbers, labelled as :func:`plain_number` does.

    The steps are matplotlib's default ones (1, 2, 2.5, 5, 10 times a power of
    10), whole numbers only; so ``6,000`` on a count axis reads as ``1,000``
    on the log axis beside it.
    """
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    axis.set_major_locator(MaxNLocator(nbins="auto", steps=[1, 2, 2.5, 5, 10], integer=True))
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: plain_number(float(x))))


def drawn_tick_labels(axis: Any) -> list[Any]:
    """The tick labels (``Text``) of ``axis`` that a draw shows: in view, visible, not empty.

    A tick is in view when its location lies within the axis's view interval
    (up to 10^-9 of its width); major and minor ticks both count.
    """
    lo, hi = sorted(float(v) for v in axis.get_view_interval())
    slack = (hi - lo) * 1e-9
    labels = []
    for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
        for label in (tick.label1, tick.label2):
            if (
                label.get_visible()
                and label.get_text().strip()
                and lo - slack <= float(tick.get_loc()) <= hi + slack
            ):
                labels.append(label)
    return labels


def overlapping_labels(labels: Sequence[Any], gap: float = GAP) -> list[tuple[Any, Any]]:
    """Pairs of texts whose drawn bounding boxes (``get_window_extent``) come too close.

    Two boxes are too close when, each grown by ``gap`` / 2 points on every
    side, they share more than 0.5 px in both directions: a ``gap`` of 0
    finds boxes that overlap, the default keeps labels ``GAP`` points apart
    (so they stay apart at any resolution the figure is drawn at).
    """
    boxes = [label.get_window_extent() for label in labels]
    grow = [gap / 2 * label.figure.dpi / 72 for label in labels]
    pairs = []
    for i, a in enumerate(boxes):
        for j in range(i + 1, len(boxes)):
            b, pad = boxes[j], grow[i] + grow[j]
            dx = min(a.x1, b.x1) - max(a.x0, b.x0) + pad
            dy = min(a.y1, b.y1) - max(a.y0, b.y0) + pad
            if dx > 0.5 and dy > 0.5:
                pairs.append((labels[i], labels[j]))
    return pairs


def _thinned(inner: Any, step: int) -> Any:
    """A formatter that shows ``inner``'s label of every ``step``-th tick and blanks the rest.

    Tick i (in the locator's order) keeps its label when i mod step = 0; the
    offset text and cursor formatting stay ``inner``'s.
    """
    from matplotlib.ticker import Formatter

    class Thinned(Formatter):
        anonlab_thinned = True

        def __init__(self) -> None:
            self.inner, self.step = inner, step

        def set_axis(self, axis: Any) -> None:
            super().set_axis(axis)
            self.inner.set_axis(axis)

        def format_ticks(self, values: Sequence[float]) -> list[str]:
            labels = self.inner.format_ticks(values)
            return [text if i % self.step == 0 else "" for i, text in enumerate(labels)]

        def __call__(self, x: float, pos: int | None = None) -> str:
            return str(self.inner(x, pos))

        def get_offset(self) -> str:
            return str(self.inner.get_offset())

    return Thinned()


def _turn_upright(axis: Any) -> bool:
    """Stand slanted x tick labels upright (90°); True if any label turned.

    Upright labels take the least width, one line height each.
    """
    turned = False
    for label in drawn_tick_labels(axis):
        if label.get_rotation() not in (0.0, 90.0):
            label.set_rotation(90)
            label.set_horizontalalignment("center")
            turned = True
    return turned


def _step_needed(labels: Sequence[Any]) -> int:
    """The smallest s such that labels s apart (in tick order) do not overlap.

    s = 1 + the most labels that follow one label and overlap it.
    """
    pairs = {(id(a), id(b)) for a, b in overlapping_labels(labels)}
    most = 0
    for i, a in enumerate(labels):
        after = 0
        while i + after + 1 < len(labels) and (id(a), id(labels[i + after + 1])) in pairs:
            after += 1
        most = max(most, after)
    return most + 1


def _round_step(step: int) -> int:
    """The least of 2, 5, 10, 20, 50, ... (1, 2 or 5 times 10^n, at least 2) that is >= ``step``.

    Labels of level 0, 5, 10, ... read better than 0, 4, 8, ...
    """
    scale = 1
    while True:
        for base in (1, 2, 5):
            if max(step, 2) <= base * scale:
                return base * scale
        scale *= 10


def _thin(axis: Any) -> None:
    """Label only every s-th major tick of ``axis``: the least round s (:func:`_round_step`)
    that keeps the labels apart.

    On an axis already thinned to every s-th tick, the new step is s times
    the step its shown labels still need.
    """
    formatter = axis.get_major_formatter()
    major = {id(tick.label1) for tick in axis.get_major_ticks()}
    shown = sorted(
        (t for t in drawn_tick_labels(axis) if id(t) in major),
        key=lambda t: t.get_position()[0 if axis.axis_name == "x" else 1],
    )
    step = _round_step(_step_needed(shown))
    if getattr(formatter, "anonlab_thinned", False):
        formatter, step = formatter.inner, formatter.step * step
    axis.set_major_formatter(_thinned(formatter, step))


def _relieve(axis: Any) -> None:
    """One step against overprinted tick labels on ``axis``.

    In order: minor labels that collide go first (the decades stay), slanted
    x labels stand upright, then labels are left out at a regular step.
    """
    from matplotlib.ticker import NullFormatter

    pairs = overlapping_labels(drawn_tick_labels(axis))
    minor = {id(t.label1) for t in axis.get_minor_ticks()}
    if any(id(a) in minor or id(b) in minor for a, b in pairs):
        axis.set_minor_formatter(NullFormatter())
    elif not (axis.axis_name == "x" and _turn_upright(axis)):
        _thin(axis)


def crowded_axes(fig: Any) -> list[Any]:
    """The axes (x or y) of a drawn ``fig`` that have overlapping tick labels."""
    return [
        axis
        for ax in fig.axes
        for axis in (ax.xaxis, ax.yaxis)
        if overlapping_labels(drawn_tick_labels(axis))
    ]


def save_uncluttered(fig: Any, rounds: int = 6, **savefig: Any) -> bytes:
    """``fig.savefig(**savefig)``'s bytes, saved again while tick labels overprint.

    After each save (a draw: the layout and the ticks are those of the
    image) every axis whose tick labels overlap takes one step of
    :func:`_relieve`, and the figure is saved anew; after ``rounds`` steps it
    is kept as it is. A figure whose labels are apart is drawn once.
    """
    data = _saved(fig, savefig)
    for _ in range(rounds):
        crowded = crowded_axes(fig)
        if not crowded:
            break
        for axis in crowded:
            _relieve(axis)
        data = _saved(fig, savefig)
    return data


def _saved(fig: Any, savefig: Mapping[str, Any]) -> bytes:
    """The bytes ``fig.savefig`` writes with these keyword arguments."""
    buf = io.BytesIO()
    fig.savefig(buf, **savefig)
    return buf.getvalue()


def png_bytes(fig: Any, dpi: int = 150) -> bytes:
    """The figure as PNG bytes."""
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False}):
        _plain_text(fig)
        return save_uncluttered(fig, format="png", dpi=dpi, metadata={"Software": None})


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
        ax.hist(
            sizes,
            bins=edges,
            weights=weights,
            color=COLORS["bar"],
            edgecolor="white",
            linewidth=0.5,
        )
        if log:
            ax.set_xscale("log")
            plain_log_axis(ax.xaxis)
        else:
            plain_count_axis(ax.xaxis)
        plain_count_axis(ax.yaxis)
        if k is not None:
            ax.axvline(k, color=COLORS["accent"], linestyle="--", linewidth=1)
            ax.annotate(
                f"k = {k}",
                (k, 1),
                xycoords=("data", "axes fraction"),
                xytext=(2, 2),
                textcoords="offset points",
                fontsize=8,
                color=COLORS["accent"],
                va="bottom",
            )
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
        ax.bar(
            lv + (j - (len(present) - 1) / 2) * width, values, width=width, label=label, color=color
        )
    optimum = [_level(r, i) for i, r in enumerate(levels) if r.get("optimum")]
    if optimum:
        ax.plot(
            optimum,
            [top * 1.8] * len(optimum),
            marker="*",
            markersize=12,
            linestyle="",
            color=COLORS["optimum"],
            label="optimum's level",
        )
    ax.set_yscale("symlog", linthresh=1)
    plain_log_axis(ax.yaxis)
    ax.set_ylim(0, top * 3)
    ax.set_xlabel("lattice level (sum of generalization levels)")
    ax.set_ylabel("nodes")
    ax.set_xticks(lv)
    if present or optimum:
        fig.legend(fontsize=8, frameon=False, ncols=len(present) + 1, loc="outside upper center")
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
        _draw_ru(
            ax,
            panel["points"],
            panel["x_key"],
            panel["y_key"],
            panel["label_key"],
            panel.get("chosen"),
            panel.get("x_label"),
            panel.get("y_label"),
            panel.get("title"),
        )
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
        ax.annotate(
            str(p.get(label_key, "")), (x, y), xytext=(4, 4), textcoords="offset points", fontsize=7
        )
        if chosen is not None and p.get(label_key) == chosen:
            ax.plot(
                [x],
                [y],
                marker="o",
                markersize=13,
                markerfacecolor="none",
                markeredgecolor=COLORS["accent"],
                markeredgewidth=2,
                label=f"chosen {label_key} = {chosen}",
            )
    if chosen is not None:
        ax.legend(fontsize=8, frameon=False)
    ax.set_xlabel(x_label or x_key)
    ax.set_ylabel(y_label or y_key)
    if title:
        ax.set_title(title)
    if all(math.isfinite(v) for v in xs + ys):
        ax.margins(0.08)
    _style(ax)


def bar_figure(
    labels: Sequence[str], values: Sequence[float], ylabel: str, title: str | None = None
) -> Any:
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


PALETTE = (
    "#4c78a8",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)


def stacked_bar_figure(
    labels: Sequence[str],
    series: Mapping[str, Sequence[float]],
    xlabel: str,
    legend_title: str | None = None,
) -> Any:
    """Horizontal bars per label, stacked by series (e.g. specializations by party)."""
    import numpy as np

    fig = new_figure(6.4, 1.0 + 0.32 * max(len(labels), 2))
    ax = fig.subplots()
    y = np.arange(len(labels))
    left = np.zeros(len(labels))
    for i, (name, values) in enumerate(series.items()):
        widths = np.array([float(v) for v in values])
        ax.barh(y, widths, left=left, label=str(name), color=PALETTE[i % len(PALETTE)], height=0.6)
        left += widths
    from matplotlib.ticker import MaxNLocator

    ax.set_yticks(y, [str(s) for s in labels])
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=8, frameon=False, title=legend_title, title_fontsize=8, loc="lower right")
    _style(ax)
    return fig


def grouped_bar_figure(
    labels: Sequence[str], series: Mapping[str, Sequence[float]], ylabel: str
) -> Any:
    """Bars per label, one beside the other for each series (e.g. within 10 % and 25 %)."""
    import numpy as np

    fig = new_figure(7.2, 3.2)
    ax = fig.subplots()
    x = np.arange(len(labels))
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        ax.bar(
            x + (i - (len(series) - 1) / 2) * width,
            [float(v) for v in values],
            width=width,
            label=str(name),
            color=PALETTE[i % len(PALETTE)],
        )
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
    ax.annotate(
        label,
        (0, y),
        xycoords=("axes fraction", "data"),
        xytext=(2, 2),
        textcoords="offset points",
        fontsize=8,
        color=COLORS["accent"],
        va="bottom",
    )
