"""The IREE bugs the research campaign found (``KNOWN_ISSUES``), and how a failure of an
``iree-cpu`` variant is recognized as one of them (``known_issue``), for attribution and export.
A wrong answer of a semantics-changing variant (``+fast-min-max``, ``+reassociate``) that is
none of them is that variant's control (``CONTROLS``): expected, not an IREE bug.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from .dtypes import is_float
from .frontend.graph import Graph
from .iree import NAME, OPTIONS, flags_of, run_compiler
from .known import (
    KnownIssue,
    depends_on_subnormals,
    double_rounding_explains,
    flushed,
    flushing_explains,
    near,
    off_answer,
)

F64_LIBM_LINK = KnownIssue(
    "f64-libm-link",
    "iree-org/iree#20165 (open: the same class, f32 log10/trunc; earlier instances #8719 and "
    "#12974 were fixed op by op): math functions without an implementation in IREE's embedded "
    "runtime become libm calls the embedded linker cannot resolve",
    "IREE (llvm-cpu embedded linking): f64 tanh, sin, cos, tan, atan, asin, log2 and log10, "
    "and log10 of f32 and f16 too, lower to libm calls and iree-lld fails with 'undefined "
    "symbol'",
    f"--iree-llvmcpu-link-embedded=false (the {NAME}+system-linker variant)",
)
RANK0_RESHAPE_CRASH = KnownIssue(
    "rank0-reshape-crash",
    "not reported upstream yet (no matching iree-org/iree issue found)",
    "IREE (LLVMCPUCheckIRBeforeLLVMConversion): checkStackAllocationSize calls "
    "getIntOrFloatBitWidth on the index element type of the tensor<0xindex> shape operand of "
    "a tensor.reshape to rank 0, and iree-compile dies with SIGSEGV",
    "emit tensor.collapse_shape %x [] instead of tensor.reshape to rank 0",
)
VECTORIZED_COUNT = KnownIssue(
    "vectorized-count-reduction",
    "not reported upstream yet (no matching llvm/llvm-project or iree-org/iree issue found)",
    "upstream MLIR's Linalg vectorizer (linalg::vectorize, used by IREE's "
    "GenericVectorizationPass): a reduction linalg.generic whose body does not read its input "
    "(after IREE folds e.g. x >= x to true, a count: acc + 1) becomes one acc + 1 per vector "
    "tile, so the result is ceil(n / vector length) instead of n; transform.structured."
    "vectorize on such a generic does the same in upstream MLIR 22 (mlir-opt "
    "--transform-interpreter)",
    "none in IREE's flags (const-eval on or off both fail)",
)
F64_POWF_EXPANSION = KnownIssue(
    "f64-powf-expansion",
    "not reported upstream yet (iree-org/iree#14614 added the expansion to keep f32 powf "
    "vectorized; no issue found about its accuracy in float64)",
    "IREE (llvm-cpu, PolynomialApproximationPass): math.powf is expanded to exp(b * log(a)) "
    "(MLIR's populateExpandPowFPattern) in float64 too, and the rounding of b * log(a) grows "
    "with its size: 1.5 ** -1253 is 17 ulps off, and 4096 random float64 pairs with "
    "|b log a| <= 700 were up to 848 ulps off (median 72; NumPy's pow: at most 1)",
    "none found in IREE's flags",
)
F32_POWF_EXPANSION = KnownIssue(
    "f32-powf-expansion",
    "not reported upstream yet (iree-org/iree#14614 added the expansion to keep float32 powf "
    "vectorized; its accuracy where |b log a| is large is not discussed there)",
    "IREE (llvm-cpu, PolynomialApproximationPass): float32 math.powf is exp(b * log(a)) "
    "(MLIR's populateExpandPowFPattern), whose error grows with |b log a| as in float64 "
    "(f64-powf-expansion): 2855931904 ** 1 is 2855934720, 11 ulps off (NumPy: exact)",
    "none found in IREE's flags",
)
POWF_SPECIAL_CASES = KnownIssue(
    "powf-special-cases",
    "not reported upstream yet: a regression of llvm/llvm-project#118945 (pow(x, 0) is nan), "
    "fixed by PR #119015 and lost when PR #126338 rewrote the expansion; "
    "tests/upstream/test_mlir_22_1_8.py pins it with mlir-opt alone",
    "MLIR's math.powf expansion (populateExpansionPatterns, mlir-opt "
    "--math-expand-ops=ops=powf; IREE's llvm-cpu expands every powf): exp(b * log(a)) for an "
    "exponent that is not a constant keeps none of pow's special cases: pow(x, 0) of 0, inf and "
    "nan, pow(1, y) of nan and inf are nan, pow(-0, 3) is +0 (llvm.pow, which "
    "convert-math-to-llvm emits, gives C's 1, 1 and -0)",
    "none found in IREE's flags",
)
POWF_NEGATIVE_BASE = KnownIssue(
    "powf-negative-base",
    "llvm/llvm-project#132202 (open; PR #193231, open, would fix it); iree-org/iree#19996 (the "
    "exponent 3, fixed by PR #127256)",
    "MLIR's math.powf expansion (IREE's llvm-cpu): exp(b * log(a)) is nan for every negative "
    "base, where pow gives +-|a| ** b for an integer b: (-2) ** 2 is nan (upstream has held that "
    "math.powf need not support a < 0)",
    "none found in IREE's flags",
)
HALF_DOUBLE_ROUNDING = KnownIssue(
    "f64-f16-double-rounding",
    "no report found (tests/upstream/test_iree_3_13.py pins it; XLA's convert does the same)",
    "IREE (llvm-cpu): arith.truncf f64 -> f16 rounds twice, through f32: -28744.000000000004 "
    "gives -28736, where NumPy (npy_double_to_half) and LLVM's __truncdfhf2 round once to -28752",
    "truncate to f32 first where the float32 result is what is meant",
)
DENORMAL_FLUSH = KnownIssue(
    "denormal-flush",
    "not a bug: IREE's CPU runtime flushes subnormals to zero by design (FTZ/DAZ, "
    "iree-org/iree#7367)",
    "IREE (runtime): subnormal inputs and results are zero, where NumPy keeps them; this case's "
    "answer changes when they are flushed (e.g. float16 layer_norm of a constant row: its eps "
    "1e-5 is subnormal in float16, so IREE divides by zero and gives nan)",
    "inputs and constants away from the subnormal range; the same case on another backend tells "
    "a real IREE bug",
)
SIN_SMALL_NEGATIVE = KnownIssue(
    "sin-small-negative",
    "not reported upstream yet (related: llvm/llvm-project#118784, sin under "
    "--test-math-polynomial-approximation; iree-org/iree#19673, validating the approximations)",
    "IREE (llvm-cpu, MLIR's polynomial approximation of math.sin): the quadrant is "
    "floor(x * 2/pi), so for x in (-pi/2, 0) it is -1 and sin(x) is computed from x + pi/2 with "
    "an absolute error of an ulp of pi/2: float32 sin(-1.78e-7) is 68% off, sin(-1e-3) 185 ulps "
    "(positive arguments: within 1 ulp); and sin(-0) is +0 (x - k * pi/2 with k = floor(-0) is "
    "-0 - -0, +0); tests/upstream/test_iree_3_13.py",
    "none found in IREE's flags",
)
WORKGROUP_DISTRIBUTION = KnownIssue(
    "workgroup-distribution",
    "not reported upstream yet (the same error, other triggers: iree-org/iree#21504, #20723, "
    "closed; #22684, open)",
    "IREE (llvm-cpu codegen, workgroup distribution verification): 'write affecting operations "
    "on global resources are restricted to workgroup distributed contexts' on valid input; "
    "minimal: an i8 -> f32 broadcast generic, a stride-4 extract_slice of a unit dim, a "
    "tensor.reshape (tests/upstream/inputs/iree_workgroup_distribution.mlir)",
    "none found (a stride of 1, or tensor.collapse_shape instead of tensor.reshape, compiles)",
)
BF16_CONVERT_LINK = KnownIssue(
    "bf16-convert-link",
    "not reported upstream yet (the class of iree-org/iree#13499, closed: a plain f32 -> bf16 "
    "truncf is decomposed now)",
    "IREE (llvm-cpu): an integer -> f32 -> bf16 conversion (bool.astype(bfloat16)) is folded "
    "into one LLVM conversion to bfloat, lowered to a __truncsfbf2 call that iree-lld cannot "
    "resolve (tests/upstream/inputs/iree_bool_to_bf16.mlir)",
    f"none: with the system linker ({NAME}+system-linker) the library links but fails to load "
    "(the process dies: 'symbol lookup error: ... undefined symbol: __truncsfbf2'); cast to "
    "float32 instead",
)
REVERSED_ACCESS = KnownIssue(
    "reversed-access",
    "not reported upstream yet (the tiling of a negative-coefficient map, its likely root: "
    "llvm/llvm-project#113021, open)",
    "IREE (llvm-cpu codegen): a linalg.generic reading its input reversed, (d0) -> (15 - d0) on "
    "tensor<16xf32> (NumPy's x[::-1]), fails 'inferred input/output operand #0 has shape's "
    "dimension #0 to be greater than or equal to 16, but found 15' after tiling; 4 and 8 "
    "elements compile (tests/upstream/inputs/iree_reversed_access.mlir)",
    "none found in IREE's flags",
)
TRIG_RANGE_REDUCTION = KnownIssue(
    "trig-range-reduction",
    "not reported upstream yet (related: llvm/llvm-project#118784; the small-negative case is "
    "sin-small-negative)",
    "IREE (llvm-cpu, MLIR's polynomial approximation of math.sin/math.cos): the argument is "
    "reduced by pi/2 in float32, with an absolute error of about |x| * 2**-24, so float32 cos "
    "and sin lose their relative accuracy near every zero but 0 and lose absolute accuracy as "
    "|x| grows: cos(1607) is 5395 ulps off (NumPy: within 1 ulp), and far out the answer is no "
    "sine at all: sin(1e10) is 0, sin(1e15) and cos(-5.3e36) are inf; "
    "tests/upstream/test_iree_3_13.py",
    "none found in IREE's flags",
)
STRIDED_GATHER = KnownIssue(
    "strided-gather",
    "not reported upstream yet (the same class: iree-org/iree#15364, closed, fixed by "
    "llvm/llvm-project PR #72991 for a gather from a column of a 2-D buffer only; upstream "
    "convert-vector-to-llvm rejects gathers from strided memrefs, llvm PR #186990)",
    "IREE (llvm-cpu codegen): a gather (tensor.extract at a computed index) from an "
    "extract_slice whose innermost stride is not 1 (NumPy's x[0:3:2][ids]) is vectorized to a "
    "vector.gather that ConvertToLLVM leaves unconverted, and LLVM translation fails on the "
    "builtin.unrealized_conversion_cast around it (tests/upstream/inputs/"
    "iree_strided_gather.mlir, 11 lines); what counts is the stride of the innermost dim of "
    "more than one element, in memory, since IREE drops unit dims: rows 0, 2, 4 of an (11, 1) "
    "table fail, of an (8, 3) table compile, and x[..., 0:1] of a (6, 2, 2) table fails",
    "none found in IREE's flags; copy the slice first",
)
CONVOLUTION_DIMS_CRASH = KnownIssue(
    "convolution-dims-crash",
    "not reported upstream yet (upstream MLIR 22.1.8's transform.match.structured."
    "classify_convolution_dims, which calls the same linalg::inferConvolutionDims, takes the "
    "same generic without crashing; IREE 3.13 builds on LLVM 24.0.0git)",
    "IREE (Flow AnnotateDispatchesPass: summarizeDispatchRegion calls "
    "linalg::inferConvolutionDims): iree-compile dies with SIGSEGV in getConstantsFromExprList "
    "on a 2-D elementwise linalg.generic that reads its inner dim reversed, (d0, 5 - d1), and "
    "has a second input (NumPy's maximum(x[..., ::-1], y)); with one input, or the outer dim "
    "reversed, it compiles (tests/upstream/inputs/iree_reversed_inner_crash.mlir, 9 lines)",
    "none found in IREE's flags",
)
KNOWN_ISSUES = (
    F64_LIBM_LINK, RANK0_RESHAPE_CRASH, VECTORIZED_COUNT, F64_POWF_EXPANSION, F32_POWF_EXPANSION,
    POWF_SPECIAL_CASES, POWF_NEGATIVE_BASE,
    HALF_DOUBLE_ROUNDING, DENORMAL_FLUSH, SIN_SMALL_NEGATIVE, WORKGROUP_DISTRIBUTION,
    BF16_CONVERT_LINK, REVERSED_ACCESS, TRIG_RANGE_REDUCTION, STRIDED_GATHER,
    CONVOLUTION_DIMS_CRASH,
)  # fmt: skip
#: What a wrong answer of each semantics-changing option is: the control it was made for.
CONTROLS = {
    option: KnownIssue(
        f"control:{option}",
        "not a bug: a control variant that changes results on purpose",
        f"the +{option} variant ({OPTIONS[option].description}: "
        f"{' '.join(OPTIONS[option].flags)}) deviates from NumPy by design",
        f"drop +{option}; the same case on {NAME} without it tells a real IREE bug",
    )
    for option in OPTIONS
    if OPTIONS[option].semantics
}

_WORKGROUP = "restricted to workgroup distributed contexts"
_INFERRED_SHAPE = re.compile(r"has shape's dimension #\d+ to be greater than or equal to \d+")
_NEGATIVE_MAP = re.compile(r"affine_map<\([^>]*->[^>]*-\s*d\d")
_TRUNCSFBF2 = "undefined symbol: __truncsfbf2"
_UNCONVERTED_CAST = "LLVM Translation failed for operation: builtin.unrealized_conversion_cast"
#: ``tensor.extract_slice %x[offsets][sizes][strides] : tensor<AxBx..>`` (spaces allowed): its
#: sizes, strides and (where static) its source's extents.
_SLICE = re.compile(
    r"tensor\.extract_slice %[\w.]+\s*\[[^\]]*\]\s*\[([^\]]*)\]\s*\[([^\]]*)\]"
    r"(?:\s*:\s*tensor<((?:\d+x)*\d+)x[a-z]\w*>)?"
)
_F64_POWF = re.compile(r"math\.powf [^\n]*: f64\b")
_F32_POWF = re.compile(r"math\.powf [^\n]*: f32\b")
_LIBM = re.compile(
    r"undefined symbol: (tanh|sin|cos|tan|atan2?|asin|acos|erf|cbrt|log2|log10|sinh|cosh|asinh)f?\b"
)
_RANK0_RESHAPE = re.compile(r"tensor\.reshape [^\n]*tensor<0xindex>\) -> tensor<[a-z0-9]+>")
_GENERIC = re.compile(
    r"linalg\.generic \{[^\n]*iterator_types = \[[^\]]*\"reduction\"[^\]]*\]\}[^\n]*\{\n"
    r"\s*\^bb0\(([^)]*)\):\n(.*?)linalg\.yield",
    re.S,
)


def strided_gather(module: str) -> bool:
    """Does tensor-ABI ``module`` gather (``tensor.extract``, which the builder emits for
    gathers and for nothing else that is vectorized into a ``vector.gather``) and take a slice
    whose innermost dim of more than one element is not contiguous in memory (IREE drops unit
    dims: ``x[0:11:2, :]`` of an (11, 1) array is a stride-2 vector, and so is
    ``x[..., 1:2:2]`` of a (6, 2, 2) one, whose rows are 2 elements apart)? The shape of IR
    IREE fails to lower."""

    def strided(sizes: str, strides: str, source: str) -> bool:
        extents = [int(e) for e in source.split("x")] if source else []
        pairs = list(zip(sizes.split(","), strides.split(","), strict=False))
        kept = [d for d, (size, _) in enumerate(pairs) if size.strip() != "1"]
        if not kept:
            return False
        last = kept[-1]
        stride = pairs[last][1].strip()
        if len(extents) != len(pairs) or not stride.isdigit():
            return stride != "1"  # no static source shape: the slice's own stride
        return int(stride) * math.prod(extents[last + 1 :]) != 1

    found = any(strided(*slice_) for slice_ in _SLICE.findall(module))
    return found and "tensor.extract %" in module


def ignores_input(dispatch_ir: str) -> bool:
    """Does ``dispatch_ir`` hold a reduction ``linalg.generic`` whose body reads none of its
    inputs (only its accumulator)? The shape of IR the vectorizer miscompiles."""
    for arguments, body in _GENERIC.findall(dispatch_ir):
        names = re.findall(r"(%[\w.$-]+):", arguments)
        if len(names) >= 2 and not any(
            re.search(re.escape(n) + r"(?![\w.$-])", body) for n in names[:-1]
        ):
            return True
    return False


def dispatch_ir(text: str, name: str = NAME) -> str:
    """IREE's IR after dispatch creation, constant evaluation off (what the codegen gets)."""
    flags = (*flags_of(name), "--iree-opt-const-eval=false", "--compile-to=dispatch-creation")
    return run_compiler(text, flags, output="mlir").decode()


