"""The BLAS oracle: a backend with a BLAS stage hands OpenBLAS the matmuls it promises to.

A BLAS stage that runs at the wrong place in the pipeline (after lowering, where no
``linalg.matmul`` is left), or a helper whose layout test is wrong, falls back to the loop nest:
every answer stays right, only slower, and no oracle of values sees it. This oracle states the
contract from the bufferized IR alone, apart from the BLAS code (``compiler/lower/blas.py``):

- a ``linalg.matmul`` whose operands and output are all ``f32`` (sgemm) or all ``f64`` (dgemm)
  calls gemm once, a ``linalg.batch_matmul`` once per batch,
- when each operand is usable row-major (unit column stride, or one column; rows at least a
  row apart) or column-major (the transpose), and the output row-major;
- anything else (another element type, a stride in both dimensions, a dynamic size or stride)
  may run as loops.

The worker counts the gemm calls of an instrumented kernel's first call
(``compiler.runtime.blas_calls``) and sets ``BackendResult.blas`` to (promised, made); fewer
made than promised is a ``not-blas`` finding.
"""

from __future__ import annotations

import re
from typing import Any

from .base import Finding, Observation, Oracle, instrumented_kernel, register

#: The stage whose matmuls are counted, and the stage that substitutes them.
STAGE, BLAS_STAGE = "bufferized", "blas"
_MATMUL = re.compile(
    r"linalg\.(matmul|batch_matmul)\b[^\n]*?ins\([^:]*:\s*(memref<[^\n]*?)\)\s*"
    r"outs\([^:]*:\s*(memref<[^\n]*?)\)"
)
_MEMREF = re.compile(r"memref<([^,>]*)(?:,\s*strided<\[([^\]]*)\][^>]*>)?")
_GEMM_ELEMENTS = ("f32", "f64")


def _parse(memref: str) -> tuple[list[int], list[int], str] | None:
    """Sizes, strides (row-major when the type has no layout) and element type of a static
    memref type's text; None for a dynamic one."""
    match = _MEMREF.match(memref.strip())
    if match is None or "#" in memref or "affine_map" in memref:
        return None  # a layout given as an affine map: not judged
    *dims, element = match.group(1).split("x")
    if any(not d.isdigit() for d in dims):
        return None
    sizes = [int(d) for d in dims]
    if match.group(2) is None:
        strides = [1] * len(sizes)
        for i in range(len(sizes) - 2, -1, -1):
            strides[i] = strides[i + 1] * sizes[i + 1]
    else:
        texts = [s.strip() for s in match.group(2).split(",")]
        if any(not s.lstrip("-").isdigit() for s in texts):
            return None
        strides = [int(s) for s in texts]
    return sizes, strides, element.strip()


def _row_major(rows: int, cols: int, s0: int, s1: int) -> bool:
    """Can gemm read this matrix as row-major (a leading dimension it accepts)?"""
    lead = max(cols, 1) if rows == 1 else s0
    return (cols == 1 or s1 == 1) and lead >= max(cols, 1)


def _column_major(rows: int, cols: int, s0: int, s1: int) -> bool:
    lead = max(rows, 1) if cols == 1 else s1
    return (rows == 1 or s0 == 1) and lead >= max(rows, 1)


def promised_calls(bufferized: str) -> int | None:
    """How many gemm calls the contract (the module docstring) promises for one call of a
    kernel whose bufferized module is ``bufferized``; None when some matmul's layout is not
    static (the count is then unknown)."""
    total = 0
    for match in _MATMUL.finditer(bufferized):
        kind = match.group(1)
        types = re.split(r",\s*(?=memref<)", match.group(2)) + [match.group(3)]
        parsed = [_parse(t) for t in types]
        if any(p is None for p in parsed) or len(parsed) != 3:
            if any(t.split("x")[-1].split(",")[0].rstrip(">") in _GEMM_ELEMENTS for t in types):
                return None
            continue
        if len({p[2] for p in parsed}) != 1 or parsed[0][2] not in _GEMM_ELEMENTS:
            continue  # a float16 matmul accumulating in f32, or an integer one: loops
        matrices = [(p[0][-2], p[0][-1], p[1][-2], p[1][-1]) for p in parsed]
        a, b, c = matrices
        usable = all(_row_major(*m) or _column_major(*m) for m in (a, b)) and _row_major(*c)
        if usable:
            total += parsed[0][0][0] if kind == "batch_matmul" else 1
    return total


def unjudged(compiled: Any) -> str:
    """Why the gemm calls of ``compiled`` (``compiler.jit(f).compile(...)``) cannot be judged,
    or "" when they can: a target without a BLAS stage, or a kernel not instrumented."""
    stages = getattr(compiled, "stages", {})
    if BLAS_STAGE not in stages or STAGE not in stages:
        return f"no {BLAS_STAGE!r} stage: not a target with BLAS"
    if not instrumented_kernel(compiled):
        return "the kernel is not instrumented: set COMPILER_INSTRUMENT=1"
    return ""


class Blas(Oracle):
    """Findings from ``BackendResult.blas`` (promised, made), set by the worker."""

    name = "blas"

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        findings = []
        for result in obs.results:
            counts = getattr(result, "blas", None)
            if not result.ok or counts is None or counts[1] >= counts[0]:
                continue
            promised, made = counts
            detail = (
                f"{made} gemm call(s) made where {promised} were promised: a float32/float64 "
                "matmul whose operands gemm can read ran as loops (the BLAS stage, "
                "compiler/lower/blas.py, its helper's layout test, or its place in the "
                "pipeline, compiler/pipelines.py)"
            )
            findings.append(
                Finding("not-blas", (result.backend,), self.name, detail, obs.case,
                        result=result, stage=BLAS_STAGE)  # fmt: skip
            )
        return findings


register(Blas())

__all__ = ["BLAS_STAGE", "Blas", "STAGE", "promised_calls", "unjudged"]
