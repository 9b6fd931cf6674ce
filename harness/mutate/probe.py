"""The equivalence probe, run in a subprocess whose ``compiler`` may be a mutant.

``python -m harness.mutate.probe SAMPLE OUT [--reference FILE] [--module NAME ...]``: imports
the compiler (a failure there is a *stillborn* mutant), then for every sample program digests
what the compiler emits (``jit(fn).emit``) and, for ``runs`` of the valid programs, every
stage's text, the outputs and the blas, memory and arguments oracles' evidence (gemm calls,
blocks left, guard faults, misfit calls refused) on each CPU backend, its kernels instrumented
as a session's worker runs them (a mutant of the guards was "unreached"). Without a reference
it writes every digest;
with one it stops at the first digest that differs (a live mutant usually differs within the
first programs, so only likely-equivalent mutants pay for the whole sample). The sample's jit
sequences are called in order on one backend each, as a session calls them. ``--lines FILE``
also records which lines of the compiler the sample ran (a mutant elsewhere is *unreached*).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import pickle
import re
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import loading

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
#: What a fuzz session imports before its first case: a mutant that cannot be imported with
#: these is stillborn (its session would stop at startup, never judging a case).
STARTUP_MODULES = (*loading.STARTUP_MODULES, "harness.session.fuzz", "harness.run.worker")


def _encode(value: Any, out: list[bytes]) -> None:
    import numpy as np

    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        out += [b"A", array.dtype.str.encode(), repr(array.shape).encode(), array.tobytes()]
    elif isinstance(value, (list, tuple)):
        out.append(f"{type(value).__name__}{len(value)}".encode())
        for item in value:
            _encode(item, out)
    elif isinstance(value, dict):
        out.append(f"dict{len(value)}".encode())
        for key in sorted(value, key=str):
            out.append(str(key).encode())
            _encode(value[key], out)
    else:
        out.append(repr(value).encode())


def digest(value: Any) -> str:
    parts: list[bytes] = []
    _encode(value, parts)
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()[:24]


_CONTEXT: list[Any] = []


def _canonical(text: Any) -> Any:
    """A module's text as MLIR prints it, where it parses: SSA names are then MLIR's own (%0,
    %c1_i32), so a mutant that only renames values in the builder's text (two fresh names of
    the bfloat16 rounding swapped) is likely equivalent, not a survivor. Anything else (an
    error, a module that does not parse) is compared as it is."""
    if not isinstance(text, str):
        return text
    from mlir import ir

    if not _CONTEXT:
        _CONTEXT.append(ir.Context())
    try:
        with _CONTEXT[0]:
            return ir.Module.parse(text).operation.get_asm(assume_verified=True)
    except Exception:  # noqa: BLE001 - an unparsable module is compared as written
        return text


def _error(error: BaseException) -> str:
    """An exception as a comparable string (addresses scrubbed: they differ run to run)."""
    return f"error {type(error).__name__}: {_ADDRESS.sub('0x?', str(error))[:2000]}"


def item_runs(item: dict[str, Any]) -> bool:
    """Whether a sample item always runs on every backend (the op sweep's items do)."""
    return bool(item.get("run"))


def _spelling(index: int) -> str:
    """The spelling sample item ``index`` is written in: each in turn, so the frontend's NumPy
    dispatch and its methods are reached (and compared) like its array namespace."""
    from compiler.primitives import SPELLINGS

    return SPELLINGS[index % len(SPELLINGS)]


def _arranged(index: int, inputs: list[Any]) -> list[Any]:
    """The inputs of run ``index``, every other run's in a memory layout (each layout in turn),
    so the argument handling is compared on what the fuzzer hands over too."""
    from harness.run.layouts import LAYOUTS, arrange

    if index % 2 == 0:
        return list(inputs)
    names = list(LAYOUTS)
    return [arrange(a, names[(index // 2 + k) % len(names)]) for k, a in enumerate(inputs)]


def observations(sample: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``(key, digest)`` for the sample: every program's emitted module first (cheap), then
    stages and outputs on each backend of the op sweep's programs and of ``runs`` other valid
    programs (spread over the sample). Items are written in each spelling in turn, and every
    other run hands its inputs over in another memory layout."""
    import compiler
    from strategies.model import InvalidProgram, Program

    subjects: list[Any] = []
    for i, item in enumerate(sample["items"]):
        subject = None
        if item["kind"] in ("sequence", "model"):
            subjects.append(None)
            continue
        try:
            cls = Program if item["kind"] == "program" else InvalidProgram
            subject = cls.from_dict(item["subject"])
            fn = compiler.jit(subject.as_function(None, _spelling(i)))
            value: Any = fn.emit(*item["inputs"])
        except Exception as error:  # noqa: BLE001 - a mutant may raise anything
            value = _error(error)
        subjects.append(subject)
        yield f"{i}:emit", digest(_canonical(value))
    valid = [i for i, item in enumerate(sample["items"]) if item["kind"] == "program"]
    swept = [i for i in valid if item_runs(sample["items"][i])]
    rest = [i for i in valid if not item_runs(sample["items"][i])]
    chosen = swept + rest[:: max(1, len(rest) // max(1, sample["runs"]))][: sample["runs"]]
    from compiler.pipelines import BUILT
    from compiler.runtime import blas_calls, fault_mark, instrumented, live_blocks, memory_faults
    from harness.oracles.arguments import check as check_arguments

    for position, i in enumerate(chosen):
        inputs = _arranged(position, sample["items"][i]["inputs"])
        for backend in sample["backends"]:
            stages: Any
            try:
                fn = compiler.jit(subjects[i].as_function(None, _spelling(i)))
                # Instrumented, as a session's worker runs kernels: a mutant of the guards or
                # the counters (the memory and blas oracles' evidence) is reached and seen.
                with instrumented():
                    compiled = fn.specialize(*inputs, target=backend)
                    stages = [  # the module as built in MLIR's names, as emit's
                        (name, _canonical(text) if name == BUILT else text)
                        for name, text in compiled.stages.items()
                    ]
                    before = (blas_calls(), live_blocks(), fault_mark())
                    outputs: Any = compiled(*inputs)
                    evidence = (
                        blas_calls() - before[0],
                        live_blocks() - before[1],
                        memory_faults(before[2]),
                        # The arguments oracle's: the specialization refuses misfit arrays.
                        check_arguments(compiled, inputs, position),
                    )
                fn.clear()
            except Exception as error:  # noqa: BLE001
                stages, outputs, evidence = _error(error), "-", "-"
            yield f"{i}:{backend}:stages", digest(stages)
            yield f"{i}:{backend}:outputs", digest(outputs)
            yield f"{i}:{backend}:memory", digest(evidence)
    sequences = [i for i, item in enumerate(sample["items"]) if item["kind"] == "sequence"]
    for position, i in enumerate(sequences):
        backend = sample["backends"][position % len(sample["backends"])]
        yield from _sequence_observations(i, sample["items"][i]["subject"], backend)
    for i, item in enumerate(sample["items"]):
        if item["kind"] == "model":
            yield from _model_observations(i, item)


def _model_observations(index: int, item: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A GPT-2 model through ``compiler/model.py`` on its backend (``harness.run.gpt2``, as a
    session's worker runs it): what was loaded, both forward passes' logits, the generated
    tokens and what the call it must refuse did."""
    from harness.run.gpt2 import full_inputs, run_model
    from strategies.model.gpt2 import ModelSpec

    backend = item["backend"]
    try:
        spec, seed = ModelSpec.from_dict(item["subject"]["spec"]), item["subject"]["seed"]
        run = run_model(spec, full_inputs(spec, seed, list(item["inputs"])), backend)
        loaded: Any = (run.loaded, run.config, run.params)
        outputs: Any = (
            run.eager, run.eager_error, run.logits, _ADDRESS.sub("0x?", run.error),
            run.generated, run.generation_error, run.greedy, sorted(run.refused.items()),
        )  # fmt: skip
    except Exception as error:  # noqa: BLE001 - a mutant may raise anything
        loaded, outputs = _error(error), "-"
    yield f"{index}:{backend}:model", digest(loaded)
    yield f"{index}:{backend}:outputs", digest(outputs)


def _sequence_observations(index: int, data: Any, backend: str) -> Iterator[tuple[str, str]]:
    """A jit sequence's calls in order on ``backend`` (``harness.run.worker.run_sequence``, as
    a session runs them): what the cache did (traced, outputs overwritten) and the answers."""
    from harness.case import Case, decode_array
    from harness.run.worker import run_sequence
    from strategies.model.sequence import JitSequence

    calls: Any
    try:
        case = Case.from_sequence(JitSequence.from_dict(data, decode_array), (backend,))
        results = run_sequence(case, backend)
        calls = [
            (r.status, r.error_type, r.traced, r.independent, r.alone and r.alone.status)
            for r in results
        ]
        outputs: Any = [
            (r.output if r.ok else _ADDRESS.sub("0x?", r.message)[:2000],
             r.alone and (r.alone.output if r.alone.ok else r.alone.error_type))
            for r in results
        ]  # fmt: skip
    except Exception as error:  # noqa: BLE001 - a mutant may raise anything
        calls, outputs = _error(error), "-"
    yield f"{index}:{backend}:calls", digest(calls)
    yield f"{index}:{backend}:outputs", digest(outputs)


def trace_lines(root: str) -> set[tuple[str, int]]:
    """Start recording the lines run in files under ``root`` (this thread and new ones); the
    returned set fills as they run. Frames of other files are not traced line by line."""
    import threading

    executed: set[tuple[str, int]] = set()
    prefix = root.rstrip("/") + "/"

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            executed.add((frame.f_code.co_filename, frame.f_lineno))
        return local

    def calls(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename.startswith(prefix):
            executed.add((frame.f_code.co_filename, frame.f_lineno))
            return local
        return None

    sys.settrace(calls)
    threading.settrace(calls)
    return executed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.mutate.probe")
    parser.add_argument("sample")
    parser.add_argument("out")
    parser.add_argument("--reference", default="")
    parser.add_argument("--module", action="append", default=[])
    parser.add_argument(
        "--lines", default="", help="also write the compiler's lines the sample ran (JSON)"
    )
    parser.add_argument(
        "--outputs-only", action="store_true",
        help="compare only the outputs (does a mutant change an answer, or only the IR?)",
    )  # fmt: skip
    args = parser.parse_args(argv)

    def write(result: dict[str, Any]) -> None:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(result, handle)

    executed: set[tuple[str, int]] | None = None
    if args.lines:
        spec = importlib.util.find_spec("compiler")
        assert spec is not None and spec.submodule_search_locations
        root = list(spec.submodule_search_locations)[0]
        executed = trace_lines(root)
    try:
        import compiler  # noqa: F401
        import strategies  # noqa: F401

        # All that a fuzz session imports before its first case (its backends' registry,
        # variants, runner and workers): a mutant that breaks any of it never runs a case.
        for name in STARTUP_MODULES:
            importlib.import_module(name)
        for name in args.module:
            importlib.import_module(name)
    except BaseException:  # noqa: BLE001 - a mutant that cannot even be imported
        write({"status": "stillborn", "detail": traceback.format_exc()[-3000:]})
        return 0
    with open(args.sample, "rb") as handle:
        sample = pickle.load(handle)
    reference = None
    if args.reference:
        with open(args.reference, encoding="utf-8") as handle:
            reference = json.load(handle)
    digests: dict[str, str] = {}
    for key, value in observations(sample):
        if args.outputs_only and not key.endswith(":outputs"):
            continue
        if reference is not None and reference.get(key) not in (None, value):
            write({"status": "different", "key": key, "checked": len(digests)})
            return 0
        digests[key] = value
    if executed is not None:
        sys.settrace(None)
        root_parent = str(Path(root).parent) + "/"
        ran = sorted({(f.removeprefix(root_parent), n) for f, n in executed})
        Path(args.lines).write_text(json.dumps(ran))
    write({"status": "same" if reference is not None else "reference", "digests": digests})
    return 0


if __name__ == "__main__":
    sys.exit(main())
