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
The IREE bugs the research campaign found, and their recognition, are ``compiler.iree_known``
(its names are attributes of this module too).
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
from .dtypes import BOOL
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
    worker killed for a hang (or any caller killed) must not leave a compile running. It runs
    in a session of its own: a ^C to the fuzz session's process group (which its worker ignores:
    the driver decides when it stops) killed the compile in flight (LLVM's tools handle SIGINT
    whatever they inherit), and the session stored "iree-compile crashed (signal 2, SIGINT)" as
    a new finding."""
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
                start_new_session=True,  # not stopped by a ^C to its caller's group
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
        self,
        graph: Graph,
        message: str = "",
        inputs: list[np.ndarray] | None = None,
        outputs: list[Any] | None = None,
    ) -> dict[str, str] | None:
        """The known IREE issue (``KNOWN_ISSUES``) a failure of this variant on ``graph`` is:
        ``message`` is its compile error, empty for a wrong answer (for attribution), and
        ``inputs`` the case's (a wrong answer that depends on subnormals is IREE's flushing,
        if IREE's ``outputs``, where given, are what flushing gives; one of a float32 sine or
        cosine is IREE's approximation if every wrong element depends on an argument it gets
        wrong: ``trig_explains``; one of a float powf, if the expansion's exp(b * log(a)) is
        not pow where it is wrong: ``pow_explains``).
        A wrong answer of a semantics-changing variant that is no known issue is its control
        (``CONTROLS``): expected, not a bug."""
        from .iree_known import (
            CONTROLS,
            SINE_RULES,
            TRIG_RULES,
            double_rounding_explains,
            flushing_explains,
            known_issue,
            pow_explains,
            trig_explains,
        )

        values = not message and inputs is not None
        subnormal = values and flushing_explains(graph, inputs, outputs)
        sine = values and trig_explains(graph, inputs, outputs, SINE_RULES)
        reduced = values and not sine and trig_explains(graph, inputs, outputs, TRIG_RULES)
        twice = values and double_rounding_explains(graph, inputs, outputs)
        pow_issue = pow_explains(graph, inputs, outputs) if values else None
        module = emit.build(graph, abi="tensor")[0]
        issue = known_issue(
            module, message, self.name, bool(subnormal), bool(sine), bool(reduced), bool(twice),
            pow_issue, bool(values),
        )  # fmt: skip
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


def __getattr__(name: str) -> Any:
    """The known-issue names (``compiler.iree_known``) as attributes of this module too; loaded
    on first use, so the backend does not import the diagnosis (nor it the backend) up front."""
    from . import iree_known

    try:
        return getattr(iree_known, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


__all__ = [
    "BASE_FLAGS",
    "LAYER",
    "LISTED",
    "NAME",
    "OPTIONS",
    "Executable",
    "IreeCpuBackend",
    "backend",
    "compile_command",
    "flags_of",
    "input_files",
    "parse",
    "run_command",
    "write_inputs",
]
