"""The spelling oracle: every case's program is traced in the spellings it was not drawn in, so a
bug in one spelling's dispatch shows on any case that uses the op, not only on the rare case
drawn in that spelling."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from planted_reproducer import json_with

from harness.case import Case
from harness.oracles.spelling import failing_spelling, other_spellings
from harness.selftest import Mutation, apply, scratch_environment
from strategies.model import ProgramBuilder


def _sum_case(spelling: str | None = None) -> Case:
    b = ProgramBuilder()
    program = b.build(b.node("sum", b.input((2, 3), "float32"), axis=1, keepdims=True))
    case = Case(program, [np.arange(6, dtype=np.float32).reshape(2, 3)], ("cpu-loops@O0",))
    return case.respelled(spelling) if spelling else case


def test_other_spellings_are_those_that_reach_other_frontend_code() -> None:
    assert other_spellings(_sum_case()) == ["numpy", "methods"]
    assert other_spellings(_sum_case("methods")) == ["array-api", "numpy"]
    b = ProgramBuilder()
    gelu = b.build(b.node("gelu", b.input((4,), "float32")))
    # A composite is written ops.gelu(x) in every spelling: nothing else to trace.
    assert other_spellings(Case(gelu, [np.ones(4, np.float32)], ("cpu-loops@O0",))) == []


def test_failing_spelling_reads_the_oracle_name() -> None:
    assert failing_spelling("spelling[methods]") == "methods"
    assert failing_spelling("spelling") is None
    assert failing_spelling("metamorphic:softmax-shift") is None


def _transposed_case(axes: tuple[int, ...], spelling: str | None = None) -> Case:
    """``x.transpose(axes)`` of a matrix: an invalid program unless ``axes`` is a permutation."""
    from strategies.model import InvalidProgram, RawEquation

    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    program = b.build(x)
    invalid = InvalidProgram(
        program, "not_a_permutation", RawEquation("permute_dims", (x,), {"axes": axes}), ()
    )
    invalid = invalid.with_program(program)
    case = Case(invalid, [np.ones((2, 3), np.float32)], ("cpu-loops@O0",))
    return case.respelled(spelling) if spelling else case


def test_invalid_programs_are_traced_in_the_other_spellings_too() -> None:
    """An invalid program's rejection is decided while tracing, in each spelling's own code:
    ``x.transpose(())`` (the methods spelling) is NumPy's ValueError as ``xp.permute_dims(x,
    ())`` is, so the oracle traces the other spellings of an invalid case as of a valid one,
    its invalid node's op counted."""
    from harness.oracles.spelling import Spelling
    from harness.run.runner import Runner

    case = _transposed_case(())
    assert Spelling().fits(case) and other_spellings(case) == ["numpy", "methods"]
    with Runner(None, use_jax=False) as runner:
        judgement = runner.evaluate(case)
    assert "spelling" in judgement.oracles and judgement.agreed_rejection
    assert not judgement.findings, [f.detail for f in judgement.findings]


def test_a_clean_compiler_passes_in_every_spelling() -> None:
    from harness.run.runner import Runner

    with Runner(None, use_jax=False) as runner:
        judgement = runner.evaluate(_sum_case())
    assert "spelling" in judgement.oracles
    assert not judgement.findings, [f.detail for f in judgement.findings]


_EVALUATE = """
import json
import numpy as np
from harness.case import Case
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from harness.triage.attribution import Attributor
from strategies.model import ProgramBuilder

b = ProgramBuilder()
program = b.build(b.node("sum", b.input((2, 3), "float32"), axis=1, keepdims=True))
case = Case(program, [np.arange(6, dtype=np.float32).reshape(2, 3)], ("cpu-loops@O0",))
with Runner(None, use_jax=False) as runner:
    findings = runner.evaluate(case).findings
    layers = [Attributor(runner).attribute(case, f).layer for f in findings]
open("reproducer.py", "w").write(reproducer(case, findings[0]) if findings else "")
print(json.dumps([[f.kind, f.oracle, f.backends, layer] for f, layer in zip(findings, layers)]))
"""


