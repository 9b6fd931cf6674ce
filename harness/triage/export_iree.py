"""The IREE half of an export (layer ``iree``, behind the ``iree-cpu`` backends): the tensor-ABI
module, the inputs as ``.npy`` files, the ``iree-compile`` and ``iree-run-module`` command lines,
and ``iree_check.py``, which judges IREE's output by the fuzzer's error model with NumPy alone.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..corpus import Entry
from .export import _embedded_verdict, _judged, _script, _stages, attribution_of
from .signature import Signature


def _iree_versions() -> dict[str, str]:
    from importlib import metadata

    found = {}
    for name in ("iree-base-compiler", "iree-base-runtime"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def _iree_backend(entry: Entry) -> str:
    """The IREE variant that failed: the attribution's, else the signature's or the case's."""
    names = [attribution_of(entry).get("backend", "")]
    names += list(Signature.from_dict(entry.signature).backends)
    names += list((entry.case.get("case") or {}).get("backends", []))
    found = [n for n in names if isinstance(n, str) and n.startswith("iree-cpu")]
    return found[0] if found else "iree-cpu"


def iree_inputs(entry: Entry) -> tuple[str, list[np.ndarray]]:
    """(tensor-ABI module, arguments in ABI order) of the entry's case: the module the backend
    compiled (kept in the entry, else built again) and the case's inputs followed by the arrays
    the program captured (NumPy scalars, closures), as ``@main`` takes them."""
    import compiler
    from compiler.lower.emit import build

    from ..case import Case

    case = Case.from_dict(entry.case["case"])
    trace, graph, _ = compiler.jit(case.traced_function()).trace(*case.inputs)
    arrays = [np.asarray(a) for a in case.inputs]
    arrays += [np.asarray(array) for array, _ in trace.captured.values()]
    stored = [_stages(entry).get("module", ""), entry.mlir.get("module", "")]
    module = next((t for t in stored if isinstance(t, str) and "func.func @main(" in t), "")
    return module or build(graph, abi="tensor")[0], arrays


def iree_commands(entry: Entry, arrays: list[np.ndarray] | None = None) -> list[str]:
    """The iree-compile and iree-run-module command lines that reproduce the entry from
    ``module.mlir`` and the ``x*.npy`` files ``write_files`` writes."""
    from compiler import iree

    if arrays is None:
        arrays = iree_inputs(entry)[1]
    inputs = [value for _, _, value in iree.input_files(arrays)]
    results = 1 + _gathers(entry)
    name = _iree_backend(entry)
    return [iree.compile_command(name), iree.run_command(inputs, results)]


def _gathers(entry: Entry) -> int:
    """How many gather error flags ``@main`` returns after the program's output."""
    module = iree_inputs(entry)[0]
    header = re.search(r"func\.func @main\(.*?\)\s*->\s*\((.*?)\)\s*\{", module, re.S)
    return max(0, header.group(1).count("tensor<") - 1) if header else 0


def iree_check_script(entry: Entry) -> str:
    """A NumPy-only script for IREE's developers, run after ``iree-run-module`` wrote
    ``out*.npy``: NumPy's answer and the exact one (extended precision) with the fuzzer's
    allowed error per element are embedded; it exits 1 exactly where the differential oracle
    rejects IREE's output (a gather flag set on in-range ids included)."""
    from ..case import Case

    verdict = _embedded_verdict(Case.from_dict(entry.case["case"]))
    if verdict is None:
        return ""
    lines = [
        f'"""IREE llvm-cpu vs NumPy: {entry.detail.splitlines()[0][:150] if entry.detail else ""}',
        "",
        "Run after commands.sh (iree-compile, then iree-run-module writing out*.npy). NumPy's",
        "answer and the exact answer (extended precision, rounded to float64) are embedded, with",
        "the allowed error of each element. Exit 1: IREE's output differs from NumPy's in dtype,",
        'shape or non-finite values, exceeds the bound, or a gather flag is set."""',
        "",
        "import sys",
        "",
        "import numpy as np",
        "",
        *verdict,
        f"GATHERS = {_gathers(entry)}",
        "",
        "for k in range(1, 1 + GATHERS):",
        '    if np.load(f"out{k}.npy").any():',
        '        sys.exit(f"gather flag out{k}.npy is set: ids reported out of range")',
        'out = np.load("out0.npy")',
        "if NUMPY.dtype == np.bool_ and out.dtype == np.int8:  # booleans cross the ABI as i8",
        "    if not np.isin(out, (0, 1)).all():",
        '        sys.exit(f"a bool result holds {np.unique(out)}")',
        "    out = out.astype(np.bool_)",
        'print("iree: ", out.dtype, out.shape, np.array2string(out, threshold=16))',
        *_judged("out"),
    ]
    return _script(lines)


def iree_files(entry: Entry, directory: Path) -> list[Path]:
    """``module.mlir`` (the tensor-ABI module), the arguments (``x*.npy``), ``iree_check.py``
    for a wrong answer, and ``commands.sh``: iree-compile, iree-run-module, the check."""
    from compiler import iree

    module, arrays = iree_inputs(entry)
    (directory / "module.mlir").write_text(module)
    iree.write_inputs(directory, arrays)
    written = [directory / "module.mlir"]
    written += [directory / name for name, _, _ in iree.input_files(arrays)]
    compile_line, run_line = iree_commands(entry, arrays)
    lines = [
        "#!/bin/sh",
        "# Reproduces the failure with IREE's own tools (pip install iree-base-compiler==3.13.*",
        "# iree-base-runtime==3.13.*, which put iree-compile and iree-run-module on the PATH).",
        'cd "$(dirname "$0")"',
        "set -e",
        compile_line,
        run_line,
    ]
    wrong = entry.signature.get("oracle") != "error-path"
    script = iree_check_script(entry) if wrong else ""
    if script:
        (directory / "iree_check.py").write_text(script)
        written.append(directory / "iree_check.py")
        lines.append("python iree_check.py")
    (directory / "commands.sh").write_text("\n".join(lines) + "\n")
    (directory / "commands.sh").chmod(0o755)
    return written + [directory / "commands.sh"]


def iree_section(entry: Entry) -> list[str]:
    """Markdown lines: the known IREE issue the entry is (where its root cause lives)."""
    issue = attribution_of(entry).get("mlir", {}).get("known_issue")
    if not issue:
        return []
    return [
        "",
        f"## Known issue: {issue.get('name', '')}",
        "",
        f"- Root cause: {issue.get('cause', '')}",
        f"- Upstream: {issue.get('upstream', '')}",
        f"- Workaround: {issue.get('workaround', '')}",
    ]


__all__ = ["iree_check_script", "iree_commands", "iree_files", "iree_inputs", "iree_section"]
