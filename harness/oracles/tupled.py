"""The tupled oracle: a program's results must not change when one function returns several.

Every generated program has one output, so a kernel with several results was reached only by
chance: two reductions returned together shared one filled init once CSE merged their fills, and
the bufferization that followed copied the first sum out twice (``(x.sum(), y.sum())`` gave the
first sum for both; ``tests/upstream``, workaround ``one-restrict-output``). For an eighth of the
cases (a quarter of those whose kernels fill an init: reductions, matmuls, gathers, composites),
on one of our backends drawn from the case's data, one function with several results runs
beside the program's own call. It returns:

- the program's output with the intermediate value that feeds it and one of its inputs, in an
  order drawn from the case (``several``: ``h = ...; return h, x, y``: an intermediate that is
  also a result must stay materialized and unclobbered; an input returned is copied out of
  whatever layout it came in);
- then the program's output on the same inputs reversed (other values in place, the same
  values: gather ids stay in range), a second instance that shares no data with the first;
- half the time (``trees``) as a dict by name, the program's inputs given as a list and the
  reversed ones as keyword arguments, each in the reverse of its names' sorted order.

Each result must equal bit for bit what the program (or the intermediate's own program) returns
alone on that backend: the same operations on the same values, so nothing may change a bit (but
a zero's sign where that is a kernel's: after a matmul, whichever kernel runs it).

On the same backend, the program is also called as a nested ``@jit`` function (``nested``):
jitted on its own and called inside another jitted function, every second argument (from the
first or the second: ``captured_start``) a NumPy array of the enclosing scope (captured) and
the others traced, it inlines into the outer trace and owes its own output's bits, and so does
its own jitted function called at top level after.
Half the cases (``alone``) call it with NumPy arrays only, every second input from its own
closure: it compiles on its own while the outer function is being traced.
A finding there is of kind ``nested``: the @jit layer's, not a pipeline's (no case had ever
called one jitted function inside another).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..case import Case
from ..run.task import Task
from . import tolerance
from .base import Finding, Observation, Oracle, group, overwrites, register
from .differential import against_references

SHARE = 0.125
#: The share for programs whose kernels fill an init (reductions, matmuls, gathers, composites):
#: several results of such kernels are where a shared fill was miscompiled.
SHARE_FILLED = 0.25
_FILLED_KINDS = ("reduction", "matmul", "gather", "composite")


def _ours(backends: tuple[str, ...]) -> list[str]:
    """This project's own pipelines (another compiler may fuse two results differently)."""
    return sorted(b for b in backends if b.startswith("cpu-"))


def several(case: Case) -> tuple[Any, ...]:
    """The ``several`` function's results (``Ref``s), the output among them: the intermediate
    that feeds the output (its first equation operand, else the last equation it depends on),
    an input (the output's first input operand, else the first input), in the case's order."""
    from strategies.model import Ref

    program = case.program
    output = program.output
    refs = []
    if output.kind == "node":
        args = [a for a in program.nodes[output.index].args if isinstance(a, Ref)]
        live, todo = set(), list(args)  # the equations the output depends on
        while todo:
            ref = todo.pop()
            if ref.kind == "node" and ref.index not in live:
                live.add(ref.index)
                todo += [a for a in program.nodes[ref.index].args if isinstance(a, Ref)]
        # A value that reads no input (a causal mask) cannot be a traced function's result.
        live = {k for k in live if program.reads_input(Ref("node", k))}
        inner = [a for a in args if a.kind == "node" and a.index in live]
        if not inner and live:  # the nearest equation the output depends on
            inner = [Ref("node", max(live))]
        refs += inner[:1]
        given = [a for a in args if a.kind == "input"]
        refs += given[:1] or [Ref("input", 0)] * bool(program.inputs)
    elif program.inputs:
        refs.append(Ref("input", (output.index + 1) % len(program.inputs)))
    place = case.draw("tupled:place") % (len(refs) + 1)
    return tuple(refs[:place] + [output] + refs[place:])


def _function(case: Case, returns: tuple[Any, ...]) -> Callable[..., Any]:
    from strategies.model.evaluate import function

    return function(case.program, None, spelling=case.spelling, returns=returns)


def trees(case: Case) -> bool:
    """Does ``check`` pass its arguments and take its results as trees, drawn from the case (half
    the time): the program's inputs as a list (or a NamedTuple, or a dataclass: ``container``),
    the reversed ones as keyword arguments and the results as a dict (keyed by number, and one
    by the name "reversed"), each in the reverse of its keys' sorted order? The frontend
    flattens a dict in sorted order; one that walked its values in insertion order put them
    under the wrong names, and only jit sequences passed dicts (caught in 1 of 2 60 s
    sessions); one that sorted the keys themselves raised on keys of two types, which Python
    takes (a held-out plant: every dict was keyed by strings). Drawn, as every draw of an
    oracle, from the case without its backends (``Case.draw``): a tree finding's stored case
    was once replayed as tuples (and passed)."""
    return case.toggle("trees", 0.5)


