"""A structural reducer for MLIR modules, written with the Python bindings.

``mlir-reduce`` only deletes contiguous runs of ops, so an op that still has uses can never go.
This reducer erases an op together with everything that uses it, turns an op's results into new
function arguments, folds branches, runs clean-up passes, drops unused arguments and attributes;
it keeps a candidate iff it is strictly smaller, verifies, and the interestingness test accepts
it. Clean-up passes run in an ``mlir-opt`` subprocess (a pass may crash too).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

from ..run.isolation import stop_requested


def _preorder(op) -> list:
    out = []

    def visit(o):
        for region in o.regions:
            for block in region.blocks:
                for child in block.operations:
                    child = child.operation
                    out.append(child)
                    visit(child)

    visit(op)
    return out


def _contains(op, ops) -> bool:
    return any(op == o for o in ops)


def _is_terminator(op) -> bool:
    block = op.block
    last = None
    for last in block.operations:  # noqa: B007 - the loop finds the block's last op
        pass
    parent = block.owner
    return (
        last is not None
        and last.operation == op
        and parent is not None
        and parent.name != "builtin.module"
    )


def _users_closure(op) -> list:
    """``op`` plus every op that (transitively) uses a value defined by it or inside it."""
    seen, stack = [], [op]
    while stack:
        o = stack.pop()
        if _contains(o, seen):
            continue
        seen.append(o)
        for inner in [o] + _preorder(o):
            for res in inner.results:
                for use in res.uses:
                    stack.append(use.owner.operation)
    return seen


def _erase_with_users(module, ops, i) -> bool:
    op = ops[i]
    closure = _users_closure(op)
    if any(_is_terminator(o) for o in closure):
        return False
    order = []
    for o in closure:
        k = next(j for j, x in enumerate(ops) if x == o)
        order.append((k, o))
    # Drop ops nested inside another op of the closure; erase users (later in order) first.
    top = [(k, o) for k, o in order if not any(a is not o and _is_ancestor(a, o) for _, a in order)]
    for _, o in sorted(top, key=lambda t: -t[0]):
        o.erase()
    return True


def _is_ancestor(a, o) -> bool:
    p = o.parent
    while p is not None:
        if p == a:
            return True
        p = p.parent
    return False


def _enclosing_func(op):
    p = op.parent
    while p is not None and p.name != "func.func":
        p = p.parent
    return p


def _set_func_inputs(func, inputs) -> None:
    from mlir import ir

    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, ftype.results))


def _results_to_args(module, ops, i) -> bool:
    """Replace the results of op i by new arguments of its function, then erase it."""
    from mlir import ir

    op = ops[i]
    func = _enclosing_func(op)
    if func is None or len(op.results) == 0 or op.name == "func.func" or _is_terminator(op):
        return False
    entry = func.regions[0].blocks[0]
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    inputs = list(ftype.inputs)
    for res in op.results:
        arg = entry.add_argument(res.type, op.location)
        res.replace_all_uses_with(arg)
        inputs.append(res.type)
    _set_func_inputs(func, inputs)
    if "arg_attrs" in func.attributes:
        attrs = list(ir.ArrayAttr(func.attributes["arg_attrs"]))
        attrs += [ir.DictAttr.get({})] * len(op.results)
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
    op.erase()
    return True


def _arg_candidates(module):
    out = []
    for op in _preorder(module.operation):
        if op.name == "func.func" and op.regions[0].blocks:
            for k in range(len(op.regions[0].blocks[0].arguments)):
                out.append((op, k))
    return out


def _erase_unused_arg(module, ops, i) -> bool:
    from mlir import ir

    func, k = _arg_candidates(module)[i]
    entry = func.regions[0].blocks[0]
    if any(True for _ in entry.arguments[k].uses):
        return False
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    inputs = list(ftype.inputs)
    del inputs[k]
    entry.erase_argument(k)
    _set_func_inputs(func, inputs)
    if "arg_attrs" in func.attributes:
        attrs = list(ir.ArrayAttr(func.attributes["arg_attrs"]))
        del attrs[k]
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
    return True


_KEEP_ATTRS = {"sym_name", "function_type", "operandSegmentSizes", "resultSegmentSizes"}


def _attr_candidates(module):
    out = []
    for op in _preorder(module.operation):
        for name in op.attributes:
            name = name if isinstance(name, str) else name.name
            if name not in _KEEP_ATTRS:
                out.append((op, name))
    return out


def _drop_attr(module, ops, i) -> bool:
    op, name = _attr_candidates(module)[i]
    del op.attributes[name]
    return True


def _branch_candidates(module):
    return [
        (op, k) for op in _preorder(module.operation) if op.name == "cf.cond_br" for k in (0, 1)
    ]


def _fold_branch(module, ops, i) -> bool:
    """cf.cond_br -> cf.br to one successor (unreachable blocks go with the next opt-pass)."""
    from mlir import ir
    from mlir.dialects import cf

    op, k = _branch_candidates(module)[i]
    view = op.opview
    operands = list(view.trueDestOperands if k == 0 else view.falseDestOperands)
    cf.BranchOp(operands, op.successors[k], loc=op.location, ip=ir.InsertionPoint(op))
    op.erase()
    return True


# Whole-module clean-ups, run by mlir-opt in a subprocess (a pass may crash too).
OPT_PASSES = ["canonicalize", "cse", "symbol-dce", "canonicalize{region-simplify=aggressive}"]


def _opt_pass(module, i) -> str | bool:
    from compiler.tools import tool_path

    try:
        proc = subprocess.run(
            [
                tool_path("mlir-opt") or "mlir-opt",
                f"--pass-pipeline=builtin.module({OPT_PASSES[i]})",
                "-",
            ],
            input=str(module), capture_output=True, text=True, timeout=60, errors="replace",
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return False
    return proc.stdout if proc.returncode == 0 else False


# name -> (count(module, ops), apply(module, ops, i)); an apply returning a string gives the
# candidate's text (the opt-pass transform); True means "print the mutated module".
TRANSFORMS: dict[str, tuple[Callable, Callable]] = {
    "erase-with-users": (lambda m, ops: len(ops), _erase_with_users),
    "fold-branch": (lambda m, ops: len(_branch_candidates(m)), _fold_branch),
    "opt-pass": (lambda m, ops: len(OPT_PASSES), lambda m, ops, i: _opt_pass(m, i)),
    "results-to-args": (lambda m, ops: len(ops), _results_to_args),
    "erase-unused-arg": (lambda m, ops: len(_arg_candidates(m)), _erase_unused_arg),
    "drop-attribute": (lambda m, ops: len(_attr_candidates(m)), _drop_attr),
}


def _candidate(text: str, transform: str, i: int) -> str | None:
    """The module after applying ``transform`` at position ``i``; None when out of range;
    "" when not applicable or the result does not verify."""
    from mlir import ir

    with ir.Context():
        module = ir.Module.parse(text)
        ops = _preorder(module.operation)
        count, apply = TRANSFORMS[transform]
        if i >= count(module, ops):
            return None
        try:
            done = apply(module, ops, i)
            if not done:
                return ""
            if isinstance(done, str):
                module = ir.Module.parse(done)
            module.operation.verify()
        except Exception:
            return ""
        return str(module)


def _isolated_candidate(text: str, transform: str, i: int) -> str | None:
    """``_candidate`` in the isolated process: the bindings assert on some mutated modules
    (printing a module whose op lost an attribute it needs aborts in ``dyn_cast``), and in the
    session's driver that abort killed the driver, its finding left unminimized for good (the
    next session's resumption died the same way). A candidate that kills the process is one
    that does not apply."""
    from ..run.isolation import Crashed, call

    try:
        return call(_candidate, text, transform, i, timeout=120)
    except Crashed:
        return ""


def structural_reduce(
    text: str, interesting: Callable[[str], bool], deadline: float, log: list | None = None
) -> str:
    """Greedy fixpoint over TRANSFORMS; a candidate is kept iff it is strictly shorter and
    interesting. Stops at ``deadline`` (time.monotonic()), or when the session stops, with the
    best module so far. Candidates are made in the isolated process (``_isolated_candidate``)."""
    from mlir import ir

    with ir.Context():  # normalize the printing once, so sizes compare
        best = str(ir.Module.parse(text))
    changed = True
    while changed and time.monotonic() < deadline and not stop_requested():
        changed = False
        for name in TRANSFORMS:
            i = 0
            while time.monotonic() < deadline and not stop_requested():
                cand = _isolated_candidate(best, name, i)
                if cand is None:
                    break
                if cand and len(cand) < len(best) and interesting(cand):
                    if log is not None:
                        log.append(f"{name}@{i}: {len(best)} -> {len(cand)} chars")
                    best, changed = cand, True
                else:
                    i += 1
    return best


__all__ = ["TRANSFORMS", "structural_reduce"]
