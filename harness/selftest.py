"""Prove the harness finds bugs: plant known bugs in a scratch copy of the compiler, fuzz each.

For every mutation the ``compiler`` package is copied to a temporary directory, one exact text
replacement is applied (it must match exactly once, so a refactoring that silently disarms a
mutation fails loudly), and a fuzz session runs in a subprocess with the scratch copy first on
``PYTHONPATH``, stopping at the first finding. A finding only counts as *caught* if its minimized
case passes on the real compiler (replayed here): the harness found the planted bug, not some
other one. The table gives time to first detection and the size of the minimized case.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .interrupt import Interrupted, run_child
from .loading import COMPILER_DOES_NOT_IMPORT

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # relative to the compiler package
    old: str
    new: str
    description: str


MUTATIONS = (
    Mutation(
        "inverted-causal-mask",
        "lower/emit.py",
        '"%visible = arith.cmpi ule, %col, %row : index"',
        '"%visible = arith.cmpi uge, %col, %row : index"',
        "the mask hides the past instead of the future",
    ),
    Mutation(
        "swapped-transpose-permutation",
        "lower/emit.py",
        'perm = ", ".join(str(p) for p in node.attrs["perm"])',
        'perm = ", ".join(str(int(p)) for p in np.argsort(node.attrs["perm"]))',
        "linalg.transpose gets the inverse permutation",
    ),
    Mutation(
        "off-by-one-slice",
        "lower/emit.py",
        "{fmt(a['offsets'])}",
        "{fmt(tuple(max(o - 1, 0) for o in a['offsets']))}",
        "extract_slice starts one element early",
    ),
    Mutation(
        "reduction-wrong-axis",
        "frontend/lang.py",
        "    axes = normalize_axes(axis, x.ndim, name)\n",
        "    axes = tuple(sorted(x.ndim - 1 - a for a in normalize_axes(axis, x.ndim, name)))\n",
        "reductions mirror their axes",
    ),
    Mutation(
        "matmul-without-zero-fill",
        "lower/emit.py",
        'init = self.filled(node.shape, dtype, 0)\n        name = self.fresh("mm")',
        'init = self.empty(node.shape, dtype)\n        name = self.fresh("mm")',
        "matmul accumulates into an uninitialized buffer",
    ),
    Mutation(
        "lost-float64-promotion",
        "frontend/tensor.py",
        "    if isinstance(value, (bool, int, float, np.generic)):\n",
        "    if isinstance(value, np.generic):\n        value = value.item()\n"
        "    if isinstance(value, (bool, int, float, np.generic)):\n",
        "NumPy scalars are treated as weak Python scalars",
    ),
    # A constant on the left is Python's reflected operator: rare in random programs (7 in
    # 2000 had one left of a subtract), so the focus asks for it (``CONST_LEFT``).
    Mutation(
        "reflected-subtract-unswapped",
        "frontend/tensor.py",
        '__sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)',
        '__sub__, __rsub__ = _binary("subtract"), _binary("subtract", False)',
        "3.0 - x is traced as x - 3.0 (the reflected operator keeps its operands' order)",
    ),
    Mutation(
        "wrong-broadcast-map",
        "lower/emit.py",
        "    lead = len(result) - len(operand)\n",
        "    lead = 0\n",
        "broadcast operands aligned left instead of right",
    ),
    Mutation(
        "wrong-blas-leading-dimension",
        "lower/blas.py",
        "%{p}_ldr = arith.select %{p}_r1, %{p}_cols, {s0} : index",
        "%{p}_ldr = arith.select %{p}_r1, %{p}_cols, %{p}_cols : index",
        "gemm gets the column count as leading dimension, not the row stride",
    ),
    # Right answers, slowly: only the blas oracle's gemm count sees it.
    Mutation(
        "blas-helper-declines",
        "lower/blas.py",
        "%{p}_unitr = arith.ori %{p}_c1, %{p}_s1u : i1",
        "%{p}_unitr = arith.andi %{p}_c1, %{p}_s1u : i1",
        "the BLAS helper takes a matrix as row-major only when it has one column",
    ),
    Mutation(
        "softmax-without-max-subtraction",
        "ops.py",
        "shifted = xp.exp(x - xp.max(x, axis=axis, keepdims=True))",
        "shifted = xp.exp(x)",
        "softmax exponentiates unshifted inputs",
    ),
    # The @jit specialization cache (found by the jit-sequence oracle: one function called in
    # sequence with the same shapes).
    Mutation(
        "jit-cache-ignores-dtype",
        "api.py",
        "shapes = tuple((a.shape, a.dtype.str) for a in arrays)",
        "shapes = tuple(a.shape for a in arrays)",
        "the specialization key keeps each array's shape but not its dtype",
    ),
    Mutation(
        "jit-cache-ignores-static-values",
        "frontend/pytree.py",
        "self.key = _static_key(value)",
        "self.key = type(value)",
        "a static argument enters the specialization key by its type, not its value",
    ),
    Mutation(
        "jit-cache-ignores-tree",
        "api.py",
        "key = (self._id, structure, shapes,",
        "key = (self._id, tuple(statics(structure)), shapes,",
        "the specialization key keeps the static values but not the argument tree",
    ),
    Mutation(
        "model-blocks-in-name-order",
        "model.py",
        '    for i in range(layers):\n        p = f"h.{i}"',
        '    for i in sorted(range(layers), key=str):\n        p = f"h.{i}"',
        "the checkpoint loader takes the blocks in the order of their names (h.10 before h.2)",
    ),
    Mutation(
        "jit-captured-array-copied",
        "api.py",
        "self.captured = list(trace.captured.values())",
        "self.captured = [(a.copy(), n) for a, n in trace.captured.values()]",
        "a captured array is copied at trace time: changes made in place are not seen",
    ),
    Mutation(
        "captured-views-merged",
        "frontend/trace.py",
        "        key = id(array)\n",
        "        key = array.__array_interface__['data'][0]\n",
        "captured arrays are told apart by their buffer's address: a view of a captured array "
        "that starts where it does (W[:1], W.T) is taken for it",
    ),
    # Two results of one kernel: only the tupled oracle calls a program twice in one function.
    Mutation(
        "every-output-restrict",
        "lower/emit.py",
        'anchored = len(outputs) - 1 if workarounds.enabled("one-restrict-output") else None',
        "anchored = None",
        "every result may be computed in its output buffer (MLIR's empty tensor elimination then "
        "copies one result out twice)",
    ),
    # Every answer stays right: only the memory oracle counts the blocks a kernel leaves behind.
    Mutation(
        "no-deallocation",
        "pipelines.py",
        'BUFFERIZED = Stage("bufferized", BUFFERIZE, ',
        'BUFFERIZED = Stage("bufferized", BUFFERIZE.replace('
        '"buffer-deallocation-pipeline, ", ""), ',
        "the bufferized stage runs no deallocation: cpu-loops' and cpu-blas' temporaries leak",
    ),
    # Every answer stays right: only the guards around the buffers see the extra matrix written.
    Mutation(
        "batch-gemm-overrun",
        "lower/blas.py",
        "    scf.for %i = %c0 to %batch step %c1 {{",
        "    %past = arith.addi %batch, %c1 : index\n    scf.for %i = %c0 to %past step %c1 {{",
        "the BLAS stage's batched helper runs one gemm past the last matrix: it writes (and "
        "reads) a whole matrix beyond the end of each buffer",
    ),
    # Every answer stays right: only the arguments oracle calls a specialization with arrays it
    # was not made for (a mutation-testing run judged this one likely equivalent).
    Mutation(
        "compiled-accepts-misfits",
        "api.py",
        "if array.shape != node.shape or array.dtype != node.dtype:",
        "if array.shape != node.shape and array.dtype != node.dtype:",
        "a compiled specialization runs on an array of another shape, or of another dtype, as "
        "long as the other matches",
    ),
    # Right for every call alone: only calls from threads at once (the determinism oracle's
    # race check), or a jitted function called inside another (the tupled oracle's nested
    # call), tell these apart.
    Mutation(
        "kernel-calls-unserialized",
        "runtime.py",
        "        self._lock = threading.Lock()\n",
        "        self._lock = contextlib.nullcontext()\n",
        "a kernel's calls from threads at once are not serialized: they share its descriptors",
    ),
    Mutation(
        "nested-jit-needs-all-traced",
        "api.py",
        "if any(isinstance(leaf, Tensor) for leaf in leaves):",
        "if all(isinstance(leaf, Tensor) for leaf in leaves):",
        "a jitted function called inside another inlines only when every array argument is "
        "traced: with a captured NumPy array among them it is compiled on its own, and fails",
    ),
)


def copy_compiler(directory: Path, source: Path = ROOT) -> Path:
    """A copy of the ``compiler`` package of ``source`` under ``directory``; returns
    ``directory`` (the folder to put first on ``PYTHONPATH``)."""
    shutil.copytree(
        source / "compiler", directory / "compiler",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )  # fmt: skip
    return directory


def apply(mutation: Mutation, directory: Path) -> Path:
    """A mutated copy of the compiler package under ``directory``; returns its parent."""
    path = copy_compiler(directory) / "compiler" / mutation.file
    text = path.read_text()
    count = text.count(mutation.old)
    if count != 1:
        raise RuntimeError(
            f"mutation {mutation.name}: expected exactly one match in {mutation.file}, "
            f"found {count}; update harness/selftest.py"
        )
    path.write_text(text.replace(mutation.old, mutation.new))
    return directory


def _replay_on_real_compiler(paths: list[str], real: Path = ROOT) -> list[str]:
    """Which of the findings pass on the unmutated compiler (i.e. were the planted bug); the
    unmutated compiler is the one in ``real`` (a snapshot of the repository's, say)."""
    from .replay import PASSING

    states = _replayed_on_real_compiler(paths, real)
    return [path for path, state in states.items() if state in PASSING]


def _replayed_on_real_compiler(paths: list[str], real: Path = ROOT) -> dict[str, str]:
    """Each finding's replay state (``harness.replay.STATES``) on the unmutated compiler in
    ``real``: passing there (``fixed-now``, ``still-fixed``) it was the planted bug; failing
    there too (``still-open``), the real compiler's; ``not-run``: not judged (e.g. a finding
    that did not reproduce alone even with the bug)."""
    if not paths:
        return {}
    # ``python -m`` puts the cwd first on sys.path: it must be the folder of the real compiler.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(dict.fromkeys([str(real), str(ROOT)])))
    proc = run_child(
        [sys.executable, "-m", "harness", "replay", "--no-jax", *paths],
        cwd=real,
        env=env,
        timeout=600,
    )
    from .replay import STATES

    states = {}
    for line in proc.stdout.splitlines():
        state, _, rest = line.partition(" ")
        if state in STATES and rest.strip():
            states[rest.split("  (")[0].strip()] = state
    return states


def fuzz_command(corpus: Path, seconds: float, seed: int, *extra: str) -> list[str]:
    """A quiet, report-less ``python -m harness fuzz`` into ``corpus`` (for scratch sessions)."""
    return [
        sys.executable, "-m", "harness", "fuzz", "--seconds", str(seconds), "--corpus",
        str(corpus), "--report", "", "--seed", str(seed), "--quiet", *extra,
    ]  # fmt: skip


def scratch_environment(scratch: Path) -> dict[str, str]:
    """The environment that imports the mutated compiler in ``scratch`` before the real one."""
    return dict(os.environ, PYTHONPATH=f"{scratch}{os.pathsep}{ROOT}")


#: A session that stopped at a finding the real compiler shares goes on (another seed, the
#: shared entries kept in its corpus, so known) while at least this much of its budget is left.
CONTINUE_SECONDS = 5.0


def fuzz_scratch(
    scratch: Path, work: Path, seconds: float, seed: int, workers: int, real: Path = ROOT
) -> dict:
    """Fuzz the compiler in ``scratch`` until the first finding (files go in ``work``); a
    finding counts only if its minimized case passes on the compiler in ``real``. A finding
    the real compiler shares (its own bug, or a false finding) does not end the budget: the
    fuzzing goes on with another seed for the seconds left, that entry known (a mutation run
    at seed 4801 had every survivor's session stop at 44-53 s at one such finding)."""
    total: dict[str, Any] = {"cases": 0, "other_findings": 0, "unjudged_findings": 0}
    used = wall = 0.0
    harness_errors: list[str] = []
    attempt = 0
    while True:
        one = _fuzz_once(scratch, work, seconds - used, seed + 7919 * attempt, workers, real)
        wall += one["wall"]
        if "error" in one:  # stillborn, or the session wrote no summary
            return {**one, "wall": wall}
        for key in total:
            total[key] += one[key]
        harness_errors += one["harness_errors"]
        if one["first"] is None:  # no finding: the session used what was left
            used = seconds
        else:
            one["first"] += used  # from the start of the mutant's budget
            used = one["first"]
        attempt += 1
        done = one["caught"] or not one["other_findings"] or one["unjudged_findings"]
        if done or harness_errors or seconds - used < CONTINUE_SECONDS:
            return {**one, **total, "wall": wall, "harness_errors": harness_errors[:3],
                    "sessions": attempt}  # fmt: skip


def _fuzz_once(
    scratch: Path, work: Path, seconds: float, seed: int, workers: int, real: Path
) -> dict:
    """One session of ``fuzz_scratch``; ``first`` counts from its own start."""
    summary_path = work / "summary.json"
    summary_path.unlink(missing_ok=True)
    command = fuzz_command(
        work / "corpus", seconds, seed,
        "--stop-on-first", "--workers", str(workers), "--no-database",
        "--summary-json", str(summary_path), "--minimize-seconds", "40",
        "--shrink-seconds", "15",
    )  # fmt: skip
    start = time.perf_counter()
    # cwd must not be the repository: ``python -m`` puts the cwd first on sys.path, where
    # the real compiler package would shadow the mutated copy.
    proc = run_child(command, cwd=work, env=scratch_environment(scratch), timeout=seconds + 900)
    wall = time.perf_counter() - start
    if not summary_path.exists():
        # Exit 3: the session said the compiler does not import (no case ran, nothing to catch).
        stillborn = proc.returncode == COMPILER_DOES_NOT_IMPORT
        return {"caught": False, "error": proc.stderr[-2000:], "wall": wall, "stillborn": stillborn}
    summary = json.loads(summary_path.read_text())
    findings = summary["findings"]
    # A finding the time box cut before its triage ended is saved unminimized: it counts too.
    paths = {f["path"] for f in findings}
    raw = [t for t in summary.get("timeline", []) if t["path"] not in paths]
    from .replay import PASSING

    states = _replayed_on_real_compiler([*paths, *(t["path"] for t in raw)], real)
    planted = {path for path, state in states.items() if state in PASSING}
    shared = {path for path, state in states.items() if state in ("still-open", "regressed")}
    caught = [f for f in findings if f["path"] in planted]
    caught_raw = [t for t in raw if t["path"] in planted]
    best = min(caught, key=lambda f: f["nodes"]) if caught else None
    kind = f"{best['kind']} ({best['oracle']})" if best else ""
    if not best and caught_raw:
        kind = f"{caught_raw[0]['kind']} ({caught_raw[0]['oracle']}), not minimized in the box"
    return {
        "caught": bool(caught or caught_raw),
        "first": summary.get("first_finding_seconds"),
        "nodes": best["nodes"] if best else None,
        "kind": kind,
        # Failing on the real compiler too (its own bug, or a false finding)...
        "other_findings": len(shared),
        # ...or not judged there (not reproduced alone even with the bug: flaky, or needing
        # what its worker had run before).
        "unjudged_findings": len(findings) + len(raw) - len(caught) - len(caught_raw) - len(shared),
        "cases": summary["stats"]["cases"],
        "wall": wall,
        "harness_errors": [e[-1000:] for e in summary.get("harness_errors", [])[:3]],
    }


def run_one(mutation: Mutation, seconds: float, seed: int, workers: int) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"selftest-{mutation.name}-") as tmp:
        scratch = apply(mutation, Path(tmp) / "src")
        return {"name": mutation.name, **fuzz_scratch(scratch, Path(tmp), seconds, seed, workers)}


