"""The ``iree-cpu`` backends: IREE's llvm-cpu compiler and local-sync runtime behind our frontend.

The traced graph is emitted with the tensor ABI (``compiler.lower.emit``, ``abi="tensor"``:
``func.func @main(tensors...) -> (outputs..., gather flags...)``, booleans as ``i8``, captured
arrays as trailing arguments), the input contract of every external MLIR compiler. IREE compiles
that module with ``iree-compile`` and runs it with ``iree.runtime`` on the ``local-sync`` driver.
Its deviations are findings about IREE (layer ``iree``), exported with the module, the ``.npy``
inputs and the two command lines that reproduce them with nothing of this project::

    iree-compile module.mlir --iree-hal-target-backends=llvm-cpu FLAGS -o module.vmfb
    iree-run-module --device=local-sync --module=module.vmfb --function=main \\
        --input=@x0.npy ... --output=@out0.npy ...

Names: ``iree-cpu[+option...][@O<n>]``. ``@O<n>`` is ``--iree-opt-level=O<n>`` (IREE's default
is O0); options are IREE's own flags (``OPTIONS``: data tiling and aggressive fusion on and off,
the host CPU, the system linker, and two semantics-changing controls used to plant failures).
Each is its own backend, so two variants that disagree are a finding too. Every variant keeps
float64 (``--iree-input-demote-f64-to-f32=false``: IREE demotes f64 to f32 by default) and names
the CPU (``generic`` unless ``+host``).

Compiling runs the ``iree-compile`` executable (shipped in iree-base-compiler) in a subprocess:
a compiler crash is a ``CompilerError`` carrying its backtrace, never a dead worker, and IREE's
compiler bindings (whose MLIR libraries clash with upstream MLIR's in one process) are never
imported. A compile costs about 0.6 CPU-s whatever the module's size, which is why no default
session runs IREE.
``KNOWN_ISSUES`` lists the IREE bugs the research campaign found; ``known_issue`` recognizes
them, for attribution and export. A wrong answer of a semantics-changing variant
(``+fast-min-max``, ``+reassociate``) that is none of them is that variant's control
(``CONTROLS``): expected, not an IREE bug.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import pipelines
from .driver import Artifacts, notify
from .dtypes import BOOL, finfo, is_float
from .errors import CompilerError
from .frontend.graph import Graph
from .lower import emit

NAME = "iree-cpu"
LAYER = "iree"
TARGET_BACKEND = "llvm-cpu"
DRIVER = "local-sync"
ENTRY = emit.TENSOR_ENTRY
#: Stages: the module as built (tensor ABI), then IREE's VM flatbuffer (binary: not kept as a
#: stage text, rebuilt by its command).
MODULE, VMFB = "module", "vmfb"
INSTALL = "pip install -e .[iree]"
#: Seconds before a compile counts as hung (a module compiles in about 1 s): iree-compile is
#: killed and the compile fails with a CompilerError saying so.
COMPILE_TIMEOUT = 300
#: Always on, in this order (a later option replaces a flag of the same name).
BASE_FLAGS = (
    f"--iree-hal-target-backends={TARGET_BACKEND}",
    "--iree-input-demote-f64-to-f32=false",
    "--iree-llvmcpu-target-cpu=generic",
)


@dataclass(frozen=True)
class Option:
    """A ``+name`` variant: IREE flags and what they change."""

    flags: tuple[str, ...]
    description: str
    #: Changes results on purpose (fast-math style): its deviations are expected, not bugs.
    semantics: bool = False


OPTIONS: dict[str, Option] = {
    "data-tiling": Option(("--iree-opt-data-tiling=true",), "data tiling on"),
    "no-data-tiling": Option(("--iree-opt-data-tiling=false",), "data tiling off"),
    "fusion": Option(
        ("--iree-dispatch-creation-enable-aggressive-fusion=true",), "aggressive fusion on"
    ),
    "no-fusion": Option(
        ("--iree-dispatch-creation-enable-aggressive-fusion=false",), "aggressive fusion off"
    ),
    "host": Option(("--iree-llvmcpu-target-cpu=host",), "the host CPU's features, not generic"),
    "system-linker": Option(
        ("--iree-llvmcpu-link-embedded=false",),
        "the system linker instead of IREE's embedded one (links f64 libm calls)",
    ),
    "fast-min-max": Option(
        ("--iree-llvmcpu-use-fast-min-max-ops=true",),
        "min/max that do not propagate NaN (a control: deviates on NaN by design)",
        semantics=True,
    ),
    "reassociate": Option(
        ("--iree-llvmcpu-reassociate-fp-reductions=true",),
        "reassociated float reductions (a control: changes rounding by design)",
        semantics=True,
    ),
}
#: The variants ``python -m harness backends`` lists (any combination of options parses).
LISTED = (
    NAME,
    *(f"{NAME}@O{n}" for n in range(4)),
    *(f"{NAME}+{o}" for o in ("data-tiling", "no-data-tiling", "fusion", "no-fusion")),
)


def parse(name: str) -> tuple[tuple[str, ...], int | None]:
    """``iree-cpu+a+b@O2`` -> (("a", "b"), 2); a ValueError naming the known options."""
    base, level = pipelines.split_level(name)
    family, *options = base.split("+")
    if family != NAME:
        raise ValueError(f"not an {NAME} variant: {name!r}")
    unknown = [o for o in options if o not in OPTIONS]
    if unknown or len(set(options)) != len(options):
        raise ValueError(
            f"unknown or repeated {NAME} option(s) in {name!r}; options: {', '.join(OPTIONS)} "
            f"(joined by '+'), levels @O0..@O3"
        )
    return tuple(options), level


def flags_of(name: str) -> tuple[str, ...]:
    """Every iree-compile flag of variant ``name`` (BASE_FLAGS, the level, the options); an
    option's flag replaces a base flag of the same name, in place."""
    options, level = parse(name)
    flags: dict[str, str] = {}
    extra = [f"--iree-opt-level=O{level}"] if level is not None else []
    for flag in [*BASE_FLAGS, *extra, *(f for o in options for f in OPTIONS[o].flags)]:
        flags[flag.split("=", 1)[0]] = flag
    return tuple(flags.values())


