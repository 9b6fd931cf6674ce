"""The report page: every section drawn from the session summary, the zeros of coverage shown,
the page redrawn identically from summary.json, untrusted text escaped; and (slow) a real
session's page in headless Chromium: no console errors, every section there, plots not empty."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from compiler import primitives
from harness.corpus import Corpus, Entry, parse_json
from harness.coverage import SPECIAL_NAMES
from harness.report import write_report
from harness.report.data import MAX_POINTS, Throughput, quantile
from harness.run.runner import HISTOGRAM_BINS, Stats, histogram_bin

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ("summary", "timeline", "throughput", "coverage", "values", "mlir", "errors", "corpus")
EVIL = "<script>alert(1)</script>"


def _entry(detail: str = "planted", layer: str = "builder") -> Entry:
    from harness.case import Case
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2,), "float32")
    case = Case(b.build(b.node("exp", x)), [np.array([0.5, -1.0], np.float32)], ("cpu-loops",))
    signature = {
        "kind": "mismatch",
        "backend": "cpu-loops",
        "ops": ["exp"],
        "dtype": "float32",
        "oracle": "differential",
    }
    entry = Entry({"case": case.to_dict(), "oracle": "differential"}, signature, case.size)
    entry.detail = detail
    entry.reproducer = "import numpy as np\nprint('reproducer')\n"
    entry.evidence = {
        "attribution": {"layer": layer, "detail": "fails without fusion", "mlir": {}},
    }
    found_as = {**signature, "ops": ["astype", "exp"], "dtype": "float64"}
    entry.minimization = {
        "state": "minimized", "nodes": 1, "original_nodes": 4, "found_as": found_as
    }  # fmt: skip
    return entry


def _summary(entry_path: str = "corpus/mismatch-x.json") -> dict[str, Any]:
    """A session summary as ``session()`` returns it (tuples and all)."""
    stats = Stats(cases=120, backend_runs=240, findings=2)
    for k in range(100):
        stats.record_error("cpu-loops|float32", 0.0 if k % 4 == 0 else 0.02 * k, 0.001 * k)
        stats.record_error("cpu-blas|float32", 0.5, 0.2)
    stats.record_error("cpu-blas|float32", math.inf, math.inf)  # a non-finite mismatch
    stats.runs = {"cpu-loops": 120, "cpu-blas": 120}
    stats.kinds = {"mismatch": 2}
    stats.oracles = {"differential": 120}
    stats.cells = {
        "op:exp|float32|cpu-loops": 30,
        "op:exp|float32|cpu-blas": 29,
        "op:less|bool|cpu-loops": 3,  # an output dtype outside the universe's
        "regime:ordinary": 100,
        "regime:tiny": 20,
        "special:nan|exp": 4,
        "shape:rank0": 9,
        "mlir:optimized|linalg.generic": 50,
        "mlir:lowered|llvm.fadd": 40,
        "blas:gemm": 7,
    }
    throughput = Throughput(30)
    for second in range(1, 31):
        throughput.add(float(second), {"cases": 4, "runs": {"cpu-loops": 4, "cpu-blas": 4}})
    return {
        "seconds": 30.4,
        "stats": stats.to_dict(),
        "findings": [{"kind": "mismatch", "new": True, "path": entry_path}],
        "regressions": [],
        "harness_errors": [],
        "ambiguities": [],
        "first_finding_seconds": 7.5,
        "timeline": [
            {"seconds": 7.5, "kind": "mismatch", "backends": ["cpu-blas"], "path": entry_path,
             "oracle": "differential", "regression": False},
            {"seconds": 21.0, "kind": "crash", "backends": ["cpu-loops"], "path": "gone.json",
             "oracle": "isolation", "regression": True},
            {"seconds": 25.0, "kind": "mismatch", "backends": ["cpu-blas"], "path": entry_path,
             "oracle": "differential", "regression": False, "new": False},
        ],  # fmt: skip
        "throughput": throughput.to_dict(),
        "interrupted": None,
        "options": {"seconds": 30.0, "backends": ("cpu-loops", "cpu-blas"), "workers": 1,
                    "seed": 11, "corpus": Path("corpus")},  # fmt: skip
    }


def _without_timestamp(page: str) -> str:
    return re.sub(r"<span id='generated'>[^<]*</span>", "", page)


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Corpus, Path]:
    store = Corpus(tmp_path / "corpus")
    _, path = store.save(_entry())
    return store, path


# --------------------------------------------------------------------------------------------
# The data the page is drawn from


def test_histogram_bins_are_fixed_and_merge_across_workers() -> None:
    assert histogram_bin(0.0) == 0
    assert histogram_bin(1e-5) == 1
    assert histogram_bin(1e-4) == 2
    assert histogram_bin(1.0) == 2 + 4 * 4  # four bins a decade from 1e-4
    assert histogram_bin(1e8) == histogram_bin(math.inf) == histogram_bin(math.nan)
    assert histogram_bin(math.inf) == HISTOGRAM_BINS - 1
    one, two = Stats(), Stats()
    one.record_error("b|float32", 0.0, 0.0)
    one.runs = {"b": 2}
    two.record_error("b|float32", 3.0, 1.5)
    two.record_error("b|float32", math.inf, math.inf)
    two.runs = {"b": 1}
    total = Stats()
    for stats in (one, two):
        total.merge(json.loads(json.dumps(stats.to_dict())))  # as it crosses the pipe
    assert sum(total.error_bins["b|float32"]) == 3 and total.error_bins["b|float32"][0] == 1
    assert total.margin_bins["b|float32"][HISTOGRAM_BINS - 1] == 1
    assert total.error_max == {"b|float32": 3.0}  # finite: summary.json is strict JSON
    assert total.runs == {"b": 3}
    assert quantile(total.error_bins["b|float32"], 0.0) == 0.0


def test_throughput_spreads_reports_and_stays_bounded() -> None:
    series = Throughput(60)
    series.add(2.0, {"cases": 10, "runs": {"b": 20}}, source=0)
    data = series.to_dict()
    assert data["interval"] == 1.0 and data["cases"] == [5.0, 5.0]
    assert data["runs"] == {"b": [10.0, 10.0]}
    long = Throughput(60)
    for second in range(1, 20_000, 7):
        long.add(float(second), {"cases": 1, "runs": {"b": 2}}, source=second % 3)
    data = long.to_dict()
    assert len(data["cases"]) <= MAX_POINTS
    assert sum(data["cases"]) == pytest.approx(len(range(1, 20_000, 7)), rel=1e-3)
    assert data["interval"] * len(data["cases"]) >= 19_993


# --------------------------------------------------------------------------------------------
# The page


def test_every_section_renders_and_the_zeros_are_marked(corpus, tmp_path: Path) -> None:
    store, entry_path = corpus
    page = write_report(_summary(str(entry_path)), store, tmp_path / "report").read_text()
    for section in SECTIONS:
        assert f'<section id="{section}"' in page or f'<header id="{section}"' in page, section
    for plot in ("timeline", "throughput", "errors-ulps", "errors-margin"):
        assert f'data-plot="{plot}"' in page, plot
    assert page.count('class="bound"') == 2  # the tolerance line on each error / allowed plot
    assert "floor, 1 op" in page
    # Coverage: every op of the table, with the cells never hit marked.
    assert '<th class="op never">abs</th>' in page and '<th class="op">exp</th>' in page
    assert page.count('class="z"') > 500
    assert re.search(r"ops × output dtypes × backends: <b>2</b> of \d+ cells hit", page)
    specials = len(SPECIAL_NAMES) * sum(p.generate for p in primitives.PRIMITIVES.values())
    assert f"special values × ops: <b>1</b> of {specials} cells hit" in page  # every op's
    assert ">bool<" in page  # a dtype outside the universe still shows
    assert "never" in page.split('id="regime-table"')[1].split("</table>")[0]
    assert "linalg.generic" in page and "gemm-transposed" in page
    # The timeline links the finding to its corpus entry; the regression is told apart.
    entry = next(e for e in store.entries() if isinstance(e, Entry))
    assert f'href="#entry-{entry.content_id}"' in page and f'id="entry-{entry.content_id}"' in page
    assert "<b class='bad'>regression</b>" in page
    assert "mismatch (1 new, 1 again)" in page and "another driver saved it first" in page
    # The corpus: attribution, minimization, reproducer and export files that exist.
    row = page.split(f'id="entry-{entry.content_id}"')[1].split("</tr>")[0]
    assert "builder" in row and "1 node (from 4)" in row and "7.5 s" in row
    assert "found as float64 (astype, exp)" in row
    for name in ("reproducer.py", "report.md", "commands.sh"):
        href = f"entries/{entry.content_id}/{name}"
        assert href in row and (tmp_path / "report" / href).is_file(), name
    assert (
        "print('reproducer')"
        in (tmp_path / "report" / href).parent.joinpath("reproducer.py").read_text()
    )
    # Self-contained and offline: no script, no external resource.
    assert "<script" not in page and "<link" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)


def test_the_page_is_redrawn_identically_from_summary_json(corpus, tmp_path: Path) -> None:
    from harness.cli import main

    store, entry_path = corpus
    first = write_report(_summary(str(entry_path)), store, tmp_path / "one").read_text()
    stored = parse_json("summary.json", (tmp_path / "one" / "summary.json").read_bytes())
    assert sum(stored["stats"]["error_bins"]["cpu-blas|float32"]) == 101  # nothing stripped
    assert stored["timeline"] and stored["throughput"]["cases"] and stored["universe"]
    assert stored["error_summary"]["cpu-blas|float32"]["outputs"] == 101
    summary_file = str(tmp_path / "one" / "summary.json")
    assert main(["report", "--corpus", str(store.directory), "--summary", summary_file,
                 "--out", str(tmp_path / "two")]) == 0  # fmt: skip
    second = (tmp_path / "two" / "index.html").read_text()
    assert _without_timestamp(first) == _without_timestamp(second)
    again = parse_json("summary.json", (tmp_path / "two" / "summary.json").read_bytes())
    assert again == stored  # and summary.json survives the round trip unchanged


def test_untrusted_text_stays_escaped(tmp_path: Path) -> None:
    store = Corpus(tmp_path / "corpus")
    store.save(_entry(detail=EVIL, layer=EVIL))
    summary = _summary()
    summary["stats"]["kinds"] = {EVIL: 1}
    summary["stats"]["limitations"] = {f"cpu-loops: {EVIL}": 3, EVIL: "x"}
    summary["stats"]["cells"] = {f"op:{EVIL}|{EVIL}|{EVIL}": 2, f"mlir:{EVIL}|{EVIL}": 1}
    summary["stats"]["error_bins"] = {f"{EVIL}|float32": [1] * HISTOGRAM_BINS, EVIL: "x"}
    summary["timeline"].append({"seconds": 3.0, "kind": EVIL, "backends": [EVIL], "path": EVIL})
    summary["throughput"]["runs"] = {EVIL: [1.0, float("nan"), "x"]}
    summary["options"]["backends"] = [EVIL]
    summary["harness_errors"] = [EVIL]
    summary["seconds"] = float("nan")
    page = write_report(summary, store, tmp_path / "report").read_text()
    assert "<script" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") > 8
    assert 'href="&lt;' not in page and 'href="<' not in page  # paths never become links
    stored = parse_json("summary.json", (tmp_path / "report" / "summary.json").read_bytes())
    assert stored["seconds"] is None  # strict JSON: NaN is not kept as NaN


def test_a_missing_or_empty_summary_still_gives_a_page(tmp_path: Path) -> None:
    store = Corpus(tmp_path / "corpus")
    for summary in ({}, None, [], {"stats": [], "timeline": "x", "throughput": {"interval": -1}}):
        page = write_report(summary, store, tmp_path / "report").read_text()  # type: ignore[arg-type]
        for section in SECTIONS[1:]:
            assert f'<section id="{section}"' in page
        assert "no findings" in page and "no outputs were compared" in page


def test_absurd_numbers_do_not_break_the_page(tmp_path: Path) -> None:
    summary = _summary()
    huge = 1e308
    summary["seconds"] = huge
    summary["stats"]["error_bins"]["cpu-loops|float32"] = [huge] * HISTOGRAM_BINS
    summary["stats"]["cells"] = {"op:exp|float32|cpu-loops": huge, "mlir:a|b": huge}
    summary["throughput"] = {"interval": 1e-300, "cases": [huge, huge], "runs": {"b": [huge]}}
    summary["timeline"][0]["seconds"] = huge
    page = write_report(summary, Corpus(tmp_path / "corpus"), tmp_path / "report").read_text()
    assert 'data-plot="throughput"' in page and 'data-plot="errors-ulps"' in page


def test_the_last_partial_interval_is_drawn_at_its_true_rate() -> None:
    from harness.report import svg

    def rates(seconds: float) -> list[str]:
        plot = svg.throughput(1.0, [1, 1, 1, 0.5], {"b": [2, 2, 2, 1]}, seconds)
        return re.findall(r"<title>cases: ([^<]*)</title></circle>", plot)

    assert rates(3.7)[-1] == "0.71/s (0.5 in 0.7 s)"  # 0.7 s of the last second
    assert rates(3.2) == ["1.00/s (1 in 1 s)"] * 2 + ["1.25/s (1.5 in 1.2 s)"]  # folded back


# --------------------------------------------------------------------------------------------
# A real session in headless Chromium


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "/usr/bin/chromium"):
        found = shutil.which(name)
        if found:
            return found
    return None


def decode_png(data: bytes) -> np.ndarray:
    """An 8-bit RGB(A) PNG as an array (what Chromium writes), without Pillow: the filters are
    undone one anti-diagonal at a time, since each pixel needs its left, upper and upper-left
    neighbours."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, chunks, header = 8, [], None
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and interlace == 0 and colour in (2, 6), header
    channels = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(chunks)), np.uint8).reshape(height, -1)
    filters = raw[:, 0]
    pixels = raw[:, 1:].reshape(height, width, channels).astype(np.int32)
    out = np.zeros((height + 1, width + 1, channels), np.int32)
    for k in range(height + width - 1):
        rows = np.arange(max(0, k - width + 1), min(height, k + 1))
        cols = k - rows
        a, b, c = out[rows + 1, cols], out[rows, cols + 1], out[rows, cols]
        f = filters[rows][:, None]
        p = a + b - c
        pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
        paeth = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
        guess = np.select([f == 1, f == 2, f == 3, f == 4], [a, b, (a + b) // 2, paeth], 0)
        out[rows + 1, cols + 1] = (pixels[rows, cols] + guess) & 255
    return out[1:, 1:, :3].astype(np.uint8)


def _pixels(image: np.ndarray, colour: str) -> int:
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    return int((image == rgb).all(axis=-1).sum())


def _run(
    command: list[str], timeout: float, plugin: Path | None = None
) -> subprocess.CompletedProcess:
    path = [str(ROOT)] + ([str(plugin)] if plugin else []) + [os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    if plugin is not None:
        env["HARNESS_PLUGINS"] = "report_toy_backend"
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


#: A plugin backend that is always off by one, so the short session has a finding to show.
WRONG_BACKEND = """
import numpy as np
from compiler import backends
from compiler.driver import Artifacts
from compiler.interpret import evaluate_graph
from compiler.lower.emit import build


class OffByOne:
    name = "toy-off-by-one"
    description = "the traced graph interpreted by NumPy, plus one (a planted bug)"

    def unavailable(self):
        return None

    def compile(self, graph):
        text, signature = build(graph, abi="tensor")
        return Artifacts(self.name, {"module": text}, signature=signature, native=graph)

    def run(self, artifacts, arrays):
        outputs = [np.asarray(o) for o in evaluate_graph(artifacts.native, arrays)]
        return [o + np.ones((), o.dtype) if o.dtype.kind in "fiu" else o for o in outputs]


if OffByOne.name not in backends.BACKENDS:
    backends.register(OffByOne())
"""


@pytest.mark.long
@pytest.mark.slow
def test_a_real_session_report_in_headless_chromium(tmp_path: Path) -> None:
    from harness.report import svg

    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium binary (Debian's chromium package; .ci/run installs it)")
    (tmp_path / "report_toy_backend.py").write_text(WRONG_BACKEND)
    report, summary_file = tmp_path / "report", tmp_path / "session.json"
    fuzz = _run(
        [sys.executable, "-m", "harness", "fuzz", "--seconds", "12", "--workers", "1",
         "--no-database", "--no-jax", "--backends", "cpu-loops,cpu-blas,toy-off-by-one",
         "--shrink-seconds", "3", "--minimize-seconds", "5", "--quiet",
         "--corpus", str(tmp_path / "corpus"), "--summary-json", str(summary_file),
         "--report", str(report)],
        timeout=600,
        plugin=tmp_path,
    )  # fmt: skip
    assert fuzz.returncode in (0, 1), fuzz.stderr[-3000:]
    summary = json.loads(summary_file.read_text())
    assert summary["stats"]["cases"] > 0, "the session ran no case: nothing to plot"
    assert any(summary["throughput"]["cases"]), summary["throughput"]
    assert summary["timeline"], "the planted bug was not found"
    assert any("toy-off-by-one" in item["backends"] for item in summary["timeline"])
    # `harness report` redraws the same page from the stored summary.
    redrawn = _run(
        [sys.executable, "-m", "harness", "report", "--corpus", str(tmp_path / "corpus"),
         "--summary", str(report / "summary.json"), "--out", str(tmp_path / "again")],
        timeout=300,
        plugin=tmp_path,
    )  # fmt: skip
    assert redrawn.returncode == 0, redrawn.stderr[-3000:]
    page = (report / "index.html").read_text()
    assert _without_timestamp(page) == _without_timestamp(
        (tmp_path / "again" / "index.html").read_text()
    )
    for href in re.findall(r'href="(entries/[^"]+)"', page):
        assert (report / href).is_file(), href  # each entry's reproducer and export
    assert 'href="entries/' in page and "<span class='status open'>" in page
    url = (report / "index.html").as_uri()
    flags = ["--headless=new", "--disable-gpu", "--no-sandbox", "--hide-scrollbars"]
    dom = _run([browser, *flags, "--enable-logging=stderr", "--v=0", "--dump-dom", url], 180)
    assert dom.returncode == 0, dom.stderr[-3000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    for section in SECTIONS:
        assert f'id="{section}"' in dom.stdout, section
    shot = tmp_path / "report.png"
    # Tall enough for the whole page: its value-regime table grows with what the session
    # covered (a case's siblings add regimes: 88 rows of it became 122, the page 7.5k -> 8.3k px).
    taken = _run(
        [browser, *flags, f"--screenshot={shot}", "--window-size=1400,12000", url], timeout=180
    )
    assert shot.is_file(), taken.stderr[-3000:]
    image = decode_png(shot.read_bytes())
    assert image.shape[1] == 1400
    rows = np.flatnonzero((image < 250).any(axis=(1, 2)))
    assert rows.max() < image.shape[0] - 1, "the page is taller than the screenshot"
    # Each plot drew marks in its own colour (exact pixels, not only anti-aliased edges).
    assert _pixels(image, svg.PALETTE[0]) > 200, "throughput: no backend band"
    assert _pixels(image, "#fde2e1") > 1000, "coverage: no never-hit cell drawn"
    stats = summary["stats"]
    if any(sum(b) for b in stats["error_bins"].values()):
        assert _pixels(image, svg.BAR) > 20, "errors in ULPs: no bar"
    if stats["margin_bins"]:
        assert _pixels(image, svg.WITHIN) + _pixels(image, svg.BEYOND) > 20, "error / allowed"
    if summary["timeline"]:
        assert _pixels(image, svg.KIND_COLOURS[0]) > 30, "timeline: no marker"
    keep = os.environ.get("REPORT_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)
