"""``expm1`` and ``log1p`` as libm calls: the ``libm`` stage of every CPU target.

Why: ``convert-math-to-llvm`` lowers ``math.expm1`` as ``exp(x) - 1`` and ``math.log1p`` as
``log(1 + x)`` (its ``approximate-log1p`` option is on by default), both of which cancel near
zero: ``expm1(1e-10)`` came out ``1.00000008e-10`` in float64, and float32 ``expm1(1e-7)`` 19%
off (MLIR 22.1.8; pinned in ``tests/upstream/test_mlir_22_1_8.py``). This stage replaces each
by a call of libm's function (``expm1``/``expm1f``, ``log1p``/``log1pf``), which is what a user
of ``np.expm1`` asks for; a vector (``cpu-vector`` vectorizes them) is called lane by lane, as
``convert-math-to-libm`` would, through a private helper whose ``vector.extract`` and
``vector.insert`` the lowering's ``convert-vector-to-llvm`` takes. The workaround
``expm1-log1p-libm``: turned off, the stage leaves the module as it is.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from . import operations

#: math op -> libm's function for (f32, f64)
FUNCTIONS = {"expm1": ("expm1f", "expm1"), "log1p": ("log1pf", "log1p")}
WORKAROUND = "expm1-log1p-libm"


def _callee(op: str, element: str) -> str:
    return FUNCTIONS[op][element == "f64"]


def _helper_name(op: str, shape: tuple[int, ...], element: str) -> str:
    return f"__libm_{op}_{'x'.join(map(str, shape))}x{element}"


def _helper(op: str, shape: tuple[int, ...], element: str) -> str:
    """A private function applying libm's ``op`` to every lane of a ``vector<shape x element>``;
    marked "no-builtins" as the kernels are (``libm-calls-kept``): its calls stay libm's."""
    from .. import workarounds

    vector = f"vector<{'x'.join(map(str, shape))}x{element}>"
    kept = ' attributes {passthrough = ["no-builtins"]}'
    kept = kept if workarounds.enabled("libm-calls-kept") else ""
    lines = [
        f"  func.func private @{_helper_name(op, shape, element)}(%v: {vector}) -> {vector}"
        f"{kept} {{",
        f"    %acc = arith.constant dense<0.0> : {vector}",
    ]
    accumulated = "%acc"
    for n, position in enumerate(itertools.product(*(range(d) for d in shape))):
        at = ", ".join(map(str, position))
        lines += [
            f"    %e{n} = vector.extract %v[{at}] : {element} from {vector}",
            f"    %r{n} = func.call @{_callee(op, element)}(%e{n}) : ({element}) -> {element}",
            f"    %a{n} = vector.insert %r{n}, {accumulated} [{at}] : {element} into {vector}",
        ]
        accumulated = f"%a{n}"
    lines += [f"    return {accumulated} : {vector}", "  }"]
    return "\n".join(lines) + "\n"


def _shape_and_element(type_text: str) -> tuple[tuple[int, ...], str] | None:
    """``f32`` -> ((), "f32"); ``vector<4x8xf64>`` -> ((4, 8), "f64"); anything else None."""
    if type_text in ("f32", "f64"):
        return (), type_text
    if type_text.startswith("vector<") and type_text.endswith(">"):
        *dims, element = type_text[len("vector<") : -1].split("x")
        if element in ("f32", "f64") and dims and all(d.isdigit() for d in dims):
            return tuple(int(d) for d in dims), element
    return None


def _symbols(module: Any) -> set[str]:
    """The names the module's top level defines (its functions, the libm declarations)."""
    return {
        str(op.operation.attributes["sym_name"]).strip('"')
        for op in module.body.operations
        if "sym_name" in op.operation.attributes
    }


