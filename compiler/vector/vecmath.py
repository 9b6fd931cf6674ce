"""Vectorizable exp / log / tanh for f32 and f64: the ``vecmath`` stage of ``cpu-vector``.

Why our own: upstream ``math-polynomial-approximation`` is not a pass of the MLIR wheels (only a
test pass uses its patterns, there is no transform op for it) and it covers f32 only; libm calls
(``convert-math-to-libm``) are one scalar call per lane and keep gelu/softmax off SIMD. Each
function here is straight-line ``arith``/``math`` code (no call, no branch), so once inlined into a
``linalg.generic`` body the linalg vectorizer turns it into SIMD code.

* exp: Cody-Waite reduction x = k ln2 + r (|r| <= ln2/2, two-constant ln2 with FMA), a Taylor
  polynomial of degree 13 (f64) / 7 (f32) evaluated with FMA, and 2^k applied as two exact
  power-of-two factors so that overflow, underflow and subnormal results come out right.
* log: fdlibm's e_log.c / e_logf.c (mantissa in [sqrt(1/2), sqrt(2)), s = f/(2+f), odd
  minimax polynomial in s), subnormal inputs pre-scaled by 2^54 / 2^25.
* tanh: Cephes tanh / tanhf: |x| < 0.625 a rational (f64) or polynomial (f32) in x^2, else
  1 - 2/(exp(2|x|) + 1) with the sign copied back.

Measured error (``tests/compiler/test_vector.py`` checks it): at most ``ULP_BOUND`` units in the
last place against an extended-precision reference. Special values: NaN -> NaN, exp(+-inf) =
inf / 0, log(0) = -inf, log(<0) = NaN, log(inf) = inf, tanh(+-inf) = +-1, tanh(-0) = -0.
"""

from __future__ import annotations

import struct
from typing import Any

_FLOAT = {
    "f32": dict(int="i32", bits=32, mant=23, bias=127, min_normal=2.0**-126, scale_exp=25),
    "f64": dict(int="i64", bits=64, mant=52, bias=1023, min_normal=2.0**-1022, scale_exp=54),
}


def literal(value: float, ty: str) -> str:
    """Exact bit-pattern literal of a float constant."""
    if ty == "f32":
        return f"0x{struct.unpack('<I', struct.pack('<f', value))[0]:08X}"
    return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"


class _Body:
    """A tiny SSA emitter for one scalar function."""

    def __init__(self, ty: str) -> None:
        self.ty = ty
        self.ity = _FLOAT[ty]["int"]
        self.lines: list[str] = []
        self.n = 0
        self.consts: dict[tuple[str, str], str] = {}

    def fresh(self) -> str:
        self.n += 1
        return f"%t{self.n}"

    def emit(self, rhs: str) -> str:
        name = self.fresh()
        self.lines.append(f"{name} = {rhs}")
        return name

    def c(self, value: float) -> str:
        key = (self.ty, literal(value, self.ty))
        if key not in self.consts:
            self.consts[key] = self.emit(f"arith.constant {key[1]} : {self.ty}")
        return self.consts[key]

    def ci(self, value: int) -> str:
        key = (self.ity, str(value))
        if key not in self.consts:
            self.consts[key] = self.emit(f"arith.constant {value} : {self.ity}")
        return self.consts[key]

    def f(self, op: str, *args: str) -> str:
        return self.emit(f"{op} {', '.join(args)} : {self.ty}")

    def i(self, op: str, *args: str) -> str:
        return self.emit(f"{op} {', '.join(args)} : {self.ity}")

    def fma(self, a: str, b: str, c: str) -> str:
        return self.f("math.fma", a, b, c)

    def cmp(self, pred: str, a: str, b: str) -> str:
        return self.emit(f"arith.cmpf {pred}, {a}, {b} : {self.ty}")

    def select(self, cond: str, a: str, b: str) -> str:
        return self.emit(f"arith.select {cond}, {a}, {b} : {self.ty}")

    def horner(self, x: str, coefficients: list[float]) -> str:
        """c0*x^n + ... + cn (highest degree first), with FMA."""
        acc = self.c(coefficients[0])
        for coefficient in coefficients[1:]:
            acc = self.fma(acc, x, self.c(coefficient))
        return acc

    def to_int(self, x: str) -> str:
        return self.emit(f"arith.fptosi {x} : {self.ty} to {self.ity}")

    def to_float(self, k: str) -> str:
        return self.emit(f"arith.sitofp {k} : {self.ity} to {self.ty}")

    def bits(self, x: str) -> str:
        return self.emit(f"arith.bitcast {x} : {self.ty} to {self.ity}")

    def from_bits(self, k: str) -> str:
        return self.emit(f"arith.bitcast {k} : {self.ity} to {self.ty}")

    def function(self, name: str, result: str) -> str:
        body = "\n".join("    " + line for line in self.lines)
        return (
            f"  func.func private @{name}(%x: {self.ty}) -> {self.ty} {{\n{body}\n"
            f"    return {result} : {self.ty}\n  }}\n"
        )


