"""Programs: a small typed DAG that can be checked, saved, hashed, replayed and printed.

A :class:`Program` is plain data: typed inputs, equations (a primitive of the compiler's table
applied to argument references, with static attributes) and one output. Every equation's result
type is NumPy's own (the op evaluated by NumPy on stand-ins) when it is added, so an inconsistent
program cannot be constructed and the fuzzer only ever feeds the compiler programs NumPy itself
accepts, whatever the compiler's result rules say.
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler import primitives
from compiler.primitives import REQUIRED, DefinitionError, Primitive

from . import codec
from .types import (
    BOOL,
    FLOAT_DTYPES,
    VALUE_DTYPES,
    Arg,
    Const,
    Equation,
    Input,
    Ref,
    TensorType,
    dtype_name,
)

#: Errors a primitive's result rule raises for a program it rejects (invalid, or unsupported).
REJECTIONS = (ValueError, TypeError, IndexError, NotImplementedError, OverflowError)


def primitive(op: str) -> Primitive:
    """The table entry of ``op`` (a ValueError naming the op if unknown)."""
    if op not in primitives.PRIMITIVES:
        raise ValueError(f"unknown op {op!r}")
    return primitives.PRIMITIVES[op]


def normalize_attrs(op: str, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """``attrs`` checked against ``op``'s attribute list, defaults filled in, values normalized."""
    spec = primitive(op)
    unknown = set(attrs) - set(spec.attrs)
    if unknown:
        raise TypeError(f"{op}: unknown attributes {sorted(unknown)}")
    out: dict[str, Any] = {}
    for name, attr in spec.attrs.items():
        if name in attrs:
            value = attrs[name]
        elif attr.default is REQUIRED:
            raise TypeError(f"{op}: missing attribute {name!r}")
        else:
            value = attr.default
        out[name] = codec.normalize_attr(attr, value)
    return out


def _as_arg(value: Any) -> Arg:
    if isinstance(value, (Ref, Const)):
        return value
    if isinstance(value, np.generic):
        return Const(value.item(), dtype_name(value.dtype))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Const(value)
    raise TypeError(f"not a program argument: {value!r}")


def _operand(t: TensorType | Const) -> Any:
    """What a primitive's result rule sees: a type, or the constant's scalar (weak or strong)."""
    return t.py() if isinstance(t, Const) else t


def numpy_result(spec: Primitive, types: Sequence[TensorType | Const], attrs: Any) -> Any:
    """What NumPy itself makes of the op: its evaluation rule run by NumPy on zero-filled
    stand-ins of the operand types (types in NumPy do not depend on values). Raises what NumPy
    raises for an invalid program."""
    args = [t.py() if isinstance(t, Const) else np.zeros(t.shape, t.dtype) for t in types]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(spec.evaluate(np, args, attrs))


def result_type(spec: Primitive, types: Sequence[TensorType | Const], attrs: Any) -> Any:
    """The result type of an equation, as NumPy decides it, not as the compiler's result rule
    does: a compiler whose rule wrongly rejects a valid program (or types it wrongly) must
    still be handed that program, so the rule is consulted only for the limitations it declares
    (``NotImplementedError``: programs the compiler does not support, not generated).

    A composite's NumPy evaluation is its shared definition (``compiler/ops.py``), itself under
    test: where that definition fails on operands its result rule accepts (the composite's
    shape contract), the rule's type is taken, and the spec oracle judges the definition (a
    definition that crashed on valid shapes stopped case generation instead)."""
    try:
        truth = numpy_result(spec, types, attrs)
    except NotImplementedError:
        raise
    except Exception as rejected:  # noqa: BLE001 - NumPy's own rejection, or the definition's
        if spec.kind != "composite":
            raise
        try:
            return spec.result([_operand(t) for t in types], attrs)  # raises if it rejects too
        except DefinitionError as error:
            # The rule types a composite by running the definition too, which fails on any
            # operands: the program is still made (its shape is the contract's), so that the
            # compiler's failure on it and the spec oracle are seen (it stopped generation).
            return np.empty(error.shape, error.dtype)
        except (NotImplementedError, ValueError, TypeError):
            raise  # the contract's own rejection says what is wrong
        except Exception:  # noqa: BLE001 - rejected by both: NumPy's error, not the rule's
            # A rule that crashes (IndexError) where the definition rejects the shapes is the
            # compiler's bug, for the oracles on valid programs; the model must not pass the
            # crash on as the reason (a focus probe took it for a harness error: mutant m05).
            raise rejected from None
    try:
        spec.result([_operand(t) for t in types], attrs)
    except NotImplementedError:
        if not _undocumented_limitation(spec, types, truth):
            raise
    except Exception:  # noqa: BLE001 - any failure of the rule is the compiler's, not the model's
        pass  # NumPy accepts it: the compiler's rejection (or crash) is for the oracles to judge
    return truth


