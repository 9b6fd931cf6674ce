"""A case: a program, its input values and the backends to try; and how a worker runs one.

A case is plain data (``to_dict``/``from_dict``) so it can be written ahead to disk before it runs,
sent to an isolated worker, stored in the corpus and replayed bit-exactly. Small inputs are stored
inline (raw little-endian bytes, base64); large ones as the seed and scale that regenerate them.
``execute`` is what the worker process does: compile the program on each backend and run it. It
knows nothing about references or oracles.
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from strategies.program import Program
from strategies.program_strategies import InvalidProgram

INLINE_LIMIT = 1 << 16  # elements; beyond this inputs are stored as a generator recipe

CPU_BACKENDS = ("cpu-loops", "cpu-blas", "cpu-loops-unfused", "cpu-blas-unfused")


def encode_array(array: np.ndarray) -> dict[str, Any]:
    # np.require keeps a 0-d array 0-d (np.ascontiguousarray makes it 1-d: the harness once
    # reported its own shape change as a compiler bug).
    array = np.require(np.asarray(array), requirements="C")
    raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return {
        "dtype": array.dtype.name,
        "shape": list(array.shape),
        "zlib": base64.b64encode(zlib.compress(raw, 6)).decode("ascii"),
    }


def generated_array(shape: tuple[int, ...], dtype: str, seed: int, scale: float) -> np.ndarray:
    """A normal array that the same (seed, scale) regenerates bit-exactly anywhere."""
    values = np.random.default_rng(seed).standard_normal(shape) * scale
    return values.astype(dtype)


def decode_array(data: dict[str, Any]) -> np.ndarray:
    dtype = np.dtype(data["dtype"])
    shape = tuple(data["shape"])
    if "generator" in data:
        recipe = data["generator"]
        return generated_array(shape, dtype.name, int(recipe["seed"]), float(recipe["scale"]))
    raw = zlib.decompress(base64.b64decode(data["zlib"]))
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


@dataclass
class Case:
    """What to run: ``program`` on ``inputs`` with each of ``backends``.

    ``recipes`` optionally holds, per input, the generator recipe it came from (large inputs are
    then stored as the recipe instead of their bytes). ``check`` names a structural oracle to
    apply on top of the differential one (e.g. ``causal``); ``origin`` says which strategy made it.
    """

    program: Program
    inputs: list[np.ndarray]
    backends: tuple[str, ...] = CPU_BACKENDS
    check: str = "differential"
    origin: str = ""
    recipes: list[dict[str, Any] | None] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    invalid: InvalidProgram | None = None  # a program with one planted violation

    def function(self, namespace: Any) -> Any:
        """The case's function over ``namespace`` (the invalid program's, if this is one)."""
        if self.invalid is not None:
            return self.invalid.as_function(namespace)
        return self.program.as_function(namespace)

    def to_dict(self) -> dict[str, Any]:
        encoded = []
        for i, array in enumerate(self.inputs):
            recipe = self.recipes[i] if i < len(self.recipes) else None
            if recipe is not None and array.size > INLINE_LIMIT:
                encoded.append(
                    {"dtype": array.dtype.name, "shape": list(array.shape), "generator": recipe}
                )
            else:
                encoded.append(encode_array(array))
        return {
            "program": self.program.to_dict(),
            "inputs": encoded,
            "backends": list(self.backends),
            "check": self.check,
            "origin": self.origin,
            "extra": self.extra,
            **({"invalid": self.invalid.to_dict()} if self.invalid is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Case:
        recipes = [a.get("generator") for a in data["inputs"]]
        return cls(
            recipes=recipes if any(recipes) else [],
            program=Program.from_dict(data["program"]),
            inputs=[decode_array(a) for a in data["inputs"]],
            backends=tuple(data.get("backends", CPU_BACKENDS)),
            check=data.get("check", "differential"),
            origin=data.get("origin", ""),
            extra=dict(data.get("extra", {})),
            invalid=InvalidProgram.from_dict(data["invalid"]) if "invalid" in data else None,
        )

    @property
    def size(self) -> int:
        """Smaller is simpler: program nodes first, then total input elements."""
        return len(self.program) * 1_000_000 + sum(int(a.size) for a in self.inputs)


# --------------------------------------------------------------------------------------------
# Worker side


@dataclass
class BackendResult:
    """One backend's answer: an output array, or an error classified by where it came from."""

    backend: str
    status: str  # "ok" | "unsupported" | "rejected" | "compiler-error" | "internal-error"
    output: Any = None
    error_type: str = ""
    message: str = ""
    stage: str = ""
    module: str = ""
    pipeline: str = ""
    deterministic: bool | None = None  # recompiling gave identical bits
    reused: bool | None = None  # a second call with the same shapes did not retrace


