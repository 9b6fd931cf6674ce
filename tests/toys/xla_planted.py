"""A planted XLA deviation: the ``xla-cpu`` backend with ``exp`` off by one part in a thousand,
registered as ``xla-cpu-planted`` the way any backend is (loaded through ``HARNESS_PLUGINS`` in
every harness process). The tests check that the harness finds it, attributes it to ``xla``
and exports it with a StableHLO reproducer."""

from __future__ import annotations

from typing import Any

from compiler import backends
from compiler.xla import XlaCpuBackend

NAME = "xla-cpu-planted"
FACTOR = 1.0 + 1e-3


class _PerturbedNumpy:
    """``jax.numpy`` with one op wrong: ``exp`` scaled by ``FACTOR``."""

    def __init__(self, jnp: Any) -> None:
        self._jnp = jnp

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jnp, name)

    def exp(self, x: Any) -> Any:
        return (self._jnp.exp(x) * FACTOR).astype(x.dtype)


class PlantedXlaBackend(XlaCpuBackend):
    name = NAME
    description = "xla-cpu with exp perturbed (a planted deviation for the tests)"

    def namespace(self) -> Any:
        return _PerturbedNumpy(super().namespace())


if NAME not in backends.BACKENDS:
    backends.register(PlantedXlaBackend())