#: The limitations the compiler's result rules declare by operand dtypes alone where NumPy's
#: result has a dtype the compiler supports, as the model knows them: (op, operand dtypes).
#: (Where NumPy's result dtype is one the compiler lacks, an int32 sum's int64, the
#: limitation needs no listing; nor does an op's on boolean operands, ``where``'s aside:
#: arithmetic on booleans is one of the README's known limitations. Where the compiler's rule
#: takes booleans (``x / y`` of two), the op is drawn on them (``_accepts``): a rule that let
#: ``np.maximum`` of booleans through, to signed ``i1`` arithmetic (AND for NumPy's OR), gets
#: judged.)
DTYPE_LIMITATIONS = frozenset({("power", ("int32", "int32"))})


def _undocumented_limitation(
    spec: Primitive, types: Sequence[TensorType | Const], truth: np.ndarray
) -> bool:
    """Does the compiler's result rule refuse (``NotImplementedError``) an op on operand dtypes
    whatever their shapes and attributes (it refuses them on (2, 2) stand-ins with the default
    attributes too), where NumPy computes it in a dtype the compiler supports, and the model
    knows no such limitation (``DTYPE_LIMITATIONS``)? Then the program is made anyway, and the
    compiler's refusal judged: the model had trusted every limitation a rule declared, so a
    table entry that took an int32 mean's result dtype from ``np.sum`` (int64, refused) left
    every int32 mean ungenerated and unjudged (a held-out plant)."""
    if any(isinstance(t, Const) for t in types) or dtype_name(truth.dtype) not in VALUE_DTYPES:
        return False
    dtypes = tuple(t.dtype for t in types)
    if BOOL in dtypes and spec.kind != "select":
        return False  # arithmetic on booleans: a documented limitation (DTYPE_LIMITATIONS)
    return (spec.name, dtypes) not in DTYPE_LIMITATIONS and _refuses_dtypes(spec.name, dtypes)


#: The kinds of primitive NumPy computes on booleans (``np.maximum`` of two is their OR), which
#: the compiler mostly refuses (``DTYPE_LIMITATIONS``).
BOOL_ARITHMETIC = ("unary", "binary", "compare", "reduction", "matmul")


@functools.cache
def _refuses_dtypes(name: str, dtypes: tuple[str, ...]) -> bool:
    spec = primitives.get(name)
    stand = [TensorType((2, 2), d) for d in dtypes]
    attrs = {k: a.default for k, a in spec.attrs.items()}
    try:
        spec.result([_operand(t) for t in stand], attrs)
    except NotImplementedError:
        return True
    except Exception:  # noqa: BLE001 - a rejection of the stand-ins, not a limitation
        return False
    return False