def replace(module: Any) -> int:
    """Replace every f32/f64 (scalar or vector) ``math.expm1`` and ``math.log1p`` of ``module``
    by libm calls, in place; returns how many (none while the workaround is off)."""
    from mlir import ir

    from .. import workarounds

    if not workarounds.enabled(WORKAROUND):
        return 0
    found: list[tuple[Any, str, tuple[int, ...], str]] = []
    for op in operations(module):
        if op.name.startswith("math.") and op.name[5:] in FUNCTIONS:
            typed = _shape_and_element(str(op.results[0].type))
            if typed is not None:
                found.append((op, op.name[5:], *typed))
    if not found:
        return 0
    defined = _symbols(module)
    library: list[str] = []
    for op, name, shape, element in found:
        libm = _callee(name, element)
        callee = _helper_name(name, shape, element) if shape else libm
        if shape and callee not in defined:
            defined.add(callee)
            library.append(_helper(name, shape, element))
        if libm not in defined:
            defined.add(libm)
            library.append(
                f"  func.func private @{libm}({element}) -> {element} attributes "
                "{llvm.readnone}\n"
            )
        with ir.InsertionPoint(op), op.location:
            call = ir.Operation.create(
                "func.call",
                results=[op.results[0].type],
                operands=[op.operands[0]],
                attributes={"callee": ir.FlatSymbolRefAttr.get(callee)},
            )
        op.results[0].replace_all_uses_with(call.results[0])
        op.erase()
    if library:
        parsed = ir.Module.parse("module {\n" + "".join(library) + "}")
        for function in list(parsed.body.operations):
            module.body.append(function.operation)
    return len(found)


#: ``plain``'s own table, written apart from ``FUNCTIONS`` so that a mistake in one is not in both.
_PLAIN = {
    "math.expm1": {"f32": "expm1f", "f64": "expm1"},
    "math.log1p": {"f32": "log1pf", "f64": "log1p"},
}


def _plain_helper(name: str, callee: str, shape: tuple[int, ...], element: str) -> str:
    """``plain``'s vector helper: flattened by a shape_cast, lanes extracted from the 1-D
    vector, rebuilt by ``vector.from_elements`` (``_helper`` inserts lane by lane instead)."""
    count = math.prod(shape)
    vector = f"vector<{'x'.join(map(str, shape))}x{element}>"
    flat = f"vector<{count}x{element}>"
    body = [f"  func.func private @{name}(%v: {vector}) -> {vector} {{",
            f"    %flat = vector.shape_cast %v : {vector} to {flat}"]  # fmt: skip
    for i in range(count):
        body.append(f"    %x{i} = vector.extract %flat[{i}] : {element} from {flat}")
        body.append(f"    %y{i} = func.call @{callee}(%x{i}) : ({element}) -> {element}")
    lanes = ", ".join(f"%y{i}" for i in range(count))
    body += [f"    %built = vector.from_elements {lanes} : {flat}",
             f"    %out = vector.shape_cast %built : {flat} to {vector}",
             f"    return %out : {vector}", "  }"]  # fmt: skip
    return "\n".join(body) + "\n"


def plain(module: Any) -> None:
    """The ``+plain-libm`` triage variant's stage: f32/f64 ``math.expm1``/``math.log1p``
    become libm calls, a vector's through a helper built another way than ``replace``'s. A
    second way to complete a prefix, simple enough to trust: where the module fails completed
    by ``replace`` and passes completed by this, the stage is at fault, not the builder or the
    pass before (``harness.triage.attribution``)."""
    from mlir import ir

    found = []
    for op in operations(module):
        kind = str(op.results[0].type) if op.results else ""
        element = kind.rsplit("x", 1)[-1].rstrip(">") if kind.startswith("vector<") else kind
        if op.name in _PLAIN and element in ("f32", "f64"):
            dims = kind[len("vector<") : -1].split("x")[:-1] if kind != element else []
            shape = tuple(int(d) for d in dims)
            found.append((op, _PLAIN[op.name][element], element, shape))
    declared = _symbols(module)
    text = []
    for op, callee, element, shape in found:
        name = callee
        if shape:
            name = f"__plain_{callee}_{'x'.join(map(str, shape))}"
            if name not in declared:
                declared.add(name)
                text.append(_plain_helper(name, callee, shape, element))
        if callee not in declared:
            declared.add(callee)
            text.append(f"  func.func private @{callee}({element}) -> {element}\n")
        with ir.InsertionPoint(op), op.location:
            call = ir.Operation.create(
                "func.call", results=[op.results[0].type], operands=[op.operands[0]],
                attributes={"callee": ir.FlatSymbolRefAttr.get(name)},
            )  # fmt: skip
        op.results[0].replace_all_uses_with(call.results[0])
        op.erase()
    if text:
        parsed = ir.Module.parse("module {\n" + "".join(text) + "}")  # (alive while moved)
        for function in list(parsed.body.operations):
            module.body.append(function.operation)


__all__ = ["FUNCTIONS", "WORKAROUND", "plain", "replace"]
