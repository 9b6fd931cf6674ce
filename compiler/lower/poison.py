"""Poison checks: the lowered module, with every operation whose result LLVM defines as poison
(or whose behaviour it leaves undefined) on some operands guarded by a check of those operands
that writes what it found to stderr and aborts.

Why: a wrong answer that a generic x86-64 CPU does not give, or that only LLVM's optimizations
give, looks like LLVM's bug, but is ours (or an MLIR pass's) when the IR computes poison: an
``fptoui`` of a negative float is poison, which one CPU's instruction turns into the right
integer and another's into 0xFFFFFFFF. The triage variants ``NAME+poison-checks`` (and
``NAME[:stage]+poison-checks``, to find the stage that brings it) run this last, at -O0.

Guarded: float -> integer conversions out of range or NaN (``fptosi``/``fptoui``), shifts by the
width or more, integer division or remainder by zero (and signed, of the least value by -1),
additions, subtractions, multiplications and shifts left that wrap past their ``nsw``/``nuw``
flags (which MLIR's index lowerings set, and which LLVM's -O3 takes at their word), and the other
poison-generating flags broken: ``exact`` shifts right and divisions that lose bits,
``zext``/``uitofp nneg`` of a negative, ``trunc`` with ``nsw``/``nuw`` that loses bits,
``or disjoint`` of operands sharing a bit.
"""

from __future__ import annotations

import re
from typing import Any

#: What a check prints before it aborts; the triage looks for it in the crashed worker's stderr.
MARKER = "poison-check:"

_NAME = r"%[\w.$#-]+"
_CONVERT = re.compile(
    rf"^(?P<indent>\s*)(?P<result>{_NAME}) = llvm\.(?P<op>fptosi|fptoui) (?P<x>{_NAME}) : "
    r"(?P<src>\S+) to (?P<dst>\S+)\s*$"
)
_INTEGER = re.compile(
    rf"^(?P<indent>\s*)(?P<result>{_NAME}) = llvm\.(?P<op>shl|lshr|ashr|sdiv|udiv|srem|urem)"
    rf"(?P<exact> exact)? (?P<a>{_NAME}), (?P<b>{_NAME})(?: overflow<(?P<flags>[^>]*)>)? : "
    r"(?P<type>\S+)\s*$"
)
#: Casts and ors whose flags make them poison: ``zext nneg``/``uitofp nneg`` of a negative,
#: ``trunc overflow<nsw|nuw>`` that loses bits, ``or disjoint`` of operands sharing a bit.
_FLAGGED = re.compile(
    rf"^(?P<indent>\s*)(?P<result>{_NAME}) = llvm\.(?:(?P<cast>zext|uitofp) nneg (?P<x>{_NAME}) "
    rf"|(?P<trunc>trunc) (?P<t>{_NAME}) overflow<(?P<flags>[^>]*)> "
    rf"|(?P<or>or) disjoint (?P<a>{_NAME}), (?P<b>{_NAME}) ): (?P<type>\S+)"
    r"(?: to (?P<dst>\S+))?\s*$"
)
_WRAPPING = re.compile(
    rf"^(?P<indent>\s*)(?P<result>{_NAME}) = llvm\.(?P<op>add|sub|mul) (?P<a>{_NAME}), "
    rf"(?P<b>{_NAME}) overflow<(?P<flags>[^>]*)> : (?P<type>\S+)\s*$"
)
_VECTOR = re.compile(r"^vector<(\d+)x(\w+)>$")

#: (significand bits with the implicit one, largest exponent) of the float element types.
_FORMATS = {"f16": (11, 15), "bf16": (8, 127), "f32": (24, 127), "f64": (53, 1023)}


def _element(type_: str) -> tuple[str, int | None]:
    """``vector<8xf32>`` -> ("f32", 8); ``f32`` -> ("f32", None)."""
    match = _VECTOR.match(type_)
    return (match.group(2), int(match.group(1))) if match else (type_, None)


def _largest(element: str) -> float:
    bits, emax = _FORMATS[element]
    return (2.0 - 2.0 ** (1 - bits)) * 2.0**emax


def _round(value: int, element: str, up: bool) -> float:
    """The integer ``value`` rounded to the float format ``element`` toward +inf (``up``) or
    -inf, as a Python float (exact); beyond the format's largest value, +-inf."""
    bits, _ = _FORMATS[element]
    magnitude = abs(value)
    drop = max(0, magnitude.bit_length() - bits)
    kept = magnitude >> drop << drop
    away = kept != magnitude and (up == (value > 0))  # round the magnitude up
    if away:
        kept += 1 << drop
    result = float(kept) if value >= 0 else -float(kept)
    if abs(result) > _largest(element):
        return float("inf") if result > 0 else float("-inf")
    return result


