"""The ``gpu-nvptx`` backend: ``pipeline`` (the lowering to PTX, stage by stage) and ``backend``
(compile, ptxas, run on a CUDA device). Nothing here loads MLIR until a program is compiled, so
``compiler.backends`` can register the backend at import time."""

from __future__ import annotations

from .backend import GpuEmulatedBackend, GpuNvptxBackend

__all__ = ["GpuEmulatedBackend", "GpuNvptxBackend"]