def _nodes(row: dict) -> str:
    """A minimized case's node count (0: the program is its input), or "-" if none."""
    return "-" if row.get("nodes") is None else str(row["nodes"])


def run_selftest(args: argparse.Namespace) -> int:
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only.split(",")]
    if not chosen:
        print(f"no such mutation; known: {', '.join(m.name for m in MUTATIONS)}")
        return 2
    rows = []
    print(f"{'planted bug':34} {'caught':>6} {'first s':>8} {'nodes':>5} {'cases':>6}  found as")
    for mutation in chosen:
        try:
            row = run_one(mutation, args.seconds, args.seed, args.workers)
        except Interrupted as stop:
            print(f"\nstopped by {stop.name} at {mutation.name}: {len(rows)} of {len(chosen)} run")
            return stop.exit_status
        rows.append(row)
        first = f"{row['first']:.1f}" if row.get("first") is not None else "-"
        print(
            f"{row['name']:34} {'yes' if row['caught'] else 'NO':>6} {first:>8} "
            f"{_nodes(row):>5} {row.get('cases', 0):>6}  {row.get('kind', '')}"
            + (f"  [{row['error'][-200:]}]" if row.get("error") else ""),
            flush=True,
        )
    caught = sum(r["caught"] for r in rows)
    small = sum(1 for r in rows if r["caught"] and r["nodes"] is not None and r["nodes"] <= 3)
    print(f"\ncaught {caught}/{len(rows)}; minimized to <= 3 nodes: {small}/{caught}")
    return 0 if caught == len(rows) else 1
