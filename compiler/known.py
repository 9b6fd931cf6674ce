"""Known bugs and by-design deviations of the compilers behind our backends (IREE's in
``compiler.iree_known``, XLA's in ``compiler.xla``), and the check they share: is a wrong
answer the subnormal flushing of IREE's and XLA's CPU runtimes (``flushing_explains``)?
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dtypes import finfo, is_float
from .frontend.graph import Graph


@dataclass(frozen=True)
class KnownIssue:
    """A bug (or deviation by design) of another compiler that this project has met: where it
    is reported, where its root cause lives, how to avoid it."""

    name: str
    upstream: str
    cause: str
    workaround: str

    def to_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "upstream": self.upstream,
            "cause": self.cause,
            "workaround": self.workaround,
        }


def flushed(value: Any) -> Any:
    """``value`` with its float subnormals replaced by zeros of the same sign."""
    a = np.asarray(value)
    if not is_float(a.dtype):
        return value
    with np.errstate(invalid="ignore"):
        small = np.abs(a.astype(np.float64)) < float(finfo(a.dtype).tiny)
    return np.where(small, np.copysign(np.zeros((), np.float64), a.astype(np.float64)), a).astype(
        a.dtype
    )


def near(a: np.ndarray, b: np.ndarray, relative: float, tiny: float) -> np.ndarray:
    """Elementwise: equal (NaN with NaN, an infinity with itself), or finite and within
    ``relative`` of ``b`` (or ``tiny`` of it, near zero)."""
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= relative * np.abs(b) + tiny)
    return (a == b) | (np.isnan(a) & np.isnan(b)) | close


def _is_narrowing(node: Any) -> bool:
    """Is ``node`` a conversion from one float dtype to another of fewer exponent bits?"""
    if node.op != "elementwise" or node.prim.name != "astype":
        return False
    source, target = node.args[0].dtype, node.dtype
    if not (is_float(source) and is_float(target)):
        return False
    return float(finfo(target).tiny) > float(finfo(source).tiny)


def _answers(graph: Graph, inputs: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per output, (NumPy's answer on ``inputs``, NumPy's answer with every subnormal input and
    result flushed to zero). x86's flush-to-zero detects a tiny result before rounding: a
    conversion whose source is below the target's smallest normal is zero even where it
    rounds up to that normal (XLA converted float64 1.1754942807573643e-38, half an ulp below
    float32's least normal, to 0.0, where NumPy gives the least normal)."""
    from .interpret import evaluate_graph, evaluate_values

    made: dict[int, Any] = {}

    def at(node: Any, value: Any) -> Any:
        if _is_narrowing(node):
            arg = node.args[0]
            source = flushed(inputs[arg.attrs["index"]]) if arg.op == "input" else made[id(arg)]
            wide = np.asarray(source).astype(np.float64)
            with np.errstate(invalid="ignore"):
                tiny = np.abs(wide) < float(finfo(node.dtype).tiny)
            zero = np.copysign(np.zeros((), np.float64), wide)
            value = np.where(tiny, zero, np.asarray(value).astype(np.float64)).astype(node.dtype)
        made[id(node)] = value
        return value

    plain = evaluate_graph(graph, list(inputs))
    values = evaluate_values(graph, list(inputs), each=flushed, at=at)
    return [
        (np.asarray(want), np.asarray(values[id(n)]))
        for want, n in zip(plain, graph.outputs, strict=True)
    ]


def _differ(want: np.ndarray, alt: np.ndarray) -> bool:
    """Does flushing change the answer (beyond 4 ulps of a float)?"""
    if not is_float(want.dtype):
        return not np.array_equal(want, alt)
    a, b = want.astype(np.float64), alt.astype(np.float64)
    return not np.all(near(b, a, 4 * float(finfo(want.dtype).eps), 0.0))


