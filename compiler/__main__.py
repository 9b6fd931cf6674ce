"""Command line: print the IR of a transformer op at any stage, or run the demo.

python -m compiler emit attention --stage optimized --target cpu-blas
python -m compiler demo
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import jit, ops, targets

# Small rectangular example inputs: T=7, C=12, H=3 (D=4), so no two dims coincide.
T, C, H = 7, 12, 3


def _examples(dtype: np.dtype) -> dict[str, tuple[Callable[..., Any], tuple, dict]]:
    rng = np.random.default_rng(0)

    def w(*shape: int, scale: float = 0.2) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(dtype)

    x = w(T, C, scale=1.0)
    attn = (w(C, 3 * C), w(3 * C), w(C, C), w(C))
    norm = (1 + w(C), w(C))
    return {
        "matmul": (lambda a, b: a @ b, (w(T, C), w(C, 5)), {}),
        "gelu": (ops.gelu, (x,), {}),
        "softmax": (ops.softmax, (x,), {}),
        "layer_norm": (ops.layer_norm, (x, *norm), {}),
        "linear": (ops.linear, (x, w(C, 5), w(5)), {}),
        "attention": (ops.attention, (x, *attn, H), {}),
        "attend": (ops.attend, (x, *norm, *attn), {"heads": H}),
        "feedforward": (ops.feedforward, (x, *norm, w(C, 4 * C), w(4 * C), w(4 * C, C), w(C)), {}),
    }


def emit(args: argparse.Namespace) -> int:
    fn, arrays, static = _examples(np.dtype(args.dtype))[args.op]
    compiled = jit(fn).compile(*arrays, target=args.target, **static)
    stage = args.stage
    if stage not in compiled.stages:
        print(f"stage {stage!r} is not run by target {args.target}", file=sys.stderr)
        return 2
    print(compiled.stages[stage])
    return 0


def demo(args: argparse.Namespace) -> int:
    """Compile every transformer op and a small GPT-2 on every CPU target; check against NumPy."""
    failures = 0
    print(f"{'op':12} {'dtype':8} {'target':18} {'max |err|':>10} {'result':>8}")
    for dtype in ("float32", "float64"):
        for name, (fn, arrays, static) in _examples(np.dtype(dtype)).items():
            expected = fn(*arrays, **static)
            for target in targets():
                got = jit(fn)(*arrays, target=target, **static)
                ok = got.dtype == expected.dtype and got.shape == expected.shape
                err = float(np.max(np.abs(got - expected)))
                tol = 1e-5 if expected.dtype == np.float32 or dtype == "float32" else 1e-12
                ok = ok and err <= tol * max(1.0, float(np.max(np.abs(expected))))
                failures += not ok
                print(f"{name:12} {dtype:8} {target:18} {err:10.2e} {'ok' if ok else 'FAIL':>8}")
    failures += _gpt2_demo()
    print("all ops agree with NumPy" if not failures else f"{failures} disagreements")
    return 1 if failures else 0


def _gpt2_demo() -> int:
    """A small random GPT-2 (2 layers, 3 heads, width 24): compiled logits and greedy generation
    on every CPU target against the plain-NumPy forward pass of the same weights."""
    from . import model

    config = model.GPT2Config(layers=2, heads=3, width=24, context=16, vocab=40)
    params = model.init_params(config, seed=0, jitter=0.1)
    ids = np.array([3, 17, 5, 29, 11, 2, 38], np.int32)
    expected = model.forward_numpy(params, config, ids)
    greedy = model.generate_numpy(params, config, ids, steps=4)
    failures = 0
    for target in targets():
        logits = model.forward(params, config, ids, target=target)
        err = float(np.max(np.abs(logits - expected)))
        tokens = model.generate(params, config, ids, steps=4, target=target)
        ok = logits.dtype == expected.dtype and err <= 1e-5 * float(np.max(np.abs(expected)))
        ok = ok and tokens == greedy
        failures += not ok
        print(
            f"{'gpt2 logits':12} {'float32':8} {target:18} {err:10.2e} {'ok' if ok else 'FAIL':>8}"
        )
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compiler", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("emit", help="print the IR of an op at one stage")
    e.add_argument("op", choices=sorted(_examples(np.dtype("float32"))))
    e.add_argument(
        "--stage",
        default="module",
        choices=["module", "optimized", "bufferized", "blas", "lowered"],
    )
    e.add_argument("--target", default="cpu", choices=targets())
    e.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    d = sub.add_parser("demo", help="compile and check the transformer ops on every CPU target")
    d.set_defaults()
    args = parser.parse_args(argv)
    start = time.perf_counter()
    code = emit(args) if args.command == "emit" else demo(args)
    if args.command == "demo":
        print(f"done in {time.perf_counter() - start:.1f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