def _classify(error: BaseException) -> str:
    from compiler import CompilerError, UnsupportedFeature

    if isinstance(error, UnsupportedFeature):
        return "unsupported"
    if isinstance(error, CompilerError):
        return "compiler-error"
    if isinstance(error, (ValueError, TypeError, IndexError, OverflowError)):
        return "rejected"
    return "internal-error"


def run_backend(
    case: Case, input_sets: list[list[np.ndarray]], backend: str, repeat_checks: bool = False
) -> list[BackendResult]:
    """Trace, compile and run the case on one backend for each input set (one compile),
    catching everything it raises."""
    import compiler

    fn = compiler.jit(case.function(compiler.xp))
    results = []
    for inputs in input_sets:
        try:
            output = fn(*inputs, target=backend)
        except BaseException as error:  # noqa: BLE001 - the harness classifies every failure
            result = BackendResult(
                backend,
                _classify(error),
                error_type=type(error).__name__,
                message=str(error)[:4000],
            )
            if isinstance(error, compiler.CompilerError):
                result.stage, result.module, result.pipeline = (
                    error.stage,
                    error.module_text,
                    error.pipeline,
                )
            results.append(result)
            continue
        results.append(BackendResult(backend, "ok", output=np.asarray(output)))
    first = results[0]
    if repeat_checks and first.status == "ok":
        again = fn(*input_sets[0], target=backend)
        first.reused = fn.traces == 1
        fn.clear()
        recompiled = fn(*input_sets[0], target=backend)
        first.deterministic = bool(
            np.array_equal(np.asarray(again), first.output, equal_nan=True)
            and np.asarray(recompiled).tobytes() == first.output.tobytes()
        )
    fn.clear()
    return results


def execute(task: dict[str, Any]) -> list[BackendResult]:
    """The worker's job for one task: ``{"case": case dict, "repeat_checks": bool,
    "input_sets": [encoded inputs, ...]}``. Results are backend-major; without ``input_sets``
    one result per backend for the case's own inputs."""
    if "fault" in task:  # only the isolation tests send this
        from .isolation import fault

        fault(task["fault"])
    case = Case.from_dict(task["case"])
    if "emit" in task:
        return emit(case, task["emit"])
    alternatives = task.get("input_sets")
    input_sets = (
        [[decode_array(a) for a in alt] for alt in alternatives] if alternatives else [case.inputs]
    )
    results = []
    for backend in case.backends:
        results.extend(run_backend(case, input_sets, backend, bool(task.get("repeat_checks"))))
    return results


def emit(case: Case, backend: str) -> dict[str, str]:
    """The built module and the mlir-opt command line of ``backend``, for a corpus entry."""
    import compiler
    from compiler.pipelines import mlir_opt_command, resolve

    target = resolve(backend)
    module = compiler.jit(case.function(compiler.xp)).emit(*case.inputs)
    stages = {name: pipeline for name, pipeline in target.stages()}
    return {
        "backend": target.name,
        "module": module,
        "stages": stages,
        "mlir_opt": mlir_opt_command(target),
        "note": (
            "cpu-blas targets substitute gemm calls in Python (compiler.blas) between "
            "bufferization and lowering"
            if target.blas
            else ""
        ),
    }
