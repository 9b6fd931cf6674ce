"""Failures that need what the worker's process ran before: the runner keeps each finding's
earlier evaluations, triage reduces them to the fewest that bring the failure back in a new
process, the entry keeps them, replay runs them first and the reproducer calls them first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.case import Case, Earlier
from harness.selftest import Mutation, apply, scratch_environment
from harness.triage.history import needed_earlier
from strategies.model import ProgramBuilder


def _unary(op: str, shape: tuple[int, ...] = (2, 3)) -> Case:
    b = ProgramBuilder()
    program = b.build(b.node(op, b.input(shape, "float32")))
    x = np.linspace(-1.0, 1.0, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return Case(program, [x], ("cpu-loops@O0",))


class _Process:
    """A runner whose "process" fails the case exactly when ``needed`` ran in it before."""

    def __init__(self, needed: set[int]) -> None:
        self.needed = needed
        self.ran: tuple[Earlier, ...] = ()
        self.starts = 0

    def after(self, earlier: tuple[Earlier, ...]) -> None:
        self.ran, self.starts = earlier, self.starts + 1

    def check(self, case: Case) -> object | None:
        ran = {record.case.origin for record in self.ran}
        return object() if {f"e{i}" for i in self.needed} <= ran else None


def _records(count: int) -> tuple[Earlier, ...]:
    return tuple(Earlier(Case(_unary("exp").program, [], (), origin=f"e{i}")) for i in range(count))


@pytest.mark.parametrize("needed", [{31}, {3}, {0, 30}, {5, 6, 7}])
def test_the_earlier_cases_are_reduced_to_those_the_failure_needs(needed: set[int]) -> None:
    """Of 32 earlier evaluations, exactly those the failure needs are kept, in their order."""
    process = _Process(needed)
    kept = needed_earlier(process, _unary("tanh"), process.check, _records(32), 60.0)
    assert kept is not None
    assert [record.case.origin for record in kept] == [f"e{i}" for i in sorted(needed)]
    # none needed, or what it needs not among them: not reproduced (None), one replay
    process = _Process({40})
    assert needed_earlier(process, _unary("tanh"), process.check, _records(8), 60.0) is None
    assert process.starts == 1
    assert needed_earlier(process, _unary("tanh"), process.check, (), 60.0) is None


def test_an_earlier_record_round_trips_and_the_schema_takes_it() -> None:
    from harness.corpus_schema import ENTRY_SCHEMA, first_problem

    record = Earlier(_unary("exp"), ("determinism",), True)
    again = Earlier.from_dict(json.loads(json.dumps(record.to_dict())))
    assert again.only == ("determinism",) and again.fresh
    assert again.case.to_dict() == record.case.to_dict()
    assert Earlier.from_dict(Earlier(_unary("exp")).to_dict()).only is None
    evidence = ENTRY_SCHEMA["properties"]["evidence"]
    assert first_problem({"earlier": [record.to_dict()]}, evidence) is None
    assert first_problem({"earlier": [{"case": 1}]}, evidence) is not None


def test_the_runner_keeps_what_its_worker_process_ran() -> None:
    """Each evaluation is recorded with its oracles; a new process (``after``) starts the
    record again with what it ran first."""
    from harness.run.runner import Runner

    first, second = _unary("exp"), _unary("negative", (3,))
    with Runner(None, use_jax=False) as runner:
        runner.evaluate(first)
        runner.evaluate(second, ("determinism",), probe=True)
        assert [r.case.program.digest() for r in runner.history] == [
            first.program.digest(),
            second.program.digest(),
        ]
        assert runner.history[1].only == ("determinism",)
        starts = runner.worker.starts
        runner.after((Earlier(second),))
        assert runner.worker.starts == starts + 1
        assert [r.case.program.digest() for r in runner.history] == [second.program.digest()]


#: A kernel memo keyed by the first 400 characters of the lowered module: two programs of one
#: signature share a key, so the second compile in a process gets the first one's kernel.
KERNEL_KEY_PREFIX = Mutation(
    "kernel-key-prefix",
    "driver.py",
    "return (_digest(lowered), target.opt_level,",
    "return (_digest(lowered[:400]), target.opt_level,",
    "the kernel memo keys a kernel by its lowered text's first 400 characters",
)
#: A stage memo keyed without the stage's passes: cpu-vector's bufferized stage is served
#: cpu-loops' (deallocating) output for the same text, so a program compiled on cpu-loops first
#: fails on cpu-vector in the same process (within one case's task: its backends in turn).
STAGE_KEY_WITHOUT_PASSES = Mutation(
    "stage-key-without-passes",
    "driver.py",
    "return (stage.name, stage.pipeline, name, state, _digest(text))",
    "return (stage.name, name, state, _digest(text))",
    "the stage memo keys a stage by its name, not its passes",
)


def _strided_matmul() -> Case:
    b = ProgramBuilder()
    x, y = b.input((6, 14), "float64"), b.input((6, 5), "float64")
    left = b.node("index", x, key=(slice(5, None, -2), slice(12, 0, -2)))
    right = b.node("index", y, key=(slice(0, 6, 1), slice(3, None, -1)))
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((6, 14)), rng.standard_normal((6, 5))]
    program = b.build(b.node("matmul", left, right))
    return Case(program, inputs, ("cpu-loops@O0", "cpu-vector@O0"))


def scenario(name: str) -> tuple[list[Case], Case]:
    """(the cases a process runs first, the case that then fails) of each planted bug."""
    if name == KERNEL_KEY_PREFIX.name:
        return [_unary("exp"), _unary("negative", (3,)), _unary("abs", (5,))], _unary("tanh")
    return [_unary("negative", (3,))], _strided_matmul()


_SESSION = """
import json, sys
from harness.corpus import Corpus
from harness.replay import classify
from harness.session import fuzz
from tests.harness.test_history import scenario

