"""Hand-drawn SVG plots for the report: no plotting library, no script, no network.

Each plot has a frame, axes with ticks and labels, and a ``<title>`` tooltip on every mark.
Every text that goes in passes through ``esc``; numbers are formatted here.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from ..run.runner import BINS_PER_DECADE, HISTOGRAM_BINS, HISTOGRAM_HIGH, HISTOGRAM_LOW
from .data import bin_label

#: Colours of the series (backends, finding kinds), in order; colour-blind safe-ish (Tableau).
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#d62728",
)
#: Colours of the finding kinds on the timeline (apart from the backends' and the bars').
KIND_COLOURS = ("#e6550d", "#6a3d9a", "#1b9e77", "#e7298a", "#b15928", "#666666", "#a6761d")
BAR = "#4a7bd0"  # the error-in-ULPs histograms
WITHIN = "#3c9a5f"  # error / allowed at most 1
BEYOND = "#d62728"  # error / allowed above 1: findings
BOUND = "#b00020"  # the tolerance line
INK = "#333"
GRID = "#e4e4e4"


def esc(value: Any) -> str:
    """``value`` as HTML/SVG text (escaped, lone surrogates replaced so the page stays UTF-8)."""
    text = value if isinstance(value, str) else str(value)
    return html.escape(text.encode("utf-8", "replace").decode("utf-8"))


def fmt(value: float) -> str:
    """A tick label: 0, 0.5, 12, 1.5k, 2M."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1e12 or magnitude < 1e-3:
        return f"{value:.2g}"
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if magnitude >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.3g}"


def ticks(high: float, count: int = 5, integer: bool = False) -> list[float]:
    """Round tick values from 0 to at least ``high`` (whole steps for counts)."""
    if not 0 < high < 1e300:  # a count from an untrusted summary may be absurd
        return [0.0, 1.0] if not high > 0 else [0.0, high]
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    if integer:
        step = max(1.0, math.ceil(step))
    return [i * step for i in range(int(math.ceil(high / step - 1e-9)) + 1)]


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(exponent: int) -> str:
    return "10" + str(exponent).translate(_SUPERSCRIPT)


class Plot:
    """A frame with a linear y axis from 0 and an x axis the caller maps, drawn into SVG."""

    def __init__(
        self,
        width: int,
        height: int,
        x_range: tuple[float, float],
        y_high: float,
        kind: str,
        left: int = 58,
        bottom: int = 40,
        integer: bool = False,
    ) -> None:
        self.width, self.height, self.kind = width, height, kind
        self.left, self.right, self.top, self.bottom = left, 14, 14, bottom
        self.x_low, self.x_high = x_range
        if not self.x_high > self.x_low:
            self.x_high = self.x_low + 1
        self.y_ticks = ticks(y_high, integer=integer)
        self.y_high = self.y_ticks[-1]
        self.parts: list[str] = []

    @property
    def inner_width(self) -> float:
        return self.width - self.left - self.right

    @property
    def inner_height(self) -> float:
        return self.height - self.top - self.bottom

    def x(self, value: float) -> float:
        return self.left + (value - self.x_low) / (self.x_high - self.x_low) * self.inner_width

    def y(self, value: float) -> float:
        return self.top + self.inner_height * (1 - value / self.y_high)

    def text(self, x: float, y: float, label: str, anchor: str = "middle", **attrs: Any) -> None:
        extra = "".join(f' {k.replace("_", "-")}="{esc(v)}"' for k, v in attrs.items())
        self.parts.append(
            f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{esc(label)}</text>'
        )

    def y_axis(self, label: str) -> None:
        """Grid lines, ticks and labels of the y axis, and its title."""
        for value in self.y_ticks:
            y = self.y(value)
            self.parts.append(
                f'<line x1="{self.left}" x2="{self.width - self.right}" y1="{y:.1f}" '
                f'y2="{y:.1f}" stroke="{GRID}"/>'
                f'<line x1="{self.left - 4}" x2="{self.left}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{INK}"/>'
            )
            self.text(self.left - 6, y + 4, fmt(value), "end")
        middle = self.top + self.inner_height / 2
        self.parts.append(
            f'<text transform="translate(14,{middle:.1f}) rotate(-90)" text-anchor="middle">'
            f"{esc(label)}</text>"
        )

    def x_axis(self, marks: Sequence[tuple[float, str]], label: str) -> None:
        """Ticks at ``marks`` (value, label) and the axis title."""
        base = self.top + self.inner_height
        for value, text in marks:
            x = self.x(value)
            self.parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{base}" y2="{base + 4}" stroke="{INK}"/>'
            )
            self.text(x, base + 16, text)
        self.text(self.left + self.inner_width / 2, self.height - 6, label)

    def frame(self) -> None:
        base = self.top + self.inner_height
        self.parts.append(
            f'<path d="M{self.left},{self.top}V{base}H{self.width - self.right}" '
            f'fill="none" stroke="{INK}"/>'
        )

    def svg(self, title: str) -> str:
        return (
            f'<svg class="plot" data-plot="{esc(self.kind)}" width="{self.width}" '
            f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" role="img" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{esc(title)}</title>'
            + "".join(self.parts)
            + "</svg>"
        )


