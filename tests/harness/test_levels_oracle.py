"""The levels oracle: one of our pipelines at LLVM -O0 and as shipped owes the same bits."""

from __future__ import annotations

import numpy as np
import pytest
from planted_reproducer import run_with_and_without

from harness.case import Case
from harness.oracles.levels import low_partner, pairs
from harness.selftest import Mutation
from strategies.model import ProgramBuilder

SHIPPED = ("cpu-blas", "cpu-vector", "cpu")
DEFAULTS = ("cpu-loops@O0", "cpu-blas@O0", "cpu-vector@O0", "graph-numpy")


def test_each_target_as_shipped_meets_its_pipeline_at_O0() -> None:
    assert pairs((*DEFAULTS, *SHIPPED)) == (
        ("cpu-blas", "cpu-blas@O0"),
        ("cpu-vector", "cpu-vector@O0"),
        ("cpu", "cpu-vector@O0"),
    )
    # no partner at -O0, another pipeline's, a variant's or a stage prefix's: not judged
    assert pairs(("cpu-blas", "cpu-loops@O0", "mlir:tile-vectorize-static@O0")) == ()
    assert pairs(("cpu-vector@O2", "cpu-vector+poison-checks@O0", "cpu-vector:bufferized")) == ()
    assert low_partner("cpu") == "cpu-vector@O0" and low_partner("cpu-vector@O0") is None


def _fused(shape: tuple[int, ...] = (64,)) -> Case:
    b = ProgramBuilder()
    x, y, z = (b.input(shape, "float32") for _ in range(3))
    program = b.build(b.node("exp", b.node("subtract", b.node("multiply", x, y), z)))
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    return Case(program, inputs, (*DEFAULTS, *SHIPPED))


def test_a_clean_compiler_gives_the_same_bits_at_both_levels() -> None:
    from harness.run.runner import Runner

    with Runner(None, use_jax=False) as runner:
        judgement = runner.evaluate(_fused(), ("levels",))
    assert "levels" in judgement.oracles
    assert not judgement.findings, [f.detail for f in judgement.findings]


_MAKE = """
import sys
import numpy as np
from harness.case import Case
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x, y, z = (b.input((64,), "float32") for _ in range(3))
program = b.build(b.node("exp", b.node("subtract", b.node("multiply", x, y), z)))
rng = np.random.default_rng(0)
inputs = [rng.standard_normal((64,)).astype(np.float32) for _ in range(3)]
case = Case(program, inputs, ("cpu-loops@O0", "cpu-blas@O0", "cpu-vector@O0", "graph-numpy",
                              "cpu-blas", "cpu-vector", "cpu"))
with Runner(None, use_jax=False) as runner:
    judgement = runner.evaluate(case)
findings = [f for f in judgement.findings if f.oracle == "levels"]
others = [f for f in judgement.findings if f.oracle != "levels"]
assert findings and not others, [(f.oracle, f.detail[:200]) for f in judgement.findings]
open(sys.argv[1], "w").write(reproducer(findings[0].case, findings[0]))
with Runner(None, use_jax=False) as runner:
    from harness.triage.attribution import Attributor

    attribution = Attributor(runner).attribute(findings[0].case, findings[0])
open(sys.argv[1] + ".layer", "w").write(attribution.layer + ": " + attribution.detail)
"""


@pytest.mark.slow
def test_a_contraction_into_an_fma_is_found_where_the_error_model_has_room(tmp_path) -> None:
    """Float ops lowered with ``fastmath<contract>`` (planted): LLVM fuses ``x * y - z`` into one
    FMA at -O3 (cpu-blas's loops here), one rounding where NumPy rounds twice. Inside ``exp``
    the error model has room for that ulp, and the differential oracle passes it; the two
    levels of the pipeline differ, the finding names the flag in the module we build (layer
    ``builder``), and the reproducer fails with the flag and passes without it."""
    mutation = Mutation(
        "float-ops-contracted",
        "primitives/scalar.py",
        """        return [f"{call.result} = {op} {', '.join(call.args)} : {element(call.dtype)}"]
""",
        """        flags = " fastmath<contract>" if is_float(call.dtype) else ""
        return [f"{call.result} = {op} {', '.join(call.args)}{flags} : {element(call.dtype)}"]
""",
        "float arith ops may be contracted into FMAs",
    )
    text, with_bug, clean = run_with_and_without(tmp_path, mutation, _MAKE)
    assert "from harness.verdict import levels" in text
    layer = (tmp_path / "reproducer.py.layer").read_text()
    assert layer.startswith("builder: ") and "contract" in layer, layer  # the flag named
    assert with_bug.returncode == 1, with_bug.stdout[-2000:] + with_bug.stderr[-2000:]
    assert clean.returncode == 0, clean.stdout[-2000:] + clean.stderr[-2000:]


@pytest.mark.parametrize("span", [300.33251, 1.0], ids=["hundreds-of-ulps", "an-ulp"])
def test_a_rewritten_libm_call_is_found_and_named_where_the_kernel_is_unmarked(span) -> None:
    """With the workaround ``libm-calls-kept`` off, LLVM's library call simplifier rewrites
    ``pow(8.0, x)`` as ``exp2(3.0 * x)`` at -O3 only. Where that is hundreds of ulps off, the
    differential oracle finds it, attributed to LLVM's IR passes; where it is an ulp, the levels
    oracle, attributed to LLVM's optimizer. Either names the call and the missing "no-builtins"
    mark (a rewrite of a call, not a change of what IEEE 754 fixes). With the workaround on,
    both levels call pow, and nothing is found."""
    from dataclasses import replace

    from harness.run.runner import Runner
    from harness.triage.attribution import Attributor
    from strategies.model import Const

    b = ProgramBuilder()
    program = b.build(b.node("power", Const(8.0), b.input((64,), "float64")))
    inputs = [np.linspace(-span, span, 64)]
    case = Case(program, inputs, ("cpu-blas@O0", "cpu-blas"))
    with Runner(None, use_jax=False) as runner:
        assert not runner.evaluate(case, ("levels",)).findings
        off = replace(case, workarounds_off=("libm-calls-kept",))
        (finding,) = runner.evaluate(off, ("levels",)).findings
        attribution = Attributor(runner).attribute(finding.case, finding)
    assert finding.oracle == ("differential" if span > 1 else "levels"), finding.detail
    assert attribution.layer == ("llvm:ir-passes" if span > 1 else "llvm"), attribution
    assert "pow" in attribution.detail and "no-builtins" in attribution.detail, attribution