class ProgramBuilder:
    """Adds inputs and equations one at a time, checking each as it is added."""

    def __init__(self) -> None:
        self.inputs: list[Input] = []
        self.nodes: list[Equation] = []

    @classmethod
    def from_program(cls, program: Program) -> ProgramBuilder:
        """A builder that continues ``program`` (its equations are trusted: already checked)."""
        builder = cls()
        builder.inputs = list(program.inputs)
        builder.nodes = list(program.nodes)
        return builder

    def input(self, shape: Sequence[int], dtype: Any, *, bound: int | None = None) -> Ref:
        """A new input of ``shape`` and ``dtype``; ``bound`` makes it int32 ids in [0, bound)."""
        shape = codec._ints(tuple(shape), "input shape")
        if any(d < 1 for d in shape):
            raise ValueError(f"input shape must have positive dimensions, got {shape}")
        dtype = codec._dtype(dtype)
        if bound is not None:
            bound = codec._positive(bound)
            if dtype != "int32":
                raise TypeError("only int32 inputs can carry an index bound")
        self.inputs.append(Input(shape, dtype, bound))
        return Ref("input", len(self.inputs) - 1)

    def type_of(self, ref: Arg) -> TensorType | Const:
        if isinstance(ref, Const):
            return ref
        if ref.kind == "input":
            if not 0 <= ref.index < len(self.inputs):
                raise ValueError(f"no input {ref.index}")
            return self.inputs[ref.index].type
        if ref.kind == "node":
            if not 0 <= ref.index < len(self.nodes):
                raise ValueError(f"no node {ref.index} (nodes may only use earlier nodes)")
            return self.nodes[ref.index].type
        raise ValueError(f"unknown reference kind {ref.kind!r}")

    def node(self, op: str, *args: Any, **attrs: Any) -> Ref:
        """Add ``op(*args, **attrs)``; raises what the primitive's result rule raises (NumPy's
        errors, or NotImplementedError for a compiler limitation), or the model's own
        restrictions (ValueError/TypeError)."""
        spec = primitive(op)
        if len(args) != spec.arity:
            raise TypeError(f"{op}: expected {spec.arity} arguments, got {len(args)}")
        refs = tuple(_as_arg(a) for a in args)
        types = [self.type_of(r) for r in refs]
        for position, t in enumerate(types):
            if isinstance(t, Const) and not spec.consts:
                raise TypeError(f"{op}: constants are only allowed as operator operands")
            if isinstance(t, TensorType) and t.dtype == BOOL:
                # (arithmetic on booleans: NumPy's, where the compiler's rule takes it; where
                # it refuses it, ``result_type`` raises its NotImplementedError, so that a case
                # found on a compiler that took them is rebuilt, and refused, on one that does
                # not: ``replay``)
                if not (
                    (spec.kind == "select" and position == 0)
                    or spec.kind in ("cast", "layout", *BOOL_ARITHMETIC)
                ):
                    raise TypeError(
                        f"{op}: bool values may only feed where(), astype(), views and arithmetic"
                    )
            elif spec.kind == "select" and position == 0 and isinstance(t, Const):
                raise TypeError(f"{op}: the condition must be a tensor, got {t}")
        if spec.float_only:
            for t in types:
                if isinstance(t, Const) or t.dtype not in FLOAT_DTYPES:
                    raise TypeError(f"{op}: expected a float operand, got {t}")
        normalized = normalize_attrs(op, attrs)
        if spec.kind == "gather":
            self._check_ids(refs, types)
        result = result_type(spec, types, normalized)
        dtype = result.dtype.name
        if dtype not in VALUE_DTYPES:
            raise TypeError(f"{op}: unsupported result dtype {dtype}")
        if any(d < 1 for d in result.shape):
            raise ValueError(f"{op}: zero-size result of shape {result.shape}")
        self.nodes.append(Equation(op, refs, normalized, TensorType(tuple(result.shape), dtype)))
        return Ref("node", len(self.nodes) - 1)

    def _check_ids(self, refs: tuple[Arg, ...], types: list[TensorType | Const]) -> None:
        ids = refs[1]
        if not (isinstance(ids, Ref) and ids.kind == "input"):
            raise TypeError("gather: ids must be a program input (so its values are bounded)")
        bound = self.inputs[ids.index].bound
        table = types[0]
        if bound is None or not isinstance(table, TensorType) or not table.shape:
            raise TypeError("gather: ids input must carry an index bound")
        if bound > table.shape[0]:
            raise ValueError(f"gather: ids bound {bound} exceeds table rows {table.shape[0]}")

    def _reads_input(self, output: Ref) -> bool:
        stack, seen = [output], set()
        while stack:
            ref = stack.pop()
            if ref.kind == "input":
                return True
            if ref.index not in seen:
                seen.add(ref.index)
                stack.extend(a for a in self.nodes[ref.index].args if isinstance(a, Ref))
        return False

    def build(self, output: Ref | None = None) -> Program:
        """The finished program; its output defaults to the last equation."""
        if output is None:
            if not self.nodes:
                raise ValueError("a program needs an output")
            output = Ref("node", len(self.nodes) - 1)
        out_type = self.type_of(output)
        if isinstance(out_type, Const) or out_type.dtype == BOOL:
            raise TypeError(f"program output must be a numeric tensor, got {out_type}")
        if not self._reads_input(output):
            # Nothing to trace: the array namespace comes from the inputs.
            raise ValueError("program output does not depend on any input")
        return Program._trusted(tuple(self.inputs), tuple(self.nodes), output)


