"""Evaluation of a program over any array namespace (NumPy, ``jax.numpy``, the compiler's traced
namespace, an extended-precision NumPy): one definition, evaluated every way, through each
primitive's ``evaluate`` rule."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from compiler import primitives

from .printing import namespace_constant
from .types import Const, RawEquation, Ref


def namespace_of(x: Any) -> Any:
    """The array namespace of ``x`` (NumPy for plain arrays)."""
    if hasattr(x, "__array_namespace__"):
        return x.__array_namespace__()
    return np


def function(
    program: Any,
    namespace: Any = None,
    extra: RawEquation | None = None,
    overrides: dict[str, Callable[..., Any]] | None = None,
    spelling: str = "array-api",
    returns: Sequence[Ref] | None = None,
) -> Callable:
    """``fn(*inputs)`` evaluating ``program`` (then ``extra``, an unchecked equation whose result
    is returned instead of the output: how an invalid program is evaluated), written in
    ``spelling`` (``primitives.SPELLINGS``): its printed form, op by op. ``namespace`` binds
    ``xp`` (default: the inputs' own namespace, or NumPy's module in the "numpy" spelling, which
    is what the compiler traces). ``overrides`` give other evaluation rules for some ops
    (``rule(xp, args, attrs)``): independent references. ``returns``: a tuple of these inputs'
    and equations' values is returned instead (a function with several results)."""
    rules = {name: p.spelled(spelling)[0] for name, p in primitives.PRIMITIVES.items()}
    rules.update(overrides or {})
    if namespace is None and spelling == "numpy":
        namespace = np
    nodes = program.nodes
    n_inputs = len(program.inputs)
    output = program.output

    def fn(*args: Any) -> Any:
        if len(args) != n_inputs:
            raise TypeError(f"program takes {n_inputs} inputs, got {len(args)}")
        xp = namespace
        if xp is None:
            xp = namespace_of(args[0]) if args else np
        values: list[Any] = []

        def get(arg: Any) -> Any:
            if isinstance(arg, Const):
                name = namespace_constant(arg, spelling)
                return arg.py() if name is None else getattr(xp, name)
            return args[arg.index] if arg.kind == "input" else values[arg.index]

        for node in nodes:
            values.append(rules[node.op](xp, [get(a) for a in node.args], node.attrs))
        if extra is not None:
            return rules[extra.op](xp, [get(a) for a in extra.args], extra.attrs)
        if returns is not None:
            return tuple(get(ref) for ref in returns)
        return get(output)

    fn.__name__ = fn.__qualname__ = "program"
    return fn


__all__ = ["function", "namespace_of"]
