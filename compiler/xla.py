"""The ``xla-cpu`` backend: ``jax.jit`` of the traced graph, a system under test like our own.

The graph the frontend traced is evaluated over ``jax.numpy`` by the reference interpreter
(``compiler.interpret``) under ``jax.jit``, with 64-bit types enabled: every promotion is already
an explicit cast node, so XLA computes in NumPy's dtypes and is judged by the same references and
error model as our pipelines. Its deviations are findings about XLA, exported with the StableHLO
module (``stablehlo``, from ``jax.jit(...).lower(...).as_text()``) and XLA's optimized HLO
(``hlo``, from ``.compile().as_text()``).

Stages: ``stablehlo`` (the module as built), ``hlo`` (XLA's optimized module); ``commands``
reproduce ``hlo`` from the saved StableHLO text (``python -m compiler.xla compile
stablehlo.mlir``), and ``run_text`` runs that text on arrays: the same XLA through
``jax.extend``, with nothing of this project's frontend (what an exported finding uses).

The backend is the implementation behind the harness's ``jax`` reference, so ``shares`` names it:
an oracle judging this backend must not use that reference (it would judge XLA by itself).
Nothing here forks: JAX's threads make ``fork`` unsafe, and the harness's workers are spawned.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from .driver import Artifacts, notify
from .errors import CompilerError
from .frontend.graph import Graph
from .known import (
    KnownIssue,
    daz_pow_explains,
    double_rounding_explains,
    exp2_pow_explains,
    flushing_explains,
    ieee_extremum_explains,
    only_zero_signs,
    select_rewrite_explains,
    snan_extremum_explains,
)

NAME = "xla-cpu"
STAGES = ("stablehlo", "hlo")
#: Compiles between clearing JAX's caches: each program is a new function, whose traces and
#: executables would otherwise pile up over a fuzz session.
CLEAR_EVERY = 200
_LOCK = threading.Lock()
_COMPILES = [0]


def _jax() -> Any:
    """``jax``, told to use the CPU (before it picks a platform, if it has not yet)."""
    import jax

    try:
        jax.config.update("jax_platforms", "cpu")
    except Exception:  # noqa: BLE001 - already initialized: the CPU device is used explicitly
        pass
    return jax


def graph_function(graph: Graph, xp: Any = None) -> Any:
    """``fn(*arrays) -> (outputs, gather flags)``: the graph over ``xp`` (``jax.numpy``)."""
    from .interpret import evaluate_graph

    if xp is None:
        import jax.numpy as xp

    def fn(*arrays: Any) -> tuple[list[Any], list[Any]]:
        errors: list[Any] = []
        outputs = evaluate_graph(graph, list(arrays), xp, errors)
        return outputs, errors

    return fn


#: XLA's CPU runtime runs with FTZ and DAZ set: a subnormal input or result is zero.
DENORMAL_FLUSH = KnownIssue(
    "denormal-flush",
    "not a bug: XLA's CPU runtime flushes subnormals to zero by design (jax-ml/jax#16200, "
    "working as intended; a switch is asked for in openxla/xla#22858)",
    "XLA (CPU runtime, FTZ/DAZ): subnormal inputs and results are zero, where NumPy keeps them; "
    "this case's answer changes when they are flushed (e.g. a bfloat16 subnormal times -inf in "
    "a causal-masked matmul: inf in NumPy, nan in XLA)",
    "inputs and constants away from the subnormal range; the same case on another backend tells "
    "a real XLA bug",
)

#: XLA converts float64 to float16 through float32: a value just past a float16 tie in float64
#: is the tie in float32, which rounds to even.
HALF_DOUBLE_ROUNDING = KnownIssue(
    "f64-f16-double-rounding",
    "no report found (tests/upstream/test_xla_0_10_2.py pins it; IREE's truncf does the same)",
    "XLA (CPU): convert f64 -> f16 rounds twice, through f32, eagerly and under jit: "
    "-28744.000000000004 gives -28736, where NumPy (npy_double_to_half) rounds once to -28752",
    "convert to float32 first where the float32 result is what is meant",
)

#: XLA's algebraic simplifier turns ``x * convert(b)`` (b a bool) into ``select(b, x, 0)``.
BOOL_PRODUCT_SELECT = KnownIssue(
    "bool-product-select",
    "jax-ml/jax#12233 (open: 'Multiplying Nan by False give 0. instead of NaN')",
    "XLA (algebraic simplifier): x * float(b) for a bool b becomes select(b, x, 0), so inf * 0 "
    "and nan * 0 are 0 under jit, where IEEE (NumPy, eager JAX) gives nan",
    "jnp.where(b, x, 0) where 0 is meant; keep the product where nan is",
)

#: XLA's max and min are IEEE 754-2019 ``maximum``/``minimum`` (LLVM's ``llvm.maximum``), where
#: NumPy returns one of two equal operands.
SIGNED_ZERO_EXTREMUM = KnownIssue(
    "signed-zero-extremum",
    "not a bug: StableHLO's maximum and minimum are IEEE 754-2019's (-0 < +0), and XLA's CPU "
    "backend lowers them to llvm.maximum/llvm.minimum; NumPy's np.maximum(0.0, -0.0) is -0.0 "
    "(of two equal operands its x86 loops return the second)",
    "XLA (by design): the maximum of +0 and -0 is +0 and their minimum -0, in either order, "
    "elementwise and in reductions; NumPy's answer there is whichever zero it was given second",
    "none needed where the sign of a zero does not matter; np.copysign(0, ...) where it does",
)

#: XLA's CPU runtime runs with DAZ set and calls glibc's ``pow``/``powf``, which assume the
#: default floating-point environment.
DAZ_POW = KnownIssue(
    "daz-pow",
    "the class is jax-ml/jax#37762 (closed: subnormal inputs of log, sqrt, rsqrt, log1p, lgamma "
    "are zero under XLA's DAZ); no report found of pow's answer, which is neither NumPy's nor "
    "the flushed one",
    "XLA (CPU runtime, DAZ) calling glibc's pow/powf: glibc normalizes a subnormal base by a "
    "multiplication DAZ reads as zero, so every subnormal base is taken for 2**-150 (float32) "
    "or 2**-1075 (float64): float32 1e-45 ** 1.073e-4 is 0.988906 where NumPy says 0.988979, "
    "3e-39 ** 0.5 is 2.6e-23 (NumPy 5.5e-20); a C program calling powf under "
    "_MM_SET_DENORMALS_ZERO_MODE gives the same",
    "bases away from the subnormal range (or x ** y as exp(y * log(x)) where x may be tiny)",
)

#: XLA removes ``x + 0`` (and ``x - (-0)``) before code generation, as if +0 and -0 were one.
ZERO_SIGN_REWRITE = KnownIssue(
    "zero-sign-rewrite",
    "no report found (tests/upstream/test_xla_0_10_2.py pins x + 0.0)",
    "XLA (HLO optimization): x + 0.0 becomes a copy of x under jit (with algsimp off and at "
    "backend level 0 too), so -0.0 + 0.0 is -0.0 where IEEE 754, NumPy and eager JAX give "
    "0.0; named where every wrong element is only a zero of the other sign",
    "np.copysign or an explicit x == 0 test where a zero's sign matters",
)

#: XLA's CPU code for an elementwise maximum or minimum (as LLVM's X86 code generation of
#: llvm.maximum) beside an integer converted to float returns the number for a signaling NaN.
SNAN_EXTREMUM = KnownIssue(
    "snan-extremum",
    "no report found (tests/upstream/test_xla_0_10_2.py and test_llvm_22_1_8.py pin it: LLVM "
    "22.1.8's X86 code generation gives the same answer; the compiler's workaround: "
    "nan-operands-selected)",
    "XLA (CPU): maximum(convert(x), y) or minimum of an integer x and a float y is x where y is a "
    "signaling NaN (0x7ff0000000000001), eagerly and under jit; NumPy and IEEE 754-2019 give "
    "NaN, as XLA does for a quiet NaN",
    "quiet the NaNs first (y + 0.0 is not enough where it is folded away: jnp.where(jnp.isnan(y), "
    "jnp.nan, y))",
)

#: LLVM's library call simplifier rewrites ``pow(2**n, x)`` as ``exp2(n * x)`` in XLA's kernels.
EXP2_POW = KnownIssue(
    "exp2-pow",
    "no report found (tests/upstream/test_xla_0_10_2.py and test_llvm_22_1_8.py pin it: LLVM "
    "22.1.8's library call simplifier; the compiler's workaround: libm-calls-kept)",
    "XLA (CPU) under jit: a power of a constant base 2**n is what LLVM's rewrite to exp2(n * "
    "x) gives, n * x rounded first where n is no power of two: float64 8.0 ** 300.33251 is 355 "
    "ulps off the C library's pow, which NumPy agrees with (eagerly JAX's answer is pow's)",
    "the base as a traced argument, not a constant: jax.jit(lambda b, x: b ** x)(8.0, x) "
    "calls pow",
)

#: The known wrong answers, in the order they are asked: each predictor's issue where it gives
#: every wrong element (the last one, any zero of the other sign, only after the others).
KNOWN_ANSWERS = (
    (flushing_explains, DENORMAL_FLUSH),
    (double_rounding_explains, HALF_DOUBLE_ROUNDING),
    (select_rewrite_explains, BOOL_PRODUCT_SELECT),
    (ieee_extremum_explains, SIGNED_ZERO_EXTREMUM),
    (daz_pow_explains, DAZ_POW),
    (exp2_pow_explains, EXP2_POW),
    (snan_extremum_explains, SNAN_EXTREMUM),
    (only_zero_signs, ZERO_SIGN_REWRITE),
)


class XlaCpuBackend:
    """``jax.jit`` of the traced graph on XLA's CPU backend (float64 and int64 enabled);
    ``xla-cpu@O<n>`` compiles with ``xla_backend_optimization_level=n`` (LLVM's optimization of
    the code XLA emits), a triage variant: a wrong answer that disappears at ``@O0`` lives in
    that optimization (FMA contraction of a product XLA computes in two fusions made a softmax
    nan: openxla/xla#41579, jax-ml/jax#38609)."""

    name = NAME
    description = "jax.jit of the traced graph (XLA CPU), judged like our pipelines"
    #: What ``@O0`` turns off, for a finding that disappears there (``harness.triage``).
    level_note = (
        "xla_backend_optimization_level=0: LLVM's optimization of the code XLA emits; a known "
        "class there is FMA contraction of a product XLA computes in two fusions, so that a "
        "softmax's x - max(x) is not 0 at the maximum (openxla/xla#41579, jax-ml/jax#38609)"
    )
    #: References computed by this very implementation (never used to judge it).
    shares = ("jax",)
    #: Where a wrong answer of this backend lives (``harness.triage.attribution``).
    layer = "xla"
    #: Not NumPy's rounding op by op (XLA rewrites ``x / sqrt(y)`` with rsqrt, keeps a float16
    #: chain in float32: 25 of 64 elements of such float32 and float16 programs an ulp off), so
    #: a program NumPy rounds once per op is judged within the error model's bound here.
    rounds_as_numpy = False

    def __init__(self, level: int | None = None) -> None:
        if level is not None and level not in range(4):
            raise ValueError(f"{NAME}: backend optimization levels are 0..3, got {level}")
        self.level = level
        if level is not None:
            self.name = f"{NAME}@O{level}"

    def __repr__(self) -> str:
        return f"<backend {self.name}>"

    def unavailable(self) -> str | None:
        try:
            import jax  # noqa: F401
            import jaxlib  # noqa: F401
        except ImportError as error:
            return f"jax and jaxlib are not installed ({error})"
        return None

    def known_issue_of(
        self,
        graph: Graph,
        message: str = "",
        inputs: list[np.ndarray] | None = None,
        outputs: list[Any] | None = None,
    ) -> dict[str, str] | None:
        """The known XLA deviation a failure on ``graph`` is: a wrong answer (no ``message``)
        on ``inputs`` that changes when subnormals are flushed, and (given XLA's ``outputs``)
        is what flushing gives, is XLA's flushing (``DENORMAL_FLUSH``), by design; one that is
        what converting float64 to float16 through float32 gives, ``HALF_DOUBLE_ROUNDING``; one
        that ``select(b, x, 0)`` for ``x * float(b)`` gives, ``BOOL_PRODUCT_SELECT``; a zero's
        sign that IEEE 754-2019 maximum and minimum give, ``SIGNED_ZERO_EXTREMUM``; what glibc's
        ``pow`` under DAZ gives for a subnormal base, ``DAZ_POW``; any other wrong answer that
        is only zeros of the other sign, ``ZERO_SIGN_REWRITE``."""
        if message or inputs is None:
            return None
        for explains, issue in KNOWN_ANSWERS:
            if explains(graph, inputs, outputs):
                return issue.to_dict()
        return None

    def namespace(self) -> Any:
        """The array namespace the graph is traced over (a test plants a deviation here)."""
        import jax.numpy

        return jax.numpy

    def compile(self, graph: Graph) -> Artifacts:
        jax = _jax()
        with _LOCK:
            _COMPILES[0] += 1
            if _COMPILES[0] % CLEAR_EVERY == 0:
                jax.clear_caches()
        device = jax.devices("cpu")[0]
        specs = [jax.ShapeDtypeStruct(n.shape, n.dtype) for n in graph.inputs]
        with jax.enable_x64(True), jax.default_device(device):
            notify(self.name, "stablehlo")
            try:
                lowered = jax.jit(graph_function(graph, self.namespace())).lower(*specs)
                stablehlo = lowered.as_text()
            except Exception as error:  # noqa: BLE001 - JAX failed on a valid graph
                raise CompilerError("stablehlo", "jax.jit(...).lower", str(error), "") from None
            notify(self.name, "hlo")
            try:
                options = {}
                if self.level is not None:
                    options["xla_backend_optimization_level"] = self.level
                compiled = lowered.compile(compiler_options=options)
            except Exception as error:  # noqa: BLE001 - XLA failed on valid StableHLO
                raise CompilerError("hlo", "lower(...).compile()", str(error), stablehlo) from None
            try:
                hlo = compiled.as_text() or ""
            except Exception as error:  # noqa: BLE001 - the text is documentation
                hlo = f"// no optimized HLO text: {error!r}\n"
        return Artifacts(
            self.name,
            {"stablehlo": stablehlo, "hlo": hlo},
            commands={
                "hlo": "python -m compiler.xla compile stablehlo.mlir -o hlo.txt"
                + (f" --level {self.level}" if self.level is not None else "")
            },
            signature=graph,
            native=(compiled, device),
        )

    def run(self, artifacts: Artifacts, arrays: list[np.ndarray]) -> list[np.ndarray]:
        jax = _jax()
        compiled, device = artifacts.native
        with jax.enable_x64(True), jax.default_device(device):
            outputs, errors = compiled(*arrays)
            if any(bool(e) for e in errors):
                raise ValueError("gather ids out of range for the table")
            # Copies: a result never shares memory with XLA's buffers or another output.
            return [np.array(o, copy=True) for o in outputs]


# --------------------------------------------------------------------------------------------
# Standalone: StableHLO text -> XLA, without this project's frontend


def compile_text(stablehlo: str, level: int | None = None) -> Any:
    """XLA's CPU executable for a StableHLO module's text (``jax.extend``'s client); ``level``:
    ``xla_backend_optimization_level`` (as ``xla-cpu@O<level>``), else XLA's default."""
    jax = _jax()
    import jax.extend as je
    from jaxlib import _jax as xc

    client = je.backend.get_backend("cpu")
    options = xc.CompileOptions()
    if level is not None:
        options.executable_build_options.debug_options.xla_backend_optimization_level = level
    with jax.enable_x64(True):
        return client.compile_and_load(stablehlo, client.local_devices()[:1], options)


def run_text(
    stablehlo: str, arrays: list[np.ndarray], level: int | None = None
) -> list[np.ndarray]:
    """Run a StableHLO module's text on ``arrays`` with XLA's CPU client (``level``: as
    ``compile_text``)."""
    jax = _jax()
    executable = compile_text(stablehlo, level)
    device = executable.local_devices()[0]
    with jax.enable_x64(True):
        buffers = [jax.device_put(np.asarray(a), device) for a in arrays]
        return [np.array(o, copy=True) for o in executable.execute(buffers)]


def _main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m compiler.xla", description="StableHLO text -> XLA's optimized HLO text"
    )
    parser.add_argument("command", choices=["compile"])
    parser.add_argument("source", help="a StableHLO module's text (the stablehlo stage)")
    parser.add_argument("-o", "--output", default="-")
    parser.add_argument(
        "--level", type=int, choices=range(4), help="xla_backend_optimization_level (xla-cpu@O<n>)"
    )
    args = parser.parse_args(argv)
    with open(args.source) as handle:
        text = handle.read()
    hlo = "\n".join(m.to_string() for m in compile_text(text, args.level).hlo_modules())
    if args.output == "-":
        sys.stdout.write(hlo)
    else:
        with open(args.output, "w") as handle:
            handle.write(hlo)
    return 0


__all__ = [
    "BOOL_PRODUCT_SELECT",
    "DAZ_POW",
    "DENORMAL_FLUSH",
    "HALF_DOUBLE_ROUNDING",
    "NAME",
    "SIGNED_ZERO_EXTREMUM",
    "STAGES",
    "XlaCpuBackend",
    "ZERO_SIGN_REWRITE",
    "compile_text",
    "graph_function",
    "run_text",
]

if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
