"""Set likely-equivalent mutants aside before spending a fuzz session on them.

A fixed sample of small programs (drawn once, derandomized, from ``strategies``: an op sweep,
one program per op and dtype, which always runs on every backend, and random programs) goes through
the original and the mutated compiler in subprocesses (``harness.mutate.probe``). A mutant whose
emitted modules, stage texts and outputs are bit-identical to the original's on the whole sample
is *likely equivalent*; one that cannot be imported is *stillborn*. The original runs twice, and
whatever differs between those two runs is not compared (it would make every mutant look live).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..case import CPU_BACKENDS
from ..interrupt import run_child

#: The op sweep: one program per (op, dtype), with room for the op's helper nodes.
SWEEP_DTYPES = ("float32", "float64", "int32")
SWEEP_NODES = 3
#: Programs whose emitted module is compared (tracing and emitting cost ~1 ms each).
PROGRAMS = 300
#: Invalid programs (one violation each) whose error is compared: the frontend's error paths.
INVALID = 50
#: Of the valid programs, how many are compiled and run on every backend (~80 ms CPU each, per
#: backend: this is what bounds the check to ~20 s of CPU per likely-equivalent mutant).
RUNS = 64
#: Jit sequences (calls of one jitted function: other dtypes, statics, captured arrays), each
#: run call by call on one backend: the ``@jit`` layer's specialization cache and argument
#: handling, which programs alone never reach (a mutant of the static arguments' equality
#: was "unreached" without them, and a session kills it in 10 s).
SEQUENCES = 24
#: GPT-2 models (``session.generate.gpt2_cases``), each run through ``compiler/model.py`` on one
#: backend: the checkpoint loader, forward passes, generation and input checks, which neither
#: programs nor sequences reach.
MODELS = 8
#: ``--sample``: the full sample, or a small one for a quick look (no op sweep: a mutant of an
#: op the random draws miss passes for equivalent there, and is reported as such).
SAMPLES = {
    "full": {
        "programs": PROGRAMS, "invalid": INVALID, "runs": RUNS, "sweep": True,
        "sequences": SEQUENCES, "models": MODELS,
    },
    "small": {
        "programs": 60, "invalid": 10, "runs": 12, "sweep": False, "sequences": 4, "models": 2,
    },
}  # fmt: skip


def _collect(strategy: Any, n: int) -> list[tuple[Any, list]]:
    """The first ``n`` derandomized draws of ``strategy`` (generation only)."""
    from hypothesis import HealthCheck, Phase, given, settings

    found: list[tuple[Any, list]] = []

    @settings(
        database=None, max_examples=n, derandomize=True, phases=[Phase.generate],
        suppress_health_check=list(HealthCheck), deadline=None,
    )  # fmt: skip
    @given(strategy)
    def draw(example: tuple[Any, list]) -> None:
        found.append(example)

    draw()
    return found


def op_sweep() -> list[tuple[Any, list]]:
    """Per op and dtype the table allows, the first derandomized (program, inputs) that has the
    op: every op's lowering runs on every backend, however rarely the random sample draws it
    (a mutant of cpu-vector's log passed for equivalent on a sample without a float log)."""
    from compiler.errors import UnsupportedFeature
    from strategies import programs, samples
    from strategies.gen.programs import generation_order

    found: list[tuple[Any, list]] = []
    for op in generation_order():
        mine: list[tuple[Any, list]] = []
        # One dtype at a time, then (casts, which need two) any dtypes.
        for dtypes in [[dtype] for dtype in SWEEP_DTYPES] + [None]:
            if dtypes is None and mine:
                break
            try:
                strategy = samples(programs(ops=[op], dtypes=dtypes, max_nodes=SWEEP_NODES))
                has_op = strategy.filter(lambda s, op=op: op in s.program.ops)
                # The last of a few draws: the first is Hypothesis's simplest (all-zero inputs).
                mine += _collect(has_op.map(lambda s: (s.program, list(s.inputs))), 6)[-1:]
            except (ValueError, UnsupportedFeature):
                continue  # the op takes no such dtype
        found += mine + _on_views(op)
    return found


def _on_views(op: str) -> list[tuple[Any, list]]:
    """One derandomized (program, inputs) where ``op`` reads a strided view of an input, or
    none where it takes no operand: the code for strided operands runs too (cpu-vector's
    gathers stage ran on no item of the sample, so its mutants were left out as unreached)."""
    from compiler.errors import UnsupportedFeature
    from strategies import programs, samples
    from strategies.gen.programs import ops_reading_views

    try:
        strategy = samples(programs(ops=[op], max_nodes=SWEEP_NODES, views=1))
        drawn = _collect(strategy.map(lambda s: (s.program, list(s.inputs))), 6)
    except (ValueError, UnsupportedFeature):
        return []
    # Not a filter: an op that never reads a view (causal_mask takes no operand, attention's
    # input is drawn its own way) took Hypothesis a minute to give up on.
    return [item for item in drawn if op in ops_reading_views(item[0])][-1:]


def build_sample(
    programs: int = PROGRAMS,
    invalid: int = INVALID,
    runs: int = RUNS,
    backends: Sequence[str] = CPU_BACKENDS,
    sweep: bool = True,
    sequences: int = SEQUENCES,
    models: int = MODELS,
) -> dict[str, Any]:
    """The sample: the op sweep (unless ``sweep`` is false), derandomized Hypothesis draws
    (the same programs every time, for a given Hypothesis version and primitive table),
    deduplicated, ``sequences`` jit sequences and ``models`` GPT-2 models."""
    from strategies import input_values, invalid_programs, samples
    from strategies import programs as program_strategy
    from strategies.gen.sequences import jit_sequences

    from ..case import encode_array

    valid = _collect(
        samples(program_strategy(max_nodes=4)).map(lambda s: (s.program, list(s.inputs))), programs
    )
    broken = _collect(
        invalid_programs().flatmap(lambda p: input_values(p.inputs).map(lambda v: (p, list(v)))),
        invalid,
    )
    swept = op_sweep() if sweep else []
    items, seen = [], set()
    for kind, drawn in (("sweep", swept), ("program", valid), ("invalid", broken)):
        for subject, inputs in drawn:
            item = {
                "kind": "invalid" if kind == "invalid" else "program",
                "subject": subject.to_dict(),
                "inputs": inputs,
                "run": kind == "sweep",
            }
            key = hashlib.sha256(pickle.dumps((kind, subject.to_dict(), inputs))).hexdigest()
            if key not in seen:
                seen.add(key)
                items.append(item)
    for sequence in _collect(jit_sequences(), sequences) if sequences else []:
        data = sequence.to_dict(encode_array)
        items.append({"kind": "sequence", "subject": data, "inputs": [], "run": False})
    if models:
        from ..session.generate import gpt2_cases

        for case in _collect(gpt2_cases(tuple(backends)), models):
            data = case.extra["gpt2"]
            items.append({"kind": "model", "subject": data, "inputs": list(case.inputs),
                          "run": False, "backend": case.backends[0]})  # fmt: skip
    return {"items": items, "runs": runs, "backends": list(backends)}


@dataclass
class Verdict:
    """What the probe said of a mutant: ``equivalent``, ``live`` or ``stillborn``."""

    status: str
    detail: str
    seconds: float


def probe(
    compiler_parent: Path, sample: Path, out: Path, reference: Path | None = None,
    modules: Sequence[str] = (), timeout: float = 600, outputs_only: bool = False,
    lines: Path | None = None,
) -> tuple[dict[str, Any] | None, str]:  # fmt: skip
    """Run the probe with the compiler in ``compiler_parent``; (its result, or None and why)."""
    from ..selftest import ROOT

    command = [sys.executable, "-m", "harness.mutate.probe", str(sample), str(out)]
    command += ["--reference", str(reference)] if reference else []
    command += ["--outputs-only"] if outputs_only else []
    command += ["--lines", str(lines)] if lines else []
    for name in modules:
        command += ["--module", name]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(dict.fromkeys([str(compiler_parent), str(ROOT)])),
        PYTHONHASHSEED="0",
    )
    # cwd: not the repository, whose compiler would shadow the one in ``compiler_parent``.
    try:
        proc = run_child(command, cwd=out.parent, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"the probe ran past {timeout:.0f} s (a hang?)"
    if not out.exists():
        return None, f"the probe died (exit {proc.returncode}): {proc.stderr[-500:]}"
    return json.loads(out.read_text()), ""


class Checker:
    """The sample and the original compiler's digests, computed once per run."""

    def __init__(self, baseline: Path, work: Path, sample: dict[str, Any] | None = None) -> None:
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        self.sample_path = work / "sample.pkl"
        self.sample = sample if sample is not None else build_sample()
        self.sample_path.write_bytes(pickle.dumps(self.sample))
        start = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            runs = list(
                pool.map(
                    lambda i: probe(
                        baseline, self.sample_path, work / f"reference{i}.json",
                        lines=work / "lines.json" if i == 0 else None,
                    ),
                    (0, 1),
                )  # fmt: skip
            )
        self.reference_seconds = time.perf_counter() - start
        results = [r for r, _ in runs]
        if any(r is None or r.get("status") != "reference" for r in results):
            raise RuntimeError(f"the original compiler failed the sample: {runs}")
        first, second = (r["digests"] for r in results)  # type: ignore[index]
        if first.keys() != second.keys():
            raise RuntimeError("two runs of the original compiler saw different samples")
        self.unstable = sorted(k for k in first if first[k] != second[k])
        #: (file relative to the compiler's parent, line) the sample ran on the original.
        self.executed = {(f, n) for f, n in json.loads((work / "lines.json").read_text())}
        reference = {k: (None if k in self.unstable else v) for k, v in first.items()}
        self.reference_path = work / "reference.json"
        self.reference_path.write_text(json.dumps(reference))
        self.timeout = max(180.0, 4 * self.reference_seconds)

    def reached(self, file: str, line: int, text: str) -> bool:
        """Whether the sample ran any line of the change (``text`` from ``line``) on the
        original compiler: a change nothing runs is *unreached*, not equivalent."""
        last = line + text.count("\n")
        return any((file, n) in self.executed for n in range(line, last + 1))

    def describe(self) -> str:
        items = self.sample["items"]
        valid = sum(1 for item in items if item["kind"] == "program")
        invalid = sum(1 for item in items if item["kind"] == "invalid")
        sequences = sum(1 for item in items if item["kind"] == "sequence")
        models = sum(1 for item in items if item["kind"] == "model")
        swept = sum(1 for item in items if item.get("run"))
        runs = min(self.sample["runs"], valid - swept)
        return (
            f"{valid} programs + {invalid} invalid programs emitted, {swept} of them "
            f"(the op sweep) + {runs} compiled and run on {', '.join(self.sample['backends'])}; "
            f"{sequences} jit sequences and {models} GPT-2 models run on one of them each; "
            "the original took "
            f"{self.reference_seconds:.0f} s (two runs at once)"
            + (f"; {len(self.unstable)} unstable digests ignored" if self.unstable else "")
        )

    def check(self, scratch: Path, modules: Sequence[str], name: str) -> Verdict:
        """The verdict on the compiler in ``scratch`` (``modules``: import them too)."""
        start = time.perf_counter()
        out = self.work / f"probe-{name}.json"
        out.unlink(missing_ok=True)
        result, why = probe(
            scratch, self.sample_path, out, self.reference_path, modules, self.timeout
        )
        seconds = time.perf_counter() - start
        if result is None:
            return Verdict("live", why, seconds)
        if result["status"] == "stillborn":
            return Verdict("stillborn", result["detail"], seconds)
        if result["status"] == "different":
            return Verdict("live", f"differs at {result['key']}", seconds)
        return Verdict("equivalent", "identical on the whole sample", seconds)

    def outputs_differ(self, scratch: Path, modules: Sequence[str], name: str) -> str:
        """For a survivor: where the mutant's *outputs* first differ on the sample, or that they
        never do (it changed only the IR: a slower schedule, a dead branch; no oracle of
        answers can kill it, and the report says so)."""
        out = self.work / f"outputs-{name}.json"
        out.unlink(missing_ok=True)
        result, why = probe(
            scratch, self.sample_path, out, self.reference_path, modules, self.timeout, True
        )
        if result is None:
            return why
        if result["status"] == "different":
            return f"outputs differ at {result['key']}"
        return "outputs identical on the whole sample: only the IR differs"


__all__ = ["Checker", "Verdict", "build_sample", "op_sweep", "probe"]