class _Writer:
    """Fresh SSA names and the lines of the checks at one operation."""

    def __init__(self, counter: list[int], indent: str) -> None:
        self.counter, self.indent, self.lines = counter, indent, []

    def emit(self, text: str) -> str:
        self.counter[0] += 1
        name = f"%poison_check_{self.counter[0]}"
        self.lines.append(f"{self.indent}{name} = {text}")
        return name

    def constant(self, literal: str, element: str, lanes: int | None) -> str:
        if lanes is None:
            return self.emit(f"llvm.mlir.constant({literal} : {element}) : {element}")
        vector = f"vector<{lanes}x{element}>"
        return self.emit(f"llvm.mlir.constant(dense<{literal}> : {vector}) : {vector}")

    def any_lane(self, flags: str, lanes: int | None) -> str:
        """An i1 that is true if ``flags`` (i1, or a vector of i1) is true in any lane."""
        if lanes is None:
            return flags
        return self.emit(f'"llvm.intr.vector.reduce.or"({flags}) : (vector<{lanes}xi1>) -> i1')

    def either(self, bad: str | None, more: str, lanes: int | None) -> str:
        """``bad or more`` (i1, or vectors of i1); ``more`` where there is no ``bad`` yet."""
        return more if bad is None else self.emit(f"llvm.or {bad}, {more} : {_bool(lanes)}")

    def lost(self, value: str, type_: str, narrow: str, extend: str) -> str:
        """An i1 (per lane) true where ``value`` of ``type_`` does not survive the round trip
        through the narrower ``narrow`` (``llvm.trunc``, then ``extend``: sext or zext)."""
        short = self.emit(f"llvm.trunc {value} : {type_} to {narrow}")
        back = self.emit(f"llvm.{extend} {short} : {narrow} to {type_}")
        return self.emit(f'llvm.icmp "ne" {back}, {value} : {type_}')

    def call(self, check: str, bad: str) -> None:
        self.lines.append(f"{self.indent}llvm.call @{check}({bad}) : (i1) -> ()")


def _conversion(w: _Writer, op: str, x: str, src: str, dst: str) -> str | None:
    """The i1 that is true where ``op`` (fptosi/fptoui) of ``x`` is poison: NaN, or a value whose
    integer part ``dst`` does not hold."""
    element, lanes = _element(src)
    target, _ = _element(dst)
    if element not in _FORMATS or not target.startswith("i"):
        return None
    width = int(target[1:])
    low, high = (-1, 2**width) if op == "fptoui" else (-(2 ** (width - 1)) - 1, 2 ** (width - 1))
    # In range: x > low and x < high, each bound rounded outward to the format (exactly the same
    # test: no value of the format lies between the bound and its rounding); an infinite bound
    # is the largest finite value, compared inclusively (NaN fails every ordered compare).
    checks = []
    for bound, strict, direction in ((low, "ogt", False), (high, "olt", True)):
        value = _round(bound, element, up=direction)
        predicate = strict
        if value in (float("inf"), float("-inf")):
            value = _largest(element) if value > 0 else -_largest(element)
            predicate = "ole" if direction else "oge"
        constant = w.constant(repr(value), element, lanes)
        checks.append(w.emit(f'llvm.fcmp "{predicate}" {x}, {constant} : {src}'))
    inside = w.emit(f"llvm.and {checks[0]}, {checks[1]} : {_bool(lanes)}")
    true = w.constant("1" if lanes is None else "true", "i1", lanes)
    outside = w.emit(f"llvm.xor {inside}, {true} : {_bool(lanes)}")
    return w.any_lane(outside, lanes)


