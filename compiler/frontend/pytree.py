"""Argument trees: flatten (tuples, lists, dicts, NamedTuples, dataclasses) into array leaves and a
hashable structure that is part of a specialization's key; unflatten rebuilds the tree."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_array(value: Any) -> bool:
    return isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, (str, bytes))


def flatten(tree: Any, is_leaf: Callable[[Any], bool]) -> tuple[list[Any], Hashable]:
    """Leaves (for which ``is_leaf`` holds) in order, and a hashable description of the rest."""
    leaves: list[Any] = []

    def walk(node: Any) -> Hashable:
        if is_leaf(node):
            leaves.append(node)
            return ("*",)
        if _is_namedtuple(node):
            return ("namedtuple", type(node), tuple(walk(v) for v in node))
        if isinstance(node, (tuple, list)):
            return (type(node).__name__, tuple(walk(v) for v in node))
        if isinstance(node, dict):
            keys = sorted(node, key=repr)
            return ("dict", tuple(keys), tuple(walk(node[k]) for k in keys))
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            names = tuple(f.name for f in dataclasses.fields(node))
            return ("dataclass", type(node), names, tuple(walk(getattr(node, n)) for n in names))
        return ("static", _static(node))

    return leaves, walk(tree)


class _Static:
    """A static argument in a specialization key. Floats compare by bit pattern: -0.0 and 0.0
    are different programs, and a NaN must find its own specialization again."""

    __slots__ = ("value", "key")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.key = _static_key(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Static) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


def _static_key(value: Any) -> Hashable:
    if isinstance(value, (float, np.floating)):
        return (type(value), np.float64(value).tobytes())
    if isinstance(value, tuple):
        return (type(value), tuple(_static_key(v) for v in value))
    return (type(value), value)


def _static(value: Any) -> Hashable:
    try:
        hash(value)
    except TypeError as error:
        raise TypeError(
            f"static argument {value!r} of type {type(value).__name__} is not hashable; "
            "pass arrays as NumPy arrays and other arguments as hashable values"
        ) from error
    return (type(value), _Static(value))


def unflatten(structure: Hashable, leaves: list[Any]) -> Any:
    """Inverse of ``flatten``: rebuild the tree with ``leaves`` in place of its leaves."""
    it = iter(leaves)

    def build(node: Hashable) -> Any:
        kind = node[0]
        if kind == "*":
            return next(it)
        if kind == "static":
            return node[1][1].value
        if kind == "namedtuple":
            return node[1](*[build(c) for c in node[2]])
        if kind in ("tuple", "list"):
            items = [build(c) for c in node[1]]
            return tuple(items) if kind == "tuple" else items
        if kind == "dict":
            return {k: build(c) for k, c in zip(node[1], node[2], strict=True)}
        if kind == "dataclass":
            return node[1](**{n: build(c) for n, c in zip(node[2], node[3], strict=True)})
        raise AssertionError(kind)

    return build(structure)


def statics(structure: Hashable) -> list[Hashable]:
    """The static (non-leaf) parts of a structure."""
    found: list[Hashable] = []

    def walk(node: Any) -> None:
        if isinstance(node, tuple) and node and node[0] == "static":
            found.append(node)
        elif isinstance(node, tuple):
            for child in node:
                if isinstance(child, tuple):
                    walk(child)

    walk(structure)
    return found


__all__ = ["flatten", "unflatten", "statics", "is_array"]
