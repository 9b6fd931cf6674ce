"""A toy primitive and a toy backend, registered the way a user extends the project: one table
entry, one backend class. ``tests/test_architecture.py`` loads this module as a harness plugin
(``HARNESS_PLUGINS``) and fuzzes both."""

from __future__ import annotations

import numpy as np

from compiler import backends, primitives
from compiler.driver import Artifacts
from compiler.interpret import evaluate_graph
from compiler.lower.emit import build
from compiler.primitives import Primitive, scalar
from compiler.primitives.results import unary_infer

# The whole of a new elementwise primitive: its NumPy rule, its printed form (which evaluation
# runs), its MLIR body (NumPy's arccos, which the table leaves out: libm's acos in every lowering).
if "arccos" not in primitives.PRIMITIVES:
    primitives.register(
        Primitive(
            "arccos",
            "unary",
            1,
            unary_infer("arccos", np.arccos),
            *primitives.printed(lambda a, attrs: f"xp.arccos({a[0]})"),
            ufunc=np.arccos,
            scalar=scalar.op("math.acos"),
        )
    )


class NumpyGraphBackend:
    """A backend that runs the traced graph with NumPy (the reference interpreter)."""

    name = "toy-numpy"
    description = "the traced graph interpreted by NumPy (a toy backend for the tests)"

    def unavailable(self) -> str | None:
        return None

    def compile(self, graph) -> Artifacts:
        text, signature = build(graph, abi="tensor")
        return Artifacts(self.name, {"module": text}, signature=signature, native=graph)

    def run(self, artifacts: Artifacts, arrays: list[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(o) for o in evaluate_graph(artifacts.native, arrays)]


if NumpyGraphBackend.name not in backends.BACKENDS:
    backends.register(NumpyGraphBackend())
