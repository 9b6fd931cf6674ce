"""Smaller jit sequences, for minimizers: fewer calls, variants, static arguments or
equations, plainer argument trees, unaliased leaves, rounded values. Results are unchecked
(``validate`` them)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .program import REJECTIONS
from .rewrites import rewrite_keeping
from .sequence import OUTPUT, OWN, Call, JitSequence, positional
from .types import Ref


def keep(sequence: JitSequence, indices: Sequence[int]) -> JitSequence:
    """Only calls ``indices`` (in order): a fed-back output whose call is gone becomes its
    own array (NumPy's value), the captured values each kept call saw are kept."""
    indices = sorted(set(indices))
    outputs: list[Any] | None = None
    calls = []
    for position, index in enumerate(indices):
        call = sequence.calls[index]
        follows = position > 0 and indices[position - 1] == index - 1
        if OUTPUT in call.sources and not follows:
            outputs = sequence.numpy_outputs() if outputs is None else outputs
            value = outputs[index - 1]
            if value is None:
                raise ValueError("the fed-back output has no NumPy value")
            call = _materialize(call, OUTPUT, value)
        seen = sequence.captured_at(index)
        before = sequence.captured_at(indices[position - 1]) if position else None
        if sequence.captured and (position == 0 or seen is not before):
            call = replace(call, captured=seen)
        elif call.captured is not None and seen is before:
            call = replace(call, captured=None)
        calls.append(call)
    return sequence.with_calls(calls)


def _without_equations(sequence: JitSequence) -> Iterator[tuple[str, JitSequence]]:
    """The sequence with one of variant 0's equations bypassed by an operand of it in every
    variant (the equations then unread dropped), a static argument's equation kept: the calls
    alone left the template's program whole (``abs``, ``log`` and two products, where a cache
    that forgets the dtypes shows on one product)."""
    first = sequence.variants[0]
    kept = [Ref("node", h.node) for h in sequence.holes]
    for index, equation in enumerate(first.nodes):
        if Ref("node", index) in kept:
            continue
        for operand in equation.args:
            if not isinstance(operand, Ref):
                continue
            try:
                rewritten = [  # each variant extends variant 0's equations: renumbered alike
                    rewrite_keeping(v, {index: operand}, v.output, kept) for v in sequence.variants
                ]
                remap = rewritten[0][1]
                holes = tuple(
                    replace(h, node=remap(Ref("node", h.node)).index) for h in sequence.holes
                )
            except REJECTIONS:
                continue
            variants = tuple(program for program, _ in rewritten)
            smaller = JitSequence(variants, holes, sequence.captured, sequence.calls, sequence.view)
            yield f"without equation {index} ({equation.op})", smaller
            break


def simpler(sequence: JitSequence) -> Iterator[tuple[str, JitSequence]]:
    """Candidate simplifications, biggest first (unchecked: call ``validate``)."""
    n = len(sequence.calls)
    if n > 1:
        for i in range(n):
            yield f"only call {i}", sequence.keep([i])
        for i in range(n):
            for j in range(i + 1, n):
                if n > 2:
                    yield f"only calls {i} and {j}", sequence.keep([i, j])
        for i in range(n):
            if n > 3:
                yield f"without call {i}", sequence.keep([k for k in range(n) if k != i])
    used = {c.variant for c in sequence.calls}
    if len(sequence.variants) > 1 and max(used) < len(sequence.variants) - 1:
        yield "without an unused variant", JitSequence(
            sequence.variants[: max(used) + 1],
            sequence.holes,
            sequence.captured,
            sequence.calls,
            sequence.view,
        )
    passed = {name for c in sequence.calls for name, _ in c.statics}
    for name in sorted(passed):
        calls = [
            replace(c, statics=tuple(s for s in c.statics if s[0] != name)) for c in sequence.calls
        ]
        yield f"default {name} in every call", sequence.with_calls(calls)
    unused = [h for h in sequence.holes if h.name not in passed]
    if unused:
        holes = tuple(h for h in sequence.holes if h.name in passed)
        yield "without unused static arguments", JitSequence(
            sequence.variants, holes, sequence.captured, sequence.calls, sequence.view
        )
    yield from _without_equations(sequence)
    outputs: list[Any] | None = None
    for i, call in enumerate(sequence.calls):
        for j, source in enumerate(call.sources):
            if source == OUTPUT:
                outputs = sequence.numpy_outputs() if outputs is None else outputs
                if outputs[i - 1] is not None:
                    own = _materialize(call, OUTPUT, outputs[i - 1])
                    yield f"call {i}: own array for the fed-back output", _swap(sequence, i, own)
            elif source != OWN:
                sources = list(call.sources)
                arrays = list(call.arrays)
                sources[j] = OWN
                arrays[j] = np.array(sequence.leaves(i, None)[source], copy=True)
                own = replace(call, sources=tuple(sources), arrays=tuple(arrays))
                yield f"call {i}: leaf {j} not aliased", _swap(sequence, i, own)
        plain = positional(len(call.dtypes))
        if call.skeleton != plain:
            yield f"call {i}: positional arguments", _swap(
                sequence, i, replace(call, skeleton=plain)
            )
        for name, _ in call.statics:
            statics = tuple((k, v) for k, v in call.statics if k != name)
            yield f"call {i}: default {name}", _swap(sequence, i, replace(call, statics=statics))
        if i > 0 and call.captured is not None:
            yield f"call {i}: captured values unchanged", _swap(
                sequence, i, replace(call, captured=None)
            )
        if call.variant > 0:
            yield f"call {i}: variant 0", _swap(sequence, i, replace(call, variant=0))


def rounded(sequence: JitSequence) -> Iterator[tuple[str, JitSequence]]:
    """The same sequence with one call's float arrays rounded (values simplified)."""
    for i, call in enumerate(sequence.calls):
        for name, decimals in (("rounded", 0), ("rounded to 1 decimal", 1)):
            arrays = tuple(_round(a, decimals) for a in call.arrays)
            captured = _round(call.captured, decimals)
            if all(_same(a, b) for a, b in zip(arrays, call.arrays, strict=True)) and _same(
                captured, call.captured
            ):
                continue
            smaller = replace(call, arrays=arrays, captured=captured)
            yield f"call {i} {name}", _swap(sequence, i, smaller)


def _swap(sequence: JitSequence, index: int, call: Call) -> JitSequence:
    calls = list(sequence.calls)
    calls[index] = call
    return sequence.with_calls(calls)


def _materialize(call: Call, source: int, value: np.ndarray) -> Call:
    sources, arrays = list(call.sources), list(call.arrays)
    for j, s in enumerate(sources):
        if s == source:
            sources[j], arrays[j] = OWN, np.array(value, copy=True)
    return replace(call, sources=tuple(sources), arrays=tuple(arrays))


def _round(array: np.ndarray | None, decimals: int) -> np.ndarray | None:
    if array is None or array.dtype.kind != "f":
        return array
    with np.errstate(all="ignore"):
        return np.round(array, decimals).astype(array.dtype)


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is b
    return np.array_equal(a, b, equal_nan=True)