def compile_command(name: str, source: str = "module.mlir", output: str = "module.vmfb") -> str:
    """The iree-compile command line of variant ``name`` (tools by name, no machine paths)."""
    return shlex.join(["iree-compile", source, *flags_of(name), "-o", output])


def run_command(
    inputs: list[str], outputs: int, module: str = "module.vmfb", function: str = ENTRY
) -> str:
    """The iree-run-module command line: one ``--input`` per file (``@x0.npy``, or
    ``SHAPExTYPE=@x0.bin`` for raw data), one ``--output=@outK.npy`` per result."""
    return shlex.join(
        ["iree-run-module", f"--device={DRIVER}", f"--module={module}", f"--function={function}"]
        + [f"--input={i}" for i in inputs]
        + [f"--output=@out{k}.npy" for k in range(outputs)]
    )


def input_files(arrays: list[np.ndarray]) -> list[tuple[str, bytes | np.ndarray, str]]:
    """(file name, contents, ``--input`` value) per argument: ``.npy`` files (booleans as
    int8, their ABI storage), raw ``.bin`` data where NumPy's format has no IREE type
    (bfloat16)."""
    from .dtypes import BFLOAT16

    files: list[tuple[str, bytes | np.ndarray, str]] = []
    for i, array in enumerate(arrays):
        array = np.asarray(array)
        if array.dtype == BFLOAT16:
            shape = "".join(f"{d}x" for d in array.shape)
            files.append((f"x{i}.bin", array.tobytes(), f"{shape}bf16=@x{i}.bin"))
        else:
            data = array.view(np.int8) if array.dtype == BOOL else array
            files.append((f"x{i}.npy", data, f"@x{i}.npy"))
    return files


def write_inputs(directory: Any, arrays: list[np.ndarray]) -> list[str]:
    """Write the arguments into ``directory``; their ``--input`` values, in order."""
    from pathlib import Path

    values = []
    for name, data, value in input_files(arrays):
        path = Path(directory) / name
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            np.save(path, data)
        values.append(value)
    return values