def _integer(
    w: _Writer, op: str, a: str, b: str, type_: str, exact: bool = False, flags: str = ""
) -> str | None:
    """The i1 that is true where ``op`` of ``a`` and ``b`` is poison or undefined: a shift by
    the width or more, a division by zero (signed: of the least value by -1), and what its
    flags promise broken (``exact``: bits shifted out or a remainder; a shift left's
    ``nsw``/``nuw``: bits lost). The flags are tested on a safe divisor or shift (1, 0), so
    the check computes no poison of its own."""
    element, lanes = _element(type_)
    if not re.fullmatch(r"i\d+", element):
        return None
    width = int(element[1:])
    kind = _bool(lanes)
    zero = w.constant("0", element, lanes)
    if op in ("shl", "lshr", "ashr"):
        limit = w.constant(str(width), element, lanes)
        bad = w.emit(f'llvm.icmp "uge" {b}, {limit} : {type_}')
        # What shifts the result back to the operand if the flags hold: a shift left's nuw
        # (logically) and nsw (arithmetically) right; an exact shift right's, left.
        if op == "shl":
            backs = [back for flag, back in (("nuw", "lshr"), ("nsw", "ashr")) if flag in flags]
        else:
            backs = ["shl"] if exact else []
        if backs:
            safe = w.emit(f"llvm.select {bad}, {zero}, {b} : {kind}, {type_}")
            moved = w.emit(f"llvm.{op} {a}, {safe} : {type_}")
        for back in backs:
            returned = w.emit(f"llvm.{back} {moved}, {safe} : {type_}")
            lost = w.emit(f'llvm.icmp "ne" {returned}, {a} : {type_}')
            bad = w.either(bad, lost, lanes)
        return w.any_lane(bad, lanes)
    bad = w.emit(f'llvm.icmp "eq" {b}, {zero} : {type_}')
    if op in ("sdiv", "srem"):
        least = w.constant(str(-(2 ** (width - 1))), element, lanes)
        minus_one = w.constant("-1", element, lanes)
        is_least = w.emit(f'llvm.icmp "eq" {a}, {least} : {type_}')
        is_minus_one = w.emit(f'llvm.icmp "eq" {b}, {minus_one} : {type_}')
        overflow = w.emit(f"llvm.and {is_least}, {is_minus_one} : {kind}")
        bad = w.emit(f"llvm.or {bad}, {overflow} : {kind}")
    if exact and op in ("sdiv", "udiv"):
        one = w.constant("1", element, lanes)
        safe = w.emit(f"llvm.select {bad}, {one}, {b} : {kind}, {type_}")
        remainder = w.emit(f"llvm.{'srem' if op == 'sdiv' else 'urem'} {a}, {safe} : {type_}")
        inexact = w.emit(f'llvm.icmp "ne" {remainder}, {zero} : {type_}')
        bad = w.emit(f"llvm.or {bad}, {inexact} : {kind}")
    return w.any_lane(bad, lanes)


def _flagged(w: _Writer, g: dict[str, Any]) -> str | None:
    """The i1 that is true where a ``_FLAGGED`` operation's flag is broken."""
    type_ = g["type"]
    element, lanes = _element(type_)
    if not re.fullmatch(r"i\d+", element):
        return None
    if g["cast"]:
        zero = w.constant("0", element, lanes)
        return w.any_lane(w.emit(f'llvm.icmp "slt" {g["x"]}, {zero} : {type_}'), lanes)
    if g["or"]:
        both = w.emit(f"llvm.and {g['a']}, {g['b']} : {type_}")
        zero = w.constant("0", element, lanes)
        return w.any_lane(w.emit(f'llvm.icmp "ne" {both}, {zero} : {type_}'), lanes)
    bad = None
    for flag, extend in (("nsw", "sext"), ("nuw", "zext")):
        if flag in g["flags"]:
            bad = w.either(bad, w.lost(g["t"], type_, g["dst"], extend), lanes)
    return None if bad is None else w.any_lane(bad, lanes)


def _wrapping(w: _Writer, op: str, a: str, b: str, type_: str, flags: str) -> str | None:
    """The i1 that is true where ``op`` of ``a`` and ``b`` wraps past what its ``nsw`` (signed)
    or ``nuw`` (unsigned) flag promises: computed at twice the width, the result does not
    survive the round trip through the narrow one."""
    element, lanes = _element(type_)
    if not re.fullmatch(r"i\d+", element):
        return None
    wide_element = f"i{2 * int(element[1:])}"
    wide = wide_element if lanes is None else f"vector<{lanes}x{wide_element}>"
    bad = None
    for flag, extend in (("nsw", "sext"), ("nuw", "zext")):
        if flag not in flags:
            continue
        wa = w.emit(f"llvm.{extend} {a} : {type_} to {wide}")
        wb = w.emit(f"llvm.{extend} {b} : {type_} to {wide}")
        exact = w.emit(f"llvm.{op} {wa}, {wb} : {wide}")
        bad = w.either(bad, w.lost(exact, wide, type_, extend), lanes)
    return None if bad is None else w.any_lane(bad, lanes)