def _pow2(b: _Body, k: str) -> str:
    """2^k as a float for an integer k in the normal exponent range."""
    info = _FLOAT[b.ty]
    biased = b.i("arith.addi", k, b.ci(info["bias"]))
    return b.from_bits(b.i("arith.shli", biased, b.ci(info["mant"])))


def _exp_core(b: _Body, x: str) -> str:
    """exp(x) without the NaN select (NaN inputs give a garbage finite value)."""
    ty = b.ty
    if ty == "f64":
        hi, lo = 709.8, -745.2  # exp(709.79) overflows, exp(-745.14) underflows to 0
        ln2_hi, ln2_lo = 6.93147180369123816490e-01, 1.90821492927058770002e-10
        degree = 13
    else:
        hi, lo = 88.8, -104.0
        ln2_hi, ln2_lo = 6.9314575195e-01, 1.4286067653e-06
        degree = 7
    log2e = 1.4426950408889634
    clamped = b.f("arith.maxnumf", b.f("arith.minnumf", x, b.c(hi)), b.c(lo))
    k = b.f("math.roundeven", b.f("arith.mulf", clamped, b.c(log2e)))
    negk = b.f("arith.negf", k)
    r = b.fma(negk, b.c(ln2_hi), clamped)
    r = b.fma(negk, b.c(ln2_lo), r)
    factorial = [1.0]
    for n in range(1, degree + 1):
        factorial.append(factorial[-1] * n)
    p = b.horner(r, [1.0 / factorial[n] for n in range(degree, -1, -1)])
    ki = b.to_int(k)
    k1 = b.i("arith.shrsi", ki, b.ci(1))
    k2 = b.i("arith.subi", ki, k1)
    return b.f("arith.mulf", b.f("arith.mulf", p, _pow2(b, k1)), _pow2(b, k2))


def exp_function(ty: str) -> str:
    b = _Body(ty)
    y = _exp_core(b, "%x")
    nan = b.cmp("uno", "%x", "%x")
    return b.function(f"__vm_exp_{ty}", b.select(nan, "%x", y))


def log_function(ty: str) -> str:
    b = _Body(ty)
    info = _FLOAT[ty]
    x = "%x"
    tiny = b.cmp("olt", x, b.c(info["min_normal"]))
    xs = b.select(tiny, b.f("arith.mulf", x, b.c(2.0 ** info["scale_exp"])), x)
    bits = b.bits(xs)
    exponent = b.i("arith.subi", b.i("arith.shrui", bits, b.ci(info["mant"])), b.ci(info["bias"]))
    adjust = b.emit(f"arith.select {tiny}, {b.ci(info['scale_exp'])}, {b.ci(0)} : {b.ity}")
    exponent = b.i("arith.subi", exponent, adjust)
    mantissa_mask = (1 << info["mant"]) - 1
    one_bits = info["bias"] << info["mant"]
    mbits = b.i("arith.ori", b.i("arith.andi", bits, b.ci(mantissa_mask)), b.ci(one_bits))
    m = b.from_bits(mbits)
    big = b.cmp("ogt", m, b.c(1.4142135623730951))
    m = b.select(big, b.f("arith.mulf", m, b.c(0.5)), m)
    exponent = b.emit(
        f"arith.select {big}, {b.i('arith.addi', exponent, b.ci(1))}, {exponent} : {b.ity}"
    )
    k = b.to_float(exponent)
    f = b.f("arith.subf", m, b.c(1.0))
    s = b.f("arith.divf", f, b.f("arith.addf", f, b.c(2.0)))
    z = b.f("arith.mulf", s, s)
    w = b.f("arith.mulf", z, z)
    if ty == "f64":
        lg = [
            6.666666666666735130e-01,
            3.999999999940941908e-01,
            2.857142874366239149e-01,
            2.222219843214978396e-01,
            1.818357216161805012e-01,
            1.531383769920937332e-01,
            1.479819860511658591e-01,
        ]
        t1 = b.f("arith.mulf", w, b.horner(w, [lg[5], lg[3], lg[1]]))
        t2 = b.f("arith.mulf", z, b.horner(w, [lg[6], lg[4], lg[2], lg[0]]))
        ln2_hi, ln2_lo = 6.93147180369123816490e-01, 1.90821492927058770002e-10
    else:
        lg = [0.66666662693, 0.40000972152, 0.28498786688, 0.24279078841]
        t1 = b.f("arith.mulf", w, b.horner(w, [lg[3], lg[1]]))
        t2 = b.f("arith.mulf", z, b.horner(w, [lg[2], lg[0]]))
        ln2_hi, ln2_lo = 6.9313812256e-01, 9.0580006145e-06
    r = b.f("arith.addf", t2, t1)
    hfsq = b.f("arith.mulf", b.f("arith.mulf", f, f), b.c(0.5))
    inner = b.fma(s, b.f("arith.addf", hfsq, r), b.f("arith.mulf", k, b.c(ln2_lo)))
    y = b.f(
        "arith.subf",
        b.f("arith.mulf", k, b.c(ln2_hi)),
        b.f("arith.subf", b.f("arith.subf", hfsq, inner), f),
    )
    zero = b.cmp("oeq", x, b.c(0.0))
    y = b.select(zero, b.c(float("-inf")), y)
    inf = b.cmp("oeq", x, b.c(float("inf")))
    y = b.select(inf, x, y)
    bad = b.cmp("ult", x, b.c(0.0))  # x < 0 or NaN
    y = b.select(bad, b.c(float("nan")), y)
    nan = b.cmp("uno", x, x)
    return b.function(f"__vm_log_{ty}", b.select(nan, x, y))


