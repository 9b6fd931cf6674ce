"""Scalar lowerings of the elementwise primitives: the body of their ``linalg.generic``.

Each rule takes a :class:`~compiler.primitives.ScalarCall` (operand SSA names and dtypes, the
result dtype and name) and returns MLIR lines defining the result.
"""

from __future__ import annotations

from typing import Any

from ..dtypes import (
    BFLOAT16,
    BOOL,
    COMPUTE,
    FLOAT16,
    FLOAT64,
    INT32,
    LOW_PRECISION,
    element,
    is_float,
)
from . import ScalarCall


def op(float_op: str | None, int_op: str | None = None):
    """``result = <op> args : type``, choosing the float or integer form by the result dtype."""

    def lower(call: ScalarCall) -> list[str]:
        op = float_op if is_float(call.dtype) else int_op
        if op is None:
            raise AssertionError(f"no lowering of {float_op or int_op} on {call.dtype}")
        return [f"{call.result} = {op} {', '.join(call.args)} : {element(call.dtype)}"]

    return lower


def extremum(float_op: str, int_op: str):
    """NumPy's ``minimum``/``maximum``: NaN if either is NaN (``float_op``, IEEE's
    ``minimumf``/``maximumf``), and of two equal operands the second, in float16 the first
    (NumPy's loops: ``a < b ? a : b`` and, in float16, ``a <= b ? a : b``). Equal operands
    differ only as -0.0 and +0.0, where IEEE's -0 < +0 gave ``minimum(-0.0, 0.0)`` -0.0 and
    NumPy 0.0, so ``-3 / minimum(x, -x)`` was +inf for NumPy's -inf at x = -0.0. A reduction
    combines with the plain op: a vectorizer recognizes only a single combining op, and NumPy's
    own reductions pick among signed zeros by their summation tree. With the workaround
    ``nan-operands-selected``, a NaN operand is selected explicitly as NumPy's loops do (the
    first if both are): see its registration."""
    plain = op(float_op, int_op)

    def lower(call: ScalarCall) -> list[str]:
        from .. import workarounds  # (the lowering's; the table's readers need not load it)

        if call.reduction or not is_float(call.dtype):
            return plain(call)
        a, b = call.args
        either, equal = call.fresh("ieee"), call.fresh("tie")
        t = element(call.dtype)
        kept = a if call.stored == FLOAT16 else b
        lines = [
            f"{either} = {float_op} {a}, {b} : {t}",
            f"{equal} = arith.cmpf oeq, {a}, {b} : {t}",
        ]
        if not workarounds.enabled("nan-operands-selected"):
            return [*lines, f"{call.result} = arith.select {equal}, {kept}, {either} : {t}"]
        picked, b_nan, or_b, a_nan = (call.fresh(n) for n in ("pick", "bnan", "orb", "anan"))
        return [
            *lines,
            f"{picked} = arith.select {equal}, {kept}, {either} : {t}",
            f"{b_nan} = arith.cmpf uno, {b}, {b} : {t}",
            f"{or_b} = arith.select {b_nan}, {b}, {picked} : {t}",
            f"{a_nan} = arith.cmpf uno, {a}, {a} : {t}",
            f"{call.result} = arith.select {a_nan}, {a}, {or_b} : {t}",
        ]

    return lower


#: ``arith.cmpf`` and (signed, as int32 is) ``arith.cmpi`` predicates.
FLOAT_PREDICATES = frozenset(
    "false oeq ogt oge olt ole one ord ueq ugt uge ult ule une uno true".split()
)
INT_PREDICATES = frozenset("eq ne slt sle sgt sge".split())


def predicate(float_predicate: str, int_predicate: str):
    """A comparison in the operands' dtype. NumPy: comparisons with NaN are False, except !=."""
    if float_predicate not in FLOAT_PREDICATES or int_predicate not in INT_PREDICATES:
        # Refused when the table is built: MLIR would only say so when a module is parsed.
        raise ValueError(f"not an arith.cmpf/cmpi predicate pair: {float_predicate, int_predicate}")

    def lower(call: ScalarCall) -> list[str]:
        source = call.arg_dtypes[0]
        a, b = call.args
        if is_float(source):
            return [f"{call.result} = arith.cmpf {float_predicate}, {a}, {b} : {element(source)}"]
        return [f"{call.result} = arith.cmpi {int_predicate}, {a}, {b} : {element(source)}"]

    return lower


