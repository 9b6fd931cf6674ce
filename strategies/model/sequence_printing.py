"""Printing a jit sequence as Python: the one function, its variants and each call's lines (the
harness wraps them into a reproducer)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from compiler import primitives

from .printing import render
from .program import Program
from .sequence import CAPTURED_VIEWS, OUTPUT, OWN, Hole, JitSequence
from .types import Ref


def source(
    sequence: JitSequence, array: Callable[[np.ndarray], str]
) -> tuple[list[str], list[list[str]]]:
    """Python source: the definitions (``skeleton``, ``leaves``, the variants, ``VARIANTS``,
    ``W``, ``f``) and, per call, the lines that make its arguments and call
    ``record(*args, **statics)`` (``record.last`` is the previous output). ``array(a)`` spells
    an array's exact values."""
    defaults = sequence.defaults()
    lines = list(_TREE_SOURCE)
    names = [f"x{i}" for i in range(sequence.passed)] + ["w", "v"][: sequence.captures]
    for v, program in enumerate(sequence.variants):
        lines += ["", ""] + _variant_source(v, program, sequence.holes, names, defaults)
    table = ", ".join(f"{text!r}: variant{v}" for text, v in sequence.dispatch().items())
    lines += ["", "", f"VARIANTS = {{{table}}}"]
    if sequence.captured:
        w = sequence.captured_input
        lines.append(
            f"W = np.zeros({w.shape}, dtype={_dtype_source(w.dtype)})  "
            "# captured: read at every call, changed in place between calls"
        )
    if sequence.view:
        made = CAPTURED_VIEWS[sequence.view][0]
        lines.append(f"V = {made}  # a view of W, captured too: it starts at W's address")
    captured = ", W, V" if sequence.view else ", W" if sequence.captured else ""
    lines += [
        "",
        "",
        "def f(*args, **statics):",
        f"    return VARIANTS[skeleton(args)](*leaves(args){captured}, **statics)",
    ]
    blocks = []
    for index, call in enumerate(sequence.calls):
        block = [f"# call {index}" + (f": {call.note}" if call.note else "")]
        if call.captured is not None:
            block.append(f"W[...] = {array(call.captured)}")
        names_j: list[str] = []
        for j, source in enumerate(call.sources):
            if source == OWN:
                name = f"a{index}_{j}"
                block.append(f"{name} = {array(call.arrays[j])}")
            elif source == OUTPUT:
                name = "record.last"
            else:
                name = names_j[source]
            names_j.append(name)
        it = iter(names_j)
        args = [_tree_source(node, it) for node in call.skeleton]
        args += [f"{k}={v!r}" for k, v in call.statics]
        block.append(f"record({', '.join(args)})")
        blocks.append(block)
    return lines, blocks


def uses(sequence: JitSequence, prefix: str) -> bool:
    """Does any variant's source use ``prefix`` (``ops.``, ``xp.``)?"""
    names = [f"x{i}" for i in range(len(sequence.variants[0].inputs))]
    return any(
        prefix in line
        for v, p in enumerate(sequence.variants)
        for line in _variant_source(v, p, sequence.holes, names, sequence.defaults())
    )


class _Name:
    """Prints as a bare name (a keyword of the function) where an attribute value would be."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


_TREE_SOURCE = [
    "def skeleton(tree):",
    '    """The argument tree with each array written \'*\': it picks the variant."""',
    "    if isinstance(tree, tuple):",
    '        inner = ", ".join(skeleton(t) for t in tree)',
    '        return f"({inner},)" if len(tree) == 1 else f"({inner})"',
    "    if isinstance(tree, list):",
    '        return "[" + ", ".join(skeleton(t) for t in tree) + "]"',
    "    if isinstance(tree, dict):",
    '        return "{" + ", ".join(f"{k!r}: {skeleton(tree[k])}" for k in sorted(tree)) + "}"',
    '    return "None" if tree is None else "*"',
    "",
    "",
    "def leaves(tree):",
    '    """The arrays of the tree in the order compiler.jit flattens it (dict keys sorted)."""',
    "    if isinstance(tree, (tuple, list)):",
    "        return [leaf for t in tree for leaf in leaves(t)]",
    "    if isinstance(tree, dict):",
    "        return [leaf for k in sorted(tree) for leaf in leaves(tree[k])]",
    "    return [] if tree is None else [tree]",
]


def _tree_source(node: Any, names: Iterator[str]) -> str:
    if isinstance(node, tuple):
        inner = ", ".join(_tree_source(n, names) for n in node)
        return f"({inner},)" if len(node) == 1 else f"({inner})"
    if isinstance(node, list):
        return "[" + ", ".join(_tree_source(n, names) for n in node) + "]"
    if isinstance(node, dict):  # names in sorted key order (jit's), written in the tree's order
        written = {k: _tree_source(node[k], names) for k in sorted(node)}
        return "{" + ", ".join(f"{k!r}: {written[k]}" for k in node) + "}"
    return "None" if node is None else next(names)


def _variant_source(
    v: int, program: Program, holes: Sequence[Hole], names: list[str], defaults: dict[str, Any]
) -> list[str]:
    body = []
    for index, node in enumerate(program.nodes):
        args = [
            names[a.index] if isinstance(a, Ref) and a.kind == "input" else str(a)
            for a in node.args
        ]
        attrs = dict(node.attrs)
        for hole in holes:
            if hole.node == index:
                if hole.attr:
                    attrs[hole.attr] = _Name(hole.name)
                else:
                    args[hole.arg] = hole.name
        body.append(f"    v{index} = {render(node.op, args, attrs)}  # {node.type}")
    out = program.output
    body.append(f"    return {names[out.index] if out.kind == 'input' else out}")
    keywords = "".join(f", {h.name}={defaults[h.name]!r}" for h in holes)
    head = [f"def variant{v}({', '.join(names)}{', *' if holes else ''}{keywords}):"]
    if any("xp." in line or ", xp)" in line for line in body):
        head.append(f"    xp = {names[0]}.__array_namespace__()")
    return head + body


def _dtype_source(name: str) -> str:
    """How a reproducer spells a dtype (the table's spelling where it has one)."""
    spell = getattr(primitives, "dtype_source", None)
    return spell(name) if spell is not None else f"np.{name}"