#: The containers of the ``trees`` form, drawn from the case: the program's inputs in a list,
#: a NamedTuple or a dataclass (fields ``x0``, ``x1``...), and the results in one of the same
#: kind around the dict (a list ``[dict, reversed]``; fields ``several`` and ``reversed``), a
#: list staying a list both ways, as in JAX. No case passed a NamedTuple: a flattening that took
#: one for a plain tuple, which unflatten then did not know, raised on every NamedTuple argument
#: unseen (a held-out plant); none returned a list, and lists flattened as tuples went unseen.
CONTAINERS = ("list", "namedtuple", "dataclass")


def container(case: Case) -> str:
    """The ``trees`` form's container (``CONTAINERS``), drawn from the case."""
    return CONTAINERS[case.draw("trees:container") % len(CONTAINERS)]


def container_types(kind: str, count: int) -> tuple[Any, Any]:
    """(the arguments' class, the results' class) of a ``container`` kind, for ``count``
    inputs; (None, None) for "list"."""
    import collections
    import dataclasses

    fields = [f"x{i}" for i in range(count)]
    if kind == "namedtuple":
        return (
            collections.namedtuple("Given", fields),
            collections.namedtuple("Together", ["several", "reversed"]),
        )
    if kind == "dataclass":
        return (
            dataclasses.make_dataclass("Given", fields),
            dataclasses.make_dataclass("Together", ["several", "reversed"]),
        )
    return None, None


#: The start of a finding's detail where the function with several results fails taking and
#: returning trees and passes with a tuple of positional arguments and results (its kind
#: "trees": the @jit layer's, ``frontend/pytree.py``).
TREES = "as trees: "


def check(case: Case, fn: Any, inputs: list[np.ndarray], backend: str, first: Any) -> str:
    """ "" when ``together`` (the ``several`` function on ``inputs``, then the program on them
    reversed, all returned by one function) on ``backend`` returns bit for bit what each result
    is alone (``first``: the program's own output on ``inputs``); else what differed, or what
    the function with several results raised. Where it takes and returns trees (``trees``)
    and fails, it runs again with tuples: if that passes, the detail starts with ``TREES``."""
    first = np.array(first, copy=True)  # its own bits, whatever the calls below write
    structured = trees(case)
    detail = _check(case, fn, inputs, backend, first, structured)
    if detail and structured and not _check(case, fn, inputs, backend, first, False):
        return f"{TREES}{detail} (with a tuple of positional arguments and results, it passes)"
    return detail