# --------------------------------------------------------------------------------------------
# Compile and run


def tool(name: str) -> str | None:
    """The executable of IREE tool ``name`` (``iree-compile`` in iree-base-compiler,
    ``iree-run-module`` in iree-base-runtime), found without importing those packages: the
    compiler's Python bindings and upstream MLIR's (``mlir``) cannot share a process (their
    nanobind libraries clash), so this process never imports ``iree.compiler``."""
    package, folder = ("iree.compiler", "_mlir_libs")
    if name.startswith("iree-run") or name.startswith("iree-benchmark"):
        package, folder = ("iree._runtime_libs", "")
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    for root in (spec.submodule_search_locations or []) if spec is not None else []:
        candidate = os.path.join(root, folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(name)


def _clean(message: str) -> str:
    """An iree-compile failure without machine paths, temporary names or addresses, and without
    the operations dumped after each error (the command reproduces all of it)."""
    keep = []
    for line in message.splitlines():
        if "Program arguments:" in line or line.startswith("LLD_VERSION="):
            continue
        line = re.sub(r"0x[0-9a-f]{8,16} ", "", line)
        line = re.sub(r"\s\(?/\S+/(lib\S+|iree-compile)\+0x[0-9a-f]+\)?", "", line)
        line = re.sub(r"/tmp/[\w.-]+", "TMP", line)
        keep.append(line.rstrip())
    return "\n".join(keep).strip()


#: Diagnostics only (never in a reproduce command): keep errors short.
_QUIET = ("--mlir-print-op-on-diagnostic=false",)
#: Longest compile error kept (a backtrace is long; its top frames say where).
MESSAGE_CHARS = 3000


def _prctl() -> Any:
    """libc's ``prctl`` (Linux), resolved before any fork; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return None


_PR_SET_PDEATHSIG = 1
_PRCTL = _prctl()


def _die_with_parent() -> None:
    """In iree-compile's child, before exec: die with the process that started it. A harness
    worker killed for a hang (or any caller killed) must not leave a compile running."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def run_compiler(text: str, flags: tuple[str, ...], output: str = "vmfb") -> bytes:
    """``iree-compile - FLAGS`` on ``text`` in a subprocess: the VM flatbuffer (or, with
    ``--compile-to``, the IR text); a RuntimeError carrying the diagnostics, the crash, or the
    hang (no result after COMPILE_TIMEOUT seconds: the child is killed)."""
    executable = tool("iree-compile")
    if executable is None:
        raise RuntimeError(f"iree-compile not found ({INSTALL})")
    limit = COMPILE_TIMEOUT
    with tempfile.TemporaryDirectory(prefix="iree-") as scratch:
        target = os.path.join(scratch, "out." + output)
        try:
            proc = subprocess.run(
                [executable, "-", *flags, *_QUIET, "-o", target],
                input=text.encode(),
                capture_output=True,
                timeout=limit,
                preexec_fn=_die_with_parent if _PRCTL is not None else None,
            )
        except subprocess.TimeoutExpired as expired:  # run() has killed and reaped the child
            partial = _clean((expired.stderr or b"").decode(errors="replace"))
            raise RuntimeError(
                f"iree-compile hung: no result after {limit:g} s (killed)"
                + (f"\n{partial[-MESSAGE_CHARS:]}" if partial else "")
            ) from None
        if proc.returncode == 0:
            with open(target, "rb") as handle:
                return handle.read()
    message = _clean(proc.stderr.decode(errors="replace"))
    if proc.returncode < 0:  # killed by a signal: a crash, not a diagnostic
        number = -proc.returncode
        try:
            what = signal.Signals(number).name
        except ValueError:
            what = "?"
        message = f"iree-compile crashed (signal {number}, {what})\n{message}"
    if len(message) > MESSAGE_CHARS:
        message = message[: MESSAGE_CHARS - 4] + "\n..."
    raise RuntimeError(message or f"iree-compile failed with exit status {proc.returncode}")


def compile_module(text: str, flags: tuple[str, ...]) -> bytes:
    """IREE's VM flatbuffer for ``text``."""
    return run_compiler(text, flags)


_LOCK = threading.Lock()
_CONFIG: list[Any] = []


def _config() -> Any:
    """One ``local-sync`` runtime configuration per process."""
    with _LOCK:
        if not _CONFIG:
            import iree.runtime as rt

            _CONFIG.append(rt.Config(DRIVER))
        return _CONFIG[0]


class Executable:
    """A compiled module, loaded on first call (loading costs ~0.5 ms; a call ~10 us)."""

    def __init__(self, vmfb: bytes) -> None:
        self.vmfb = vmfb
        self.function: Any = None
        self.lock = threading.Lock()

    def __call__(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        import iree.runtime as rt

        with self.lock:
            if self.function is None:
                config = _config()
                module = rt.VmModule.copy_buffer(config.vm_instance, self.vmfb)
                context = rt.SystemContext(vm_modules=[module], config=config)
                self.function = context.modules.module[ENTRY]
            results = self.function(*arrays)
        if not isinstance(results, (tuple, list)):
            results = [results]
        return [np.array(r.to_host() if hasattr(r, "to_host") else r, copy=True) for r in results]


def storage_of(array: np.ndarray) -> np.ndarray:
    """An argument as the ABI stores it (booleans as int8)."""
    return array.view(np.int8) if array.dtype == BOOL else array


class IreeCpuBackend:
    """IREE llvm-cpu on the tensor ABI; ``name`` picks the variant (``flags_of``)."""

    #: Where a wrong answer of this backend lives (``harness.triage.attribution``).
    layer = LAYER

    def __init__(self, name: str = NAME) -> None:
        options, level = parse(name)
        self.name = name
        self.flags = flags_of(name)
        self.semantics = any(OPTIONS[o].semantics for o in options)
        what = [f"--iree-opt-level=O{level}"] if level is not None else []
        what += [OPTIONS[o].description for o in options]
        self.description = "IREE llvm-cpu on the tensor ABI (float64 kept)" + (
            f": {', '.join(what)}" if what else f"; variants @O0..@O3, +{', +'.join(OPTIONS)}"
        )

    def __repr__(self) -> str:
        return f"<backend {self.name}>"

    def unavailable(self) -> str | None:
        try:
            runtime = importlib.util.find_spec("iree.runtime")
        except (ImportError, ValueError):
            runtime = None
        if runtime is None or tool("iree-compile") is None:
            return f"IREE is not installed (iree-base-compiler, iree-base-runtime: {INSTALL})"
        return None

    def compile(self, graph: Graph) -> Artifacts:
        notify(self.name, MODULE)
        text, signature = emit.build(graph, abi="tensor")
        notify(self.name, VMFB)
        command = compile_command(self.name)
        try:
            vmfb = compile_module(text, self.flags)
        except RuntimeError as error:
            raise CompilerError(VMFB, command, str(error), text) from None
        results = len(signature.outputs) + signature.error_outputs
        inputs = [value for _, _, value in input_files(_stand_ins(signature.inputs))]
        return Artifacts(
            self.name,
            {MODULE: text},
            commands={VMFB: command, "run": run_command(inputs, results)},
            signature=signature,
            native=Executable(vmfb),
            notes={"flags": " ".join(self.flags)},
        )

    def run(self, artifacts: Artifacts, arrays: list[np.ndarray]) -> list[np.ndarray]:
        signature = artifacts.signature
        if len(arrays) != len(signature.inputs):
            raise TypeError(f"expected {len(signature.inputs)} arrays, got {len(arrays)}")
        checked = []
        for node, array in zip(signature.inputs, arrays, strict=True):
            # IREE does not check an argument it returns unchanged: check every one here.
            array = np.require(np.asarray(array), requirements="C")
            if array.shape != node.shape or array.dtype != node.dtype:
                raise TypeError(
                    f"argument {node.attrs.get('name', '?')}: expected {node.dtype}"
                    f"{list(node.shape)}, got {array.dtype}{list(array.shape)}"
                )
            checked.append(storage_of(array))
        try:
            results = artifacts.native(checked)
        except (RuntimeError, ValueError) as error:  # IREE's runtime errors are plain ones
            raise RuntimeError(f"iree.runtime failed: {error}") from None
        outputs = results[: len(signature.outputs)]
        errors = results[len(signature.outputs) :]
        if len(errors) != signature.error_outputs:
            expected = len(signature.outputs) + signature.error_outputs
            raise RuntimeError(f"IREE returned {len(results)} results, expected {expected}")
        if any(int(np.asarray(e).reshape(-1)[0]) for e in errors):
            raise ValueError("gather ids out of range for the table")
        return [
            _as_output(node, out, k)
            for k, (node, out) in enumerate(zip(signature.outputs, outputs, strict=True))
        ]

    def known_issue_of(
        self, graph: Graph, message: str = "", inputs: list[np.ndarray] | None = None
    ) -> dict[str, str] | None:
        """The known IREE issue (``KNOWN_ISSUES``) a failure of this variant on ``graph`` is:
        ``message`` is its compile error, empty for a wrong answer (for attribution), and
        ``inputs`` the case's (a wrong answer that depends on subnormals is IREE's flushing).
        A wrong answer of a semantics-changing variant that is no known issue is its control
        (``CONTROLS``): expected, not a bug."""
        values = not message and inputs is not None
        subnormal = values and depends_on_subnormals(graph, inputs)
        sine = values and sines_small_negative(graph, inputs)
        module = emit.build(graph, abi="tensor")[0]
        issue = known_issue(module, message, self.name, bool(subnormal), bool(sine))
        if issue is None and not message and self.semantics:
            options, _ = parse(self.name)
            issue = next(CONTROLS[o] for o in options if o in CONTROLS)
        return issue.to_dict() if issue is not None else None


def _stand_ins(nodes: list[Any]) -> list[np.ndarray]:
    """Zero arrays of the inputs' types (to name the input files of the run command)."""
    return [np.zeros(n.shape, n.dtype) for n in nodes]


def _as_output(node: Any, value: np.ndarray, index: int) -> np.ndarray:
    """A result as NumPy holds the output: int8 storage back to bool (only 0 and 1 allowed)."""
    expected = np.dtype(np.int8) if node.dtype == BOOL else np.dtype(node.dtype)
    if value.dtype != expected or value.shape != node.shape:
        raise RuntimeError(
            f"result {index}: IREE returned {value.dtype}{list(value.shape)}, expected "
            f"{expected}{list(node.shape)}"
        )
    if node.dtype == BOOL:
        if not np.isin(value, (0, 1)).all():
            raise RuntimeError(f"result {index}: a bool stored as i8 holds {np.unique(value)}")
        return value.view(BOOL)
    return value


_VARIANTS: dict[str, IreeCpuBackend] = {}


def backend(name: str) -> IreeCpuBackend:
    """The backend for variant ``name`` (one instance per name)."""
    with _LOCK:
        if name not in _VARIANTS:
            _VARIANTS[name] = IreeCpuBackend(name)
        return _VARIANTS[name]


# --------------------------------------------------------------------------------------------
# Known IREE issues (found by the research campaign; each is an open corpus entry)


@dataclass(frozen=True)
class KnownIssue:
    """An IREE bug this project has met: where it is reported, where its root cause lives,
    how to avoid it."""

    name: str
    upstream: str
    cause: str
    workaround: str

    def to_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "upstream": self.upstream,
            "cause": self.cause,
            "workaround": self.workaround,
        }


F64_LIBM_LINK = KnownIssue(
    "f64-libm-link",
    "iree-org/iree#20165 (open: the same class, f32 log10/trunc; earlier instances #8719 and "
    "#12974 were fixed op by op): math functions without an implementation in IREE's embedded "
    "runtime become libm calls the embedded linker cannot resolve",
    "IREE (llvm-cpu embedded linking): f64 tanh, sin, cos, tan, atan and asin lower to libm "
    "calls and iree-lld fails with 'undefined symbol'",
    f"--iree-llvmcpu-link-embedded=false (the {NAME}+system-linker variant)",
)
RANK0_RESHAPE_CRASH = KnownIssue(
    "rank0-reshape-crash",
    "not reported upstream yet (no matching iree-org/iree issue found)",
    "IREE (LLVMCPUCheckIRBeforeLLVMConversion): checkStackAllocationSize calls "
    "getIntOrFloatBitWidth on the index element type of the tensor<0xindex> shape operand of "
    "a tensor.reshape to rank 0, and iree-compile dies with SIGSEGV",
    "emit tensor.collapse_shape %x [] instead of tensor.reshape to rank 0",
)
VECTORIZED_COUNT = KnownIssue(
    "vectorized-count-reduction",
    "not reported upstream yet (no matching llvm/llvm-project or iree-org/iree issue found)",
    "upstream MLIR's Linalg vectorizer (linalg::vectorize, used by IREE's "
    "GenericVectorizationPass): a reduction linalg.generic whose body does not read its input "
    "(after IREE folds e.g. x >= x to true, a count: acc + 1) becomes one acc + 1 per vector "
    "tile, so the result is ceil(n / vector length) instead of n; transform.structured."
    "vectorize on such a generic does the same in upstream MLIR 22 (mlir-opt "
    "--transform-interpreter)",
    "none in IREE's flags (const-eval on or off both fail)",
)
F64_POWF_EXPANSION = KnownIssue(
    "f64-powf-expansion",
    "not reported upstream yet (iree-org/iree#14614 added the expansion to keep f32 powf "
    "vectorized; no issue found about its accuracy in float64)",
    "IREE (llvm-cpu, PolynomialApproximationPass): math.powf is expanded to exp(b * log(a)) "
    "(MLIR's populateExpandPowFPattern) in float64 too, and the rounding of b * log(a) grows "
    "with its size: 1.5 ** -1253 is 17 ulps off, and 4096 random float64 pairs with "
    "|b log a| <= 700 were up to 848 ulps off (median 72; NumPy's pow: at most 1)",
    "none found in IREE's flags",
)
DENORMAL_FLUSH = KnownIssue(
    "denormal-flush",
    "not a bug: IREE's CPU runtime flushes subnormals to zero by design (FTZ/DAZ, "
    "iree-org/iree#7367)",
    "IREE (runtime): subnormal inputs and results are zero, where NumPy keeps them; this case's "
    "answer changes when they are flushed (e.g. float16 layer_norm of a constant row: its eps "
    "1e-5 is subnormal in float16, so IREE divides by zero and gives nan)",
    "inputs and constants away from the subnormal range; the same case on another backend tells "
    "a real IREE bug",
)
SIN_SMALL_NEGATIVE = KnownIssue(
    "sin-small-negative",
    "not reported upstream yet (related: llvm/llvm-project#118784, sin under "
    "--test-math-polynomial-approximation; iree-org/iree#19673, validating the approximations)",
    "IREE (llvm-cpu, MLIR's polynomial approximation of math.sin): the quadrant is "
    "floor(x * 2/pi), so for x in (-pi/2, 0) it is -1 and sin(x) is computed from x + pi/2 with "
    "an absolute error of an ulp of pi/2: float32 sin(-1.78e-7) is 68% off, sin(-1e-3) 185 ulps "
    "(positive arguments: within 1 ulp); tests/upstream/test_iree_3_13.py",
    "none found in IREE's flags",
)
WORKGROUP_DISTRIBUTION = KnownIssue(
    "workgroup-distribution",
    "not reported upstream yet (the same error, other triggers: iree-org/iree#21504, #20723, "
    "closed; #22684, open)",
    "IREE (llvm-cpu codegen, workgroup distribution verification): 'write affecting operations "
    "on global resources are restricted to workgroup distributed contexts' on valid input; "
    "minimal: an i8 -> f32 broadcast generic, a stride-4 extract_slice of a unit dim, a "
    "tensor.reshape (tests/upstream/inputs/iree_workgroup_distribution.mlir)",
    "none found (a stride of 1, or tensor.collapse_shape instead of tensor.reshape, compiles)",
)
BF16_CONVERT_LINK = KnownIssue(
    "bf16-convert-link",
    "not reported upstream yet (the class of iree-org/iree#13499, closed: a plain f32 -> bf16 "
    "truncf is decomposed now)",
    "IREE (llvm-cpu): an integer -> f32 -> bf16 conversion (bool.astype(bfloat16)) is folded "
    "into one LLVM conversion to bfloat, lowered to a __truncsfbf2 call that iree-lld cannot "
    "resolve (tests/upstream/inputs/iree_bool_to_bf16.mlir)",
    f"none: with the system linker ({NAME}+system-linker) the library links but fails to load "
    "(the process dies: 'symbol lookup error: ... undefined symbol: __truncsfbf2'); cast to "
    "float32 instead",
)
KNOWN_ISSUES = (
    F64_LIBM_LINK, RANK0_RESHAPE_CRASH, VECTORIZED_COUNT, F64_POWF_EXPANSION, DENORMAL_FLUSH,
    SIN_SMALL_NEGATIVE, WORKGROUP_DISTRIBUTION, BF16_CONVERT_LINK,
)  # fmt: skip
#: What a wrong answer of each semantics-changing option is: the control it was made for.
CONTROLS = {
    option: KnownIssue(
        f"control:{option}",
        "not a bug: a control variant that changes results on purpose",
        f"the +{option} variant ({OPTIONS[option].description}: "
        f"{' '.join(OPTIONS[option].flags)}) deviates from NumPy by design",
        f"drop +{option}; the same case on {NAME} without it tells a real IREE bug",
    )
    for option in OPTIONS
    if OPTIONS[option].semantics
}

_WORKGROUP = "restricted to workgroup distributed contexts"
_TRUNCSFBF2 = "undefined symbol: __truncsfbf2"
_F64_POWF = re.compile(r"math\.powf [^\n]*: f64\b")
_LIBM = re.compile(r"undefined symbol: (tanh|sin|cos|tan|atan2?|asin|acos|erf|cbrt)\b")
_RANK0_RESHAPE = re.compile(r"tensor\.reshape [^\n]*tensor<0xindex>\) -> tensor<[a-z0-9]+>")
_GENERIC = re.compile(
    r"linalg\.generic \{[^\n]*iterator_types = \[[^\]]*\"reduction\"[^\]]*\]\}[^\n]*\{\n"
    r"\s*\^bb0\(([^)]*)\):\n(.*?)linalg\.yield",
    re.S,
)


def ignores_input(dispatch_ir: str) -> bool:
    """Does ``dispatch_ir`` hold a reduction ``linalg.generic`` whose body reads none of its
    inputs (only its accumulator)? The shape of IR the vectorizer miscompiles."""
    for arguments, body in _GENERIC.findall(dispatch_ir):
        names = re.findall(r"(%[\w.$-]+):", arguments)
        if len(names) >= 2 and not any(
            re.search(re.escape(n) + r"(?![\w.$-])", body) for n in names[:-1]
        ):
            return True
    return False


def dispatch_ir(text: str, name: str = NAME) -> str:
    """IREE's IR after dispatch creation, constant evaluation off (what the codegen gets)."""
    flags = (*flags_of(name), "--iree-opt-const-eval=false", "--compile-to=dispatch-creation")
    return run_compiler(text, flags, output="mlir").decode()


def flushed(value: Any) -> Any:
    """``value`` with its float subnormals replaced by zeros of the same sign."""
    a = np.asarray(value)
    if not is_float(a.dtype):
        return value
    with np.errstate(invalid="ignore"):
        small = np.abs(a.astype(np.float64)) < float(finfo(a.dtype).tiny)
    return np.where(small, np.copysign(np.zeros((), np.float64), a.astype(np.float64)), a).astype(
        a.dtype
    )


def depends_on_subnormals(graph: Graph, inputs: list[np.ndarray]) -> bool:
    """Does the graph's answer on ``inputs`` change when every subnormal input and result is
    flushed to zero, as IREE's runtime does (``DENORMAL_FLUSH``)? Evaluated by NumPy."""
    from .interpret import evaluate_graph, evaluate_values

    plain = evaluate_graph(graph, list(inputs))
    values = evaluate_values(graph, list(inputs), each=flushed)
    for want, got in zip(plain, (values[id(n)] for n in graph.outputs), strict=True):
        want, got = np.asarray(want), np.asarray(got)
        if is_float(want.dtype):
            a, b = want.astype(np.float64), got.astype(np.float64)
            same = (a == b) | (np.isnan(a) & np.isnan(b))
            ulp = float(finfo(want.dtype).eps) * np.abs(a)
            with np.errstate(invalid="ignore"):
                close = np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= 4 * ulp)
            if not np.all(same | close):
                return True
        elif not np.array_equal(want, got):
            return True
    return False


