"""Layer attribution: where does a finding live?

Layers, from the top: ``frontend`` (the traced graph is already wrong, or an error path is),
``relation`` (a metamorphic relation that the traced graph interpreted by NumPy breaks too,
while the differential oracle accepts that graph on the case and on the derived one: the
relation may not hold for the program, else the frontend or the definition is wrong),
``definition`` (a composite's shared definition, ``compiler/ops.py``), ``builder`` (the module as
built is wrong or does not verify), ``mlir-pass:<pass>`` (the first pass after which the result
changes, or the pass that crashes), ``blas`` (our BLAS stage), ``llvm`` (LLVM's optimizer or code
generation), ``runtime`` (our calling convention), ``mlir-parse`` (MLIR crashed reading our text),
and the layer a backend declares for another compiler behind our frontend (``xla`` for
``xla-cpu``, ``iree`` for ``iree-cpu*``: wrong where the graph interpreted by NumPy is right),
with the known bug of that compiler the failure is where the backend recognizes one
(``known_issue_of``).

Crashes and pass failures inside a pipeline stage are pinned by ``mlir-opt``'s own crash
reproducer on that stage's input (``mlir_crash.pin_crash``) and reduced to a minimal module.
Wrong answers are located by running variants of the failing backend through the same oracle
(``compiler.backends`` variant names): the graph interpreted by NumPy (``graph-numpy``), the
kernel called through MLIR's runtime helpers (``+mlir-runtime``), the module as built and then
each prefix of the target's stages (then of the culprit stage's passes) finished by a minimal
completion at -O0 (``[:stage#k]``), and the whole target at -O0. Each verdict is kept as
evidence; "the same failure" is ``Signature.matches`` (never a backend name).
"""

from __future__ import annotations

import platform
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from compiler import backends, primitives
from compiler.driver import UNTRANSLATED
from compiler.lower.libm import WORKAROUND as LIBM_WORKAROUND
from compiler.lower.poison import MARKER
from compiler.pipelines import (
    BUILT,
    LLVM,
    parse_variant,
    pipeline_steps,
    python_stage_source,
    split_level,
    step_name,
)

from ..case import Case
from ..oracles.base import Finding
from ..oracles.gpt2 import NAME as GPT2_MODEL
from ..oracles.memory import FAULT_KINDS, UNINSTRUMENTED
from ..oracles.schedule import STAGE as VECTORIZED
from ..oracles.spelling import failing_spelling
from ..run.layouts import DEFAULT as DEFAULT_LAYOUT
from ..run.task import Task
from .known_issues import failing_outputs, known_issue
from .llvm_crash import host_features
from .signature import backend_family

PIPELINE_CRASH_STAGES = ("optimized", "bufferized", "lowered")
#: Findings of the jit-sequence oracle that live in the @jit layer, not in a pipeline.
JIT_KINDS = ("stale-specialization", "overwritten")


#: The findings of layers above the pipelines, by (oracle, kind; "" for any of the oracle's):
#: their layer, and where in it they live.
_ABOVE_PIPELINES: dict[tuple[str, str], tuple[str, str]] = {
    ("arguments", ""): (
        "jit",
        "a compiled specialization did not refuse arguments it was not made for (another "
        "shape, dtype or count): the @jit layer's argument check (compiler/api.py, "
        "Compiled.__call__ and _check_argument), not a pipeline",
    ),
    ("determinism", "stale-specialization"): (
        "jit",
        "another function, called with arguments of the same types, was served this "
        "program's compiled specialization: the @jit layer's specialization cache "
        "(compiler/api.py: JitFunction's key for the function, _specialize), not a pipeline",
    ),
    ("tupled", "nested"): (
        "jit",
        "the program jitted and called inside another jitted function (some arguments "
        "captured NumPy arrays, or all of them: then compiled on its own during the outer "
        "trace) fails where its own call passes: the @jit layer's nested call "
        "(compiler/api.py, JitFunction.__call__: inlining into the outer trace, or tracing "
        "its own) or its captured arrays (compiler/frontend/trace.py: the trace they join), "
        "not a pipeline",
    ),
    ("tupled", "trees"): (
        "jit",
        "the function with several results fails taking keyword arguments and returning a "
        "dict, and passes with a tuple of positional arguments and results: the @jit "
        "layer's argument and result trees (compiler/frontend/pytree.py, flatten and "
        "unflatten; compiler/api.py), not a pipeline",
    ),
    ("determinism", "race"): (
        "runtime",
        "threads calling one jitted function at once got answers the same calls do not "
        "give one at a time: the @jit layer's compile of a specialization for racing "
        "threads (compiler/api.py, _specialize) or a kernel's calls that are not "
        "serialized (compiler/runtime.py, Kernel.__call__: its descriptors and static "
        "temporaries), not a pipeline",
    ),
    **{
        ("jit-sequence", kind): (
            "jit",
            "a call answered differently in sequence than alone (or wrote into an array): "
            "the @jit layer (compiler/api.py specialization cache, frontend/pytree.py keys, "
            "captured arrays) or the runtime's buffers",
        )
        for kind in JIT_KINDS
    },
}


#: A race whose first wrong call, one of a thread tracing a new function that captures a NumPy
#: array while others trace theirs (``run.worker.TRACING_THREAD``), raised.
_TRACING_RACE = (
    "jit",
    "a thread tracing a function that captures a NumPy array, while other threads trace "
    "theirs, raised where that function traced alone does not: the @jit layer's "
    "tracing (compiler/frontend/trace.py: the stack of traces captured arrays join, which "
    "must be each thread's own; compiler/api.py), not a pipeline",
)


#: Where in ``compiler/model.py`` a gpt2-model finding lives, by its facet (a wrong sublayer
#: call is narrowed to its own program before: ``oracles.gpt2.wrong_sublayer``).
_MODEL_CODE = {
    "loader": "compiler/model.py's checkpoint loader (from_state_dict, load_safetensors: the "
    "names, prefix, block numbers, tensors and config it reads from a checkpoint the harness "
    "wrote under HuggingFace's names)",
    "composition": "compiler/model.py's forward pass, already evaluated by NumPy "
    "(forward_numpy: _forward's blocks and sublayers, embed, final_logits, the positions), "
    "against GPT-2 written as one program on the same weights",
    "compiled": "compiler/model.py's compiled forward pass (forward: the sublayers it compiles, "
    "embed_jit, attend_jit, feedforward_jit, final_logits_jit, and how it calls them), while "
    "each sublayer call it made is right as its own program and forward_numpy is right",
    "generation": "compiler/model.py's greedy generation (_greedy: the window of the last "
    "context tokens, the first maximum, the number of steps), against each step's argmax of "
    "forward's logits on the same backend",
    "invalid": "compiler/model.py's input checks (token_array, check_ids, _greedy's steps): a "
    "call the model must refuse with the error class NumPy-style checking owes",
}


def _sublayer_cases(case: Case, backend: str) -> list[Case]:
    """The sublayer calls of ``case``'s GPT-2 model, each as its own case on ``backend``, on
    the arguments the model gives them with every sublayer interpreted by NumPy (graph-numpy,
    in this process: nothing is compiled)."""
    from ..oracles.gpt2 import sublayer_case
    from ..run.gpt2 import full_inputs, run_model

    spec, seed = case.gpt2
    run = run_model(replace(spec, steps=0, invalid=""), full_inputs(spec, seed, case.inputs),
                    "graph-numpy")  # fmt: skip
    cases = [sublayer_case(call, backend) for call in run.calls]
    return [c for c in cases if c is not None]