def _small_negative(x: np.ndarray) -> np.ndarray:
    """Arguments in (-pi/2, 0), and -0 (reduced to +0)."""
    return (x < 0) & (x > -np.pi / 2) | (x == 0) & np.signbit(x)


def _reduced(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x) & (np.abs(x) > np.pi / 4)


def _trig_nodes(graph: Graph, names: tuple[str, ...]) -> list:
    """The graph's float32 (or narrower) ``names`` nodes: IREE approximates those (float64
    trig is libm's, or fails to link)."""
    from .frontend.graph import topological

    return [
        n for n in topological(graph.outputs)
        if n.op == "elementwise" and n.prim.name in names and np.dtype(n.dtype).itemsize <= 4
    ]  # fmt: skip


#: ``trig_explains`` rules: the float32 sines of small negative arguments
#: (``SIN_SMALL_NEGATIVE``), and with them the sines and cosines reduced by pi/2
#: (``TRIG_RANGE_REDUCTION``).
SINE_RULES = ((("sin",), _small_negative),)
TRIG_RULES = (*SINE_RULES, (("sin", "cos"), _reduced))

#: Stand-ins for a trig result the approximation gets wrong (``trig_explains``): no answer, and
#: answers far off on either side (a comparison or a cast flips for one of them).
_WRONG = (
    lambda v: np.full_like(v, np.nan),
    lambda v: -v - 2,
    lambda v: v + 2,
)