def time_marks(seconds: float) -> list[tuple[float, str]]:
    return [(t, f"{fmt(t)} s") for t in ticks(seconds, 6) if t <= seconds * 1.0001]


# --------------------------------------------------------------------------------------------
# Findings over time


def timeline(items: list[dict[str, Any]], seconds: float, width: int = 1180) -> str:
    """One row per finding kind; a marker at the time each failure was first seen: filled for a
    new corpus entry, a ring for one another driver had saved first, a diamond for a fixed
    entry failing again."""
    kinds = sorted({str(i["kind"]) for i in items}) or ["(none)"]
    colours = {k: KIND_COLOURS[n % len(KIND_COLOURS)] for n, k in enumerate(kinds)}
    end = max([seconds] + [i["seconds"] for i in items]) or 1.0
    height = 70 + 30 * len(kinds)
    plot = Plot(width, height, (0, end), 1, "timeline", left=170)
    plot.y_ticks, plot.y_high = [], 1.0
    row = plot.inner_height / len(kinds)
    for n, kind in enumerate(kinds):
        y = plot.top + row * (n + 0.5)
        plot.parts.append(
            f'<line x1="{plot.left}" x2="{width - plot.right}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{GRID}"/>'
        )
        new = sum(1 for i in items if str(i["kind"]) == kind and i.get("new", True))
        again = sum(1 for i in items if str(i["kind"]) == kind) - new
        if items:
            label = f"{kind} ({new} new" + (f", {again} again)" if again else ")")
            plot.text(plot.left - 8, y + 4, label, "end")
    for item in items:
        kind = str(item["kind"])
        x = plot.x(item["seconds"])
        y = plot.top + row * (kinds.index(kind) + 0.5)
        tip = f"{item['seconds']:.1f} s: {kind} on {', '.join(item['backends'])}"
        colour = colours[kind]
        if item.get("regression"):
            tip += " (a fixed entry failing again)"
            plot.parts.append(
                f'<rect x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" '
                f'transform="rotate(45 {x:.1f} {y:.1f})" fill="{colour}" stroke="#fff">'
                f"<title>{esc(tip)}</title></rect>"
            )
        elif item.get("new", True):
            plot.parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{colour}" stroke="#fff">'
                f"<title>{esc(tip)}</title></circle>"
            )
        else:
            tip += " (another driver had saved it first)"
            plot.parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="#fff" stroke="{colour}" '
                f'stroke-width="2"><title>{esc(tip)}</title></circle>'
            )
    if not items:
        plot.text(plot.left + plot.inner_width / 2, plot.top + row / 2 + 4, "no findings")
    plot.frame()
    plot.x_axis(time_marks(end), "seconds since the session started")
    return plot.svg("findings over time, by kind")


# --------------------------------------------------------------------------------------------
# Throughput


def _fold(values: list[float], length: int) -> list[float]:
    """``values`` (padded to ``length``) with the last interval added to the one before."""
    values = list(values) + [0.0] * (length - len(values))
    return values[:-2] + [values[-2] + values[-1]]


def throughput(
    interval: float,
    cases: list[float],
    runs: dict[str, list[float]],
    seconds: float = 0.0,
    width: int = 1180,
) -> str:
    """Rates per interval: runs/s of each backend (nested bands, widest first, so backends
    that ran every case, and coincide, all stay visible) and cases/s (black, dashed, on top).
    The session's last interval is partial (it ends at ``seconds``): its rate is over the part
    it lasted."""
    length = max([len(cases)] + [len(s) for s in runs.values()])
    end = max(length * interval, interval)
    spans = [interval] * length  # how long each interval lasted
    if length and 0 < seconds - (length - 1) * interval < interval:
        spans[-1] = seconds - (length - 1) * interval  # the session ended inside it
        if length > 1 and spans[-1] < interval / 2:  # too short for a rate: fold it back
            tail = spans.pop()
            spans[-1] += tail
            cases = _fold(cases, length)
            runs = {b: _fold(s, length) for b, s in runs.items()}

    def lasted(index: int) -> float:
        return spans[index] if index < len(spans) else interval

    ordered = sorted(runs.items())
    lines = [
        (f"runs on {b}", s, PALETTE[n % len(PALETTE)], 2.0 + 2.5 * (len(ordered) - 1 - n), "")
        for n, (b, s) in enumerate(ordered)
    ] + [("cases", cases, INK, 1.5, "5,3")]
    top = max([v / lasted(i) for _, s, _, _, _ in lines for i, v in enumerate(s)] + [0.0])
    plot = Plot(width, 280, (0, end), top * 1.05 or 1.0, "throughput")
    plot.y_axis("per second")
    for label, values, colour, stroke, dash in lines:
        points = [
            (plot.x(i * interval + lasted(i) / 2), plot.y(v / lasted(i)))
            for i, v in enumerate(values)
        ]
        if not points:
            continue
        path = "M" + "L".join(f"{x:.1f},{y:.1f}" for x, y in points)
        dashing = f' stroke-dasharray="{dash}"' if dash else ""
        plot.parts.append(
            f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="{stroke}" '
            f'stroke-linejoin="round"{dashing}><title>{esc(label)} per second</title></path>'
        )
        for i, ((x, y), v) in enumerate(zip(points, values, strict=True)):
            tip = f"{label}: {v / lasted(i):.2f}/s ({fmt(v)} in {fmt(lasted(i))} s)"
            plot.parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{min(stroke / 2 + 1, 3):.1f}" '
                f'fill="{colour}"><title>{esc(tip)}</title></circle>'
            )
    legend_x = plot.left + 10
    for n, (label, _, colour, stroke, dash) in enumerate(reversed(lines)):
        y = plot.top + 12 + 16 * n
        dashing = f' stroke-dasharray="{dash}"' if dash else ""
        plot.parts.append(
            f'<line x1="{legend_x}" x2="{legend_x + 22}" y1="{y - 4}" y2="{y - 4}" '
            f'stroke="{colour}" stroke-width="{min(stroke, 4)}"{dashing}/>'
        )
        plot.text(legend_x + 28, y, f"{label} /s", "start")
    if not length:
        plot.text(plot.left + plot.inner_width / 2, plot.top + 40, "no stats reported")
    plot.frame()
    plot.x_axis(time_marks(end), f"seconds since the session started ({fmt(interval)} s bins)")
    return plot.svg("throughput over time")


