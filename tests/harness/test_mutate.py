"""Mutation testing (``python -m harness mutate``): every operator writes valid Python, a mutant
is one change in one file, the sample check tells a likely-equivalent mutant from a live one,
and a small run goes end to end."""

from __future__ import annotations

import ast
import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.mutate.equivalence import SWEEP_DTYPES, Checker, build_sample
from harness.mutate.operators import OPERATORS, Mutant, draw, mutable_files, mutant_at, sites
from harness.mutate.runner import STATUSES
from harness.selftest import ROOT, copy_compiler

SNIPPET = '''"""A docstring naming arith.addf, olt and True: never mutated."""


def f(a, b, flag):
    """Nor is this one (x = 1)."""
    x = a + b * 2  # a comment with < and and
    if not flag and a < b or b is None:
        x -= 1
    pair = (a, b)
    g(a, b)
    y = -a
    ok = True
    op = "arith.addf"
    line = f"%r = arith.cmpf olt, {a}, {b} : f32"
    predicate = "olt"
    return x if a in pair else y
'''


def test_every_operator_writes_valid_python() -> None:
    found = sites(SNIPPET)
    docstrings = SNIPPET.index("x = a + b")
    assert all(site.start >= docstrings for site in found), "docstrings are not sites"
    assert {site.operator for site in found} == set(OPERATORS)
    for site in found:
        for choice in site.choices:
            mutant = mutant_at(SNIPPET, "snippet.py", site, choice)
            assert mutant is not None, (site, choice)
            text = mutant.apply(SNIPPET)
            assert ast.dump(ast.parse(text)) != ast.dump(ast.parse(SNIPPET))
            assert text.count("\n") <= SNIPPET.count("\n")


def test_operators_write_what_they_promise() -> None:
    def rewrites(operator: str) -> set[tuple[str, str]]:
        data = SNIPPET.encode()
        return {
            (data[s.start : s.end].decode(), c)
            for s in sites(SNIPPET)
            if s.operator == operator
            for c in s.choices
        }

    assert ("<", "<=") in rewrites("comparison") and ("is", "is not") in rewrites("comparison")
    assert {("+", "-"), ("*", "/"), ("-", "+")} <= rewrites("arithmetic")  # "-" of "-="
    assert {("and", "or"), ("or", "and")} <= rewrites("boolean")
    assert {("2", "3"), ("2", "1")} <= rewrites("int-constant")
    assert rewrites("bool-constant") == {("True", "False")}
    assert ("a, b", "b, a") in rewrites("swap-arguments") | rewrites("swap-tuple")
    assert {("not ", ""), ("-", "")} <= rewrites("drop-negation")
    assert ("x -= 1", "pass") in rewrites("remove-statement")
    mlir = rewrites("mlir-op")
    assert ("arith.addf", "arith.subf") in mlir and ("olt", "ole") in mlir
    olt = [s for s in sites(SNIPPET) if SNIPPET.encode()[s.start : s.end] == b"olt"]
    assert len(olt) == 2  # in the f-string and the literal, not in the docstring


def _compiler_sources() -> dict[str, str]:
    return {f: (ROOT / f).read_text() for f in mutable_files(ROOT)}


def test_files_and_draws_are_deterministic() -> None:
    files = mutable_files(ROOT)
    assert "compiler/lower/emit.py" in files and "compiler/primitives/table.py" in files
    assert "compiler/model.py" in files  # the sample runs GPT-2 models
    assert not any(f.endswith("__main__.py") for f in files)
    sources = _compiler_sources()
    first = draw(sources, 6, seed=3)
    assert first == draw(sources, 6, seed=3)
    assert len(first) == 6 and len({(m.file, m.start, m.new) for m in first}) == 6
    assert first != draw(sources, 6, seed=4)


