"""Pinning and reducing MLIR crashes: the single failing pass, the IR right before it, the
assertion text, and a minimal module that still crashes the same way.

Everything runs the tools as subprocesses (an assertion in a pass aborts the process running it):

- ``pin_crash`` runs ``mlir-opt`` once with the pass manager's crash reproducer
  (``--mlir-disable-threading --mlir-pass-pipeline-crash-reproducer=FILE
  --mlir-pass-pipeline-local-reproducer``), reads the failing pass from the reproducer's
  ``mlir_reproducer`` trailer and keeps the module before it, then re-runs only that pass to
  confirm it crashes on its own and to collect stack frames;
- ``reduce_crash`` shrinks that module with one strict interestingness test (only the pinned pass;
  interesting iff ``mlir-opt`` dies by a signal *and* prints the same assertion, without the
  source path and line), first with ``mlir-reduce`` and then with a structural reducer written
  with the Python bindings (``mlir_reduce.py``), because ``mlir-reduce`` cannot delete an op that
  still has uses. A looser test ("any crash") would reduce into a different bug of the same pass.

Commands are stored naming tools only (``mlir-opt ...``), never machine paths.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from compiler.tools import tool_path as _find_tool

from .mlir_reduce import structural_reduce


def tool_path(name: str) -> str:
    """The tool's executable (from the project's tool wheels, then PATH), or its bare name."""
    return _find_tool(name) or name


def _env(symbolize: bool) -> dict[str, str]:
    env = dict(os.environ)
    if not symbolize:
        # Symbolizing the stack dump costs ~0.2 s per crash; signatures only need the assertion.
        env["LLVM_DISABLE_SYMBOLIZATION"] = "1"
    return env


def run(argv: Sequence[str], timeout_s: float, symbolize: bool = False, stdin: str | None = None):
    """subprocess.run with captured text output; a timeout gives returncode None."""
    try:
        proc = subprocess.run(
            list(argv), input=stdin, capture_output=True, text=True, timeout=timeout_s,
            env=_env(symbolize), errors="replace",
        )  # fmt: skip
        return proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
        return None, out or "", err or ""


# --------------------------------------------------------------------------------------------
# Crash signatures

_REPRO_TRAILER = re.compile(r"\{-#.*?#-\}\s*$", flags=re.S)
_FRAME = re.compile(r"^\s*#?\d+\s+0x[0-9a-f]+\s+(.*)$")
_NOISE = (
    "PrintStackTrace",
    "SignalHandler",
    "libc.so",
    "pthread_kill",
    " raise ",
    "raise ",
    "abort",
    "__assert",
    "_nl_load_domain",
    "Signals.cpp",
    "gsignal",
)


def crash_message(stderr: str) -> str | None:
    """The first ``Assertion ... failed.`` / ``LLVM ERROR:`` line, without the program-name
    prefix (``mlir-opt: `` or ``python: ``), so it compares across tools."""
    for line in stderr.splitlines():
        if "LLVM ERROR" in line:
            return line[line.index("LLVM ERROR") :].strip()
        if "Assertion" in line:
            # "<prog>: <file>:<line>: <function>: Assertion `...' failed."
            m = re.match(r"^[^:/]*: (/.*)$", line)
            return (m.group(1) if m else line).strip()
    return None


def crash_needle(message: str) -> str:
    """The part of a crash message to match on: without the source path and line number
    (``/project/llvm-project/...MemRefOps.cpp:1020: ``), which move between LLVM builds, but
    with the function, the condition and the message."""
    return re.sub(r"^/\S+:\d+: ", "", message.strip())


def stack_frames(stderr: str, count: int = 6) -> list[str]:
    """The first ``count`` frames of an LLVM stack dump below the signal/abort machinery."""
    frames = []
    for line in stderr.splitlines():
        m = _FRAME.match(line)
        if not m:
            continue
        what = m.group(1)
        what = re.sub(r"\s*\(/[^)]*\)\s*$", "", what)  # "(/path/libMLIR.so+0x..)"
        if not what or any(n in what for n in _NOISE):
            continue
        frames.append(what.strip())
        if len(frames) == count:
            break
    return frames


def parse_reproducer(text: str) -> tuple[str | None, str]:
    """(pipeline, module text) from a crash reproducer file: the pipeline comes from the
    ``mlir_reproducer`` external resource, the module is the file without that trailer."""
    m = re.search(r"mlir_reproducer\s*:\s*\{.*?pipeline\s*:\s*\"((?:[^\"\\]|\\.)*)\"", text, re.S)
    pipeline = m.group(1).encode().decode("unicode_escape") if m else None
    module = _REPRO_TRAILER.sub("", text).rstrip() + "\n"
    return pipeline, module


def crash_command(pass_pipeline: str, filename: str = "min.mlir") -> str:
    """One-line reproduction, tools by name only."""
    return f"mlir-opt --pass-pipeline={shlex.quote(pass_pipeline)} {filename}"


def pin_crash(
    module_text: str, pipeline: str, timeout_s: float = 120, workdir: str | None = None
) -> dict[str, Any]:
    """Pin a crash of ``mlir-opt --pass-pipeline=PIPELINE`` on ``module_text`` to one pass.

    Returns a dict with:
      crashed         -- False when mlir-opt exits 0 (nothing else is filled in then)
      kind            -- "assertion" | "fatal-error" | "signal" | "pass-failure" | "parse" |
                         "timeout"
      pass_pipeline   -- the failing pass, e.g. "builtin.module(expand-strided-metadata)"
      pre_pass_module -- the IR right before that pass (the reproducer without its trailer)
      assertion       -- the first Assertion / LLVM ERROR line (program prefix removed)
      frames          -- a few symbolized stack frames from the confirming run
      confirmed       -- the pinned pass alone, on pre_pass_module, crashes with the same text
      command         -- crash_command(pass_pipeline, "pre.mlir")
      seconds         -- wall time of pinning (both runs)
    """
    t0 = time.monotonic()
    own = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="pin-")
    try:
        src = os.path.join(workdir, "input.mlir")
        repro = os.path.join(workdir, "reproducer.mlir")
        with open(src, "w") as f:
            f.write(module_text)
        if os.path.exists(repro):
            os.unlink(repro)
        argv = [
            tool_path("mlir-opt"),
            "--mlir-disable-threading",
            f"--mlir-pass-pipeline-crash-reproducer={repro}",
            "--mlir-pass-pipeline-local-reproducer",
            f"--pass-pipeline={pipeline}",
            src,
            "-o",
            os.devnull,
        ]
        rc, _, err = run(argv, timeout_s)
        result: dict[str, Any] = {"crashed": rc != 0, "returncode": rc, "stderr": err[-4000:]}
        if rc == 0:
            result["seconds"] = round(time.monotonic() - t0, 3)
            return result
        if rc is None:
            result.update(kind="timeout", crashed=True)
            result["seconds"] = round(time.monotonic() - t0, 3)
            return result
        message = crash_message(err)
        pass_pipeline, pre = None, module_text
        if os.path.exists(repro):
            with open(repro) as f:
                pass_pipeline, pre = parse_reproducer(f.read())
        if message and message.startswith("LLVM ERROR"):
            kind = "fatal-error"
        elif message:
            kind = "assertion"
        elif pass_pipeline and "Pipeline failed while executing" in err:
            kind = "pass-failure"  # a pass signalled failure (an error diagnostic), no crash
            message = next(
                (
                    ln.split("error: ", 1)[1]
                    for ln in err.splitlines()
                    if "error: " in ln and "Failures have been detected" not in ln
                ),
                None,
            )
        elif pass_pipeline is None:
            kind = "parse"
        else:
            kind = "signal"
        result.update(
            kind=kind, pass_pipeline=pass_pipeline, pre_pass_module=pre, assertion=message
        )
        # Confirm on its own, with a symbolized stack (no crash recovery -> real abort).
        if pass_pipeline:
            pre_path = os.path.join(workdir, "pre.mlir")
            with open(pre_path, "w") as f:
                f.write(pre)
            rc2, _, err2 = run(
                [
                    tool_path("mlir-opt"),
                    "--mlir-disable-threading",
                    f"--pass-pipeline={pass_pipeline}",
                    pre_path,
                    "-o",
                    os.devnull,
                ],
                timeout_s,
                symbolize=True,
            )
            frames = stack_frames(err2)
            if kind == "signal" and not message and frames:
                result["assertion"] = message = frames[0]
            same = message is not None and message in (
                crash_message(err2) or "\n".join(frames) if kind != "pass-failure" else err2
            )
            confirmed = bool(rc2 and (rc2 < 0 or kind in ("fatal-error", "pass-failure")) and same)
            # The reproducer spells every option out; keep the short spelling if it still crashes
            # the same way (only default options were printed).
            short = re.sub(r"\{[^{}]*\}", "", pass_pipeline)
            if confirmed and short != pass_pipeline and message:
                rc3, _, err3 = run(
                    [
                        tool_path("mlir-opt"),
                        "--mlir-disable-threading",
                        f"--pass-pipeline={short}",
                        pre_path,
                        "-o",
                        os.devnull,
                    ],
                    timeout_s,
                )
                if rc3 is not None and rc3 < 0 and message in err3:
                    result["pass_pipeline_full"] = pass_pipeline
                    result["pass_pipeline"] = pass_pipeline = short
            result.update(
                confirmed=confirmed,
                confirm_returncode=rc2,
                frames=frames,
                command=crash_command(pass_pipeline, "pre.mlir"),
            )
        result["seconds"] = round(time.monotonic() - t0, 3)
        return result
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Interestingness

_SCRIPT = r"""#!{python} -SE
# Interestingness test for mlir-reduce (and for reduce.py's structural reducer).
# mlir-reduce calls it as SCRIPT [test-arg...] FILE: interesting <=> exit status != 0.
# Interesting iff running only the pinned pass on FILE kills mlir-opt by a signal (abort)
# and its stderr contains the pinned assertion text. Anything else (verifier error, other
# crash, pass failure, timeout, an exception in this script) exits 0 = not interesting.
# Ctrl-C to the session's process group stops it silently, as it stops mlir-opt.
import os, signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
MLIR_OPT = {mlir_opt!r}
PIPELINE = {pipeline!r}
NEEDLE = {needle!r}
FATAL = {fatal!r}
TIMEOUT = {timeout!r}
try:
    env = dict(os.environ, LLVM_DISABLE_SYMBOLIZATION="1")
    p = subprocess.run([MLIR_OPT, "--mlir-disable-threading", "--pass-pipeline=" + PIPELINE,
                        sys.argv[-1], "-o", os.devnull], capture_output=True, text=True,
                       errors="replace", timeout=TIMEOUT, env=env)
    died = p.returncode < 0 or (FATAL and p.returncode != 0)
    interesting = died and NEEDLE in p.stderr