def _check(
    case: Case, fn: Any, inputs: list[np.ndarray], backend: str, first: np.ndarray,
    structured: bool,
) -> str:  # fmt: skip
    import compiler
    from compiler import UnsupportedFeature

    from ..run.worker import same_bits

    single = case.traced_function()
    count = len(inputs)
    other = [np.flip(a).copy() for a in inputs]
    returns = several(case)
    both = _function(case, returns)

    def together(*arrays: Any) -> tuple[Any, ...]:
        return (*both(*arrays[:count]), single(*arrays[count:]))

    kind = container(case) if structured else "list"
    given_type, together_type = container_types(kind, count)

    def as_trees(given: Any, **others: Any) -> Any:
        # results by number and one by name (keys of two types, which sort by neither's own
        # order), inserted in the reverse of their sorted order, as the arguments
        if given_type is None and type(given) is not list:  # (a list is a list, as in JAX)
            raise TypeError(f"a list argument arrived as a {type(given).__name__}")
        arrays = given if given_type is None else [getattr(given, f"x{i}") for i in range(count)]
        out: dict[Any, Any] = dict(reversed(list(enumerate(both(*arrays)))))
        out["reversed"] = single(*[others[f"a{i}"] for i in range(count)])
        if together_type is None:
            return [out, out["reversed"]]
        return together_type(out, out["reversed"])

    program = case.program
    jitted = [compiler.jit(as_trees if structured else together)]
    checks = []
    try:
        if structured:
            named = {f"a{i}": other[i] for i in reversed(range(count))}
            given = list(inputs) if given_type is None else given_type(*inputs)
            out = jitted[0](given, target=backend, **named)
            if together_type is None:
                if type(out) is not list:
                    return f"a function returning a list returned a {type(out).__name__}"
                out = {**out[0], "reversed": out[1]}
            else:
                out = {**out.several, "reversed": out.reversed}
            results = (*(out[k] for k in range(len(returns))), out["reversed"])
        else:
            results = jitted[0](*inputs, *other, target=backend)
        for ref, got in zip(returns, results, strict=False):
            if ref == program.output:
                want = first
            elif ref.kind == "input":
                want = np.asarray(inputs[ref.index])
            else:
                jitted.append(compiler.jit(_function(case, (ref,))))
                want = jitted[-1](*inputs, target=backend)[0]
            checks.append((f"value {ref}", got, want, ref.kind == "input"))
        reversed_ = fn(*other, target=backend)
        checks.append(("output on the inputs reversed", results[-1], reversed_, False))
    except UnsupportedFeature:
        return ""
    except Exception as error:  # noqa: BLE001 - a function with several results must work
        held = f" (its inputs and results in a {kind})" if kind != "list" else ""
        return (
            f"a function with several results{held} raised {type(error).__name__}: "
            f"{str(error)[:300]}"
        )
    finally:
        for jit in jitted:
            jit.clear()
    together_ = ", ".join([*map(str, returns), "the output on the inputs reversed"])
    if structured:
        together_ += "; by name in a dict, the reversed inputs as keyword arguments"
        if kind != "list":
            together_ += f", the inputs and results in a {kind}"
    # Where zero signs are a kernel's (after a matmul or an exact reduction), a function with
    # several results may run another kernel than the program alone: a float32 (1, 1) @ (1, 1)
    # whose product underflowed was -0.0 alone and 0.0 among several on cpu-blas@O0, both right.
    any_zero = not tolerance.signs_settled(program)
    for which, got, want, given in checks:  # an input given back is copied: its bits exactly
        if not same_bits(got, want, any_zero and not given):
            return (
                f"the program's {which}, returned as one of ({together_}), differs from its own "
                f"call: {np.ravel(got)[:4]} vs {np.ravel(want)[:4]}"
            )
    return ""


def alone(case: Case) -> bool:
    """Is the nested call made with NumPy arrays only (drawn from the case, half the time)? The
    inner function then compiles on its own while the outer one is being traced, every second
    input an array of its own closure (captured into its own trace, not the outer one's), and
    the outer function adds a traced -0.0 (0 for integers) to its answer, which changes no
    bit. A frontend that captured into the outermost trace broke exactly that (a
    held-out plant, missed: every nested call passed a traced argument, so it inlined)."""
    return len(case.inputs) > 1 and case.toggle("nested:alone", 0.5)


def captured_start(case: Case) -> int:
    """The first of the arguments the nested call captures (every second from there): 1, or 0
    for half the cases with two inputs or more. From 0, a NumPy array of the enclosing scope is
    the first operand of what it feeds (``W @ x``, the table of a gather): a namespace taken from
    the first operand alone sent a captured embedding table with traced ids to NumPy (a
    held-out plant, missed while only the second, fourth... arguments were captured)."""
    return 0 if len(case.inputs) > 1 and case.toggle("nested:captured-first", 0.5) else 1


def zero_of(dtype: Any) -> float:
    """What the outer function of the ``alone`` form adds to its answer, which changes no bit:
    -0.0 for a float, 0 for an integer (a program's output is numeric, never bool)."""
    return -0.0 if np.dtype(dtype).kind in "fV" else 0


def _merged(captured: dict[int, Any], given: tuple[Any, ...], count: int) -> list[Any]:
    """The program's ``count`` arguments: the ``captured`` ones by position, ``given`` in order
    in the others."""
    it = iter(given)
    return [captured[i] if i in captured else next(it) for i in range(count)]