def _bool(lanes: int | None) -> str:
    return "i1" if lanes is None else f"vector<{lanes}xi1>"


def _checker(name: str, message: str) -> list[str]:
    """An ``llvm.func @name(i1)`` that writes ``message`` to stderr and aborts if its argument
    is true (its global: ``@name_message``)."""
    data = (MARKER + " " + message + "\n").encode()
    escaped = "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\{c:02X}" for c in data)
    return [
        f'  llvm.mlir.global private constant @{name}_message("{escaped}")'
        f" {{addr_space = 0 : i32}} : !llvm.array<{len(data)} x i8>",
        f"  llvm.func @{name}(%bad: i1) {{",
        "    llvm.cond_br %bad, ^fail, ^fine",
        "  ^fail:",
        f"    %text = llvm.mlir.addressof @{name}_message : !llvm.ptr",
        "    %fd = llvm.mlir.constant(2 : i32) : i32",
        f"    %length = llvm.mlir.constant({len(data)} : i64) : i64",
        "    %written = llvm.call @write(%fd, %text, %length) : (i32, !llvm.ptr, i64) -> i64",
        "    llvm.call @abort() : () -> ()",
        "    llvm.unreachable",
        "  ^fine:",
        "    llvm.return",
        "  }",
    ]


def guarded_text(text: str) -> tuple[str, int]:
    """``text`` (a lowered module: LLVM dialect, as printed) with a check before every guarded
    operation, and how many it guards. Each site has its own checker function, whose message
    names the operation, its types and its place (the line in ``text``)."""
    counter = [0]
    out: list[str] = []
    checkers: list[str] = []
    sites = 0
    for number, line in enumerate(text.splitlines(), 1):
        conversion, integer = _CONVERT.match(line), _INTEGER.match(line)
        wrapping, flagged = _WRAPPING.match(line), _FLAGGED.match(line)
        match = conversion or integer or wrapping or flagged
        if match is None:
            out.append(line)
            continue
        w = _Writer(counter, match.group("indent"))
        if flagged:
            g = flagged.groupdict()
            bad = _flagged(w, g)
            what = f"llvm.{g['cast'] or g['trunc'] or g['or']} ({g['type']}) breaks its flags"
        elif wrapping:
            g = wrapping.groupdict()
            bad = _wrapping(w, g["op"], g["a"], g["b"], g["type"], g["flags"])
            what = f"llvm.{g['op']} ({g['type']}) wraps past its overflow<{g['flags']}> flags"
        elif conversion:
            g = conversion.groupdict()
            bad = _conversion(w, g["op"], g["x"], g["src"], g["dst"])
            what = f"llvm.{g['op']} {g['src']} to {g['dst']} of a NaN or of a value out of range"
        else:
            g = integer.groupdict()
            bad = _integer(
                w, g["op"], g["a"], g["b"], g["type"], bool(g["exact"]), g["flags"] or ""
            )
            shift = g["op"] in ("shl", "lshr", "ashr")
            what = f"llvm.{g['op']} ({g['type']}) " + (
                "by the width or more" if shift else "by zero, or of the least value by -1"
            )
            if g["exact"] or g["flags"]:
                what += ", or breaking its flags"
        if bad is None:
            out.append(line)
            continue
        sites += 1
        name = f"__poison_check_{sites}"
        w.call(name, bad)
        out.extend(w.lines)
        out.append(line)
        checkers += _checker(name, f"{what}, at line {number}: {line.strip()}")
    if not sites:
        return text, 0
    declared = "\n".join(out)
    extern = []
    if not re.search(r"llvm\.func @write\(", declared):
        extern.append("  llvm.func @write(i32, !llvm.ptr, i64) -> i64")
    if not re.search(r"llvm\.func @abort\(", declared):
        extern.append("  llvm.func @abort()")
    # The module's last line closes it: the checkers go just before.
    last = max(i for i, line in enumerate(out) if line.strip() == "}")
    return "\n".join(out[:last] + extern + checkers + out[last:]) + "\n", sites


def guard(module: Any) -> None:
    """The poison-checks stage: ``module`` (lowered, LLVM dialect) replaced in place by its
    ``guarded_text``."""
    from mlir import ir

    text, sites = guarded_text(str(module))
    if not sites:
        return
    guarded = ir.Module.parse(text, module.context)
    for op in list(module.body.operations):
        op.operation.erase()
    for op in list(guarded.body.operations):
        module.body.append(op)


guard.source = "compiler/lower/poison.py"  # type: ignore[attr-defined]
