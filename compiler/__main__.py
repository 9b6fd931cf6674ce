"""Command line: print the IR of an op at any stage, replay stages on a saved module, run the
project's tools by name, or run the demo.

python -m compiler emit attention --stage optimized --target cpu-blas
python -m compiler opt bufferized.mlir --target cpu-blas --from-stage blas --to-stage lowered
python -m compiler tools mlir-opt --help          # any tool of the mlir/llvm wheels, by name
python -m compiler tools --path mlir-opt
python -m compiler workarounds                    # upstream bugs avoided: name, issue, state
python -m compiler demo
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# Small rectangular example inputs: T=7, C=12, H=3 (D=4), so no two dims coincide.
T, C, H = 7, 12, 3


def _examples(dtype: np.dtype) -> dict[str, tuple[Callable[..., Any], tuple, dict]]:
    from . import ops

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


EXAMPLES = (
    "matmul",
    "gelu",
    "softmax",
    "layer_norm",
    "linear",
    "attention",
    "attend",
    "feedforward",
)


def emit(args: argparse.Namespace) -> int:
    from . import jit

    fn, arrays, static = _examples(np.dtype(args.dtype))[args.op]
    if args.abi == "tensor":
        print(jit(fn).emit(*arrays, abi="tensor", **static))
        return 0
    compiled = jit(fn).compile(*arrays, target=args.target, **static)
    stage = args.stage
    if stage not in compiled.stages:
        print(f"stage {stage!r} is not run by target {args.target}", file=sys.stderr)
        return 2
    print(compiled.stages[stage])
    return 0


def opt(args: argparse.Namespace) -> int:
    """Run a range of a target's stages on a saved module (the input of ``--from-stage``)."""
    from .driver import run_stages
    from .pipelines import resolve

    if args.target.startswith("mlir:"):  # an upstream pipeline variant (compiler/mlir_variants/)
        from .backends import get

        target = get(args.target).target
    else:
        target = resolve(args.target)
    names = target.stage_names()
    for given in (args.from_stage, args.to_stage):
        if given and given not in names:
            print(f"target {target.name} has no stage {given!r}: {names}", file=sys.stderr)
            return 2
    first = names.index(args.from_stage) if args.from_stage else 0
    last = names.index(args.to_stage) if args.to_stage else len(names) - 1
    if last < first:
        print(
            f"--to-stage {args.to_stage} comes before --from-stage {args.from_stage}",
            file=sys.stderr,
        )
        return 2
    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    result = run_stages(text, target, list(target.stages[first : last + 1]))
    if args.output:
        Path(args.output).write_text(result)
    else:
        sys.stdout.write(result)
    return 0


def jit_input(args: argparse.Namespace) -> int:
    """The module the JIT compiles from a lowered module at ``--level``: at 0, every function
    marked ``optnone noinline`` (``runtime.unoptimized``); otherwise the module itself."""
    from .runtime import jit_input as prepared

    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    result = prepared(text, args.level)
    if args.output:
        Path(args.output).write_text(result)
    else:
        sys.stdout.write(result)
    return 0


def tools_command(args: argparse.Namespace) -> int:
    from .tools import available_tools, tool_path

    if args.list:
        for name, path in available_tools().items():
            print(f"{name:28} {path}")
        return 0
    if not args.tool:
        print("name a tool (or --list)", file=sys.stderr)
        return 2
    path = tool_path(args.tool)
    if path is None:
        print(f"tool {args.tool!r} not found (python -m compiler tools --list)", file=sys.stderr)
        return 127
    if args.path:
        print(path)
        return 0
    os.execv(path, [path, *args.args])
    return 0  # pragma: no cover - execv does not return


def workarounds_command(args: argparse.Namespace) -> int:
    """Each workaround for an upstream bug: name, state here (on unless turned off by
    COMPILER_DISABLE_WORKAROUNDS), the upstream issue and what the compiler does instead."""
    from . import workarounds

    try:
        rows = workarounds.describe()
    except ValueError as error:  # a bad COMPILER_DISABLE_WORKAROUNDS
        print(error, file=sys.stderr)
        return 2
    for row in rows:
        print(f"{row['name']}  [{row['state']}]")
        print(f"  issue: {row['issue']}")
        print(f"  instead: {row['description']}")
        print(f"  off: {row['off']}")
    print(f"turn off: {workarounds.ENV}=name[,name] or compiler.workarounds.disabled(name)")
    return 0


def demo(args: argparse.Namespace) -> int:
    """Compile every transformer op and a small GPT-2 on every CPU target; check against NumPy."""
    from . import jit
    from .backends import cpu_targets as targets

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
    from .backends import cpu_targets as targets

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


def _opt_target(name: str) -> str:
    """A target of ``opt``: one of ours, or an ``mlir:`` pipeline variant."""
    from .backends import why_not
    from .pipelines import TARGETS

    if name in TARGETS or (name.startswith("mlir:") and why_not(name) is None):
        return name
    reason = why_not(name) if name.startswith("mlir:") else f"choose from {', '.join(TARGETS)}"
    raise argparse.ArgumentTypeError(f"invalid target {name!r}: {reason}")


def main(argv: list[str] | None = None) -> int:
    from .pipelines import TARGETS

    # Every stage of every target (cpu-vector has its own), in first-seen order.
    every = list(dict.fromkeys(s.name for t in TARGETS.values() for s in t.stages))
    stage_names = ["module", *every]
    parser = argparse.ArgumentParser(
        prog="python -m compiler",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("emit", help="print the IR of an op at one stage")
    e.add_argument("op", choices=EXAMPLES)
    e.add_argument("--stage", default="module", choices=stage_names, help="default: %(default)s")
    e.add_argument("--target", default="cpu", help="default: %(default)s")
    e.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    e.add_argument(
        "--abi", default="memref", choices=["memref", "tensor"], help="default: %(default)s"
    )
    e.set_defaults(func=emit)
    o = sub.add_parser("opt", help="run a target's stages on a saved module")
    o.add_argument("file", help="module text (the input of --from-stage), or - for stdin")
    o.add_argument(
        "--target", required=True, type=_opt_target, help=f"{', '.join(TARGETS)} or mlir:<entries>"
    )
    # A variant's stages are named after its catalog entries: opt() checks the names.
    o.add_argument("--from-stage", help=f"default: the target's first ({', '.join(every)}...)")
    o.add_argument("--to-stage", help="default: the target's last")
    o.add_argument("-o", "--output", help="write here instead of stdout")
    o.set_defaults(func=opt)
    j = sub.add_parser("jit-input", help="the module the JIT compiles from a lowered module")
    j.add_argument("file", help="the lowered module (LLVM dialect), or - for stdin")
    j.add_argument("--level", type=int, choices=range(4), required=True, help="the target's")
    j.add_argument("-o", "--output", help="write here instead of stdout")
    j.set_defaults(func=jit_input)
    t = sub.add_parser("tools", help="run a tool of the mlir/llvm wheels by name")
    t.add_argument("tool", nargs="?")
    t.add_argument("args", nargs=argparse.REMAINDER)
    t.add_argument("--path", action="store_true", help="print the tool's path instead")
    t.add_argument("--list", action="store_true", help="list the tools")
    t.set_defaults(func=tools_command)
    w = sub.add_parser(
        "workarounds", help="list the workarounds for upstream bugs: name, issue, state"
    )
    w.set_defaults(func=workarounds_command)
    d = sub.add_parser("demo", help="compile and check the transformer ops on every CPU target")
    d.set_defaults(func=demo)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    code = args.func(args)
    if args.command == "demo":
        print(f"done in {time.perf_counter() - start:.1f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