#: A fast-math flag in MLIR's arith and math ops or the LLVM dialect (``fastmath<contract>``,
#: ``#llvm.fastmath<nnan, ninf>``): ``none`` is none.
_FASTMATH = re.compile(r"fastmath<([^>]*)>")
#: A call of a C library math function in the LLVM dialect (an intrinsic, or a call by name
#: after convert-math-to-libm), which LLVM's library call simplifier may rewrite as another
#: function unless the caller is marked "no-builtins" (``libm-calls-kept``).
_LIBM_CALL = re.compile(
    r"llvm\.intr\.(pow|exp|exp2|exp10|log|log2|log10|sin|cos|tan|sinh|cosh|tanh|asin|acos|atan)"
    r"\b|llvm\.call @((?:a?(?:sin|cos|tan)h?|atan2|cbrt|erfc?|expm1|log1p|exp2?|log(?:2|10)?"
    r"|pow)f?)\("
)
_NO_BUILTINS = '"no-builtins"'


def _unmarked_libm_calls(stages: dict[str, Any]) -> list[str]:
    """The C library math functions the lowered kernel calls (``_LIBM_CALL``) where its
    functions are not marked "no-builtins": calls LLVM's optimizer may rewrite. Empty where
    there is no lowered stage, no such call or the mark."""
    lowered = [t for t in stages.values() if isinstance(t, str) and "llvm.func" in t]
    if any(_NO_BUILTINS in t for t in lowered):
        return []
    return sorted({a or b for t in lowered for a, b in _LIBM_CALL.findall(t)})


def _libm_note(calls: list[str]) -> str:
    """What ``_unmarked_libm_calls`` found, said: the call LLVM may have rewritten."""
    return (
        f"the kernel calls {', '.join(calls)} without \"no-builtins\": LLVM's library call "
        "simplifier may rewrite such a call as another function (pow(8.0, x) as exp2(3.0 * x), "
        "the product rounded first), which -O0 keeps; the compiler marks its kernels unless the "
        "workaround libm-calls-kept is off (compiler/lower/emit.py)"
    )


@dataclass
class Attribution:
    """Where a finding lives, and the evidence for it."""

    layer: str
    backend: str = ""
    detail: str = ""
    evidence: dict[str, str] = field(default_factory=dict)  # variant -> fails/passes/...
    mlir: dict[str, Any] = field(default_factory=dict)  # the failing stage's IR and commands
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "backend": self.backend,
            "detail": self.detail,
            "evidence": self.evidence,
            "mlir": self.mlir,
            "seconds": round(self.seconds, 2),
        }


_UNRESOLVED = re.compile(r"Symbols not found: \[([^\]]*)\]")


def unresolved_symbols(text: str) -> list[str]:
    """The symbols LLVM's JIT reported it could not resolve (``JIT session error: Symbols not
    found: [ __truncsfbf2 ]``): the process then crashes, or raises, at the first call, in
    whichever variant runs the code, so bisection would blame the first layer it tries."""
    found: list[str] = []
    for match in _UNRESOLVED.finditer(text):
        found += [s.strip(" ,") for s in match.group(1).split() if s.strip(" ,")]
    return list(dict.fromkeys(found))


#: What each triage variant (``compiler.backends.VARIANT_SUFFIXES``) runs of its own, where it
#: fails and the backend it varies passes (layer ``triage``).
_VARIANT_CODE = {
    "poison-checks": "compiler/lower/poison.py's checks (or the module computes poison that "
    "this CPU's instruction happens to define: the abort names the operation and its operand)",
    "generic-cpu": "the generic-cpu stage (compiler/pipelines.py) or LLVM's code generation for "
    "a generic x86-64 CPU",
    "mlir-runtime": "the call through MLIR's runtime helpers (compiler/runtime.py, "
    "MlirRuntimeKernel)",
    "copied-gathers": "cpu-vector's copying gathers fix-up (compiler/vector/gathers.py, "
    "copied_gathers)",
    "plain-libm": "the plain libm stage (compiler/lower/libm.py, plain)",
    "optimized-codegen": "the optimized-codegen stage (compiler/pipelines.py) or LLVM's "
    "optimized code generation of IR no IR pass has optimized",
}


def _varied(name: str) -> tuple[str, str] | None:
    """(suffix, the backend it varies) of a triage variant's name (``cpu-loops+poison-checks@O0``
    -> ``poison-checks``, ``cpu-loops@O0``), or None for another backend."""
    try:
        base, stage, _, level, suffix = parse_variant(name)
    except ValueError:
        return None
    if stage is not None or suffix not in _VARIANT_CODE:
        return None
    return suffix, base + (f"@O{level}" if level is not None else "")


#: The cache each layer of the configurations' check (``worker.other_configuration``) names.
_CACHES = {
    "jit": "the @jit specialization cache (compiler/api.py, _specialize's key)",
    "driver": "the driver's stage or kernel memo (compiler/driver.py)",
    "persist": "the persistent compilation cache (compiler/persist.py, key)",
}


def _interpreter_fails(finding: Finding) -> tuple[str, str]:
    """(layer, detail) when the traced graph, interpreted by NumPy, fails as the backend does.
    For a relation that is the frontend *or* the relation itself: a relation that does not hold
    for the program (the harness's own bug: a head permutation of a weight read elsewhere) fails
    on every correct evaluator alike, so it is not called a frontend bug."""
    if finding.oracle.startswith("metamorphic:"):
        return "relation", (
            "the traced graph, interpreted by NumPy, breaks the relation too: the relation may "
            "not hold for this program (harness/oracles/metamorphic.py), or the frontend or the "
            "shared definition is wrong; check the relation first"
        )
    return "frontend", "the traced graph, interpreted by NumPy, already fails"


def _run_time_checked(case: Case) -> bool:
    """Does a valid program take an error path that depends on values when it runs (a gather
    of out-of-range ids)? Every other rejection is decided by types and shapes, while tracing."""
    return case.invalid is None and any(
        primitives.get(node.op).kind in primitives.RUN_TIME_CHECKED_KINDS
        for node in case.program.nodes
    )


#: The CPU target a GPU finding is probed on: it runs the stages the GPU pipeline starts with.
GPU_PEER = "cpu-loops@O0"


def _declared_layer(name: str) -> str:
    """The layer a backend says its failures belong to (``layer``: ``xla`` for ``xla-cpu``),
    or "" for a backend that declares none."""
    try:
        backend = backends.get(backend_family(name))
    except ValueError:
        return ""
    return str(getattr(backend, "layer", "") or "")


def _pass_stage(name: str, stage: str) -> bool:
    """Is ``stage`` an ``mlir-opt`` pipeline of our backend ``name`` (``mlir:`` variants name
    their stages after catalog entries)?"""
    backend = _ours(name)
    if backend is None or stage not in backend.target.stage_names():
        return False
    return bool(backend.target.stage(stage).pipeline)


def _source(stage: str) -> str:
    """ ", FILE" for the file implementing our Python stage ``stage``, else ""."""
    source = python_stage_source(stage)
    return f", {source}" if source else ""


def _ours(name: str) -> backends.MlirCpuBackend | None:
    try:
        backend = backends.get(backend_family(name))
    except ValueError:
        return None
    return backend if isinstance(backend, backends.MlirCpuBackend) else None


def _unoptimized(backend: str) -> str | None:
    """Another compiler's variant of ``backend`` at its lowest optimization level (``xla-cpu@O0``,
    ``iree-cpu@O0``), or None where it has none or ``backend`` names a level already."""
    if "@" in backend:
        return None
    try:
        backends.get(f"{backend}@O0")
    except ValueError:
        return None
    return f"{backend}@O0"


