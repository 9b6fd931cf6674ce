"""Lowering: graph -> MLIR text (``emit``, memref and tensor ABIs), the BLAS stage (``blas``)
and the libm stage (``libm``)."""

from __future__ import annotations

from typing import Any


def operations(module: Any) -> list[Any]:
    """Every operation nested in a parsed ``module`` (linalg bodies included), in program order:
    collected first, so that a Python stage may replace and erase what it found."""
    found: list[Any] = []

    def walk(op: Any) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    found.append(child.operation)
                    walk(child.operation)

    walk(module.operation)
    return found


__all__ = ["operations"]