def sines_small_negative(graph: Graph, inputs: list[np.ndarray]) -> bool:
    """Does a float32 (or narrower) ``sin`` of the graph take an argument in (-pi/2, 0) on
    ``inputs``, as NumPy evaluates it (``SIN_SMALL_NEGATIVE``)?"""
    from .frontend.graph import topological
    from .interpret import evaluate_values

    sines = [
        n for n in topological(graph.outputs)
        if n.op == "elementwise" and n.prim.name == "sin" and np.dtype(n.dtype).itemsize <= 4
    ]  # fmt: skip
    if not sines:
        return False
    values = evaluate_values(graph, list(inputs))
    for node in sines:
        x = np.asarray(values[id(node.args[0])], np.float64)
        if np.any((x < 0) & (x > -np.pi / 2)):
            return True
    return False


def known_issue(
    module: str,
    message: str = "",
    name: str = NAME,
    subnormal_dependent: bool = False,
    small_negative_sine: bool = False,
) -> KnownIssue | None:
    """The known IREE issue a failure of variant ``name`` on tensor-ABI ``module`` is, if any:
    ``message`` is the compile error (empty for a wrong answer, which recompiles the module up
    to dispatch creation to look for the vectorizer's shape of IR); ``subnormal_dependent``:
    the case's answer changes when subnormals are flushed (a wrong answer then is IREE's
    flushing, by design); ``small_negative_sine``: a float32 or float16 sine takes arguments in
    (-pi/2, 0) (``sines_small_negative``)."""
    if _LIBM.search(message):
        return F64_LIBM_LINK
    if _TRUNCSFBF2 in message:
        return BF16_CONVERT_LINK
    if _WORKGROUP in message:
        return WORKGROUP_DISTRIBUTION
    if "crashed" in message:
        return RANK0_RESHAPE_CRASH if _RANK0_RESHAPE.search(module) else None
    if message or not module:
        return None
    if subnormal_dependent:
        return DENORMAL_FLUSH
    if small_negative_sine:
        return SIN_SMALL_NEGATIVE
    if _F64_POWF.search(module):
        return F64_POWF_EXPANSION
    try:
        ir = dispatch_ir(module, name)
    except Exception:  # noqa: BLE001 - no IR, no diagnosis
        return None
    return VECTORIZED_COUNT if ignores_input(ir) else None


__all__ = [
    "BASE_FLAGS",
    "BF16_CONVERT_LINK",
    "CONTROLS",
    "DENORMAL_FLUSH",
    "F64_POWF_EXPANSION",
    "KNOWN_ISSUES",
    "LAYER",
    "LISTED",
    "NAME",
    "OPTIONS",
    "SIN_SMALL_NEGATIVE",
    "WORKGROUP_DISTRIBUTION",
    "Executable",
    "IreeCpuBackend",
    "KnownIssue",
    "backend",
    "compile_command",
    "depends_on_subnormals",
    "flushed",
    "flags_of",
    "ignores_input",
    "input_files",
    "known_issue",
    "parse",
    "run_command",
    "sines_small_negative",
    "write_inputs",
]
