"""Printing programs: a readable listing, and standalone Python reproducers.

A reproducer defines the program as a plain function written against the array namespace of its
first input (so NumPy, ``jax.numpy`` and the compiler's traced namespace all run it), against
NumPy's own functions (the "numpy" spelling: traced tensors dispatch them) or with the array's
methods (the "methods" spelling), sets its
inputs (exact values, or a seeded generator), evaluates it with NumPy and, optionally, through the
compiler. How the compiler's answer is *judged* is the caller's ``footer``: the harness prints its
own error model there, so a reproducer fails exactly when the oracle does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from compiler import primitives

from .codec import FORMAT_VERSION
from .types import Input, RawEquation, Ref

if TYPE_CHECKING:
    from .program import Program


def render(op: str, args: Sequence[str], attrs: Any, spelling: str = "array-api") -> str:
    """One equation's right-hand side in ``spelling`` (what evaluation runs, too)."""
    return primitives.PRIMITIVES[op].spelled(spelling)[1]([str(a) for a in args], attrs)


#: The namespace's constants (``xp.pi``), by their value: a weak Python float of that value is
#: written so in the "array-api" spelling, where the compiler's traced namespace supplies it (a
#: ``pi`` made a strong float64 there, promoting ``x * xp.pi`` of a float32 to float64, went
#: unseen: no program wrote it; the "methods" and "numpy" spellings keep the literal).
NAMESPACE_CONSTANTS = {math.pi: "pi", math.e: "e"}


def namespace_constant(arg: Any, spelling: str) -> str | None:
    """The namespace's name for ``arg`` (``NAMESPACE_CONSTANTS``) where ``spelling`` writes it
    so, else None; evaluation (``evaluate.function``) takes it from the namespace too."""
    value, dtype = getattr(arg, "value", None), getattr(arg, "dtype", "")
    if spelling == "array-api" and dtype is None and isinstance(value, float):
        return NAMESPACE_CONSTANTS.get(value)
    return None


def argument_source(arg: Any, spelling: str = "array-api") -> str:
    """``arg`` (a ``Ref`` or a ``Const``) as an equation writes it in ``spelling``."""
    name = namespace_constant(arg, spelling)
    return str(arg) if name is None else f"xp.{name}"


def describe(program: Program) -> str:
    """One line per input and equation, with types."""
    lines = [f"program {program.digest()[:12]}"]
    for i, inp in enumerate(program.inputs):
        bound = "" if inp.bound is None else f" in [0, {inp.bound})"
        lines.append(f"  x{i}: {inp.type}{bound}")
    for i, node in enumerate(program.nodes):
        lines.append(f"  v{i} = {render(node.op, node.args, node.attrs)}  # {node.type}")
    lines.append(f"  return {program.output}")
    return "\n".join(lines)


def literal(array: np.ndarray) -> str:
    """Exact Python source for ``array``'s values (NaN and infinities spelled via NumPy; an
    array holding a NaN of other bits than ``np.nan``'s, a negative or signaling one, as its
    bits viewed in its dtype: ``np.nan`` would not reproduce a conversion that loses them)."""
    array = np.asarray(array)
    if array.dtype.kind in "fV" and _other_nans(array):
        width = array.dtype.itemsize * 8
        bits = array.view(f"u{array.dtype.itemsize}").tolist()
        source = primitives.dtype_source(array.dtype)
        return f"np.array({bits!r}, dtype=np.uint{width}).view({source})"

    def one(x: Any) -> str:
        if isinstance(x, list):
            return "[" + ", ".join(one(v) for v in x) + "]"
        if isinstance(x, float):
            if math.isnan(x):
                return "np.nan"
            if math.isinf(x):
                return "np.inf" if x > 0 else "-np.inf"
        return repr(x)

    return f"np.array({one(array.tolist())}, dtype={primitives.dtype_source(array.dtype)})"


