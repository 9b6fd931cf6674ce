"""Pinning and reducing crashes in LLVM: the JIT's stage ``llvm``, after the last MLIR pass.

MLIR's ExecutionEngine translates the lowered module to LLVM IR, optimizes it at the target's
level and generates code for this machine's CPU, all inside the process it kills. ``pin`` replays
the three steps with LLVM's own tools, each a subprocess, to name the one that dies:
``mlir-translate --mlir-to-llvmir``, ``opt -O<n>`` and ``llc -O2 -code-model=large``, both for the
JIT's CPU (``-mcpu=native``, with bfloat16 in the module ``-mattr=-avx512bf16,-avxneconvert``:
``runtime.jit_step_arguments``; the JIT generates code at -O2 whatever the level, and at -O0 on
functions marked optnone, ``runtime.jit_input``). ``reduce`` then shrinks that tool's input with
``llvm-reduce`` (interesting: the same tool dies with the same ``LLVM ERROR``/assertion and the
same legalizer line before it, node numbers aside), and looks for the smallest description of
the CPU that still crashes: a generic x86-64, else one feature of this CPU (``-mtriple=x86_64--
-mattr=+avx512bf16``), so the stored command reproduces the crash on any machine. Commands name
tools only (``llc ...``), never machine paths.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import sys
import tempfile
import time
from typing import Any

from .mlir_crash import crash_message, crash_needle, run, stack_frames, tool_path

#: The steps of the JIT, in order (their arguments: ``runtime.jit_step_arguments``).
STEPS = ("mlir-translate", "opt", "llc")
#: A SelectionDAG node number in a legalizer's message (``t1148: ``, `` t1146``): it moves with
#: any change of the input, so matching drops it.
_NODE = r"\s*t\d+(:|\b)"

#: /proc/cpuinfo flags that name vector ISA features, and how LLVM spells a few of them.
_ISA = re.compile(r"^(avx|amx|sse|ssse|fma|f16c|vaes|vpclmul|gfni)")
_SPELLED = {"sse4_1": "sse4.1", "sse4_2": "sse4.2", "pclmulqdq": "pclmul"}


def host_features(cpuinfo: str = "/proc/cpuinfo") -> list[str]:
    """This CPU's vector ISA features in LLVM's spelling (``avx512_bf16`` -> ``avx512bf16``)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return []
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines()
                  if ln.startswith("flags")), [])  # fmt: skip
    found = []
    for flag in flags:
        if not _ISA.match(flag):
            continue
        if flag in _SPELLED:
            found.append(_SPELLED[flag])
        elif flag.startswith("amx_"):
            found.append(flag.replace("_", "-"))
        else:
            found.append(flag.replace("_", ""))
    return sorted(set(found))


def signature(stderr: str) -> str | None:
    """What a crash of an LLVM tool says, for matching: the ``LLVM ERROR``/assertion line and,
    for a legalizer's "Do not know how to ..." error, the node line printed before it with its
    node numbers dropped (``SoftPromoteHalfOperand Op #0: v8bf16 = scalar_to_vector``)."""
    message = crash_message(stderr)
    if message is None:
        return None
    lines = stderr.splitlines()
    index = next((i for i, ln in enumerate(lines) if "LLVM ERROR" in ln), 0)
    before = next((ln.strip() for ln in reversed(lines[:index]) if ln.strip()), "")
    if before and re.match(r"^\w+ Op #\d+: ", before):
        before = re.sub(_NODE, "", before).strip()
        return f"{before}\n{crash_needle(message)}"
    return crash_needle(message)


def _crashed(returncode: int | None) -> bool:
    return returncode is not None and (returncode < 0 or returncode >= 128)