@pytest.mark.slow
def test_a_method_that_drops_keepdims_is_found_from_a_case_in_another_spelling(
    tmp_path: Path,
) -> None:
    """``x.sum(axis=1, keepdims=True)`` traced without keepdims: a case drawn in the default
    spelling passes every backend, the spelling oracle finds the methods spelling's wrong shape,
    attributes it to the frontend, and the reproducer prints the method call: it fails on the
    bug and passes on the real compiler."""
    mutation = Mutation(
        "method-sum-keepdims",
        "frontend/tensor.py",
        '        return _reduction("sum")(self, axis, dtype, out, **kw)',
        '        return _reduction("sum")(self, axis, dtype, out, **{**kw, "keepdims": False})',
        "x.sum(...) drops keepdims",
    )
    scratch = apply(mutation, tmp_path / "src")
    proc = subprocess.run(
        [sys.executable, "-c", _EVALUATE], cwd=tmp_path, env=scratch_environment(scratch),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    findings = json.loads(proc.stdout.strip().splitlines()[-1])
    assert findings == [["wrong-shape", "spelling[methods]", ["graph-numpy"], "frontend"]]
    script = tmp_path / "reproducer.py"
    assert ".sum(axis=1, keepdims=True)" in script.read_text(), script.read_text()
    with_bug = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=scratch_environment(scratch),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    clean = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert with_bug.returncode != 0, with_bug.stdout + with_bug.stderr[-2000:]
    assert clean.returncode == 0, clean.stdout + clean.stderr[-2000:]


def _power_case() -> Case:
    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    program = b.build(b.node("power", x, b.input((2, 3), "float32")))
    values = [np.full((2, 3), 2.0, np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)]
    return Case(program, values, ("cpu-loops@O0",))


def test_the_array_apis_pow_is_a_spelling() -> None:
    """``xp.pow``, the array API's name for a power (NumPy 2's alias of np.power), is the
    methods spelling of ``power``, so the spelling oracle traces it on every power case."""
    from compiler import primitives
    from harness.run.runner import Runner

    assert primitives.get("power").spelled("methods")[1](["x0", "x1"], {}) == "xp.pow(x0, x1)"
    assert "methods" in other_spellings(_power_case())
    with Runner(None, use_jax=False) as runner:
        judgement = runner.evaluate(_power_case())
    assert "spelling" in judgement.oracles and not judgement.findings


def test_numpys_other_names_are_spelled_too() -> None:
    """Every name the frontend dispatches is met by some spelling: np.amax and np.amin (the
    numpy spelling of a max or min over given axes; np.max and np.min over the whole array) and
    x.mT (the methods spelling of a swap of the last two axes), and x.transpose(None) with
    np.transpose(x, None); a clean compiler passes them (an np.amin traced as a max, or an x.mT
    reversing every axis, went unseen before)."""
    from compiler import primitives
    from harness.run.runner import Runner

    numpy_max = primitives.get("max").spelled("numpy")[1]
    assert numpy_max(["x"], {"axis": (1,), "keepdims": False}) == "xp.amax(x, axis=(1,))"
    assert numpy_max(["x"], {"axis": None, "keepdims": False}) == "xp.max(x)"
    assert primitives.get("min").spelled("numpy")[1](["x"], {"axis": 0}) == "xp.amin(x, axis=0)"
    transpose = primitives.get("permute_dims").spelled("methods")[1]
    assert transpose(["x"], {"axes": (0, 2, 1)}) == "x.mT"
    assert transpose(["x"], {"axes": (1, 0, 2)}) == "x.transpose((1, 0, 2))"
    reversed_axes = primitives.get("transpose")
    assert reversed_axes.spelled("numpy")[1](["x"], {"none": True}) == "xp.transpose(x, None)"
    assert reversed_axes.spelled("numpy")[1](["x"], {"none": False}) == "xp.transpose(x)"
    assert reversed_axes.render(["x"], {"none": True}) == "x.T"
    b = ProgramBuilder()
    x = b.input((2, 3, 4), "float32")
    smallest = b.node("min", b.node("permute_dims", x, axes=(0, 2, 1)), axis=1)
    program = b.build(b.node("transpose", smallest, none=True))
    values = [np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 7 - 3]
    with Runner(None, use_jax=False) as runner:
        for spelling in ("numpy", "methods"):
            case = Case(program, values, ("cpu-loops@O0",)).respelled(spelling)
            judgement = runner.evaluate(case)
            assert not judgement.findings, [f.detail for f in judgement.findings]


_EVALUATE_POWER = _EVALUATE.replace(
    'program = b.build(b.node("sum", b.input((2, 3), "float32"), axis=1, keepdims=True))\n'
    'case = Case(program, [np.arange(6, dtype=np.float32).reshape(2, 3)], ("cpu-loops@O0",))',
    "from tests.harness.test_spelling_oracle import _power_case\ncase = _power_case()",
)


@pytest.mark.slow
def test_a_namespace_pow_that_swaps_its_operands_is_found(tmp_path: Path) -> None:
    """A namespace ``pow`` with its operands swapped: a case drawn as ``x ** y`` passes every
    backend, and the spelling oracle finds the methods spelling's wrong values, in the
    frontend."""
    mutation = Mutation(
        "namespace-pow-swapped",
        "frontend/tensor.py",
        '        return lang.elementwise("power", x, y)',
        '        return lang.elementwise("power", y, x)',
        "xp.pow(x, y) computes y ** x",
    )
    assert _EVALUATE_POWER != _EVALUATE
    findings = json_with(mutation, tmp_path, _EVALUATE_POWER)
    assert [f[1] for f in findings] == ["spelling[methods]"], findings
    assert findings[0][3] == "frontend", findings


_EVALUATE_TRANSPOSE = _EVALUATE.replace(
    'program = b.build(b.node("sum", b.input((2, 3), "float32"), axis=1, keepdims=True))\n'
    'case = Case(program, [np.arange(6, dtype=np.float32).reshape(2, 3)], ("cpu-loops@O0",))',
    "from tests.harness.test_spelling_oracle import _transposed_case\ncase = _transposed_case(())",
)


@pytest.mark.slow
def test_a_method_that_takes_an_empty_permutation_for_none_is_found(tmp_path: Path) -> None:
    """``x.transpose(())`` of a matrix taken for ``x.transpose()``: an invalid case drawn in
    the default spelling is rejected there, and the spelling oracle finds the methods spelling
    accepting it, in the frontend."""
    mutation = Mutation(
        "empty-transpose-axes-reverse",
        "frontend/tensor.py",
        "        return lang.transpose(self, None if axes is None else tuple(axes))",
        "        return lang.transpose(self, None if not axes else tuple(axes))",
        "x.transpose(()) reverses every axis",
    )
    assert _EVALUATE_TRANSPOSE != _EVALUATE
    findings = json_with(mutation, tmp_path, _EVALUATE_TRANSPOSE)
    assert [f[:2] for f in findings] == [["wrong-error", "spelling[methods]"]], findings
    assert findings[0][3] == "frontend", findings
    assert ".transpose(())" in (tmp_path / "reproducer.py").read_text()


def test_a_spelling_finding_names_what_only_that_spelling_reaches() -> None:
    """A spelling's findings name its dispatch and what only it writes: a frontend that ignored
    ``correction=`` (written by the array-api spelling alone, read in lang.py) was named the
    tensor's dispatch."""
    from compiler import primitives
    from harness.triage.attribution import _SPELLING_PATHS

    assert set(_SPELLING_PATHS) == set(primitives.SPELLINGS)
    assert "correction=" in _SPELLING_PATHS["array-api"]
    assert "compiler/frontend/lang.py" in _SPELLING_PATHS["array-api"]
    assert "__array_ufunc__" in _SPELLING_PATHS["numpy"]