def test_mutant_in_a_scratch_copy_is_exactly_one_change(tmp_path: Path) -> None:
    sources = _compiler_sources()
    for mutant in draw(sources, 12, seed=5):
        diff = mutant.diff(sources[mutant.file])
        assert diff.count("\n@@ ") == 1, diff
    mutant = draw(sources, 1, seed=7)[0]
    scratch = copy_compiler(tmp_path / "src")
    (scratch / mutant.file).write_text(mutant.apply(sources[mutant.file]))
    changed = []
    for path in sorted((scratch / "compiler").rglob("*.py")):
        rel = path.relative_to(scratch).as_posix()
        if path.read_text() != (ROOT / rel).read_text():
            changed.append(rel)
    assert changed == [mutant.file]
    before = sources[mutant.file].splitlines()
    after = (scratch / mutant.file).read_text().splitlines()
    blocks = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    changed_lines = [(i1, i2) for tag, i1, i2, _, _ in blocks if tag != "equal"]
    # Every difference lies in the lines the mutant's own text spans (a swap of two arguments
    # of several lines each is one change that difflib sees as a move: a delete and an insert).
    first = sources[mutant.file].encode()[: mutant.start].count(b"\n")
    last = first + mutant.old.count("\n") + 1
    assert changed_lines and all(first <= i1 and i2 <= last for i1, i2 in changed_lines), blocks
    assert len(before) - len(after) == mutant.old.count("\n") - mutant.new.count("\n")
    with pytest.raises(ValueError, match="changed since"):
        mutant.apply(sources[mutant.file].replace("\n", "\n\n", 1))


def _by_hand(baseline: Path, file: str, old: str, new: str, name: str) -> tuple[Path, Mutant]:
    source = (baseline / file).read_text()
    start = source.encode().index(old.encode())
    mutant = Mutant(name, file, 1, "by-hand", start, old, new)
    scratch = copy_compiler(baseline.parent / name, baseline)
    (scratch / file).write_text(mutant.apply(source))
    return scratch, mutant


@pytest.mark.slow
def test_the_op_sweep_runs_every_op_in_every_dtype_it_takes() -> None:
    """Every op's lowering runs on every backend in the equivalence check, in each of the sweep's
    dtypes the op takes, on inputs that are not all zero: a sample that happened to lack a float
    ``log`` called a mutant of cpu-vector's log polynomial equivalent."""
    from strategies import Program
    from strategies.gen.programs import generation_order

    sample = build_sample(programs=4, invalid=2, runs=1)
    runs = [item for item in sample["items"] if item["run"]]
    assert all(item["kind"] == "program" for item in runs)
    swept = [(Program.from_dict(item["subject"]), item["inputs"]) for item in runs]
    seen = {(op, dtype) for program, _ in swept for op in program.ops for dtype in program.dtypes()}
    assert set(generation_order()) == {op for op, _ in seen}
    assert {("log", "float32"), ("log", "float64"), ("add", "int32")} <= seen
    assert set(SWEEP_DTYPES) == {"float32", "float64", "int32"}
    nonzero = sum(any(np.any(np.asarray(a) != 0) for a in inputs) for _, inputs in swept)
    assert nonzero >= 0.8 * len(swept), "the sweep's inputs are Hypothesis's all-zero simplest"
    # And each op on a strided view of an input (but attention's input, drawn its own way, and
    # the causal mask, which has none): cpu-vector's gathers stage ran on no item before.
    from strategies.gen.programs import ops_reading_views

    viewed = {op for program, _ in swept for op in ops_reading_views(program)}
    assert set(generation_order()) - viewed == {"attention", "attend", "causal_mask"}, viewed