def pin(
    lowered: str, level: int, timeout_s: float = 120, cpu: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """Replay the JIT's steps on the lowered module as the JIT gets it (``runtime.jit_input``;
    ``opt`` and ``llc`` for ``cpu``, by default the JIT's: ``runtime.jit_cpu_arguments``); the
    first tool that dies, its input and arguments, and what it said (``crashed`` False: every
    tool passed)."""
    from compiler.runtime import jit_cpu_arguments, jit_input, jit_step_arguments

    cpu = jit_cpu_arguments(lowered) if cpu is None else list(cpu)
    with tempfile.TemporaryDirectory(prefix="llvm-pin-") as work:
        text, suffix = jit_input(lowered, level), ".mlir"  # at -O0: functions marked optnone
        for tool in STEPS:
            source = os.path.join(work, f"input{suffix}")
            with open(source, "w") as handle:
                handle.write(text)
            output = os.path.join(work, "output.ll" if tool != "llc" else "output.s")
            arguments = jit_step_arguments(tool, level, cpu)
            code, _, err = run([tool_path(tool), *arguments, source, "-o", output], timeout_s)
            if code != 0:
                return {
                    "crashed": _crashed(code),
                    "tool": tool,
                    "arguments": arguments,
                    "input": text,
                    "input_suffix": suffix,
                    "returncode": code,
                    "message": crash_message(err) or err.strip()[-500:],
                    "signature": signature(err),
                    "frames": stack_frames(err),
                }
            if tool != "llc":
                with open(output) as handle:  # "; ModuleID = '<work>/input.mlir'": no paths
                    text, suffix = handle.read().replace(work + os.sep, ""), ".ll"
    return {"crashed": False}


_SCRIPT = """#!{python}
# Interesting (exit 0, llvm-reduce's convention) iff {tool} dies by a signal with the same
# message: {needle!r}; Ctrl-C to the session's process group stops it silently.
import re, signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
try:
    proc = subprocess.run([{tool_path!r}, *{arguments!r}, sys.argv[1], "-o", "/dev/null"],
                          capture_output=True, text=True, timeout={timeout})
except subprocess.TimeoutExpired:
    sys.exit(1)
err = re.sub({node!r}, "", proc.stderr)
died = proc.returncode < 0 or proc.returncode >= 128
sys.exit(0 if died and all(part in err for part in {parts!r}) else 1)
"""


def interestingness(
    path: str, tool: str, arguments: list[str], needle: str, timeout_s: float
) -> str:
    """Write the script and return its path."""
    parts = [re.sub(_NODE, "", p).strip() for p in needle.splitlines() if p.strip()]
    text = _SCRIPT.format(
        python=sys.executable,
        node=_NODE,
        tool=tool,
        tool_path=tool_path(tool),
        arguments=list(arguments),
        needle=needle,
        parts=parts,
        timeout=timeout_s,
    )
    with open(path, "w") as handle:
        handle.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _still(tool: str, arguments: list[str], needle: str, text: str, work: str) -> bool:
    script = interestingness(os.path.join(work, "check.py"), tool, arguments, needle, 60)
    source = os.path.join(work, "check.ll")
    with open(source, "w") as handle:
        handle.write(text)
    code, _, _ = run([script, source], 90)
    return code == 0


def reduce(pinned: dict[str, Any], budget_s: float = 120) -> dict[str, Any]:
    """The pinned tool's input reduced by ``llvm-reduce``, and the most portable arguments that
    still crash it (``arguments``); ``command`` names the tool; ``seconds``, line counts."""
    start = time.perf_counter()
    tool, arguments, needle = pinned["tool"], list(pinned["arguments"]), pinned["signature"]
    text = pinned["input"]
    found: dict[str, Any] = {"input_lines": len(text.splitlines())}
    with tempfile.TemporaryDirectory(prefix="llvm-reduce-") as work:
        if pinned["input_suffix"] == ".ll":
            script = interestingness(os.path.join(work, "test.py"), tool, arguments, needle, 60)
            source, output = os.path.join(work, "input.ll"), os.path.join(work, "reduced.ll")
            with open(source, "w") as handle:
                handle.write(text)
            code, _, err = run(
                [tool_path("llvm-reduce"), f"--test={script}", source, "-o", output],
                max(10.0, budget_s),
            )
            if code == 0 and os.path.exists(output):
                with open(output) as handle:
                    text = handle.read()
            else:
                found["reduction_error"] = (err or f"llvm-reduce exit {code}").strip()[-500:]
        if tool in ("opt", "llc") and "-mcpu=native" in arguments:
            # The level, the code model, the features the JIT drops (bfloat16's conversions).
            codegen = [a for a in arguments if a != "-mcpu=native" and "-mtriple" not in a]
            candidates = [["-mtriple=x86_64--"]]
            candidates += [["-mtriple=x86_64--", f"-mattr=+{f}"] for f in host_features()]
            for cpu in candidates:
                if time.perf_counter() - start > budget_s * 1.5:
                    break
                if _still(tool, codegen + cpu, needle, text, work):
                    arguments = codegen + cpu
                    break
    found.update(
        module=text,
        arguments=arguments,
        output_lines=len(text.splitlines()),
        seconds=round(time.perf_counter() - start, 2),
        command=command(tool, arguments, "min" + pinned["input_suffix"]),
    )
    return found


def command(tool: str, arguments: list[str], filename: str) -> str:
    """One line reproducing the crash, the tool by name."""
    return " ".join([tool, *map(shlex.quote, arguments), filename, "-o", "/dev/null"])


__all__ = ["command", "host_features", "pin", "reduce", "signature"]
