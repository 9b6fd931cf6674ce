"""Speed of compiled kernels as ratios against NumPy and jax.jit, measured in one run.

Run: ``python bench/compiler.py [--repeat N]``. Ratios > 1 mean the compiled kernel is faster.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

from compiler import jit, ops  # noqa: E402
from compiler.pipelines import TARGETS  # noqa: E402


def best_time(fn: Callable[[], object], repeat: int) -> float:
    """Best wall time of ``repeat`` calls after one warm-up (the least noisy estimate)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def block(
    x, ln1_g, ln1_b, qkv_w, qkv_b, out_w, out_b, ln2_g, ln2_b, up_w, up_b, down_w, down_b, *, heads
):
    """One GPT-2 block: attend + feedforward, the same source for every evaluator."""
    h = ops.attend(x, ln1_g, ln1_b, qkv_w, qkv_b, out_w, out_b, heads=heads)
    return ops.feedforward(h, ln2_g, ln2_b, up_w, up_b, down_w, down_b)


def cases(rng: np.random.Generator) -> list[tuple[str, Callable, tuple, dict]]:
    f32 = np.float32
    T, C, H = 128, 768, 12

    def w(*shape: int, scale: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(f32)

    a, b = w(512, 512, scale=1), w(512, 512, scale=1)
    x = w(T, C, scale=1)
    attn = (x, w(C, 3 * C), w(3 * C), w(C, C), w(C))
    blk = (x, 1 + w(C), w(C), *attn[1:], 1 + w(C), w(C), w(C, 4 * C), w(4 * C), w(4 * C, C), w(C))
    return [
        ("matmul 512^3 f32", lambda a, b: a @ b, (a, b), {}),
        (
            "gelu(linear) 128x768->3072",
            lambda x, w, b: ops.gelu(ops.linear(x, w, b)),
            (x, w(C, 4 * C), w(4 * C)),
            {},
        ),
        ("attention T=128 C=768 H=12", ops.attention, attn + (H,), {}),
        ("GPT-2 block T=128", block, blk, {"heads": H}),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--targets", default="cpu-blas,cpu-loops")
    args = parser.parse_args()
    targets = args.targets.split(",")
    rng = np.random.default_rng(0)
    header = f"{'case':30} {'numpy ms':>9} {'jax ms':>8}"
    for t in targets:
        header += f" {t + ' ms':>14} {'vs np':>6} {'vs jax':>6}"
    print(header)
    compile_rows = []
    for name, fn, arrays, static in cases(rng):
        statics = [v for v in arrays if not isinstance(v, np.ndarray)]
        tensors = [v for v in arrays if isinstance(v, np.ndarray)]
        t_np = best_time(lambda: fn(*arrays, **static), args.repeat)
        jfn = jax.jit(lambda *t: fn(*t, *statics, **static))
        jargs = [jnp.asarray(v) for v in tensors]
        start = time.perf_counter()
        jax.block_until_ready(jfn(*jargs))
        jax_first = time.perf_counter() - start
        t_jax = best_time(lambda: jax.block_until_ready(jfn(*jargs)), args.repeat)
        row = f"{name:30} {t_np * 1e3:9.2f} {t_jax * 1e3:8.2f}"
        compile_row = [name, jax_first]
        for target in targets:
            compiled = jit(fn)
            start = time.perf_counter()
            compiled(*arrays, target=target, **static)
            compile_row.append(time.perf_counter() - start)
            t_c = best_time(lambda: compiled(*arrays, target=target, **static), args.repeat)
            row += f" {t_c * 1e3:14.2f} {t_np / t_c:6.2f} {t_jax / t_c:6.2f}"
        print(row, flush=True)
        compile_rows.append(compile_row)
    print()
    print(
        f"{'first call (trace+compile) s':30} {'jax.jit':>8}"
        + "".join(f" {t:>14}" for t in targets)
    )
    for row in compile_rows:
        print(f"{row[0]:30} {row[1]:8.3f}" + "".join(f" {v:14.3f}" for v in row[2:]))
    print(f"\nthreads: {os.cpu_count()} cores; targets known: {', '.join(TARGETS)}")


if __name__ == "__main__":
    main()