def nested(case: Case, inputs: list[np.ndarray], backend: str, first: Any) -> tuple[str, Any]:
    """("", None) when the program, jitted and called inside another jitted function with
    every second argument a NumPy array of the enclosing scope (captured) and the others
    traced (or, where ``alone``, with NumPy arrays only, every second input from its own
    closure), returns on ``backend`` bit for bit its own output (``first``), and its jitted
    function called at top level after that does too; else what differed, or what the nested
    call raised, and (where only bits differed) the answer that differed: the oracle judges
    that by the error model, since a captured array may take another code path (a float32 cos
    on cpu-vector was 1 ulp apart, both within the bound)."""
    import compiler
    from compiler import UnsupportedFeature

    from ..run.worker import same_bits

    count = len(inputs)
    if not count:
        return "", None
    first = np.array(first, copy=True)  # its own bits, whatever the calls below write
    captured = {i: inputs[i] for i in range(captured_start(case), count, 2)}
    traced = [i for i in range(count) if i not in captured]
    program = case.traced_function()
    if alone(case):
        given = [inputs[i] for i in traced]

        def body(*arguments: Any) -> Any:  # every second input from its own closure
            return program(*_merged(captured, arguments, count))

        inner = compiler.jit(body)

        def outer(zero: Any) -> Any:
            answer = inner(*given, target=backend)  # NumPy arrays only: compiled on its own
            return zero + answer

        jitted, arguments = compiler.jit(outer), [np.full_like(first, zero_of(first.dtype))]
        how = (
            f"(with NumPy arrays only, so compiled on its own inside the outer trace; inputs "
            f"{sorted(captured)} arrays of its own closure)"
        )
        rest = given
    else:
        inner = compiler.jit(program)

        def outer(*given: Any) -> Any:
            return inner(*_merged(captured, given, count))

        jitted, arguments = compiler.jit(outer), [inputs[i] for i in traced]
        how = f"(arguments {traced} traced, {sorted(captured)} captured NumPy arrays)"
        rest = inputs
    try:
        got = np.array(jitted(*arguments, target=backend), copy=True)
        alone_call = inner(*rest, target=backend)
    except UnsupportedFeature:
        return "", None
    except Exception as error:  # noqa: BLE001 - a nested call must work where the call does
        return (
            f"the program called as a nested @jit function {how} raised "
            f"{type(error).__name__}: {str(error)[:300]}"
        ), None
    finally:
        jitted.clear()
        inner.clear()
    if not same_bits(alone_call, first):
        # Judged by the error model too: in the alone form this is the closure's own function,
        # whose captured arrays may take another code path (a float64 attend through captured
        # weights was a few ulps from the program's call, within the bound; the reproducer,
        # which judges it so, passed where the oracle said "differs").
        return (
            "the program's jitted function, called at top level after its nested call "
            f"{how}, differs from its own call: {np.ravel(alone_call)[:4]} vs "
            f"{np.ravel(first)[:4]}"
        ), np.array(alone_call, copy=True)
    if not same_bits(got, first):
        return (
            f"the program called as a nested @jit function {how} differs from its own call "
            f"({np.ravel(got)[:4]} vs {np.ravel(first)[:4]}) and from NumPy's answer"
        ), got
    return "", None


def _kind(detail: str) -> str:
    """A failed ``check``'s finding kind: "trees" where only its trees failed, else "tupled"."""
    return "trees" if detail.startswith(TREES) else "tupled"


class Tupled(Oracle):
    name = "tupled"

    def fits(self, case: Case) -> bool:
        return case.invalid is None and case.sequence is None and bool(_ours(case.backends))

    def wants(self, case: Case) -> bool:
        if not self.fits(case):
            return False
        from compiler import primitives

        filled = any(primitives.get(op).kind in _FILLED_KINDS for op in case.program.ops)
        return case.toggle(self.name, SHARE_FILLED if filled else SHARE)

    def configure(self, case: Case, task: Task) -> None:
        ours = _ours(task.backends)
        if ours:
            task.tupled = case.pick("tupled:backend", ours)

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        flagged = [(_kind(r.tupled), r, r.tupled) for r in obs.results if r.ok and r.tupled]
        flagged += [("nested", r, why) for r in obs.results if (why := self._nested(obs, r))]
        flagged += overwrites(obs.results, "tupled") + overwrites(obs.results, "nested")
        return group(obs.case, self.name, flagged, obs.case.program.output_type.dtype)

    @staticmethod
    def _nested(obs: Observation, result: Any) -> str:
        """How the nested call failed ("" if it did not): it raised, its function's later call
        changed, or its answer (other bits than the call's) is of another shape or dtype than
        NumPy's or beyond the error model (``differential.against_references``)."""
        if not result.ok or not result.nested:
            return ""
        if result.nested_output is None:
            return result.nested
        numpy_ref = obs.refs["numpy"]
        out = np.asarray(result.nested_output)
        if not numpy_ref.ok:
            return ""  # nothing to judge the answer by (the differential oracle says why)
        expected = numpy_ref.output
        if out.shape != expected.shape or out.dtype != expected.dtype:
            numpy = f"{expected.dtype}{expected.shape}"
            return f"{result.nested}: {out.dtype}{out.shape}, NumPy {numpy}"
        verdict = against_references(obs.case, obs.refs, out, result.backend)
        return "" if verdict.ok else f"{result.nested}: {verdict.reason}"


register(Tupled())

__all__ = [
    "SHARE", "SHARE_FILLED", "TREES", "Tupled", "alone", "check", "nested", "several", "trees",
    "zero_of",
]  # fmt: skip