@pytest.mark.slow
def test_sample_check_tells_equivalent_from_live(tmp_path: Path) -> None:
    baseline = copy_compiler(tmp_path / "baseline")
    sample = build_sample(programs=40, invalid=10, runs=6, sweep=False, sequences=8)
    # A float add that always runs: which of the drawn programs run changes with the strategies
    # (a new value regime left no float add among them, and the addf mutant's outputs matched).
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    add = b.build(b.node("add", b.input((3,), "float32"), b.input((3,), "float32")))
    operands = [np.arange(3, dtype=np.float32), np.full(3, 0.5, np.float32)]
    sample["items"].insert(0, {"kind": "program", "subject": add.to_dict(), "inputs": operands,
                               "run": True})  # fmt: skip
    checker = Checker(baseline, tmp_path / "equivalence", sample)
    assert not checker.unstable
    # The lines the sample ran: the kernel's header, never IREE's command line.
    emit = (ROOT / "compiler/lower/emit.py").read_text().splitlines()
    header = next(i for i, text in enumerate(emit, 1) if "func.func @{KERNEL}" in text)
    assert checker.reached("compiler/lower/emit.py", header, "")
    # The NumPy spelling's ufunc dispatch, which the array-namespace spelling never reaches.
    tensor = (ROOT / "compiler/frontend/tensor.py").read_text().splitlines()
    dispatch = next(i for i, text in enumerate(tensor, 1) if "handler = _ufuncs()" in text)
    assert checker.reached("compiler/frontend/tensor.py", dispatch, "")
    # A static argument's equality, which only a jit sequence's calls reach.
    pytree = (ROOT / "compiler/frontend/pytree.py").read_text().splitlines()
    equality = next(i for i, text in enumerate(pytree, 1) if "self.key == other.key" in text)
    assert checker.reached("compiler/frontend/pytree.py", equality, "")
    # The guards' check: the sample runs kernels instrumented, as a session's worker does.
    runtime = (ROOT / "compiler/runtime.py").read_text().splitlines()
    guard = next(i for i, text in enumerate(runtime, 1) if "back = np.flatnonzero(" in text)
    assert checker.reached("compiler/runtime.py", guard, "")
    iree = (ROOT / "compiler/iree.py").read_text().splitlines()
    command = next(i for i, text in enumerate(iree, 1) if "proc = subprocess.run(" in text)
    assert not checker.reached("compiler/iree.py", command, "")
    cases = {
        "docstring": ("compiler/lower/emit.py", '"""', '"""Mutated in the docstring only. '),
        # Another SSA name for every linalg.generic: the same module in MLIR's own names.
        "renamed": ("compiler/lower/emit.py", 'name = self.fresh("g")', 'name = self.fresh("q")'),
        "unused": ("compiler/dtypes.py", "\n\n\n", "\n\n\ndef _unused(x):\n    return -x\n\n\n"),
        "addf": ("compiler/primitives/table.py", '"arith.addf"', '"arith.subf"'),
        "stillborn": ("compiler/runtime.py", "import", "imprt"),
        # compiler.pipelines imports; the backends' registry, which parses every level, does
        # not (a session stopped at startup, counted as a harness error).
        "startup": ("compiler/pipelines.py", "    if not level:", "    if level:"),
        # Only the IR: the kernel's symbol (the runtime looks it up by the same constant).
        "ir-only": ("compiler/lower/emit.py", 'KERNEL = "', 'KERNEL = "renamed_'),
        # Arguments keep their strides: wrong only on the inputs the runs lay out otherwise.
        "abi": ("compiler/api.py", 'np.require(np.asarray(value), requirements="C")', "value"),
        # Every answer right; a specialization runs on an array whose shape or dtype matches.
        "misfit": (
            "compiler/api.py",
            "array.shape != node.shape or",
            "array.shape != node.shape and",
        ),
        # Every call with a static argument traces again: the answers stay right.
        "static": ("compiler/frontend/pytree.py", "self.key == other.key", "self.key != other.key"),
        # Every answer right; every guard byte intact reported as an overrun (memory evidence).
        "guard": (
            "compiler/runtime.py",
            "+ array.nbytes :] != GUARD_BYTE",
            "+ array.nbytes :] == GUARD_BYTE",
        ),
        # The model's layer norms exchanged in the loader: only GPT-2 models reach it.
        "model": (
            "compiler/model.py",
            'ln_1=norm(f"{p}.ln_1", "ln_1")',
            'ln_1=norm(f"{p}.ln_2", "ln_1")',
        ),
    }
    verdicts = {}
    for name, (file, old, new) in cases.items():
        scratch, mutant = _by_hand(baseline, file, old, new, name)
        verdicts[name] = checker.check(scratch, [mutant.module], name)
    assert verdicts["docstring"].status == "equivalent", verdicts["docstring"]
    assert verdicts["renamed"].status == "equivalent", verdicts["renamed"]
    assert verdicts["unused"].status == "equivalent", verdicts["unused"]
    assert verdicts["addf"].status == "live", verdicts["addf"]
    assert verdicts["stillborn"].status == "stillborn", verdicts["stillborn"]
    assert verdicts["startup"].status == "stillborn", verdicts["startup"]
    assert verdicts["ir-only"].status == "live", verdicts["ir-only"]
    assert verdicts["abi"].status == "live", verdicts["abi"]
    assert verdicts["static"].status == "live", verdicts["static"]
    assert verdicts["guard"].status == "live", verdicts["guard"]
    assert verdicts["misfit"].status == "live", verdicts["misfit"]
    assert verdicts["model"].status == "live", verdicts["model"]
    model = (ROOT / "compiler/model.py").read_text().splitlines()
    loader = next(i for i, text in enumerate(model, 1) if 'ln_1=norm(f"{p}.ln_1"' in text)
    assert checker.reached("compiler/model.py", loader, "")
    for name, expected in (("ir-only", "outputs identical"), ("addf", "outputs differ")):
        scratch, mutant = _by_hand(baseline, *cases[name], name + "-outputs")
        assert checker.outputs_differ(scratch, [mutant.module], name).startswith(expected)