def _other_nans(array: np.ndarray) -> bool:
    """Does ``array`` (of a float dtype) hold a NaN whose bits are not ``np.nan``'s in it?"""
    try:
        with np.errstate(invalid="ignore"):
            nans = np.isnan(array)
    except TypeError:
        return False
    if not nans.any():
        return False
    unsigned = f"u{array.dtype.itemsize}"
    canonical = np.array(np.nan, array.dtype).view(unsigned)
    return bool((array.view(unsigned)[nans] != canonical).any())


def function_source(
    program: Program,
    extra: RawEquation | None = None,
    spelling: str = "array-api",
    *,
    returns: Sequence[Ref] | None = None,
    name: str = "program",
) -> list[str]:
    """``def program(x0, ...)``: the program as a function, written in ``spelling`` over its
    inputs' namespace ("array-api", "methods") or NumPy's module ("numpy"); ``returns``: it
    returns these values instead of the output (as ``evaluate.function`` does), as ``name``."""
    names = [f"x{i}" for i in range(len(program.inputs))]
    body: list[str] = []
    nodes = program.nodes
    if returns is not None:  # the equations after the last one returned are not needed
        nodes = nodes[: 1 + max((r.index for r in returns if r.kind == "node"), default=-1)]
    for i, node in enumerate(nodes):
        args = [argument_source(a, spelling) for a in node.args]
        body.append(f"    v{i} = {render(node.op, args, node.attrs, spelling)}  # {node.type}")
    if extra is not None:
        body.append(f"    return {render(extra.op, extra.args, extra.attrs, spelling)}  # invalid")
    elif returns is not None:
        body.append(f"    return {', '.join(str(r) for r in returns)}{',' * (len(returns) == 1)}")
    else:
        body.append(f"    return {program.output}")
    uses_xp = any("xp." in line or ", xp)" in line for line in body)
    lines = [f"def {name}({', '.join(names)}):"]
    if uses_xp and spelling == "numpy":
        lines.append("    xp = np  # NumPy's functions: traced tensors dispatch them")
    elif uses_xp:
        lines.append(f"    xp = {names[0]}.__array_namespace__()" if names else "    xp = np")
    return lines + body


def inputs_source(
    inputs: Sequence[Input], values: Sequence[np.ndarray] | None, seed: int
) -> list[str]:
    lines = [] if values is not None else [f"rng = np.random.default_rng({seed})"]
    for i, inp in enumerate(inputs):
        name, dtype = f"x{i}", primitives.dtype_source(inp.dtype)
        if values is not None:
            lines.append(f"{name} = {literal(np.asarray(values[i]))}")
        elif inp.bound is not None:
            lines.append(f"{name} = rng.integers(0, {inp.bound}, {inp.shape}).astype({dtype})")
        elif np.dtype(inp.dtype).kind in "iu":
            lines.append(f"{name} = rng.integers(-8, 9, {inp.shape}).astype({dtype})")
        else:
            lines.append(f"{name} = rng.standard_normal({inp.shape}).astype({dtype})")
    return lines