def trig_explains(
    graph: Graph,
    inputs: list[np.ndarray],
    outputs: list | None,
    rules: tuple[tuple[tuple[str, ...], Any], ...],
) -> bool:
    """Is a wrong answer on ``inputs`` IREE's float32 sine or cosine? Each rule is (op names,
    the arguments the approximation gets wrong); some such argument is taken, and every element
    of ``outputs`` (IREE's, where given) that is not NumPy's answer (within 4 ulps) depends on
    one: NumPy's answer there changes when those results are replaced by a stand-in
    (``_WRONG``). A case that takes such an argument and fails elsewhere may be a new bug."""
    from .interpret import evaluate_values

    plain = evaluate_values(graph, list(inputs))
    masks: dict[int, np.ndarray] = {}
    for names, wrong_at in rules:
        for node in _trig_nodes(graph, names):
            mask = wrong_at(np.asarray(plain[id(node.args[0])], np.float64))
            if np.any(mask):
                masks[id(node)] = masks[id(node)] | mask if id(node) in masks else mask
    stand_ins = [lambda key, v, wrong=wrong: wrong(v) for wrong in _WRONG]
    return _explained(graph, inputs, outputs, plain, masks, stand_ins)


def _explained(
    graph: Graph,
    inputs: list[np.ndarray],
    outputs: list | None,
    plain: dict[int, Any],
    masks: dict[int, np.ndarray],
    stand_ins: list[Any],
) -> bool:
    """Do the elements ``masks`` marks (per node id) explain ``outputs``: some is marked, and
    every element of ``outputs`` (where given) off NumPy's answer changes when the marked
    elements are replaced by a stand-in (``stand_in(node id, value)``: the node's whole value,
    of which the marked elements are taken)? ``plain``: NumPy's values of every node."""
    from .interpret import evaluate_graph

    if not masks:
        return False
    if outputs is None:
        return True
    want = [np.asarray(plain[id(n)]) for n in graph.outputs]
    if len(outputs) != len(want):
        return False
    tainted = [np.zeros(w.shape, bool) for w in want]
    for stand_in in stand_ins:

        def at(node: Any, value: Any, stand_in: Any = stand_in) -> Any:
            mask = masks.get(id(node))
            if mask is None:
                return value
            v = np.asarray(value)
            with np.errstate(all="ignore"):
                return np.where(mask, stand_in(id(node), v), v).astype(v.dtype)

        changed = evaluate_graph(graph, list(inputs), at=at)
        for k, (w, c) in enumerate(zip(want, changed, strict=True)):
            c = np.asarray(c)
            if c.shape == w.shape:  # changed at all (NaN where NaN is no change)
                tainted[k] |= ~near(c.astype(np.float64), w.astype(np.float64), 0.0, 0.0)
    for w, got, t in zip(want, outputs, tainted, strict=True):
        got = np.asarray(got)
        if got.shape != w.shape or np.any(off_answer(w, got) & ~t):
            return False
    return True


