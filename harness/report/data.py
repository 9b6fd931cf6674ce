"""The report's data: what a session keeps for its page, and the readers the page uses.

Everything the page draws is in the session summary, in a bounded form that merges across
workers: error histograms with fixed bins (``harness.run.runner.histogram_bin``), a throughput
series whose interval doubles rather than grow past ``MAX_POINTS``, one timeline item per
finding. ``summary.json`` holds that summary, so ``python -m harness report`` redraws the same
page from it. A summary read back from disk is untrusted: the readers here return the
well-typed part of a field and drop the rest, never raise.
"""

from __future__ import annotations

import math
from typing import Any

from ..run.runner import BINS_PER_DECADE, HISTOGRAM_BINS, HISTOGRAM_HIGH, HISTOGRAM_LOW

#: Most intervals a throughput series holds; past it the interval doubles.
MAX_POINTS = 240


class Throughput:
    """Cases and backend runs per time interval, per backend, as the session receives them.

    A driver's stats arrive about once a second and count the work done since its previous
    report, so each report is spread evenly over the time since that driver's previous one: the
    rate drawn is the rate the work was done at, not the rhythm of the reports.
    """

    def __init__(self, seconds: float = 60.0) -> None:
        seconds = float(seconds) if math.isfinite(seconds) and seconds > 0 else 60.0
        self.interval = max(1.0, seconds / 120)
        self.cases: list[float] = []
        self.runs: dict[str, list[float]] = {}
        self.last: dict[Any, float] = {}  # reporter -> when its previous report arrived

    def add(self, at: float, stats: dict[str, Any], source: Any = 0) -> None:
        """Count the work in ``stats`` (a ``Stats.to_dict()`` delta) that arrived at ``at``
        seconds into the session from ``source`` (a driver)."""
        begin = min(self.last.get(source, 0.0), at)
        self.last[source] = at
        while at >= self.interval * MAX_POINTS:
            self._coarsen()
        self._spread(self.cases, begin, at, number(stats.get("cases")))
        for backend, count in counts(stats.get("runs")).items():
            self._spread(self.runs.setdefault(backend, []), begin, at, count)

    def _spread(self, series: list[float], begin: float, end: float, count: float) -> None:
        if count <= 0:
            return
        last = min(max(math.ceil(end / self.interval) - 1, 0), MAX_POINTS - 1)
        first = min(int(begin / self.interval), last)
        while len(series) <= last:
            series.append(0.0)
        if end - begin <= 0 or first == last:
            series[last] += count
            return
        for index in range(first, last + 1):
            lo = max(begin, index * self.interval)
            hi = min(end, (index + 1) * self.interval)
            series[index] += count * max(hi - lo, 0.0) / (end - begin)

    def _coarsen(self) -> None:
        self.interval *= 2
        self.cases = _pairs(self.cases)
        self.runs = {b: _pairs(s) for b, s in self.runs.items()}

    def to_dict(self) -> dict[str, Any]:
        length = max([len(self.cases)] + [len(s) for s in self.runs.values()])

        def padded(series: list[float]) -> list[float]:
            return [round(v, 3) for v in series] + [0.0] * (length - len(series))

        return {
            "interval": self.interval,
            "cases": padded(self.cases),
            "runs": {b: padded(s) for b, s in sorted(self.runs.items())},
        }


def _pairs(series: list[float]) -> list[float]:
    return [sum(series[i : i + 2]) for i in range(0, len(series), 2)]


# --------------------------------------------------------------------------------------------
# Readers of an untrusted summary


def number(value: Any, default: float = 0.0) -> float:
    """A finite number from the summary, or ``default`` for anything else."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return default


def mapping(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def sequence(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def counts(value: Any) -> dict[str, float]:
    """``{name: count}`` entries with a finite count >= 0 (the rest dropped)."""
    return {str(k): v for k, v in mapping(value).items() if number(v, -1.0) >= 0}


def series(value: Any) -> list[float]:
    """A list of finite counts >= 0 (anything else read as 0)."""
    return [max(number(v), 0.0) for v in sequence(value)][: 4 * MAX_POINTS]


def histogram(value: Any) -> list[float] | None:
    """A histogram of ``HISTOGRAM_BINS`` finite counts, or None."""
    values = sequence(value)
    if len(values) != HISTOGRAM_BINS or any(number(v, -1.0) < 0 for v in values):
        return None
    return [float(v) for v in values]


def strings(value: Any) -> list[str]:
    return [v for v in sequence(value) if isinstance(v, str)]


def strict(value: Any, depth: int = 0) -> Any:
    """``value`` as strict JSON can hold it (what ``parse_json`` reads back): non-finite
    numbers become None, lone surrogates are replaced, anything else unknown becomes a string."""
    if depth > 60:
        return None
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {strict(str(k)): strict(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict(v, depth + 1) for v in value]
    return strict(str(value))


# --------------------------------------------------------------------------------------------
# Histogram bins


def bin_range(index: int) -> tuple[float, float]:
    """The [low, high) values of bin ``index`` of the fixed histogram."""
    if index == 0:
        return 0.0, 0.0
    if index == 1:
        return 0.0, 10.0**HISTOGRAM_LOW
    if index == HISTOGRAM_BINS - 1:
        return 10.0**HISTOGRAM_HIGH, math.inf
    step = 1 / BINS_PER_DECADE
    low = HISTOGRAM_LOW + (index - 2) * step
    return 10.0**low, 10.0 ** (low + step)


def bin_label(index: int) -> str:
    low, high = bin_range(index)
    if index == 0:
        return "exactly 0"
    if index == 1:
        return f"below {high:.0e}"
    if index == HISTOGRAM_BINS - 1:
        return f"{low:.0e} or more (inf, nan included)"
    return f"{low:.3g} to {high:.3g}"


def quantile(bins: list[float], q: float) -> float:
    """The ``q`` quantile read off a histogram (the middle of its bin, geometric for log
    bins): what the bins can tell, without the raw values."""
    total = sum(bins)
    if total <= 0:
        return 0.0
    seen = 0.0
    for index, count in enumerate(bins):
        seen += count
        if seen >= q * total and count:
            low, high = bin_range(index)
            if index == 0:
                return 0.0
            if index == 1:
                return high / 2
            if math.isinf(high):
                return low
            return math.sqrt(low * high)
    return 0.0


def error_summary(stats: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per "backend|dtype": outputs judged, median error (from the bins) and largest error."""
    worst = counts(stats.get("error_max"))
    summary = {}
    for key, value in sorted(mapping(stats.get("error_bins")).items(), key=lambda i: str(i[0])):
        bins = histogram(value)
        if bins is None:
            continue
        summary[str(key)] = {
            "outputs": sum(bins),
            "median_ulps": quantile(bins, 0.5),
            "max_ulps": worst.get(str(key), 0.0),
        }
    return summary


__all__ = [
    "MAX_POINTS",
    "Throughput",
    "bin_label",
    "bin_range",
    "counts",
    "error_summary",
    "histogram",
    "mapping",
    "number",
    "quantile",
    "sequence",
    "series",
    "strict",
    "strings",
]