def rebuild(
    inputs: Sequence[Input],
    specs: Sequence[tuple[str, tuple[Arg, ...], Mapping[str, Any]]],
    output: Ref,
) -> Program:
    """A program from plain parts, every equation re-checked."""
    builder = ProgramBuilder()
    for inp in inputs:
        builder.input(inp.shape, inp.dtype, bound=inp.bound)
    for op, args, attrs in specs:
        builder.node(op, *args, **attrs)
    return builder.build(output)


def encode_equation(op: str, args: Sequence[Arg], attrs: Mapping[str, Any]) -> dict[str, Any]:
    specs = primitives.PRIMITIVES[op].attrs if op in primitives.PRIMITIVES else {}
    return {
        "op": op,
        "args": [codec.encode_arg(a) for a in args],
        "attrs": codec.encode_attrs(specs, attrs),
    }


def decode_equation(data: Mapping[str, Any]) -> tuple[str, tuple[Arg, ...], dict[str, Any]]:
    op = data["op"]
    specs = primitive(op).attrs
    args = tuple(codec.decode_arg(a) for a in data["args"])
    return op, args, codec.decode_attrs(specs, data.get("attrs", {}))


@dataclass(frozen=True)
class Program:
    """A checked, immutable program. Build one with :class:`ProgramBuilder` or ``from_json``."""

    inputs: tuple[Input, ...]
    nodes: tuple[Equation, ...]
    output: Ref

    def __post_init__(self) -> None:
        specs = [(n.op, n.args, n.attrs) for n in self.nodes]
        if rebuild(self.inputs, specs, self.output).nodes != self.nodes:
            raise ValueError("nodes disagree with inference; build programs with ProgramBuilder")

    @classmethod
    def _trusted(
        cls, inputs: tuple[Input, ...], nodes: tuple[Equation, ...], output: Ref
    ) -> Program:
        program = cls.__new__(cls)
        object.__setattr__(program, "inputs", inputs)
        object.__setattr__(program, "nodes", nodes)
        object.__setattr__(program, "output", output)
        return program

    def __hash__(self) -> int:
        return hash(self.canonical_json())

    # ---- queries

    def type_of(self, ref: Ref) -> TensorType:
        return self.inputs[ref.index].type if ref.kind == "input" else self.nodes[ref.index].type

    @property
    def output_type(self) -> TensorType:
        return self.type_of(self.output)

    @property
    def ops(self) -> tuple[str, ...]:
        """Op names of the equations, in order."""
        return tuple(n.op for n in self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def dtypes(self) -> set[str]:
        """Every dtype that occurs on an input or equation."""
        return {i.dtype for i in self.inputs} | {n.type.dtype for n in self.nodes}

    def users(self, ref: Ref) -> list[int]:
        """Indices of the equations that take ``ref`` as an argument."""
        return [i for i, n in enumerate(self.nodes) if ref in n.args]

    def arg_types(self, equation: Equation) -> list[TensorType]:
        """The types of an equation's tensor arguments (constants left out)."""
        return [self.type_of(a) for a in equation.args if isinstance(a, Ref)]

    # ---- serialization

    def to_dict(self) -> dict[str, Any]:
        inputs = []
        for inp in self.inputs:
            entry: dict[str, Any] = {"shape": list(inp.shape), "dtype": inp.dtype}
            if inp.bound is not None:
                entry["bound"] = inp.bound
            inputs.append(entry)
        return {
            "format": codec.FORMAT,
            "version": codec.FORMAT_VERSION,
            "inputs": inputs,
            "nodes": [encode_equation(n.op, n.args, n.attrs) for n in self.nodes],
            "output": codec.encode_arg(self.output),
        }

    def to_json(self, indent: int | None = None) -> str:
        """JSON text (sorted keys); ``from_json`` gives back an equal program."""
        return json.dumps(self.to_dict(), sort_keys=True, indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Program:
        if not isinstance(data, Mapping) or data.get("format") != codec.FORMAT:
            found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
            raise ValueError(f"not a program: format is {found!r}, expected {codec.FORMAT!r}")
        version = data.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"program JSON has an invalid format version {version!r}")
        if version > codec.FORMAT_VERSION:
            raise ValueError(
                f"program JSON has format version {version}, newer than this reader's "
                f"{codec.FORMAT_VERSION}; update the strategies package to read it"
            )
        builder = ProgramBuilder()
        try:
            for entry in data["inputs"]:
                builder.input(entry["shape"], entry["dtype"], bound=entry.get("bound"))
            for entry in data["nodes"]:
                op, args, attrs = decode_equation(entry)
                builder.node(op, *args, **attrs)
            output = codec.decode_arg(data["output"])
        except (KeyError, AttributeError) as error:
            raise ValueError(f"malformed program JSON: missing or misplaced {error}") from None
        if not isinstance(output, Ref):
            raise ValueError("program output must be a reference")
        return builder.build(output)

    @classmethod
    def from_json(cls, text: str | bytes) -> Program:
        return cls.from_dict(json.loads(text))

    def canonical_json(self) -> str:
        """Compact, key-sorted JSON: the bytes the content hash is taken over."""
        return codec.canonical(self.to_dict())

    def digest(self) -> str:
        """Stable content hash (sha256 hex of the canonical JSON): same program, same hash."""
        return codec.digest(self.to_dict())

    # ---- evaluation, printing, rewriting (in their own modules)

    def as_function(self, namespace: Any = None, spelling: str = "array-api") -> Callable[..., Any]:
        """``fn(*inputs)`` evaluating the program with ``namespace`` (default: the inputs' own),
        written in ``spelling`` (``primitives.SPELLINGS``)."""
        from .evaluate import function

        return function(self, namespace, spelling=spelling)

    def __str__(self) -> str:
        from .printing import describe

        return describe(self)

    def to_python(self, values: Sequence[np.ndarray] | None = None, **options: Any) -> str:
        """A standalone reproducer (see :func:`strategies.model.printing.python_source`)."""
        from .printing import python_source

        return python_source(self, values, **options)

    def dead_code_eliminated(self) -> Program:
        """The same program without equations the output does not depend on."""
        from .rewrites import rewrite

        return rewrite(self, {}, self.output)

    def reads_input(self, ref: Ref) -> bool:
        """Whether ``ref``'s value depends on an input (a ``causal_mask`` alone does not: a
        traced function cannot return it)."""
        return ProgramBuilder.from_program(self)._reads_input(ref)

    def subprogram(self, output: Ref | int) -> Program:
        """The program computing ``output`` (an equation index or Ref) instead; inputs kept."""
        from .rewrites import rewrite

        return rewrite(self, {}, Ref("node", output) if isinstance(output, int) else output)

    def replace_node(self, index: int, ref: Ref) -> Program:
        """Uses of equation ``index`` read ``ref`` instead; re-checked, so it may raise."""
        from .rewrites import replace_node

        return replace_node(self, index, ref)

    def without_node(self, index: int) -> Program:
        """Equation ``index`` bypassed by one of its arguments (the first that type-checks)."""
        from .rewrites import without_node

        return without_node(self, index)

    def used_inputs(self) -> tuple[int, ...]:
        """Indices of inputs some equation (or the output) reads."""
        used = {
            a.index for n in self.nodes for a in n.args if isinstance(a, Ref) and a.kind == "input"
        }
        if self.output.kind == "input":
            used.add(self.output.index)
        return tuple(sorted(used))

    def drop_unused_inputs(self) -> tuple[Program, tuple[int, ...]]:
        """(program without unused inputs, original indices of the inputs kept)."""
        from .rewrites import drop_unused_inputs

        return drop_unused_inputs(self)


__all__ = [
    "REJECTIONS",
    "Program",
    "ProgramBuilder",
    "decode_equation",
    "encode_equation",
    "normalize_attrs",
    "primitive",
    "rebuild",
]