#: Constant exponents MLIR's powf expansion rewrites without exp and log (``convertPowfOp``).
_POW_SHORTCUTS = (0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0)


def _expanded_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """MLIR's expansion of ``math.powf`` for an exponent that is no shortcut: exp(b * log(a)),
    exactly (its rounding aside), in float64."""
    with np.errstate(all="ignore"):
        return np.exp(b * np.log(a))


def _categorically_off(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: a NaN for a number or a number for a NaN, an infinity for a finite number
    (or the other infinity), or a zero of the other sign: not rounding, another answer."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    both = ~nan_got & ~nan_want
    with np.errstate(invalid="ignore"):
        inf = both & (np.isinf(got) | np.isinf(want)) & (got != want)
        zero = both & (got == 0) & (want == 0) & (np.signbit(got) != np.signbit(want))
    return (nan_got != nan_want) | inf | zero


def pow_explains(graph: Graph, inputs: list[np.ndarray], outputs: list | None) -> KnownIssue | None:
    """The known issue of MLIR's powf expansion (which IREE's llvm-cpu applies) that a wrong
    answer on ``inputs`` is, if any: every element of ``outputs`` (IREE's, where given) off
    NumPy's answer depends on a float ``power`` whose expansion, exp(b * log(a)), is
    categorically off pow (``_categorically_off``) there: ``POWF_NEGATIVE_BASE`` where that
    takes only negative bases, else ``POWF_SPECIAL_CASES`` (pow(x, 0), pow(1, y), signed
    zeros). Exponents the expansion rewrites without exp and log (constants 0, 1, 2...) are
    left out. Else, if every wrong element depends on such a power's result at all, its rounding
    (``|b log a|`` large): ``F64_POWF_EXPANSION`` for a float64 power, else
    ``F32_POWF_EXPANSION`` (without ``outputs``: whenever there is such a power)."""
    from .frontend.graph import topological
    from .interpret import evaluate_values

    powers = [
        n for n in topological(graph.outputs)
        if n.op == "elementwise" and n.prim.name == "power" and is_float(n.dtype)
    ]  # fmt: skip
    if not powers:
        return None
    plain = evaluate_values(graph, list(inputs))
    negative: dict[int, np.ndarray] = {}
    special: dict[int, np.ndarray] = {}
    models: dict[int, np.ndarray] = {}
    for node in powers:
        base, exponent = (np.asarray(plain[id(arg)]) for arg in node.args[:2])
        if node.args[1].op == "const" and np.all(np.isin(exponent, _POW_SHORTCUTS)):
            continue
        want = np.asarray(plain[id(node)])
        a, b = np.broadcast_arrays(base.astype(np.float64), exponent.astype(np.float64))
        with np.errstate(all="ignore"):
            model = _expanded_pow(a, b).astype(want.dtype)
        off = _categorically_off(model, want)
        below = off & (a < 0)
        if np.any(below):
            negative[id(node)] = below
        if np.any(off):
            special[id(node)] = off
        models[id(node)] = model
    stand_ins = [lambda key, v: models[key]]
    if _explained(graph, inputs, outputs, plain, negative, stand_ins):
        return POWF_NEGATIVE_BASE
    if _explained(graph, inputs, outputs, plain, special, stand_ins):
        return POWF_SPECIAL_CASES
    # Rounding: every wrong element depends on an expanded power's result at all.
    every = {key: np.ones(np.shape(model), bool) for key, model in models.items()}
    if _explained(graph, inputs, outputs, plain, every, _NUDGED):
        wide = any(np.dtype(n.dtype) == np.float64 for n in powers if id(n) in models)
        return F64_POWF_EXPANSION if wide else F32_POWF_EXPANSION
    return None


#: Stand-ins for a power's result off by its rounding (``pow_explains``): no answer, and one
#: nudged by a thousandth (a comparison or a cast flips for one of them).
_NUDGED = (
    lambda key, v: np.full_like(v, np.nan),
    lambda key, v: v * (1 + 2.0**-10) + np.copysign(2.0**-10, v),
)


def known_issue(
    module: str,
    message: str = "",
    name: str = NAME,
    subnormal_dependent: bool = False,
    small_negative_sine: bool = False,
    trig_reduced: bool = False,
    double_rounded: bool = False,
    pow_issue: KnownIssue | None = None,
    values_judged: bool = False,
) -> KnownIssue | None:
    """The known IREE issue a failure of variant ``name`` on tensor-ABI ``module`` is, if any:
    ``message`` is the compile error (empty for a wrong answer, which recompiles the module up
    to dispatch creation to look for the vectorizer's shape of IR); ``subnormal_dependent``:
    the case's answer changes when subnormals are flushed (a wrong answer then is IREE's
    flushing, by design); ``small_negative_sine``: the wrong answer is a float32 or float16
    sine's of arguments in (-pi/2, 0) (``trig_explains`` with ``SINE_RULES``);
    ``trig_reduced``: a sine's or cosine's of arguments past pi/4 (with ``TRIG_RULES``);
    ``double_rounded``: what float64 -> float16 through float32 gives
    (``known.double_rounding_explains``); ``pow_issue``: what ``pow_explains`` found;
    ``values_judged``: the flags above were judged on the case's values (else a powf in the
    module is taken for the expansion's rounding: a failure that depends on no power would
    hide behind it, so only where nothing better is known)."""
    if _LIBM.search(message):
        return F64_LIBM_LINK
    if _TRUNCSFBF2 in message:
        return BF16_CONVERT_LINK
    if _WORKGROUP in message:
        return WORKGROUP_DISTRIBUTION
    if _INFERRED_SHAPE.search(message) and _NEGATIVE_MAP.search(module):
        return REVERSED_ACCESS
    if _UNCONVERTED_CAST in message and strided_gather(module):
        return STRIDED_GATHER
    if "crashed" in message and "inferConvolutionDims" in message:
        return CONVOLUTION_DIMS_CRASH  # the crash's own stack names the function
    if "crashed" in message:
        return RANK0_RESHAPE_CRASH if _RANK0_RESHAPE.search(module) else None
    if message or not module:
        return None
    if subnormal_dependent:
        return DENORMAL_FLUSH
    if small_negative_sine:
        return SIN_SMALL_NEGATIVE
    if trig_reduced:
        return TRIG_RANGE_REDUCTION
    if double_rounded:
        return HALF_DOUBLE_ROUNDING
    if pow_issue is not None:
        return pow_issue
    if not values_judged and _F64_POWF.search(module):
        return F64_POWF_EXPANSION
    if not values_judged and _F32_POWF.search(module):
        return F32_POWF_EXPANSION
    try:
        ir = dispatch_ir(module, name)
    except Exception:  # noqa: BLE001 - no IR, no diagnosis
        return None
    return VECTORIZED_COUNT if ignores_input(ir) else None


__all__ = [
    "BF16_CONVERT_LINK",
    "CONTROLS",
    "CONVOLUTION_DIMS_CRASH",
    "DENORMAL_FLUSH",
    "F64_LIBM_LINK",
    "F32_POWF_EXPANSION",
    "F64_POWF_EXPANSION",
    "HALF_DOUBLE_ROUNDING",
    "KNOWN_ISSUES",
    "POWF_NEGATIVE_BASE",
    "POWF_SPECIAL_CASES",
    "RANK0_RESHAPE_CRASH",
    "REVERSED_ACCESS",
    "SINE_RULES",
    "SIN_SMALL_NEGATIVE",
    "STRIDED_GATHER",
    "TRIG_RANGE_REDUCTION",
    "TRIG_RULES",
    "VECTORIZED_COUNT",
    "WORKGROUP_DISTRIBUTION",
    "KnownIssue",
    "depends_on_subnormals",
    "double_rounding_explains",
    "flushed",
    "flushing_explains",
    "ignores_input",
    "known_issue",
    "pow_explains",
    "strided_gather",
    "trig_explains",
]