def _with_known_issue(
    found: Attribution, case: Case, message: str = "", outputs: list[Any] | None = None
) -> Attribution:
    """``found``, with the known bug it is (``known_issue``) in ``mlir["known_issue"]`` and the
    detail."""
    try:
        issue = known_issue(case, found.backend, message, outputs)
    except Exception as error:  # noqa: BLE001 - the attribution stands without it
        found.mlir["known_issue_error"] = repr(error)[:300]
        return found
    if issue:
        found.mlir["known_issue"] = issue
        found.detail += f". Known issue {issue['name']}: {issue['cause']} ({issue['upstream']})"
    return found


_LIBM_DETAIL = (
    "{prefix} fails, completed by the target's libm stage, and passes completed by the plain "
    "one (+plain-libm: calls of libm's expm1 and log1p, written apart): the libm stage "
    "(compiler/lower/libm.py) miscompiles the expm1 or log1p it replaces"
)
_LIBM_LOWERING = (
    "{prefix} fails, and passes with expm1 and log1p called from libm (+plain-libm): with the "
    "workaround expm1-log1p-libm off, the lowering's convert-math-to-llvm writes them as "
    "exp(x) - 1 and log(1 + x), which cancel near zero (MLIR 22.1.8; "
    "tests/upstream/test_mlir_22_1_8.py)"
)


def _libm_suspect(
    case: Case, target: Any, culprit: str, check: Callable[[str], str], family: str
) -> tuple[str, str]:
    """(layer, detail) where the libm stage, which the completion of the prefix up to
    ``culprit`` runs (every CPU target's completion does), is at fault, or convert-math-to-llvm
    is (the case turned the stage off: ``expm1-log1p-libm``): that prefix passes completed by
    the plain stage instead (``+plain-libm``); else ("", ""). Asked only of a program with an
    expm1 or a log1p (elsewhere both do nothing): a planted libm stage that called log for
    log1p was blamed on the builder."""
    names = target.stage_names()
    if "libm" not in names or (culprit in names and names.index(culprit) >= names.index("libm")):
        return "", ""
    ops = {getattr(node, "op", "") for node in getattr(case.program, "nodes", ())}
    if not ops & {"expm1", "log1p"} or check(f"{family}[:{culprit}]+plain-libm") != "passes":
        return "", ""
    prefix = "the module as built" if culprit == BUILT else f"the prefix up to the {culprit} stage"
    if LIBM_WORKAROUND in case.workarounds_off:
        return "mlir-pass:convert-math-to-llvm", _LIBM_LOWERING.format(prefix=prefix)
    return "libm", _LIBM_DETAIL.format(prefix=prefix)


def _untranslated(backend: str, stage: str, pipeline: str, text: str, error: str) -> Attribution:
    """A stage's pipeline that ran without error and left ops no LLVM translation takes
    (``compiler.driver.untranslated``): no pass fails, so no pass is pinned; the pipeline,
    this project's string in compiler/pipelines.py, is the layer (it was "a Python exception
    in the compiler's own code, at compiler/runtime.py in make_engine", for a cpu-vector
    lowering that lowered vector ops before convert-math-to-libm made more)."""
    from .mlir_crash import crash_command

    left = error.split(UNTRANSLATED, 1)[1].split(":", 1)[0].strip()
    names = "|".join(re.escape(part.split(" (")[0]) for part in left.split(", "))
    return Attribution(
        f"pipeline:{stage}",
        backend,
        f"the {stage} stage's pipeline (compiler/pipelines.py) runs without error and leaves "
        f"{left} in the module, which LLVM's translation does not take: a conversion to the "
        "LLVM dialect is missing from it, or runs before the pass that makes those ops",
        mlir={
            "failing_stage": stage,
            "stage_input": text,
            "stage_pipeline": pipeline,
            "error": error,
            "command": f"{crash_command(pipeline, 'stage_input.mlir')} | grep -E '{names}'",
        },
    )


def _fixups_caveat(target: Any, culprit: str) -> str:
    """A caveat for a verdict on a prefix: the completion that finishes every prefix runs the
    target's own fix-up stages (this project's Python: cpu-vector's gathers), so a bug in one
    of them shows first at the stage whose output it mishandles, and is blamed there (a gathers
    stage that took a strided unit-extent view for contiguous was blamed on the vectorizer)."""
    names = target.stage_names()
    later = names[names.index(culprit) + 1 :] if culprit in names else []
    fixups = [
        s for s in getattr(target, "completion", ()) if s.transform is not None and not s.pipeline
    ]
    fixups = [s for s in fixups if any(s.name.endswith(name) for name in later)]
    if not fixups:
        return ""
    which = ", ".join(f"{s.name} ({s.transform.__name__})" for s in fixups)
    return (
        f" (every prefix was completed with this target's own fix-up {which}: if the failure "
        "is there, it shows first at the stage whose output it mishandles; check it too)"
    )


#: What each spelling reaches in the frontend that the others do not (the spelling oracle's
#: findings name it): its dispatch, and the names and keywords only it writes (a planted
#: frontend that ignored ``correction=`` was found through the array-api spelling, and had been
#: named the tensor's dispatch).
_SPELLING_PATHS = {
    "array-api": "the traced namespace's functions and the tensor's operators in "
    "compiler/frontend/tensor.py; what only it writes: var's and std's correction= (read in "
    "compiler/frontend/lang.py), xp.pi and xp.e",
    "numpy": "NumPy's dispatch to the tensor, __array_ufunc__ and __array_function__ in "
    "compiler/frontend/tensor.py; what only it writes: np.amax, np.amin, ufunc calls",
    "methods": "the tensor's methods and operators in compiler/frontend/tensor.py; what only it "
    "writes: len(x), x.size, x.ndim, x.mT",
}


