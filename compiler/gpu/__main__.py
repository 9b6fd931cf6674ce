"""Replay one stage of the gpu-nvptx pipeline on a saved text (the reproduce commands of its
Python stages), or extract a kernel's PTX from the ``binary`` stage.

python -m compiler.gpu prepared bufferized.mlir -o prepared.mlir
python -m compiler.gpu ptx binary.mlir --kernel 0 -o kernel0.ptx
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import pipeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compiler.gpu", description=__doc__)
    parser.add_argument("stage", choices=[s.name for s in pipeline.STAGES] + ["ptx"])
    parser.add_argument("file", help="the stage's input text (- for stdin)")
    parser.add_argument("--kernel", type=int, default=0, help="ptx: which kernel (default 0)")
    parser.add_argument("-o", "--output", help="write here instead of stdout")
    args = parser.parse_args(argv)
    from mlir import ir

    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    with ir.Context():
        module = ir.Module.parse(text)
        if args.stage == "ptx":
            result = pipeline.kernels(module)[args.kernel][1]
        else:
            pipeline.stage(args.stage).run(module)
            check = pipeline.CHECKS.get(args.stage)
            if check is not None:
                check(module)
            result = str(module)
    if args.output:
        Path(args.output).write_text(result)
    else:
        sys.stdout.write(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