# --------------------------------------------------------------------------------------------
# Error histograms on the fixed log bins

#: x positions of the bins: the zero bin, a gap, the "below" bin, the log bins, a gap, "above".
_LOG_START = 6  # the slot of the first log bin (10**HISTOGRAM_LOW)
_SLOTS = [0, _LOG_START - 1] + [_LOG_START + i for i in range(HISTOGRAM_BINS - 3)]
_SLOTS.append(_SLOTS[-1] + 5)
_SLOT_COUNT = _SLOTS[-1] + 1


def _decade_slot(exponent: float) -> float:
    return _LOG_START + (exponent - HISTOGRAM_LOW) * BINS_PER_DECADE


def histogram(
    bins: list[float],
    title: str,
    unit: str,
    bound: float | None = None,
    reference: tuple[float, str] | None = None,
    kind: str = "histogram",
    width: int = 326,
) -> str:
    """Counts per bin, with the zero bin apart on the left. ``bound`` draws the tolerance line
    at that value and colours the bins beyond it (error / allowed plots); ``reference`` draws a
    dotted line at (value, label), a landmark that decides nothing."""
    top = max(bins) if any(bins) else 1
    plot = Plot(width, 170, (0, _SLOT_COUNT), top, kind, left=46, integer=True)
    plot.y_axis("cases")
    slot = plot.inner_width / _SLOT_COUNT
    bound_slot = None
    if bound is not None:
        bound_slot = _decade_slot(math.log10(bound))
    total = sum(bins)
    for index, count in enumerate(bins):
        if not count:
            continue
        position = _SLOTS[index]
        x = plot.x(position)
        height = max(plot.inner_height * count / plot.y_high, 2.0)  # a lone case stays visible
        colour = BAR
        if bound_slot is not None:
            colour = BEYOND if position >= bound_slot else WITHIN
        tip = f"{bin_label(index)} {unit}: {fmt(count)} cases ({100 * count / total:.1f}%)"
        plot.parts.append(
            f'<rect x="{x + 0.5:.1f}" y="{plot.y(0) - height:.1f}" width="{slot - 1:.1f}" '
            f'height="{height:.1f}" fill="{colour}"><title>{esc(tip)}</title></rect>'
        )
    marks = [(0.5, "0")]
    step = 2 if HISTOGRAM_HIGH - HISTOGRAM_LOW > 8 else 1
    marks += [
        (_decade_slot(e), power_of_ten(e)) for e in range(HISTOGRAM_LOW, HISTOGRAM_HIGH + 1, step)
    ]
    marks.append((_SLOTS[-1] + 0.5, "∞"))
    if bound_slot is not None:
        x = plot.x(bound_slot)
        plot.parts.append(
            f'<line class="bound" x1="{x:.1f}" x2="{x:.1f}" y1="{plot.top - 4}" '
            f'y2="{plot.y(0):.1f}" stroke="{BOUND}" stroke-width="2" stroke-dasharray="6,3">'
            f"<title>the bound: error = allowed</title></line>"
        )
        plot.text(x + 4, plot.top + 8, "bound", "start", fill=BOUND)
    if reference is not None:
        x = plot.x(_decade_slot(math.log10(reference[0])))
        plot.parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{plot.top - 4}" y2="{plot.y(0):.1f}" '
            f'stroke="{INK}" stroke-dasharray="2,3"><title>{esc(reference[1])}</title></line>'
        )
        plot.text(x + 4, plot.top + 8, reference[1], "start")
    plot.frame()
    plot.x_axis(marks, unit)
    return plot.svg(title)


__all__ = [
    "KIND_COLOURS",
    "PALETTE",
    "Plot",
    "esc",
    "fmt",
    "histogram",
    "throughput",
    "ticks",
    "timeline",
]