def tanh_function(ty: str) -> str:
    b = _Body(ty)
    x = "%x"
    a = b.f("math.absf", x)
    z = b.f("arith.mulf", x, x)
    if ty == "f64":
        p = b.horner(
            z, [-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3]
        )
        q = b.horner(
            z, [1.0, 1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3]
        )
        small = b.fma(b.f("arith.mulf", x, z), b.f("arith.divf", p, q), x)
    else:
        p = b.horner(
            z,
            [
                -5.70498872745e-3,
                2.06390887954e-2,
                -5.37397155531e-2,
                1.33314422036e-1,
                -3.33332819422e-1,
            ],
        )
        small = b.fma(b.f("arith.mulf", x, z), p, x)
    e = _exp_core(b, b.f("arith.addf", a, a))
    big = b.f("arith.subf", b.c(1.0), b.f("arith.divf", b.c(2.0), b.f("arith.addf", e, b.c(1.0))))
    use_small = b.cmp("olt", a, b.c(0.625))
    # tanh is odd: the sign of x on both branches (the small one gives +0 for -0 otherwise:
    # fma(-0 * 0, p, -0) = +0 when p < 0).
    y = b.f("math.copysign", b.select(use_small, small, big), x)
    nan = b.cmp("uno", x, x)
    return b.function(f"__vm_tanh_{ty}", b.select(nan, x, y))


FUNCTIONS = {"exp": exp_function, "log": log_function, "tanh": tanh_function}
#: The largest error measured against an extended-precision reference (units in the last place,
#: f32 and f64 alike; tanh is the worst, exp and log stay under 0.9).
ULP_BOUND = 1.5


def library(needed: set[tuple[str, str]]) -> str:
    """MLIR text (function definitions, no enclosing module) for the (op, type) pairs."""
    return "".join(FUNCTIONS[op](ty) for op, ty in sorted(needed))


def replace_math_ops(module: Any, ops: tuple[str, ...] = tuple(FUNCTIONS)) -> set[tuple[str, str]]:
    """Replace scalar ``math.<op>`` on f32/f64 (anywhere, linalg bodies included) by calls to
    private ``@__vm_<op>_<ty>`` functions appended to the module; the ``inlined`` stage then
    inlines them. Returns the (op, type) pairs replaced."""
    from mlir import ir

    from ..lower import operations

    targets = []
    for op in operations(module):
        if op.name.startswith("math.") and op.name[5:] in ops:
            ty = str(op.results[0].type)
            if ty in ("f32", "f64"):
                targets.append((op, op.name[5:], ty))
    needed = set()
    for op, fn, ty in targets:
        needed.add((fn, ty))
        with ir.InsertionPoint(op), op.location:
            call = ir.Operation.create(
                "func.call",
                results=[op.results[0].type],
                operands=[op.operands[0]],
                attributes={"callee": ir.FlatSymbolRefAttr.get(f"__vm_{fn}_{ty}")},
            )
        op.results[0].replace_all_uses_with(call.results[0])
        op.erase()
    if needed:
        lib = ir.Module.parse("module {\n" + library(needed) + "}")
        for func in list(lib.body.operations):
            module.body.append(func.operation)
    return needed


def expand_absi(module: Any) -> int:
    """``math.absi x`` -> ``arith.maxsi(x, 0 - x)`` (the same for INT_MIN, which both wrap).
    Why: convert-math-to-llvm leaves ``math.absi`` on n-D vectors unconverted in this MLIR
    (llvm-project #195360, fixed after 22.1), and the vectorizer makes n-D vectors. Returns the
    count."""
    from mlir import ir

    from ..lower import operations

    found = [op for op in operations(module) if op.name == "math.absi"]
    for op in found:
        x = op.operands[0]
        with ir.InsertionPoint(op), op.location:
            zero = ir.Operation.create(
                "arith.constant",
                results=[x.type],
                attributes={"value": ir.IntegerAttr.get(x.type, 0)},
            ).result
            negated = ir.Operation.create("arith.subi", results=[x.type], operands=[zero, x]).result
            result = ir.Operation.create("arith.maxsi", results=[x.type], operands=[x, negated])
        op.results[0].replace_all_uses_with(result.results[0])
        op.erase()
    return len(found)


def rewrite(module: Any) -> None:
    """The ``vecmath`` stage (in place)."""
    replace_math_ops(module)
    expand_absi(module)


__all__ = ["FUNCTIONS", "ULP_BOUND", "expand_absi", "library", "replace_math_ops", "rewrite"]