def negative(call: ScalarCall) -> list[str]:
    if is_float(call.dtype):
        return [f"{call.result} = arith.negf {call.args[0]} : {element(call.dtype)}"]
    zero = call.fresh("z")
    return [
        f"{zero} = arith.constant 0 : i32",
        f"{call.result} = arith.subi {zero}, {call.args[0]} : i32",
    ]


def power(call: ScalarCall) -> list[str]:
    exponent = call.constants[1]
    out = element(call.dtype)
    if exponent is not None and exponent in (2, 3, 4):
        # Small integer powers as products: no libm call per element.
        lines, value = [], call.args[0]
        for i in range(int(exponent) - 1):
            step = call.result if i == int(exponent) - 2 else call.fresh("p")
            lines.append(f"{step} = arith.mulf {value}, {call.args[0]} : {out}")
            value = step
        return lines
    return [f"{call.result} = math.powf {call.args[0]}, {call.args[1]} : {out}"]


def select(call: ScalarCall) -> list[str]:
    cond, a, b = call.args
    return [f"{call.result} = arith.select {cond}, {a}, {b} : {element(call.dtype)}"]


def copy(call: ScalarCall) -> list[str]:
    call.result = call.args[0]
    return []


def narrow(arg: str, source: Any, target: Any, result: str, fresh: Any) -> list[str]:
    """Lines defining ``result``: the float ``arg`` rounded from ``source`` to the narrower
    float ``target`` (nearest, ties to even). float32 to bfloat16 is rounded in integers
    (``bf16-rounding-in-integers``): on CPUs with AVX512-BF16 or AVX-NE-CONVERT, LLVM selects
    ``vcvtneps2bf16`` for ``fptrunc float to bfloat``, which flushes subnormals to zero (NumPy
    and ml_dtypes keep them)."""
    from .. import workarounds  # the lowering's; the table's readers (strategies) need not load it

    natural = not (source == COMPUTE and target == BFLOAT16)
    if natural or not workarounds.enabled("bf16-rounding-in-integers"):
        return [f"{result} = arith.truncf {arg} : {element(source)} to {element(target)}"]
    bits, c16, one, half, c64, hi, lsb, bias, total, up, nan, quiet, chosen, short = (
        fresh(k)
        for k in "bits c16 one half c64 hi lsb bias total up nan quiet chosen short".split()
    )
    return [
        f"{bits} = arith.bitcast {arg} : f32 to i32",
        f"{c16} = arith.constant 16 : i32",
        f"{one} = arith.constant 1 : i32",
        f"{half} = arith.constant 32767 : i32",
        f"{hi} = arith.shrui {bits}, {c16} : i32",
        f"{lsb} = arith.andi {hi}, {one} : i32",
        f"{bias} = arith.addi {half}, {lsb} : i32",  # 0x7fff, or 0x8000 to round an odd up
        f"{total} = arith.addi {bits}, {bias} : i32",
        f"{up} = arith.shrui {total}, {c16} : i32",
        f"{nan} = arith.cmpf uno, {arg}, {arg} : f32",
        f"{c64} = arith.constant 64 : i32",
        f"{quiet} = arith.ori {hi}, {c64} : i32",  # a NaN stays a (quiet) NaN of its sign
        f"{chosen} = arith.select {nan}, {quiet}, {up} : i32",
        f"{short} = arith.trunci {chosen} : i32 to i16",
        f"{result} = arith.bitcast {short} : i16 to bf16",
    ]


#: The float32 / float64 just past int32's range (an fptosi to int32 is defined strictly
#: between them): -2**31 - 1 rounded down and 2**31, as written in MLIR.
INT32_BOUNDS = {"f32": ("-2147483904.0", "2147483648.0"), "f64": ("-2147483649.0", "2147483648.0")}


