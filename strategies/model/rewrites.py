"""Rewrites for minimizers: an earlier output, a bypassed equation, dead code and unused inputs
removed. Every result is re-checked, so a rewrite that breaks the typing raises."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .program import REJECTIONS, rebuild
from .types import Arg, RawEquation, Ref

if TYPE_CHECKING:
    from .program import Program


def rewrite(program: Program, replacements: Mapping[int, Ref], output: Ref) -> Program:
    """``program`` with uses of equation i reading ``replacements[i]``, computing ``output``,
    without the equations that output no longer needs."""
    return rewrite_keeping(program, replacements, output)[0]


def rewrite_keeping(
    program: Program, replacements: Mapping[int, Ref], output: Ref, keep: Sequence[Arg] = ()
) -> tuple[Program, Callable[[Arg], Arg]]:
    """``rewrite``, also keeping alive what ``keep`` refers to; returns the new program and the
    map from old references to new ones (for an invalid program's unchecked equation)."""

    def resolve(ref: Arg) -> Arg:
        seen = 0
        while isinstance(ref, Ref) and ref.kind == "node" and ref.index in replacements:
            ref = replacements[ref.index]
            seen += 1
            if seen > len(program.nodes):
                raise ValueError("cyclic node replacement")
        return ref

    live: set[int] = set()
    stack = [resolve(output), *(resolve(k) for k in keep)]
    while stack:
        ref = stack.pop()
        if isinstance(ref, Ref) and ref.kind == "node" and ref.index not in live:
            if not 0 <= ref.index < len(program.nodes):
                raise ValueError(f"no node {ref.index}")
            live.add(ref.index)
            stack.extend(resolve(a) for a in program.nodes[ref.index].args)
    order = sorted(live)
    renumber = {old: new for new, old in enumerate(order)}

    def remap(ref: Arg) -> Arg:
        ref = resolve(ref)
        if isinstance(ref, Ref) and ref.kind == "node":
            return Ref("node", renumber[ref.index])
        return ref

    specs = [
        (
            program.nodes[i].op,
            tuple(remap(a) for a in program.nodes[i].args),
            program.nodes[i].attrs,
        )
        for i in order
    ]
    for (_, args, _), i in zip(specs, order, strict=True):
        for a in args:
            if isinstance(a, Ref) and a.kind == "node" and order[a.index] >= i:
                raise ValueError("a replacement must refer to an earlier node or an input")
    new_output = remap(output)
    assert isinstance(new_output, Ref)
    return rebuild(program.inputs, specs, new_output), remap


def replace_node(program: Program, index: int, ref: Ref) -> Program:
    if not 0 <= index < len(program.nodes):
        raise ValueError(f"no node {index}")
    if ref.kind == "node" and ref.index >= index:
        raise ValueError("a replacement must refer to an earlier node or an input")
    return rewrite(program, {index: ref}, program.output)


def without_node(program: Program, index: int) -> Program:
    node = program.nodes[index]
    candidates = [a for a in node.args if isinstance(a, Ref)]
    candidates.sort(key=lambda a: program.type_of(a) != node.type)
    errors = []
    for ref in candidates:
        try:
            return replace_node(program, index, ref)
        except REJECTIONS as error:
            errors.append(str(error))
    raise ValueError(f"node {index} ({node.op}) cannot be bypassed: {errors or 'no arguments'}")


def drop_unused_inputs(
    program: Program, also_used: Sequence[int] = ()
) -> tuple[Program, tuple[int, ...]]:
    kept = tuple(sorted(set(program.used_inputs()) | set(also_used)))
    renumber = {old: new for new, old in enumerate(kept)}

    def remap(ref: Arg) -> Arg:
        if isinstance(ref, Ref) and ref.kind == "input":
            return Ref("input", renumber[ref.index])
        return ref

    specs = [(n.op, tuple(remap(a) for a in n.args), n.attrs) for n in program.nodes]
    output = remap(program.output)
    assert isinstance(output, Ref)
    return rebuild(tuple(program.inputs[i] for i in kept), specs, output), kept


# --------------------------------------------------------------------------------------------
# The same rewrites on either kind of subject (an invalid program keeps its violation)


def _input_remap(kept: Sequence[int]) -> Callable[[Arg], Arg]:
    renumber = {old: new for new, old in enumerate(kept)}

    def remap(ref: Arg) -> Arg:
        if isinstance(ref, Ref) and ref.kind == "input":
            return Ref("input", renumber[ref.index])
        return ref

    return remap


def rewrite_subject(
    subject: Any, replacements: Mapping[int, Ref], output: Ref | None = None
) -> Any:
    """``rewrite`` of a Program, or of an InvalidProgram's valid part with its unchecked
    equation following the rewrite (so the violation survives)."""
    from .invalid import InvalidProgram

    if not isinstance(subject, InvalidProgram):
        return rewrite(subject, replacements, subject.output if output is None else output)
    program, node = subject.program, subject.node
    keep = [a for a in node.args if isinstance(a, Ref)] if node is not None else []
    new, remap = rewrite_keeping(
        program, replacements, program.output if output is None else output, keep
    )
    new_node = None
    if node is not None:
        new_node = RawEquation(node.op, tuple(remap(a) for a in node.args), node.attrs)
    return InvalidProgram(new, subject.violation, new_node, subject.inputs)


def drop_unused_subject_inputs(subject: Any) -> tuple[Any, tuple[int, ...]]:
    """``drop_unused_inputs`` of either kind of subject; (subject, original indices kept)."""
    from .invalid import InvalidProgram

    if not isinstance(subject, InvalidProgram):
        return drop_unused_inputs(subject)
    node = subject.node
    used = [
        a.index for a in (node.args if node else ()) if isinstance(a, Ref) and a.kind == "input"
    ]
    program, kept = drop_unused_inputs(subject.program, used)
    remap = _input_remap(kept)
    new_node = None
    if node is not None:
        new_node = RawEquation(node.op, tuple(remap(a) for a in node.args), node.attrs)
    inputs = tuple(subject.inputs[i] for i in kept)
    return InvalidProgram(program, subject.violation, new_node, inputs), kept


__all__ = [
    "drop_unused_inputs",
    "drop_unused_subject_inputs",
    "replace_node",
    "rewrite",
    "rewrite_keeping",
    "rewrite_subject",
    "without_node",
]
