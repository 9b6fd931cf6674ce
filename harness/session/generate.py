"""What a session tries: a mix of the strategies package's generators, as harness cases.

Random programs (most of the budget), transformer structures with the causality check, the
composites on their own so the metamorphic relations that need them (softmax shift, layer norm
shift, head permutation) get exercised often, and matmuls of strided views (the layouts the
BLAS substitution must get right).
"""

from __future__ import annotations

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

from strategies import invalid_programs, programs, samples
from strategies.gen.shapes import attention_configs
from strategies.gen.values import input_values
from strategies.model import ProgramBuilder

from ..case import CPU_BACKENDS, Case, generated_array


@st.composite
def program_cases(draw: st.DrawFn, backends: tuple[str, ...], max_nodes: int = 6) -> Case:
    small = draw(st.booleans())
    strategy = (
        programs(max_nodes=max_nodes) if small else programs(min_nodes=3, max_nodes=max_nodes + 4)
    )
    drawn = draw(samples(strategy))
    event("origin:program")
    return Case(drawn.program, list(drawn.inputs), backends, origin=f"programs/{drawn.regime}")


@st.composite
def attention_cases(draw: st.DrawFn, backends: tuple[str, ...]) -> Case:
    """attention / attend / a whole block on (T, C) with T, C, D distinct; checked for causality."""
    config = draw(attention_configs())
    kind = draw(st.sampled_from(["attention", "attend", "block"]))
    event(f"origin:structure:{kind}")
    T, C, H, dtype = config.length, config.width, config.heads, config.dtype
    b = ProgramBuilder()
    shapes: list[tuple[int, ...]] = [(T, C)]
    x = b.input((T, C), dtype)
    scales = [1.0]

    def weight(*shape: int, scale: float = config.weight_scale) -> object:
        shapes.append(shape)
        scales.append(scale)
        return b.input(shape, dtype)

    if kind == "attention":
        out = b.node(
            "attention", x, weight(C, 3 * C), weight(3 * C), weight(C, C), weight(C), heads=H
        )
    else:
        out = b.node(
            "attend",
            x,
            weight(C),
            weight(C),
            weight(C, 3 * C),
            weight(3 * C),
            weight(C, C),
            weight(C),
            heads=H,
        )
        if kind == "block":
            out = b.node(
                "feedforward",
                out,
                weight(C),
                weight(C),
                weight(C, 4 * C),
                weight(4 * C),
                weight(4 * C, C),
                weight(C),
            )
    program = b.build(out)
    seed = draw(st.integers(0, 2**31 - 1))
    # One recipe per input: a corpus file stores large inputs as the recipe, not the bytes.
    recipes = [{"seed": seed + i, "scale": sc} for i, sc in enumerate(scales)]
    inputs = [
        generated_array(s, dtype, r["seed"], r["scale"])
        for s, r in zip(shapes, recipes, strict=True)
    ]
    return Case(
        program, inputs, backends, checks=("causal",), origin=f"structure/{kind}", recipes=recipes
    )


@st.composite
def composite_cases(draw: st.DrawFn, backends: tuple[str, ...]) -> Case:
    """softmax / layer_norm / gelu on one input, with the value regimes that stress them."""
    op = draw(st.sampled_from(["softmax", "layer_norm", "gelu"]))
    event(f"origin:composite:{op}")
    drawn = draw(samples(programs(ops=[op], max_nodes=1)))
    return Case(drawn.program, list(drawn.inputs), backends, origin=f"composite/{op}")


@st.composite
def strided_matmul_cases(draw: st.DrawFn, backends: tuple[str, ...]) -> Case:
    """matmul of sliced views: operands whose row stride is not their width, so the BLAS
    substitution must pass leading dimensions (or fall back) correctly."""
    dtype = draw(st.sampled_from(["float32", "float64"]))
    m, k, n = draw(st.lists(st.integers(2, 7), min_size=3, max_size=3, unique=True))
    batch = draw(st.sampled_from([(), (2,)]))
    pads = draw(st.lists(st.integers(0, 3), min_size=4, max_size=4))
    b = ProgramBuilder()
    x = b.input(batch + (m + pads[0], k + pads[1]), dtype)
    w = b.input(batch + (k + pads[2], n + pads[3]), dtype)
    lead = (slice(None),) * len(batch)
    left = b.node("index", x, key=lead + (slice(pads[0], pads[0] + m), slice(pads[1], None)))
    right = b.node("index", w, key=lead + (slice(0, k), slice(0, n)))
    out = b.node("matmul", left, right)
    event(f"origin:strided-matmul:rank{len(batch) + 2}")
    program = b.build(out)
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    inputs = [np.round(rng.standard_normal(i.shape) * 4).astype(dtype) for i in program.inputs]
    return Case(program, inputs, backends, origin="strided-matmul")


@st.composite
def invalid_cases(draw: st.DrawFn, backends: tuple[str, ...]) -> Case:
    """A valid program plus exactly one violation, for the error-path oracle."""
    invalid = draw(invalid_programs())
    inputs = draw(input_values(invalid.inputs))
    event(f"origin:invalid:{invalid.violation}")
    return Case(invalid, list(inputs), backends, origin=f"invalid/{invalid.violation}")


def cases(
    backends: tuple[str, ...] = CPU_BACKENDS, max_nodes: int = 6, mix: str = "all"
) -> st.SearchStrategy[Case]:
    """The session's mix (``all``), or random programs only (``programs``); random programs
    come first so shrinking heads towards them."""
    if mix == "programs":
        return program_cases(backends, max_nodes)
    if mix != "all":
        raise ValueError(f"unknown case mix {mix!r} (all, programs)")
    return st.one_of(
        program_cases(backends, max_nodes),
        program_cases(backends, max_nodes),
        composite_cases(backends),
        invalid_cases(backends),
        attention_cases(backends),
        strided_matmul_cases(backends),
    )