@pytest.mark.slow
def test_mutate_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "mutate.json"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "mutate", "--count", "2", "--seconds", "10",
         "--seed", "2", "--sample", "small", "--json", str(out)],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
        timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "kill rate:" in proc.stdout
    document = json.loads(out.read_text())
    assert [m["id"] for m in document["mutants"]] == ["m01", "m02"]
    for mutant in document["mutants"]:
        assert mutant["status"] in STATUSES
        assert mutant["diff"].startswith(f"--- a/{mutant['file']}")
        assert (mutant["kill_seconds"] is not None) == (mutant["status"] == "killed")


def test_a_shared_finding_does_not_end_a_mutants_budget(monkeypatch, tmp_path: Path) -> None:
    """A session that stops at a finding the real compiler shares goes on with another seed
    for the seconds left; a catch then counts from the start of the budget."""
    from harness import selftest

    def session(first, caught, shared, cases):
        return {"caught": caught, "first": first, "nodes": 1 if caught else None, "kind": "k",
                "other_findings": shared, "unjudged_findings": 0, "cases": cases,
                "wall": 1.0, "harness_errors": []}  # fmt: skip

    calls = []
    script = [session(40.0, False, 1, 300), session(12.0, True, 0, 90)]

    def once(scratch, work, seconds, seed, workers, real):
        calls.append((seconds, seed))
        return script[len(calls) - 1]

    monkeypatch.setattr(selftest, "_fuzz_once", once)
    got = selftest.fuzz_scratch(tmp_path, tmp_path, 60.0, 5, 2)
    assert [s for s, _ in calls] == [60.0, 20.0] and len({seed for _, seed in calls}) == 2
    assert got["caught"] and got["first"] == 52.0 and got["cases"] == 390
    assert got["other_findings"] == 1 and got["sessions"] == 2
    # Nothing left worth a session: the shared finding ends it, as before.
    calls.clear()
    script[:] = [session(57.0, False, 1, 300)]
    got = selftest.fuzz_scratch(tmp_path, tmp_path, 60.0, 5, 2)
    assert len(calls) == 1 and not got["caught"] and got["other_findings"] == 1