def python_source(
    program: Program,
    values: Sequence[np.ndarray] | None = None,
    *,
    check_compiler: bool = True,
    target: str | None = None,
    seed: int = 0,
    extra: RawEquation | None = None,
    inputs: Sequence[Input] | None = None,
    header: str | None = None,
    rejects: Sequence[type[BaseException]] | None = None,
    footer: Sequence[str] | None = None,
    input_lines: Sequence[str] | None = None,
    spelling: str = "array-api",
    guarded: bool = False,
) -> str:
    """Reproducer source.

    ``values`` are embedded exactly (else a seeded generator makes inputs); ``check_compiler``
    also runs ``compiler.jit`` (on ``target``); ``footer`` replaces the default comparison (the
    default checks shape and dtype and prints the largest difference: judging values is the
    harness's job); ``input_lines`` replace the input definitions. ``rejects`` set: the program
    is invalid (``extra`` is its unchecked last equation, ``inputs`` its possibly mistyped
    inputs) and the compiler must raise one of those. ``spelling`` is how the program is written
    (``primitives.SPELLINGS``), as the case ran it. ``guarded``: NumPy and the compiler may
    each raise; the compiler's exception (or None) is left in ``raised`` for the footer.
    """
    inputs = program.inputs if inputs is None else inputs
    names = ", ".join(f"x{i}" for i in range(len(inputs)))
    function = function_source(program, extra, spelling)
    uses_ops = any("ops." in line for line in function)
    title = header or f"Reproducer for program {program.digest()[:12]}"
    lines = [f'"""{title} (format v{FORMAT_VERSION})."""', "import numpy as np", ""]
    if check_compiler:
        lines.append("import compiler")
    if uses_ops:
        lines.append("from compiler import ops")
    lines += ["", "", *function, "", ""]
    lines += list(input_lines) if input_lines is not None else inputs_source(inputs, values, seed)
    lines.append("")
    if any("ml_dtypes." in line for line in lines):
        lines.insert(2, "import ml_dtypes  # bfloat16")
    # On a target, compiled for the arguments and then called on them, as the fuzzer's worker
    # calls it: a specialization that took 1 array where 2 were passed failed there, while
    # ``jit(program)(x0, x1)`` passed (a frontend that took NumPy scalars for static values).
    call = (
        f"compiler.jit(program).compile({names}, target={target!r})({names})"
        if target
        else f"compiler.jit(program)({names})"
    )
    if rejects is not None:
        lines += [
            "numpy_error = None",
            "try:",
            "    with np.errstate(all='ignore'):",
            f"        result = program({names})",
            "    print('numpy accepted it:', np.asarray(result).dtype, np.shape(result))",
            "except (ValueError, TypeError, IndexError) as error:",
            "    numpy_error = error",
            "    print('numpy rejected it:', type(error).__name__, error)",
        ]
        if check_compiler:
            errors = ", ".join(e.__name__ for e in rejects) + ("," if len(rejects) == 1 else "")
            # The violation's errors, or NumPy's own (its standard classes: an AxisError is a
            # ValueError and an IndexError), as the error-path oracle judges it.
            lines += [
                f"accepted = ({errors})",
                "if numpy_error is not None:",
                "    standard = (ValueError, TypeError, IndexError, OverflowError)",
                "    accepted += tuple(c for c in standard if isinstance(numpy_error, c))",
                "try:",
                f"    {call}",
                "except accepted as error:",
                "    print('compiler rejected it:', type(error).__name__, error)",
                "else:",
                "    raise AssertionError('the compiler accepted an invalid program')",
            ]
        return "\n".join(lines) + "\n"
    if guarded and check_compiler:
        return (
            "\n".join(
                lines
                + [
                    "try:",
                    "    with np.errstate(all='ignore'):",
                    f"        expected = program({names})",
                    "    print('numpy:', np.asarray(expected).dtype, np.shape(expected))",
                    "except Exception as error:  # which path is right is the footer's to judge",
                    "    print('numpy raised:', type(error).__name__, error)",
                    "try:",
                    f"    actual = {call}",
                    "    raised = None",
                    "    print('compiler:', np.asarray(actual).dtype, np.shape(actual))",
                    "except Exception as error:",
                    "    raised = error",
                    "    print('compiler raised:', type(error).__name__, error)",
                    *(footer or []),
                ]
            )
            + "\n"
        )
    lines += ["with np.errstate(all='ignore'):", f"    expected = program({names})"]
    lines.append("print('numpy:', np.asarray(expected).dtype, np.shape(expected))")
    if check_compiler:
        lines += [
            f"actual = {call}",
            "print('compiler:', np.asarray(actual).dtype, np.shape(actual))",
        ]
        lines += (
            list(footer)
            if footer is not None
            else [
                "assert np.asarray(actual).dtype == np.asarray(expected).dtype",
                "assert np.shape(actual) == np.shape(expected)",
                "with np.errstate(all='ignore'):",
                "    difference = np.abs(np.asarray(actual, np.float64) - expected)",
                "print('largest difference:', np.nanmax(difference, initial=0.0))",
            ]
        )
    return "\n".join(lines) + "\n"


__all__ = ["describe", "function_source", "inputs_source", "literal", "python_source"]