first, found = scenario(sys.argv[2])
driver = fuzz.Driver(fuzz.FuzzOptions(corpus=sys.argv[1], database=None, use_jax=False,
                                      minimize_seconds=60), 0)
try:
    for case in first:
        assert not driver.runner.evaluate(case).findings
    judgement = driver.runner.evaluate(found)
    [finding] = judgement.findings[:1]
    assert len(finding.before) == len(first), finding.before
    driver.finish(found, finding)
    [entry] = list(Corpus(sys.argv[1]).entries())
    print(json.dumps({
        "path": str(entry.path),
        "earlier": [
            [r["case"]["program"]["nodes"][-1]["op"], r["case"]["backends"]]
            for r in entry.evidence.get("earlier", [])
        ],
        "minimization": entry.minimization,
        "layer": entry.evidence["attribution"]["layer"],
        "replayed": classify(entry, driver.runner).outcome,
    }))
finally:
    driver.close()
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "mutation, earlier",
    [
        (KERNEL_KEY_PREFIX, [["exp", ["cpu-loops@O0"]]]),
        (STAGE_KEY_WITHOUT_PASSES, [["matmul", ["cpu-loops@O0"]]]),
    ],
    ids=lambda value: getattr(value, "name", ""),
)
def test_a_failure_that_needs_an_earlier_compile_keeps_it_and_replays_after_it(
    tmp_path: Path, mutation: Mutation, earlier: list
) -> None:
    """Memos whose keys miss what the result depends on (planted in a scratch copy). A tanh
    after an exp of the same signature gets the exp's kernel, and alone passes: the entry keeps
    the one earlier case of three that it needs (the exp). A strided matmul fails on cpu-vector
    only after cpu-loops compiled it in the same task, and alone on cpu-vector passes: the entry
    keeps the case itself on cpu-loops alone. Replay runs them first and says still-open
    (fixed-now on the clean compiler), and the reproducer fails exactly on the planted
    compiler."""
    scratch = apply(mutation, tmp_path / "src")
    root = Path(__file__).parents[2]
    env = scratch_environment(scratch)
    env["PYTHONPATH"] = f"{env.get('PYTHONPATH', '')}{os.pathsep}{root}"
    corpus = tmp_path / "corpus"
    proc = subprocess.run(
        [sys.executable, "-c", _SESSION, str(corpus), mutation.name], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["earlier"] == earlier, found["earlier"]
    assert found["minimization"]["earlier"] == 1 and found["minimization"]["reproduced"]
    assert found["layer"] == "process-state" and found["replayed"] == "still-open"
    entry = json.loads(Path(found["path"]).read_text())
    script = tmp_path / "repro.py"
    script.write_text(entry["reproducer"])
    planted = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert planted.returncode == 1, planted.stdout[-2000:] + planted.stderr[-2000:]
    clean_env = {**os.environ, "PYTHONPATH": str(root)}
    clean = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=clean_env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert clean.returncode == 0, clean.stdout[-2000:] + clean.stderr[-2000:]
    replayed = subprocess.run(
        [sys.executable, "-m", "harness", "replay", found["path"]], cwd=tmp_path, env=clean_env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "fixed-now" in replayed.stdout, replayed.stdout[-2000:] + replayed.stderr[-2000:]