class Attributor:
    """Attributes findings by running variants through a runner with the finding's oracle."""

    def __init__(self, runner: Any, budget_seconds: float = 90.0) -> None:
        self.runner = runner
        self.budget = budget_seconds
        # One finding's verdicts by (variant case, oracles): a run-time error path asks for
        # ``graph-numpy`` before the bisection does.
        self._verdicts: dict[tuple[str, tuple[str, ...]], str] = {}

    def verdict(self, case: Case, finding: Finding, variant: str, only: tuple[str, ...]) -> str:
        """``fails`` (the same failure), ``passes`` (no finding), or ``inconclusive: ...``;
        asked again for the same finding, the verdict already found."""
        probe = case.on((variant,))
        key = (probe.digest(), tuple(only))
        if key not in self._verdicts:
            self._verdicts[key] = self._judged(probe, finding, only)
        return self._verdicts[key]

    def _judged(
        self, probe: Case, finding: Finding, only: tuple[str, ...], fresh: bool = False
    ) -> str:
        """``fresh``: compiled past the worker's memos (``Task.fresh``)."""
        judgement = self.runner.evaluate(probe, only, probe=True, fresh=fresh)
        if any(f.signature.matches(finding.signature) for f in judgement.findings):
            return "fails"
        if judgement.findings:
            return "inconclusive: " + ", ".join(sorted({f.kind for f in judgement.findings}))
        return "passes"

    def _interpreter_layer(
        self, probe: Case, finding: Finding, evidence: dict[str, str]
    ) -> tuple[str, str]:
        """``_interpreter_fails``, except that a relation the graph breaks while the
        differential oracle rejects that graph (``_graph_wrong``, added to ``evidence``) is the
        frontend's: a correct graph that breaks a relation leaves the relation in doubt, a wrong
        one does not."""
        layer, detail = _interpreter_fails(finding)
        if layer != "relation":
            return layer, detail
        evidence["graph-numpy (differential)"] = self._graph_wrong(probe, finding)
        if evidence["graph-numpy (differential)"] != "fails":
            return layer, detail
        return "frontend", (
            "the traced graph, interpreted by NumPy, breaks the relation and is wrong on the "
            "case or on the relation's derived case (the differential oracle rejects it): the "
            "frontend or the shared definition is wrong, not the relation"
        )

    def _graph_wrong(self, case: Case, finding: Finding) -> str:
        """``fails`` when the traced graph, interpreted by NumPy, is rejected by the
        differential oracle on ``case`` or on a case the finding's relation derives from it (a
        one-pass variance in the frontend breaks the layer-norm shift relation, and is simply
        wrong on the shifted values), else ``passes``."""
        from .. import oracles as oracle_registry

        relation = oracle_registry.ORACLES.get(finding.oracle.split("[")[0])
        derived = [r.case for r in relation.related(case)] if relation is not None else []
        for probe in (case, *derived):
            judgement = self.runner.evaluate(probe.on(("graph-numpy",)), (), probe=True)
            if any(f.signature.oracle == "differential" for f in judgement.findings):
                return "fails"
        return "passes"

    def _graph_rejected(self, probe: Case, evidence: dict[str, str]) -> str:
        """Where the module as built is wrong, is the graph it was built from wrong already?
        The traced graph, interpreted by NumPy, judged by the differential and error-path
        oracles whatever it does (another failure than the finding's counts: a graph whose
        slice a primitive's rule planned one dimension short does not even interpret). The
        frontend's detail, with the interpreter's failure, where it is; "" where the graph
        passes (added to ``evidence``: a planted Ellipsis miscount was blamed on the builder)."""
        wrong = self.runner.evaluate(probe.on(("graph-numpy",)), (), probe=True).findings
        evidence["graph-numpy (differential)"] = "fails" if wrong else "passes"
        if not wrong:
            return ""
        return (
            "the traced graph, interpreted by NumPy (no MLIR), is wrong too "
            f"({wrong[0].kind}: {wrong[0].detail[:300]}): the module was built from a wrong "
            "graph (the trace, or a primitive's shape or dtype rule: compiler/frontend/, "
            "compiler/primitives/)"
        )

    def _levels(self, case: Case, finding: Finding) -> Attribution:
        """A levels finding (one pipeline's bits at -O0 and as shipped differ): ours where the
        module we build or lower carries a fast-math flag (which lets LLVM's optimizer round
        otherwise), else LLVM's optimizer. The stages up to LLVM's are the same at every level."""
        backend = finding.backends[0] if finding.backends else ""
        stages = self._stage_texts(case, backend, LLVM)
        flagged = {
            name: sorted(set(_FASTMATH.findall(text)) - {"none"})
            for name, text in stages.items()
            if isinstance(text, str)
        }
        flagged = {name: flags for name, flags in flagged.items() if flags}
        evidence = {f"fast-math flags in {name}": ", ".join(f) for name, f in flagged.items()}
        if flagged:
            first = next(iter(flagged))
            return Attribution(
                "builder",
                backend,
                f"the {first} stage carries fast-math flags ({', '.join(flagged[first])}), which "
                "let LLVM's optimizer round otherwise than -O0 does: where the module is built "
                "or lowered with them (compiler/primitives/scalar.py, compiler/lower/, "
                "compiler/vector/)",
                evidence,
            )
        calls = _unmarked_libm_calls(stages)
        if not stages:
            detail = "its stages could not be printed; LLVM's optimizer, most likely"
        elif calls:
            evidence["C library calls, the kernel unmarked"] = ", ".join(calls)
            detail = f"no stage carries a fast-math flag, and {_libm_note(calls)}"
        else:
            detail = (
                "no stage carries a fast-math flag: LLVM's optimizer (or its translation) "
                "changed results that IEEE 754 semantics fix, which -O0 keeps"
            )
        return Attribution("llvm", backend, detail, evidence)

    def attribute(self, case: Case, finding: Finding) -> Attribution:
        start = time.perf_counter()
        self._verdicts = {}  # verdicts depend on the finding judged
        result = self._attribute(case, finding)
        result.seconds = time.perf_counter() - start
        return result

    def _triage_variant(self, case: Case, finding: Finding) -> Attribution | None:
        """Where only triage variants fail (a share of the cases runs one, ``TRIAGE_SAMPLED``)
        and the backend each varies passes, the variant's own code: attribution that asks it
        would lie (a held-out plant had ``+poison-checks`` abort on a defined conversion)."""
        varied = [_varied(b) for b in finding.backends]
        if not varied or None in varied:
            return None
        from ..replay import oracles_of

        suffix, base = varied[0]  # type: ignore[misc]
        only = oracles_of(finding.signature, finding.detail)
        verdict = self.verdict(case.on((base,)), finding, base, only)
        if verdict != "passes":
            return None
        return Attribution(
            "triage",
            finding.backends[0],
            f"the triage variant fails where {base}, the backend it varies, passes: "
            f"{_VARIANT_CODE[suffix]}",
            {base: verdict},
        )

    def _model_step(self, case: Case, finding: Finding) -> Attribution | None:
        """A crash or hang in the worker's ``model`` step (a GPT-2 model through
        ``compiler/model.py``): with the sublayers interpreted by NumPy (``graph-numpy``) it
        dies too, the model's own Python (or the tracing of its sublayers) is where; else a
        sublayer's compile or kernel on the backend, whose program is the sublayer call (None:
        not such a finding)."""
        from ..replay import crashed_at, oracles_of

        backend, step = crashed_at(finding.detail)
        if finding.oracle != "isolation" or step != "model" or "gpt2" not in case.extra:
            return None
        backend = backend or (finding.backends[0] if finding.backends else "")
        only = oracles_of(finding.signature, finding.detail)
        interpreted = self.verdict(case.on((backend,)), finding, "graph-numpy", only)
        if interpreted == "fails":
            return Attribution(
                "model", backend, "the process dies with the model's sublayers interpreted by "
                "NumPy (graph-numpy) too: " + _MODEL_CODE["composition"],
                {"graph-numpy": interpreted},
            )  # fmt: skip
        evidence = {"graph-numpy": interpreted}
        for sub in _sublayer_cases(case, backend):
            judgement = self.runner.evaluate(sub, (), probe=True)
            dead = [f for f in judgement.findings if f.kind == finding.kind]
            evidence[f"{sub.origin} on {backend}"] = "fails" if dead else "passes"
            if dead:
                inner = self._attribute(sub, dead[0])
                inner.evidence = {**evidence, **inner.evidence}
                inner.detail = (
                    f"the model's {sub.origin.split('/')[-1]} call, as its own program on "
                    f"{backend}, dies too: {inner.detail}"
                )
                return inner
        return Attribution(
            "unknown", backend, "the process dies running the GPT-2 model on the backend and not "
            "with its sublayers interpreted by NumPy, nor with any sublayer call as its own "
            "program: a sublayer's compile or kernel where its specialization is shared (block "
            "0's attention takes float32, later blocks float64)",
            evidence,
        )  # fmt: skip

    def _attribute(self, case: Case, finding: Finding) -> Attribution:
        variant = self._triage_variant(case, finding)
        if variant is not None:
            return variant
        model_step = self._model_step(case, finding)
        if model_step is not None:
            return model_step
        if finding.kind == "spec":
            return Attribution(
                "definition",
                detail="the composites' shared definition (compiler/ops.py) disagrees with an "
                "independent implementation; every backend and reference evaluates it",
            )
        if finding.oracle == "schedule":
            refused = finding.stage == VECTORIZED  # the schedule oracle names the stage it lives in
            return Attribution(
                "vectorizer" if refused else "vector-planner",
                finding.backends[0] if finding.backends else "",
                (
                    "planned, and MLIR's vectorizer (transform.structured.vectorize in the "
                    "vectorized stage, failures suppressed) declined it; it runs as scalar loops"
                    if refused
                    else "compiler/vector/schedule.py "
                    "(plan_vectors: the vector-planned stage) left a structured op out of the "
                    "schedule; it runs as scalar loops"
                ),
            )
        if finding.oracle == "memory" and finding.kind == UNINSTRUMENTED:
            return Attribution(
                "runtime",
                finding.backends[0] if finding.backends else "",
                "compiler/runtime.py: a kernel compiled inside instrumented() came back without "
                "instrumentation (the setting, instrumenting(), or a cache that handed back a "
                "kernel made without it): the memory and blas oracles cannot see its leaks, "
                "overruns or gemm calls",
            )
        if finding.oracle == "memory" and finding.kind not in FAULT_KINDS:
            return self._memory(case, finding)  # a leak or a bad free
        # An overrun or a written input is found like a wrong answer (_bisect: the first stage
        # whose completion at -O0 does it, then the pass), the memory oracle judging each probe.
        if finding.oracle == "levels":
            return self._levels(case, finding)
        if finding.oracle == "blas":
            return Attribution(
                "blas",
                finding.backends[0] if finding.backends else "",
                "fewer gemm calls than the bufferized module's float32/float64 matmuls promise: "
                "the BLAS stage (compiler/lower/blas.py: the helper's layout test, or the "
                "substitution) or its place in the pipeline (compiler/pipelines.py) left them "
                "as loops",
            )
        if finding.oracle == "error-path" and finding.kind == "wrong-error":
            run_time = self._run_time_error_path(case, finding)
            if run_time is not None:
                return run_time
        spelling = failing_spelling(finding.oracle)
        if spelling is not None:
            return Attribution(
                "frontend",
                finding.backends[0] if finding.backends else "",
                f"the program written in the {spelling} spelling traces to a graph that fails "
                f"already interpreted by NumPy, while in the case's own spelling every backend "
                f"passes: the frontend code the {spelling} spelling reaches "
                f"({_SPELLING_PATHS.get(spelling, 'compiler/frontend/tensor.py')})",
            )
        if finding.oracle == GPT2_MODEL:
            code = _MODEL_CODE.get(finding.facet, _MODEL_CODE["invalid"])
            return Attribution("model", finding.backends[0] if finding.backends else "", code)
        above = _ABOVE_PIPELINES.get((finding.oracle, finding.kind))
        above = above or _ABOVE_PIPELINES.get((finding.oracle, ""))
        if (finding.oracle, finding.kind) == ("determinism", "race"):
            from ..run.worker import TRACING_THREAD

            # A tracing thread's call that raised: its trace (a kernel whose calls race hands
            # out another call's answer, whichever thread made it).
            if re.search(rf"\({re.escape(TRACING_THREAD)}\) raised ", finding.detail):
                above = _TRACING_RACE
        if above is not None:
            return Attribution(above[0], finding.backends[0] if finding.backends else "", above[1])
        from ..replay import crashed_at, through_the_cache
        from ..run.worker import CONFIGURATION

        # (the story may say it was told on the canned probe: ``worker.other_configuration``)
        configured = re.search(rf"{CONFIGURATION}(?: \([^)]*\))? \[([\w-]+)\]", finding.detail)
        if configured:
            return Attribution(
                configured.group(1),
                finding.backends[0] if finding.backends else "",
                "a cache of compiled code served a compile under other workarounds another "
                f"configuration's stages: {_CACHES[configured.group(1)]} does not key the "
                "workarounds off (compiler.workarounds.state())",
            )
        if through_the_cache(finding):
            return Attribution(
                "persist",
                crashed_at(finding.detail)[0] or (finding.backends[0] if finding.backends else ""),
                "the kernel compiled in this process passes; the one stored to and loaded back "
                "from the persistent compilation cache does not: compiler/persist.py (key, "
                "store, load) or the driver's path from disk (driver._from_disk)",
            )
        raised = re.search(r" \(at (compiler/\S+) in (\S+)\)", finding.detail)
        if finding.kind == "internal-error" and raised:
            return Attribution(
                "internal",
                finding.backends[0] if finding.backends else "",
                f"a Python exception in the compiler's own code, not in MLIR or LLVM: raised at "
                f"{raised.group(1)} in {raised.group(2)} (the innermost frame of compiler/; the "
                "wrong value may come from a caller)",
            )
        backend = next((b for b in finding.backends if _ours(b) is not None), None)
        if backend is None:
            name = finding.backends[0] if finding.backends else "?"
            layer = _declared_layer(name)
            if layer:
                return self._other_compiler(case, finding, name, layer)
            return Attribution(f"backend:{backend_family(name)}", name, "not one of our pipelines")
        if finding.kind == "verifier-error":
            module = finding.result.module if finding.result is not None else ""
            evidence: dict[str, str] = {}
            frontend = self._graph_rejected(case.on((backend,)), evidence)
            if frontend:
                return Attribution("frontend", backend, frontend, evidence)
            return Attribution(
                "builder",
                backend,
                "the module as built does not verify",
                evidence,
                mlir={"module": module, "command": "mlir-opt module.mlir"},
            )
        stage = finding.stage or (finding.result.stage if finding.result is not None else "")
        if finding.kind == "pass-failure" or (
            finding.oracle == "isolation"
            and (stage in PIPELINE_CRASH_STAGES or _pass_stage(backend, stage))
        ):
            return self._pin(case, finding, backend, stage)
        symbols = unresolved_symbols(f"{finding.stderr}\n{finding.detail}")
        if symbols and finding.kind in ("crash", "internal-error"):
            return Attribution(
                "runtime",
                backend,
                f"the JIT could not resolve {', '.join(symbols)}: the code calls a function no "
                "library loaded into the execution engine defines (compiler/runtime.py: "
                "runtime_libraries); the compiled module itself may be right",
            )
        if finding.oracle == "isolation" and stage == LLVM:
            return self._pin_llvm(case, backend)
        if finding.oracle == "isolation" and stage in ("trace", BUILT, "blas", LLVM):
            layer = {"trace": "frontend", BUILT: "mlir-parse", "blas": "blas", LLVM: "llvm"}[stage]
            return Attribution(layer, backend, f"the process died in stage {stage!r}")
        return self._bisect(case, finding, backend)

    def _run_time_error_path(self, case: Case, finding: Finding) -> Attribution | None:
        """A wrong error (or none) is the frontend's, since rejections are decided while
        tracing, unless the program checks values when it runs (a gather's ids) and the traced
        graph interpreted by NumPy takes the error path right: then the kernel's own check is
        wrong, and the layer is found like a wrong answer's (None: go on)."""
        backend = finding.backends[0] if finding.backends else ""
        if not _run_time_checked(case) or not backend:
            return Attribution("frontend", detail="error paths are decided while tracing")
        from ..replay import oracles_of

        interpreted = self.verdict(
            case.on((backend,)),
            finding,
            "graph-numpy",
            oracles_of(finding.signature, finding.detail),
        )
        if interpreted == "passes":
            return None
        return Attribution(
            "frontend",
            backend,
            "the traced graph, interpreted by NumPy, takes the same wrong error path",
            {"graph-numpy": interpreted},
        )

    # -- another compiler behind our frontend (xla-cpu) ----------------------------------------
    def _other_compiler(
        self, case: Case, finding: Finding, backend: str, layer: str
    ) -> Attribution:
        """A backend that hands our traced graph to another compiler (``layer``: ``xla``):
        the graph interpreted by NumPy separates our frontend from that compiler. A crash,
        hang or compile error inside it is that compiler's, once tracing is past."""
        stage = finding.stage or (finding.result.stage if finding.result is not None else "")
        if finding.oracle == "isolation":
            if stage == "trace":
                return Attribution("frontend", backend, "the process died while tracing")
            return Attribution(layer, backend, f"{backend} died in stage {stage!r}")
        if finding.oracle == "error-path":
            if finding.kind != "wrong-error" and stage and stage != "trace":
                # A CompilerError the backend raised in one of its own stages.
                message = finding.result.message if finding.result is not None else ""
                found = Attribution(layer, backend, f"{backend} failed in stage {stage!r}")
                return _with_known_issue(found, case, message or finding.detail)
            if _run_time_checked(case):
                # Past the interpreted graph (``_run_time_error_path``): the value check the
                # other compiler runs is wrong.
                return Attribution(layer, backend, f"{backend} takes a wrong run-time error path")
            return Attribution("frontend", backend, "error paths are decided while tracing")
        from ..replay import oracles_of

        only = oracles_of(finding.signature, finding.detail)
        probe = case.on((backend,))
        evidence = {"graph-numpy": self.verdict(probe, finding, "graph-numpy", only)}
        if evidence["graph-numpy"] == "fails":
            layer, detail = self._interpreter_layer(probe, finding, evidence)
            return Attribution(layer, backend, detail, evidence)
        evidence[backend] = self.verdict(probe, finding, backend, only)
        if evidence[backend] != "fails":
            return Attribution("unknown", backend, "the failure did not reproduce", evidence)
        detail = (
            f"{backend} fails on a traced graph that NumPy evaluates correctly: the deviation "
            f"is the compiler behind {backend} ({layer})"
        )
        if layer == "gpu":
            # Its first stages are the CPU targets' (optimized, bufferized): where cpu-loops
            # passes, the deviation is in the GPU-specific stages.
            evidence[GPU_PEER] = self.verdict(probe, finding, GPU_PEER, only)
            if evidence[GPU_PEER] == "passes":
                detail += (
                    f"; {GPU_PEER}, which shares its optimized and bufferized stages, passes: it "
                    "lives in the GPU stages (prepared, tiled, mapped: compiler/gpu/pipeline.py)"
                )
        unoptimized = _unoptimized(backend)
        if unoptimized is not None:
            evidence[unoptimized] = self.verdict(probe, finding, unoptimized, only)
            if evidence[unoptimized] == "passes":
                note = getattr(backends.get(unoptimized), "level_note", "")
                detail += f"; {unoptimized} passes: it lives in what its optimization does" + (
                    f" ({note})" if note else ""
                )
        found = Attribution(layer, backend, detail, evidence)
        return _with_known_issue(found, case, outputs=failing_outputs(finding, backend))

    # -- compile-time failures ---------------------------------------------------------------
    def _pin(self, case: Case, finding: Finding, backend: str, stage: str) -> Attribution:
        from .mlir_crash import crash_command, pin_crash, reduce_crash

        target = _ours(backend).target
        try:
            pipeline = target.stage(stage).pipeline
        except ValueError:
            return Attribution("unknown", backend, f"no stage {stage!r} in {target.name}")
        if finding.result is not None and finding.result.module:
            stage_input = finding.result.module  # a CompilerError carries its stage's input
        else:
            texts = self._stage_texts(case, backend, stage)
            if not texts:
                return Attribution("unknown", backend, f"could not rebuild the input of {stage}")
            stage_input = list(texts.values())[-1]
        standalone = getattr(target.stage(stage), "standalone", None)
        error = (finding.result.message if finding.result is not None else "") or finding.detail
        if UNTRANSLATED in error and pipeline:
            return _untranslated(backend, stage, pipeline, stage_input, error)
        if standalone is None and not pipeline:
            return self._python_stage(finding, backend, stage, stage_input)
        if standalone is not None:  # a stage that decides on its input (mlir: variants)
            pipeline, stage_input = standalone(stage_input)
        pinned = pin_crash(stage_input, pipeline)
        info: dict[str, Any] = {
            "failing_stage": stage,
            "stage_input": stage_input,
            "stage_pipeline": pipeline,
            "kind": pinned.get("kind", ""),
            "assertion": pinned.get("assertion") or "",
            "frames": pinned.get("frames", []),
        }
        failing = pinned.get("pass_pipeline")
        if not pinned.get("crashed") or not failing:
            return Attribution(
                "unknown", backend, f"mlir-opt did not fail on the {stage} input", mlir=info
            )
        info.update(failing_pass=failing, pre_pass_module=pinned["pre_pass_module"])
        info["confirmed"] = bool(pinned.get("confirmed"))
        if pinned.get("assertion") and pinned.get("kind") in ("assertion", "fatal-error"):
            stats: dict[str, Any] = {}
            try:
                reduced = reduce_crash(
                    pinned["pre_pass_module"],
                    failing,
                    pinned["assertion"],
                    self.budget,
                    stats=stats,
                )
                kept = ("input_lines", "output_lines", "seconds")
                info.update(reduced_module=reduced, reduction={k: stats.get(k) for k in kept})
            except (ValueError, AssertionError) as error:
                info["reduction_error"] = str(error)
        info["command"] = crash_command(
            failing, "min.mlir" if "reduced_module" in info else "pre.mlir"
        )
        inner = failing.removeprefix("builtin.module(").removesuffix(")")
        name = step_name(inner)
        return Attribution(
            f"mlir-pass:{name}",
            backend,
            f"{pinned.get('kind')} in {name} ({stage} stage of {backend_family(backend)})",
            mlir=info,
        )

    @staticmethod
    def _python_stage(finding: Finding, backend: str, stage: str, stage_input: str) -> Attribution:
        """A stage written in this project's Python (the BLAS substitution, cpu-vector's
        planners and rewrites) that raised, or whose output does not verify: no ``mlir-opt``
        command replays it, so the evidence is its input, its error and the ``python -m
        compiler opt`` command that runs the pipeline up to it (replaying it with ``mlir-opt``
        had said "did not fail" and left the layer unknown)."""
        error = (finding.result.message if finding.result is not None else "") or finding.detail
        first = error.strip().splitlines()[0] if error.strip() else "?"
        return Attribution(
            stage,
            backend,
            f"the {stage} stage (this project's Python{_source(stage)}) fails on its "
            f"input: {first}",
            mlir={
                "failing_stage": stage,
                "stage_input": stage_input,
                "error": error,
                "command": f"python -m compiler opt stage_input.mlir --target "
                f"{backend_family(backend)} --from-stage {stage} --to-stage {stage}",
            },
        )

    def _stage_texts(self, case: Case, backend: str, before: str) -> dict[str, str]:
        """Every stage's text of ``case`` on ``backend``'s family up to ``before``, rebuilt in
        the isolated worker; empty if that fails."""
        task = Task(case, (backend_family(backend),), kind="artifacts", before=before)
        outcome = self.runner.worker.run(task)
        return outcome.value.artifacts.get("stages", {}) if outcome.status == "ok" else {}

    def _memory(self, case: Case, finding: Finding) -> Attribution:
        """A kernel that leaks heap blocks (or frees one it does not own): the evidence is how
        many ``memref.alloc`` and deallocations each stage from bufferization on holds, so the
        stage where the frees go missing (or appear) can be read off."""
        backend = finding.backends[0] if finding.backends else ""
        evidence: dict[str, str] = {}
        if self.runner is not None and _ours(backend) is not None:
            texts = self._stage_texts(case, backend, LLVM)
            for stage, text in texts.items():
                if "memref." not in text and "llvm.call @" not in text:
                    continue  # still tensors: nothing is allocated yet
                allocs = text.count("memref.alloc(") + text.count("memref.alloc()")
                frees = text.count("memref.dealloc ") + text.count("bufferization.dealloc ")
                calls = text.count("call @malloc(") + text.count("call @aligned_alloc(")
                evidence[f"stage {stage}"] = f"{allocs} memref.alloc, {frees} deallocations" + (
                    f", {calls} allocator calls, {text.count('call @free(')} frees" if calls else ""
                )
        freed_extra = finding.kind == "bad-free"
        return Attribution(
            "deallocation",
            backend,
            (
                "the kernel frees heap memory it did not allocate"
                if freed_extra
                else "a heap temporary the kernel allocates is never freed"
            )
            + ": bufferization's ownership-based deallocation (buffer-deallocation-pipeline in "
            "the bufferized stage, cpu-vector's deallocated stage), its place in "
            "compiler/pipelines.py, or a stage after it that allocates (compiler/lower/blas.py, "
            "compiler/vector/memory.py); the evidence counts allocations and deallocations "
            "per stage",
            evidence,
        )

    def _pin_llvm(self, case: Case, backend: str) -> Attribution:
        """A process that died in the JIT (stage ``llvm``): LLVM's tools replay its steps on
        the rebuilt lowered module to name the one that dies (``llvm_crash.pin``), then
        ``llvm-reduce`` shrinks that step's input and the command is made portable."""
        from ..run.worker import workarounds_off
        from . import llvm_crash

        target = _ours(backend).target
        level = split_level(backend)[1]  # the backend's own (cpu-vector@O0), not its family's
        level = target.opt_level if level is None else level
        texts = self._stage_texts(case, backend, LLVM)
        if not texts:
            return Attribution(
                "llvm", backend, "the process died in stage 'llvm' (the lowered module could "
                "not be rebuilt to replay it with LLVM's tools)",
            )  # fmt: skip
        lowered = list(texts.values())[-1]
        info: dict[str, Any] = {"failing_stage": LLVM, "stage_input": lowered}
        with workarounds_off(case):  # the JIT's CPU features follow them
            pinned = llvm_crash.pin(lowered, level)
        if "tool" not in pinned:
            info["llvm_replay"] = {k: v for k, v in pinned.items() if k != "input"}
            return Attribution(
                "llvm", backend, "the process died in stage 'llvm', but LLVM's tools "
                "(mlir-translate, opt, llc, for the JIT's CPU) pass on its lowered module",
                mlir=info,
            )  # fmt: skip
        tool = pinned["tool"]
        info.update(
            tool=tool,
            assertion=pinned["message"],
            frames=pinned["frames"],
            llvm_input=pinned["input"],
            llvm_input_suffix=pinned["input_suffix"],
            command=llvm_crash.command(tool, pinned["arguments"], "input" + pinned["input_suffix"]),
        )
        if pinned.get("signature"):
            reduced = llvm_crash.reduce(pinned, self.budget)
            info.update(
                reduced_llvm=reduced["module"],
                command=reduced["command"],
                reduction={k: reduced.get(k) for k in ("input_lines", "output_lines", "seconds")},
            )
            if reduced.get("reduction_error"):
                info["reduction_error"] = reduced["reduction_error"]
        step = {"mlir-translate": "translate", "opt": "opt", "llc": "codegen"}[tool]
        return Attribution(
            f"llvm:{step}",
            backend,
            f"{tool} dies on the JIT's {step} input ({backend_family(backend)}): "
            f"{pinned['message']}",
            mlir=info,
        )

    # -- wrong answers ---------------------------------------------------------------------
    def _bisect(self, case: Case, finding: Finding, backend: str) -> Attribution:
        from ..replay import oracles_of

        only = oracles_of(finding.signature, finding.detail)
        evidence: dict[str, str] = {}
        probe = case.on((backend,))

        def check(variant: str) -> str:
            if variant not in evidence:
                evidence[variant] = self.verdict(probe, finding, variant, only)
            return evidence[variant]

        def done(layer: str, detail: str, **mlir: Any) -> Attribution:
            return Attribution(layer, backend, detail, evidence, dict(mlir))

        if check("graph-numpy") == "fails":
            return done(*self._interpreter_layer(probe, finding, evidence))
        if len(case.backends) > 1:
            # Found beside other backends, whose kernels the worker JIT-compiled together with
            # this one's (one LLVM module per level, jit_together) and whose stage outputs and
            # kernels it keeps: the backend alone, compiled afresh (a bfloat16 copy flushed by
            # the linked module only, which jit_together compiled with the host's bfloat16
            # conversions, was blamed on the runtime: the variants were served the linked kernel).
            alone = f"{backend} alone, compiled afresh"
            evidence[alone] = self._judged(probe, finding, only, fresh=True)
            if evidence[alone] == "passes":
                return done(
                    "driver",
                    "the backend alone, compiled afresh, passes; beside the task's other "
                    "backends it fails: what their compiles share in one process "
                    "(compiler/driver.py: jit_together's one LLVM module for their kernels, the "
                    "stage and kernel memos)",
                )
        if set(case.layouts) - {DEFAULT_LAYOUT}:
            # Its inputs in another memory layout (Fortran order, strided, reversed, offset,
            # read-only): the same values C-contiguous take no marshalling of the compiler's
            evidence["inputs C-contiguous"] = self.verdict(
                probe.with_layouts(()), finding, backend, only
            )
            if evidence["inputs C-contiguous"] == "passes":
                listed = ", ".join(
                    f"input {i} {name}"
                    for i, name in enumerate(case.layouts)
                    if name != DEFAULT_LAYOUT
                )
                return done(
                    "layouts",
                    f"the case passes with the same values C-contiguous (it hands {listed}): "
                    "how the compiler takes arrays in other layouts (compiler/api.py copies what "
                    "its ABI cannot pass; compiler/runtime.py's memref descriptors)",
                )
        family, level = split_level(backend)
        # NAME+mlir-runtime@O<n>, the canonical order (``cpu-loops@O0+mlir-runtime`` was no
        # target once: the check was inconclusive for every default session's backends).
        at = f"@O{level}" if level is not None else ""
        if check(f"{family}+mlir-runtime{at}") == "passes":
            return done("runtime", "the same code called through MLIR's runtime helpers passes")
        target = _ours(backend).target
        if (
            platform.machine() in ("x86_64", "AMD64")
            and check(f"{family}@O0") == "fails"
            and check(f"{family}+generic-cpu@O0") == "passes"
        ):
            poisoned = self._poison_site(probe, evidence, family)
            if poisoned:
                return self._poison_source(probe, target, family, poisoned, evidence, backend)
            return done(
                "llvm:codegen",
                "the same LLVM IR compiled for a generic x86-64 CPU passes (both at -O0: "
                "functions marked optnone), and computes no poison (+poison-checks): LLVM's "
                f"code generation for this CPU's features ({', '.join(host_features()) or '?'})",
            )
        if check(f"{family}[:{BUILT}]") == "fails":
            frontend = self._graph_rejected(probe, evidence)
            if frontend:
                return done("frontend", frontend)
            layer, detail = _libm_suspect(case, target, BUILT, check, family)
            if layer:
                return done(layer, detail)
            return done(
                "builder",
                "the module as built, with only the minimal completion at -O0, already fails",
            )
        found = self._locate(
            target, family, check, done, "the result is wrong", fixups=True, case=case
        )
        if found is not None:
            return found
        level = target.opt_level if level is None else level
        if level > 0 and check(f"{family}@O0") == "passes":
            poisoned = self._poison_site(probe, evidence, family)
            if poisoned:
                return self._poison_source(probe, target, family, poisoned, evidence, backend)
            said = (
                f"every stage passes at -O0; -O{level} fails, and the IR computes no poison "
                "(+poison-checks)"
            )
            # The same IR without LLVM's IR passes, its code generated as for -O{level} (-O2:
            # the JIT's at every level; not optnone): which half of LLVM's optimizations.
            codegen = check(f"{family}+optimized-codegen@O0")
            if codegen == "fails":
                return done(
                    "llvm:codegen",
                    f"{said}; so does the IR without LLVM's IR passes when its code generation "
                    "is optimized (+optimized-codegen: -O2, functions not marked optnone): "
                    "LLVM's code generation (instruction selection and lowering for this CPU, "
                    "or the machine passes)",
                )
            if codegen == "passes":
                calls = _unmarked_libm_calls(self._stage_texts(probe, backend, LLVM))
                if calls:
                    evidence["C library calls, the kernel unmarked"] = ", ".join(calls)
                return done(
                    "llvm:ir-passes",
                    f"{said}; the IR without LLVM's IR passes passes with optimized code "
                    f"generation (+optimized-codegen): LLVM's IR passes at -O{level} (opt), "
                    "or the code generation of the IR they produce"
                    + (f"; {_libm_note(calls)}" if calls else ""),
                )
            return done(
                "llvm",
                f"{said}: LLVM's optimizations (its IR passes, or code generation of "
                "functions not marked optnone: compiler.runtime.unoptimized)",
            )
        return done("unknown", "no variant reproduces the failure")

    def _locate(
        self,
        target: Any,
        family: str,
        check: Callable[[str], str],
        done: Callable[..., Attribution],
        what: str,
        fixups: bool = False,
        case: Case | None = None,
    ) -> Attribution | None:
        """The first of ``target``'s stages after which ``check`` of the prefix
        (``family[:stage]``) ``fails``, then the steps of that stage's pipeline bisected to the
        first after which it does (``[:stage#k]``); None if no prefix fails. With ``fixups``,
        a prefix completed by cpu-vector's gathers fix-up is also completed by the copying one
        (``+copied-gathers``): if that passes, the fix-up is at fault (a fix-up that dropped a
        view's offset was blamed on the vectorizer, ``mlir-pass:transform-interpreter``); and,
        for a ``case`` with an expm1 or a log1p, by the plain libm stage (``+plain-libm``)."""
        culprit = None
        for stage in target.stage_names():
            if check(f"{family}[:{stage}]") == "fails":
                culprit = stage
                break
        if culprit is None:
            return None
        if target.stage(culprit).pipeline == "":
            where = _source(culprit)
            detail = f"the {culprit} stage (this project's Python{where}) introduces it"
            return done(culprit, detail)
        if fixups and case is not None:
            layer, detail = _libm_suspect(case, target, culprit, check, family)
            if layer:
                return done(layer, detail)
        if fixups and _fixups_caveat(target, culprit):
            if check(f"{family}[:{culprit}]+copied-gathers") == "passes":
                return done(
                    "gathers",
                    f"the prefix up to the {culprit} stage fails, completed by this target's "
                    "gathers fix-up, and passes completed by copying each strided view a gather "
                    "reads (+copied-gathers): the fix-up (compiler/vector/gathers.py) "
                    f"mishandles the gathers the {culprit} stage makes",
                )
        steps = pipeline_steps(target.stage(culprit).pipeline)
        good, bad = 0, len(steps)
        candidates = list(range(1, len(steps)))
        while bad - good > 1:
            middle = (good + bad) // 2
            inside = [k for k in candidates if good < k < bad]
            probes = sorted(inside, key=lambda k: abs(k - middle))
            decided = False
            for k in probes:
                verdict = check(f"{family}[:{culprit}#{k}]")
                if verdict == "fails":
                    bad, decided = k, True
                    break
                if verdict == "passes":
                    good, decided = k, True
                    break
            if not decided:
                break
        culprit_steps = steps[good:bad]
        names = [step_name(s) for s in culprit_steps]
        layer = f"mlir-pass:{names[0]}" if len(names) == 1 else f"mlir-passes:{'+'.join(names)}"
        return done(
            layer,
            f"after step {bad} of the {culprit} stage {what}; after {good} it is "
            f"not{_fixups_caveat(target, culprit)}",
            failing_stage=culprit,
            culprit_steps=culprit_steps,
            command=f"python -m compiler opt module.mlir --target {family} --to-stage {culprit}",
        )

    # -- poison -----------------------------------------------------------------------------
    def _poisoned(self, case: Case, variant: str) -> str:
        """What ``variant`` (a ``+poison-checks`` one) says it found on ``case``: its check's
        line of stderr ("poison-check: llvm.fptoui f32 to i32 of a NaN or of a value out of
        range ..."), "" if it ran to the end, or "inconclusive: ..." if it failed otherwise."""
        judgement = self.runner.evaluate(case.on((variant,)), (), probe=True)
        for finding in judgement.findings:
            for line in (finding.stderr or "").splitlines():
                if line.startswith(MARKER):
                    return line
        crashed = [f.kind for f in judgement.findings if f.kind in ("crash", "hang")]
        return f"inconclusive: {', '.join(crashed)}" if crashed else ""

    def _poison_site(self, case: Case, evidence: dict[str, str], family: str) -> str:
        """The poison ``family`` computes on ``case`` (``_poisoned``), kept as evidence; "" if
        none (or not known)."""
        variant = f"{family}+poison-checks@O0"
        found = self._poisoned(case, variant)
        evidence[variant] = found or "passes: no poison computed"
        return found if found.startswith(MARKER) else ""

    def _poison_source(
        self,
        case: Case,
        target: Any,
        family: str,
        poisoned: str,
        evidence: dict[str, str],
        backend: str,
    ) -> Attribution:
        """A wrong answer that depends on the CPU or on LLVM's optimizations while the IR
        computes poison (``poisoned``: an ``fptoui`` of a negative float, which one CPU's
        instruction turns into the right integer and another's not) is not LLVM's: it lives
        where the poison first appears, the module as built or the first stage (step) whose
        completed prefix computes it."""
        site = poisoned[len(MARKER) :].strip()

        def check(prefix: str) -> str:
            """``fails`` where the prefix computes the poison, ``passes`` where it computes
            none; kept as evidence."""
            variant = f"{prefix}+poison-checks@O0"
            if variant not in evidence:
                found = self._poisoned(case, variant)
                evidence[variant] = "fails" if found.startswith(MARKER) else found or "passes"
            return evidence[variant]

        def done(layer: str, detail: str, **mlir: Any) -> Attribution:
            return Attribution(layer, backend, detail, evidence, dict(mlir))

        why = (
            f"the IR computes poison ({site}): the answer then depends on the CPU or on "
            "LLVM's optimizations, and LLVM is free to give any; "
        )
        if check(f"{family}[:{BUILT}]") == "fails":
            return done(
                "builder",
                why + "the module as built, completed at -O0, already computes it (the "
                "lowering of an op: compiler/primitives/)",
            )
        found = self._locate(target, family, check, done, "the IR computes it")
        if found is not None:
            found.detail = why + found.detail
            return found
        return done("unknown", why + "no prefix of the pipeline computes it")


__all__ = ["Attribution", "Attributor", "unresolved_symbols"]