except Exception:
    interesting = False
{count}sys.exit(1 if interesting else 0)
"""


def write_interestingness_script(
    path: str,
    pass_pipeline: str,
    needle: str,
    timeout_s: float = 20,
    portable: bool = False,
    count_file: str | None = None,
) -> str:
    """Write the interestingness script; ``portable`` names tools by name (for storing)."""
    count = ""
    if count_file:
        count = f"open({count_file!r}, 'a').write('1' if interesting else '0')\n"
    text = _SCRIPT.format(
        python="/usr/bin/env python3" if portable else sys.executable,
        mlir_opt="mlir-opt" if portable else tool_path("mlir-opt"),
        pipeline=pass_pipeline,
        needle=needle,
        fatal=needle.startswith("LLVM ERROR"),
        timeout=timeout_s,
        count=count,
    )
    if portable:
        text = text.replace("#!/usr/bin/env python3 -SE", "#!/usr/bin/env python3")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


class Interestingness:
    """Calls the script on a module text; counts calls."""

    def __init__(self, script: str, workdir: str) -> None:
        self.script, self.workdir, self.calls = script, workdir, 0
        self.path = os.path.join(workdir, "candidate.mlir")

    def __call__(self, text: str) -> bool:
        self.calls += 1
        with open(self.path, "w") as f:
            f.write(text)
        return subprocess.run([self.script, self.path]).returncode == 1


# --------------------------------------------------------------------------------------------
# Stage 1: mlir-reduce


def mlir_reduce_command(
    script: str = "./interesting.py", src: str = "pre.mlir", out: str = "reduced.mlir"
) -> list[str]:
    """The mlir-reduce invocation (MLIR 22: the tester is an option of the reduction pass)."""
    return ["mlir-reduce", src, f"-reduction-tree=traversal-mode=0 test={script}", "-o", out]


def run_mlir_reduce(text: str, script: str, workdir: str, timeout_s: float) -> dict[str, Any]:
    src, out = os.path.join(workdir, "mr_in.mlir"), os.path.join(workdir, "mr_out.mlir")
    with open(src, "w") as f:
        f.write(text)
    argv = mlir_reduce_command(script, src, out)
    argv[0] = tool_path("mlir-reduce")
    t0 = time.monotonic()
    rc, _, err = run(argv, timeout_s)
    seconds = round(time.monotonic() - t0, 3)
    reduced = text
    if rc == 0 and os.path.exists(out):
        with open(out) as f:
            reduced = f.read().rstrip() + "\n"
    return {
        "returncode": rc,
        "seconds": seconds,
        "text": reduced,
        "stderr_tail": "\n".join(err.splitlines()[-5:]),
    }


# --------------------------------------------------------------------------------------------
# reduce_crash


def reduce_crash(
    module_text: str,
    pass_pipeline: str,
    assertion: str,
    budget_s: float = 60,
    workdir: str | None = None,
    stats: dict | None = None,
    stages: Sequence[str] = ("mlir-reduce", "structural"),
) -> str:
    """Reduce ``module_text`` (normally pin_crash()["pre_pass_module"]) while
    ``mlir-opt --pass-pipeline=PASS_PIPELINE`` still aborts with ``assertion`` in stderr.

    ``budget_s`` bounds the whole reduction (mlir-reduce gets at most half of it; the structural
    stage stops at the deadline with the best module so far). Returns the reduced module text;
    ``stats`` (if given) receives per-stage sizes, times and interestingness-call counts.
    Raises ValueError when the input itself is not interesting.
    """
    t0 = time.monotonic()
    deadline = t0 + budget_s
    own = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="reduce-")
    stats = stats if stats is not None else {}
    try:
        calls_file = os.path.join(workdir, "calls.txt")
        script = write_interestingness_script(
            os.path.join(workdir, "interesting.py"),
            pass_pipeline,
            crash_needle(assertion),
            count_file=calls_file,
        )
        test = Interestingness(script, workdir)
        if not test(module_text):
            raise ValueError("the input module is not interesting (no such crash)")
        best = module_text
        stats["input_lines"] = _lines(best)
        stats["stages"] = []
        for stage in stages:
            before, s0 = best, time.monotonic()
            if os.path.exists(calls_file):
                os.unlink(calls_file)
            if stage == "mlir-reduce":
                left = deadline - time.monotonic()
                r = run_mlir_reduce(best, script, workdir, timeout_s=max(1.0, left / 2))
                if r["returncode"] == 0 and test(r["text"]):
                    best = r["text"]
                info = {"returncode": r["returncode"], "stderr_tail": r["stderr_tail"]}
            elif stage == "structural":
                log: list[str] = []
                best = structural_reduce(best, test, deadline, log)
                info = {"accepted": log}
            else:
                raise ValueError(stage)
            calls = open(calls_file).read() if os.path.exists(calls_file) else ""
            stats["stages"].append(
                {
                    "stage": stage,
                    "seconds": round(time.monotonic() - s0, 3),
                    "lines_before": _lines(before),
                    "lines_after": _lines(best),
                    "chars_before": len(before),
                    "chars_after": len(best),
                    "script_calls": len(calls),
                    "interesting_calls": calls.count("1"),
                    **info,
                }
            )
        if not test(best):
            raise AssertionError("reduced module is no longer interesting")
        stats["output_lines"] = _lines(best)
        stats["seconds"] = round(time.monotonic() - t0, 3)
        return best
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)


def _lines(text: str) -> int:
    return len([ln for ln in text.splitlines() if ln.strip()])


__all__ = [
    "crash_command",
    "crash_message",
    "crash_needle",
    "mlir_reduce_command",
    "parse_reproducer",
    "pin_crash",
    "reduce_crash",
    "run",
    "stack_frames",
    "tool_path",
    "write_interestingness_script",
]