def to_int32(arg: str, src: str, result: str, fresh: Any) -> list[str]:
    """float32/float64 -> int32 as NumPy's cast is on x86-64 (cvttss2si): truncated toward
    zero, and -2**31 for NaN and for values beyond int32. An ``arith.fptosi`` alone is poison
    there, which this CPU happened to turn into -2**31: the answer depended on instruction
    selection, and LLVM may fold a poison constant to anything. No poison is computed at all
    (the fptosi converts 0.0 instead), so the triage's poison checks hold for every input."""
    low, high = INT32_BOUNDS[src]
    lo, hi, above, below, inside, zero, safe, least, truncated = (
        fresh(n) for n in ("lo", "hi", "above", "below", "in", "zero", "safe", "least", "t")
    )
    return [
        f"{lo} = arith.constant {low} : {src}",
        f"{hi} = arith.constant {high} : {src}",
        f"{above} = arith.cmpf ogt, {arg}, {lo} : {src}",  # (ordered: false for NaN)
        f"{below} = arith.cmpf olt, {arg}, {hi} : {src}",
        f"{inside} = arith.andi {above}, {below} : i1",
        f"{zero} = arith.constant 0.0 : {src}",
        f"{safe} = arith.select {inside}, {arg}, {zero} : {src}",
        f"{least} = arith.constant -2147483648 : i32",
        f"{truncated} = arith.fptosi {safe} : {src} to i32",
        f"{result} = arith.select {inside}, {truncated}, {least} : i32",
    ]


def cast(call: ScalarCall) -> list[str]:
    """NumPy's C-style conversions: float -> int truncates, x -> bool is x != 0.

    float16 and bfloat16 go through f32 as NumPy and ml_dtypes convert them: a 16-bit source is
    extended to f32 first (exact); a bfloat16 target is rounded from f32 (ml_dtypes converts
    float64 and int32 to float32 first, so a float64 -> bfloat16 cast rounds twice); a float16
    target is rounded directly from f32 or f64 (NumPy's npy_double_to_half rounds once)."""
    source, target, arg, result = call.arg_dtypes[0], call.dtype, call.args[0], call.result
    lines: list[str] = []
    if source in LOW_PRECISION:
        wide = call.fresh("w")
        lines.append(f"{wide} = arith.extf {arg} : {element(source)} to {element(COMPUTE)}")
        source, arg = COMPUTE, wide
        if target == COMPUTE:
            call.result = wide
            return lines
    if target in LOW_PRECISION and not (target == FLOAT16 and source == FLOAT64):
        if source != COMPUTE:
            inner = ScalarCall([arg], [source], [None], COMPUTE, call.fresh("w"), call.fresh)
            lines += cast(inner)
            source, arg = COMPUTE, inner.result
        return lines + narrow(arg, source, target, result, call.fresh)
    src, dst = element(source), element(target)
    if is_float(source) and is_float(target):
        op = "arith.extf" if target.itemsize > source.itemsize else "arith.truncf"
        return lines + [f"{result} = {op} {arg} : {src} to {dst}"]
    if is_float(source) and target == INT32:
        return lines + to_int32(arg, src, result, call.fresh)
    if source == INT32 and is_float(target):
        return lines + [f"{result} = arith.sitofp {arg} : {src} to {dst}"]
    if source == BOOL and is_float(target):
        return lines + [f"{result} = arith.uitofp {arg} : {src} to {dst}"]
    if source == BOOL and target == INT32:
        return lines + [f"{result} = arith.extui {arg} : {src} to {dst}"]
    zero = call.fresh("z")
    if is_float(source) and target == BOOL:
        literal = "0.0"
        return lines + [
            f"{zero} = arith.constant {literal} : {src}",
            f"{result} = arith.cmpf une, {arg}, {zero} : {src}",
        ]
    if source == INT32 and target == BOOL:
        return lines + [
            f"{zero} = arith.constant 0 : i32",
            f"{result} = arith.cmpi ne, {arg}, {zero} : i32",
        ]
    raise AssertionError(f"no cast from {source} to {target}")


__all__ = ["cast", "copy", "negative", "op", "power", "predicate", "select"]