def off_answer(want: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Elementwise: is ``got`` (a backend's answer, of ``want``'s shape) off NumPy's answer
    ``want``: beyond 4 ulps of a float (or twice its smallest normal, near zero), at all for
    integers and booleans? The elements a known issue must explain."""
    if not is_float(want.dtype):
        return got != want
    info = finfo(want.dtype)
    a, w = got.astype(np.float64), want.astype(np.float64)
    return ~near(a, w, 4 * float(info.eps), 2 * float(info.tiny))


def _other_zero(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: are ``a`` and ``b`` zeros of opposite signs?"""
    if not is_float(a.dtype) or not is_float(b.dtype):
        return np.zeros(np.broadcast_shapes(a.shape, b.shape), bool)
    x, y = a.astype(np.float64), b.astype(np.float64)
    return (x == 0) & (y == 0) & (np.signbit(x) != np.signbit(y))


def _predicted(want: np.ndarray, alt: np.ndarray, got: np.ndarray, signs: bool = False) -> bool:
    """Is every element of ``got`` that is not NumPy's answer ``want`` the flushed answer
    ``alt`` (within 1%)? With ``signs``, a zero of the other sign is not the answer either."""
    if got.shape != want.shape:
        return False
    off = off_answer(want, got)
    if not is_float(want.dtype):
        return not np.any(off & (got != alt))
    tiny = 2 * float(finfo(want.dtype).tiny)
    a, f = got.astype(np.float64), alt.astype(np.float64)
    if signs:
        off = off | _other_zero(want, got)
        return not np.any(off & (~near(a, f, 1e-2, tiny) | _other_zero(a, f)))
    return not np.any(off & ~near(a, f, 1e-2, tiny))


def _explained(
    answers: list[tuple[np.ndarray, np.ndarray]], outputs: list[Any] | None, signs: bool = False
) -> bool:
    """Is every element of ``outputs`` (None: no answer to check) that is not NumPy's answer
    the alternative answer of ``answers`` (pairs of NumPy's and the alternative, per output)?
    ``signs``: zeros of opposite signs are different answers."""
    if outputs is None:
        return True
    return len(outputs) == len(answers) and all(
        _predicted(want, alt, np.asarray(got), signs)
        for (want, alt), got in zip(answers, outputs, strict=True)
    )


def depends_on_subnormals(graph: Graph, inputs: list[np.ndarray]) -> bool:
    """Does the graph's answer on ``inputs`` change when every subnormal input and result is
    flushed to zero, as IREE's and XLA's CPU runtimes do? Evaluated by NumPy."""
    return any(_differ(want, alt) for want, alt in _answers(graph, inputs))


def flushing_explains(
    graph: Graph, inputs: list[np.ndarray], outputs: list[Any] | None = None
) -> bool:
    """Is a wrong answer on ``inputs`` subnormal flushing? The answer depends on subnormals,
    and ``outputs`` (the backend's, where given) are what flushing gives: every element that is
    not NumPy's answer is NumPy's answer with subnormals flushed (within 1%). A wrong answer
    flushing predicts is the flushing; one it merely could touch (a case that holds a subnormal
    and fails elsewhere) may be a new bug."""
    answers = _answers(graph, inputs)
    if not any(_differ(want, alt) for want, alt in answers):
        return False
    return _explained(answers, outputs)


def _is_conversion(node: Any, source: Any, target: Any = None) -> bool:
    """Is ``node`` an ``astype`` from dtype ``source`` (to ``target``, if given)?"""
    return (
        node.op == "elementwise"
        and node.prim.name == "astype"
        and node.args[0].dtype == source
        and (target is None or node.dtype == target)
    )


def _is_half_of_double(node: Any) -> bool:
    """Is ``node`` a float64 -> float16 conversion?"""
    return _is_conversion(node, np.float64, np.float16)


def _rewrite_explains(
    graph: Graph,
    inputs: list[np.ndarray],
    outputs: list[Any] | None,
    rewrite: Callable[[Any, Callable[[Any], Any]], Any],
    signs: bool = False,
) -> bool:
    """Does evaluating ``graph`` with ``rewrite(node, value_of)`` in place of the nodes it
    answers for (None: NumPy's own value) change NumPy's answer on ``inputs``, and is every
    element of ``outputs`` (where given) that is not NumPy's answer that answer (within 1%)?
    ``signs``: a zero's sign is part of an answer."""
    from .interpret import evaluate_graph, evaluate_values

    made: dict[int, Any] = {}

    def value_of(node: Any) -> Any:
        return inputs[node.attrs["index"]] if node.op == "input" else made[id(node)]

    def at(node: Any, value: Any) -> Any:
        replaced = rewrite(node, value_of)
        made[id(node)] = value if replaced is None else replaced
        return made[id(node)]

    plain = evaluate_graph(graph, list(inputs))
    values = evaluate_values(graph, list(inputs), at=at)
    answers = [
        (np.asarray(want), np.asarray(values[id(n)]))
        for want, n in zip(plain, graph.outputs, strict=True)
    ]
    same = all(
        np.array_equal(want, alt, equal_nan=True) and not (signs and _other_zero(want, alt).any())
        for want, alt in answers
    )
    if same:
        return False
    return _explained(answers, outputs, signs)


def double_rounding_explains(
    graph: Graph, inputs: list[np.ndarray], outputs: list[Any] | None = None
) -> bool:
    """Is a wrong answer on ``inputs`` a float64 -> float16 conversion rounded twice, through
    float32 (as IREE's ``truncf`` and XLA's ``convert`` do)? The graph converts float64 to
    float16, doing so through float32 changes its answer, and every element of ``outputs``
    (where given) that is not NumPy's answer is that answer (within 1%)."""

    def twice(node: Any, value_of: Callable[[Any], Any]) -> Any:
        if not _is_half_of_double(node):
            return None
        return np.asarray(value_of(node.args[0])).astype(np.float32).astype(np.float16)

    if not any(_is_half_of_double(n) for n in graph.nodes()):
        return False
    return _rewrite_explains(graph, inputs, outputs, twice)


def _bool_factor(node: Any) -> int | None:
    """Which operand of a float ``multiply`` ``node`` is a bool converted to a float (0 or 1),
    if one is."""
    if node.op != "elementwise" or node.prim.name != "multiply" or not is_float(node.dtype):
        return None
    return next((i for i, arg in enumerate(node.args) if _is_conversion(arg, np.bool_)), None)


def select_rewrite_explains(
    graph: Graph, inputs: list[np.ndarray], outputs: list[Any] | None = None
) -> bool:
    """Is a wrong answer on ``inputs`` XLA's rewrite of ``x * float(b)`` into
    ``select(b, x, 0)``, which makes ``inf * 0`` and ``nan * 0`` zero? The graph multiplies by a
    converted bool, evaluating it so changes the answer, and every element of ``outputs``
    (where given) that is not NumPy's answer is that answer (within 1%)."""

    def select(node: Any, value_of: Callable[[Any], Any]) -> Any:
        which = _bool_factor(node)
        if which is None:
            return None
        picked = np.asarray(value_of(node.args[which].args[0]))
        operand = np.asarray(value_of(node.args[1 - which]))
        return np.where(picked, operand, np.zeros((), node.dtype)).astype(node.dtype)

    if not any(_bool_factor(n) is not None for n in graph.nodes()):
        return False
    # (``select(b, x, 0)`` is +0 where NumPy's -3 * 0.0 is -0.0: a zero's sign counts)
    return _rewrite_explains(graph, inputs, outputs, select, signs=True)


def only_zero_signs(
    graph: Graph, inputs: list[np.ndarray], outputs: list[Any] | None = None
) -> bool:
    """Is every element of ``outputs`` that is not NumPy's answer on ``inputs`` only a zero of
    the other sign (at least one such)? Evaluated by NumPy; False without ``outputs``."""
    from .interpret import evaluate_graph

    if outputs is None:
        return False
    plain = evaluate_graph(graph, list(inputs))
    if len(plain) != len(outputs):
        return False
    signs = False
    for want, got in zip(plain, outputs, strict=True):
        want, got = np.asarray(want), np.asarray(got)
        if got.shape != want.shape:
            return False
        if np.any(off_answer(want, got)):
            return False
        signs = signs or bool(np.any(_other_zero(want, got)))
    return signs


_EXTREMA = {"maximum": True, "max": True, "minimum": False, "min": False}


def _extremum(node: Any) -> bool | None:
    """True for a float maximum (elementwise or reduced), False for a minimum, else None."""
    if node.op not in ("elementwise", "reduce") or not is_float(node.dtype):
        return None
    return _EXTREMA.get(node.prim.name)


def _ieee_extremum(node: Any, value_of: Callable[[Any], Any]) -> Any:
    """``node``'s value with IEEE 754-2019 ``maximum``/``minimum`` (-0 < +0), if it is one:
    of two equal zeros the maximum is +0 and the minimum -0, whatever their order."""
    larger = _extremum(node)
    if larger is None:
        return None
    if node.op == "elementwise":
        a, b = (np.asarray(value_of(arg)) for arg in node.args)
        plain = (np.maximum if larger else np.minimum)(a, b)
        tie = (a == 0) & (b == 0)
        first, second = np.signbit(a), np.signbit(b)
        negative = (first & second) if larger else (first | second)
    else:
        a = np.asarray(value_of(node.args[0]))
        axes = tuple(node.attrs["axes"])
        plain = (np.max if larger else np.min)(a, axis=axes)
        tie = plain == 0
        if larger:
            negative = ~np.any((a == 0) & ~np.signbit(a), axis=axes)
        else:
            negative = np.any((a == 0) & np.signbit(a), axis=axes)
    zeros = np.where(negative, -0.0, 0.0)
    return np.where(tie, zeros, plain).astype(node.dtype)


def ieee_extremum_explains(
    graph: Graph, inputs: list[np.ndarray], outputs: list[Any] | None = None
) -> bool:
    """Is a wrong answer on ``inputs`` the sign of a zero that IEEE 754-2019 ``maximum`` and
    ``minimum`` pick (-0 < +0), where NumPy returns one of two equal operands (on x86 the second:
    ``np.maximum(0.0, -0.0)`` is -0.0)? The graph takes a float maximum or minimum (elementwise
    or reduced), evaluating it so changes a zero's sign, and every element of ``outputs``
    (where given) that is not NumPy's answer (sign included) is that answer."""
    if not any(_extremum(n) is not None for n in graph.nodes()):
        return False
    return _rewrite_explains(graph, inputs, outputs, _ieee_extremum, signs=True)


def _signaling(values: np.ndarray) -> np.ndarray:
    """Where ``values`` (a float array) holds a signaling NaN: a NaN whose quiet bit (the
    significand's first) is clear."""
    values = np.asarray(values)
    quiet = 1 << (finfo(values.dtype).nmant - 1)
    bits = values.view(f"u{values.dtype.itemsize}")
    return np.isnan(values) & ((bits & quiet) == 0)


def _from_integer(node: Any) -> bool:
    """Is ``node`` an integer or bool converted to float (a value LLVM knows is never NaN)?"""
    return (
        node.op == "elementwise"
        and node.prim.name == "astype"
        and not is_float(node.args[0].dtype)
        and is_float(node.dtype)
    )


def _snan_extremum(node: Any, value_of: Callable[[Any], Any]) -> Any:
    """``node``'s value as X86's llvm.maximum/minimum give it (LLVM 22.1.8, and XLA's) if it is
    an elementwise one beside an integer converted: the converted number where the other
    operand is a signaling NaN."""
    larger = _extremum(node)
    if node.op != "elementwise" or larger is None:
        return None
    a, b = (np.asarray(value_of(arg)) for arg in node.args)
    plain = (np.maximum if larger else np.minimum)(a, b)
    if _from_integer(node.args[0]) and is_float(b.dtype):
        plain = np.where(_signaling(b), a, plain)
    if _from_integer(node.args[1]) and is_float(a.dtype):
        plain = np.where(_signaling(a), b, plain)
    return plain.astype(node.dtype)


def snan_extremum_explains(
    graph: Graph, inputs: list[np.ndarray], outputs: list[Any] | None = None
) -> bool:
    """Is a wrong answer on ``inputs`` X86's maximum or minimum of an integer converted to float
    and a signaling NaN, which is the number (``tests/upstream``: LLVM 22.1.8's code
    generation, and XLA's)? The graph takes such an elementwise extremum, evaluating it so
    changes the answer, and every element of ``outputs`` (where given) that is not NumPy's
    answer is that answer."""
    if not any(
        _extremum(n) is not None and n.op == "elementwise" and any(map(_from_integer, n.args))
        for n in graph.nodes()
    ):
        return False
    return _rewrite_explains(graph, inputs, outputs, _snan_extremum)


#: ``2 ** -k``: what glibc's ``pow``/``powf`` take a subnormal base for under DAZ (float64,
#: float32; bfloat16 is computed in float32, whose subnormals it shares).
_DAZ_POW_BASE = {"float64": 1075, "float32": 150, "bfloat16": 150}


def _daz_pow_scale(node: Any) -> int | None:
    """``k`` of ``_DAZ_POW_BASE`` if ``node`` is a float power glibc computes, else None."""
    if node.op != "elementwise" or node.prim.name != "power" or not is_float(node.dtype):
        return None
    return _DAZ_POW_BASE.get(np.dtype(node.dtype).name)


def _daz_pow(node: Any, value_of: Callable[[Any], Any]) -> Any:
    """``node``'s value as glibc's ``pow``/``powf`` give it with DAZ set, if it is a float power:
    glibc normalizes a subnormal base by a multiplication DAZ reads as zero, so every subnormal
    ``x`` is taken for ``2 ** -k`` (``powf(1e-45, 0.5)`` and ``powf(3e-39, 0.5)`` are both
    2.6e-23 where NumPy says 3.7e-23 and 5.5e-20); a subnormal result is then flushed."""
    k = _daz_pow_scale(node)
    if k is None:
        return None
    base, exponent = (np.asarray(value_of(arg)).astype(np.float64) for arg in node.args)
    tiny = float(finfo(node.dtype).tiny)
    with np.errstate(all="ignore"):
        plain = np.power(base, exponent)
        subnormal = (base != 0) & (np.abs(base) < tiny)
        magnitude = np.exp2(-k * exponent)
        integral = exponent == np.round(exponent)
        odd = integral & (np.abs(np.fmod(exponent, 2)) == 1)
        signed = np.where(odd, -magnitude, magnitude)
        taken = np.where(base < 0, np.where(integral, signed, np.nan), magnitude)
        value = np.where(subnormal, taken, plain)
    return flushed(value.astype(node.dtype))


def daz_pow_explains(
    graph: Graph, inputs: list[np.ndarray], outputs: list[Any] | None = None
) -> bool:
    """Is a wrong answer on ``inputs`` glibc's ``pow`` run with DAZ set (as XLA's CPU runtime
    runs it), which takes every subnormal base for ``2**-150`` (float32) or ``2**-1075``
    (float64)? The graph raises a subnormal to a power, evaluating it so changes the answer,
    and every element of ``outputs`` (where given) that is not NumPy's answer is that answer
    (within 1%)."""
    if not any(_daz_pow_scale(n) is not None for n in graph.nodes()):
        return False
    return _rewrite_explains(graph, inputs, outputs, _daz_pow)


def _exp2_exponent(node: Any) -> int | None:
    """n where ``node`` is a float32 or float64 power of the constant base ``2**n`` (n an integer
    but 0): the powers LLVM's library call simplifier rewrites as ``exp2(n * x)``."""
    if node.op != "elementwise" or node.prim.name != "power":
        return None
    if np.dtype(node.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        return None
    base = node.args[0]
    if base.op != "const" or isinstance(base.attrs["value"], bool):
        return None
    value = float(base.attrs["value"])
    if not (value > 0 and np.isfinite(value)):
        return None
    n = float(np.log2(value))
    return int(n) if n == int(n) and n != 0 and abs(n) < 64 else None


def _exp2_pow(node: Any, value_of: Callable[[Any], Any]) -> Any:
    """``node``'s value as LLVM's rewrite gives it, if it is a power of a constant ``2**n``:
    ``exp2(n * x)``, the product rounded in the node's dtype first."""
    n = _exp2_exponent(node)
    if n is None:
        return None
    exponent = np.asarray(value_of(node.args[1])).astype(node.dtype)
    with np.errstate(all="ignore"):
        return np.exp2(exponent * np.asarray(n, node.dtype)).astype(node.dtype)


def exp2_pow_explains(
    graph: Graph, inputs: list[np.ndarray], outputs: list[Any] | None = None
) -> bool:
    """Is a wrong answer on ``inputs`` LLVM's rewrite of ``pow(2**n, x)`` as ``exp2(n * x)``
    (``tests/upstream``: LLVM 22.1.8's library call simplifier, in XLA's CPU kernels too)?
    The graph raises a constant power of two, evaluating it so changes the answer, and every
    element of ``outputs`` (where given) that is not NumPy's answer is that answer (within
    1%)."""
    if not any(_exp2_exponent(n) is not None for n in graph.nodes()):
        return False
    return _rewrite_explains(graph, inputs, outputs, _exp2_pow)


__all__ = [
    "KnownIssue",
    "daz_pow_explains",
    "depends_on_subnormals",
    "exp2_pow_explains",
    "double_rounding_explains",
    "select_rewrite_explains",
    "flushed",
    "flushing_explains",
    "ieee_extremum_explains",
    "near",
    "off_answer",
    "only_zero_signs",
]
