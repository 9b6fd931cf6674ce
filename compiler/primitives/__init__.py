"""One table of primitives: every operation a program may use, with its rules and metadata.

Each :class:`Primitive` owns

- its NumPy result rule (``infer``: shape, dtype and errors, from :mod:`.rules`),
- how a program prints it (``render``) and so calls it on an array namespace (``evaluate``, which
  runs exactly the printed text: a reproducer is the program that ran), in each spelling
  (``SPELLINGS``: the array namespace and Python's operators, NumPy's own functions, or the
  array's methods),
- for elementwise primitives, its scalar lowering to MLIR (``scalar``), which the emitter applies
  inside a ``linalg.generic``; structural primitives are lowered by the frontend's trace rules,
- metadata the harness reads: scalar operands allowed, float-only, error depth (for the error
  model), generation cost, value domain and range hints (for the generator).

The compiler's frontend, the harness's program model, its generator, references, error model and
report all read this table; adding an elementwise operation is one entry in :mod:`.table`. This
package imports nothing of the compiler but its dtypes, errors and the composite definitions in
``compiler.ops`` (NumPy only), so the harness's generator can read it without the code under test.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import finfo, is_float
from ..dtypes import source as dtype_source
from ..errors import DefinitionError, InvalidIndex, UnsupportedFeature
from . import rules
from .rules import ArrayType, Operand

REQUIRED = object()

#: Kinds of primitive. Elementwise kinds are lowered by the emitter from ``Primitive.scalar``.
ELEMENTWISE_KINDS = ("unary", "binary", "compare", "select", "cast", "copy")
KINDS = (*ELEMENTWISE_KINDS, "reduction", "matmul", "layout", "source", "gather", "composite")
#: Kinds whose error path depends on values and is taken when the kernel runs (a gather's
#: out-of-range id), not while tracing: every other rejection is decided by types and shapes.
RUN_TIME_CHECKED_KINDS = ("gather",)

#: How a program is written. "array-api": the inputs' own namespace (``x.__array_namespace__()``,
#: the traced namespace under ``jit``) and Python's operators (``a + b``, ``a.T``). "numpy":
#: NumPy's own functions and ufuncs (``np.add(a, b)``, ``np.sum(a, axis=0)``), which traced
#: tensors take over through ``__array_ufunc__``/``__array_function__``: NumPy-style user code.
#: "methods": the array's methods and operators where an entry has them (``a @ b``,
#: ``x.sum(axis=0)``, ``x.reshape(2, 3)`` or ``x.reshape((3, 2))``, ``x.transpose(1, 0)``,
#: ``x.astype(...)``, ``abs(x)``).
SPELLINGS = ("array-api", "numpy", "methods")

#: Attribute kinds: how a static attribute is checked, stored (JSON) and printed.
ATTR_KINDS = (
    "axis", "bool", "shape", "axes", "index", "dtype", "positive", "count", "result_dtype",
    "initial",
)  # fmt: skip


#: A valid value of each attribute kind, to print an entry without a program.
_SAMPLE_ATTR = {
    "axis": 0,
    "bool": False,
    "shape": (1,),
    "axes": (0,),
    "index": (),
    "dtype": "float32",
    "positive": 1,
    "count": 0,
    "result_dtype": None,
    "initial": None,
}


@dataclass(frozen=True)
class Attr:
    """A static attribute of a primitive: its kind (see ``ATTR_KINDS``) and default."""

    kind: str
    default: Any = REQUIRED
    #: Read by printing alone (which of NumPy's forms a call is written in): a program's data
    #: leaves it out at its default, so programs written before it keep their digests.
    form: bool = False
    #: A NumPy keyword argument the table took on after programs were written (a reduction's
    #: ``dtype=``): a program's data leaves it out at its default, so those programs keep
    #: their digests.
    keyword: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ATTR_KINDS:
            raise ValueError(f"unknown attribute kind {self.kind!r}")


@dataclass
class ScalarCall:
    """What an elementwise lowering rule sees: scalar SSA names ``args`` (``i1`` for booleans) of
    dtypes ``arg_dtypes`` (a scalar constant's value in ``constants``), the result ``dtype`` and
    the SSA name ``result`` to define; ``fresh(prefix)`` makes new names. ``stored`` is the
    node's own dtype where ``dtype`` is the float32 that float16/bfloat16 are computed in;
    ``reduction``: the rule combines a reduction's element with its accumulator (``%acc``)."""

    args: list[str]
    arg_dtypes: list[np.dtype]
    constants: list[Any]
    dtype: np.dtype
    result: str
    fresh: Callable[[str], str]
    stored: np.dtype | None = None
    reduction: bool = False


Infer = Callable[[Sequence[Operand], Mapping[str, Any]], ArrayType]
Evaluate = Callable[[Any, Sequence[Any], Mapping[str, Any]], Any]
Render = Callable[[Sequence[str], Mapping[str, Any]], str]
Depth = Callable[[Sequence[ArrayType], Mapping[str, Any]], float]


@functools.cache
def _scope() -> dict[str, Any]:
    import ml_dtypes

    from .. import ops

    return {"np": np, "ops": ops, "ml_dtypes": ml_dtypes}


@functools.lru_cache(maxsize=16384)
def _compiled(text: str) -> Any:
    return compile(text, "<primitive>", "eval")


def rendered(render: Render) -> Evaluate:
    """The evaluation rule that runs what ``render`` prints (with ``xp`` the namespace, ``np``,
    ``ops`` and ``ml_dtypes`` in scope): one definition per primitive, so a reproducer printed
    from the table calls the compiler exactly as the case that failed did."""

    def evaluate(xp: Any, args: Sequence[Any], attrs: Mapping[str, Any]) -> Any:
        names = [f"_{i}" for i in range(len(args))]
        local = dict(zip(names, args, strict=True))
        local["xp"] = xp
        return eval(_compiled(render(names, attrs)), _scope(), local)  # noqa: S307 - our text

    evaluate.render = render  # type: ignore[attr-defined]
    return evaluate


def printed(render: Render) -> tuple[Evaluate, Render]:
    """``(evaluate, render)`` for a :class:`Primitive` from its printed form alone (see
    :func:`rendered`): ``Primitive(name, kind, arity, infer, *printed(render), ...)``."""
    return rendered(render), render


def _one_step(types: Sequence[ArrayType], attrs: Mapping[str, Any]) -> float:
    return 1.0


@dataclass(frozen=True, eq=False)
class Primitive:
    """One operation: its rules (result, evaluation, printing, lowering) and metadata."""

    name: str
    kind: str
    arity: int
    infer: Infer
    evaluate: Evaluate
    render: Render
    attrs: Mapping[str, Attr] = field(default_factory=dict)
    #: The NumPy function whose dtype rule the primitive follows (and ufunc dispatch uses).
    ufunc: Any = None
    #: Elementwise lowering: lines defining ``call.result`` from ``call.args``.
    scalar: Callable[[ScalarCall], list[str]] | None = None
    #: Dtypes the operands are converted to before the scalar op (default: the result dtype).
    operand_dtypes: Callable[[Sequence[Operand], ArrayType], list[np.dtype]] | None = None
    #: May an operand be a scalar constant (Python or NumPy scalar)?
    consts: bool = False
    #: Defined on floats only (integer inputs are not generated, and are rejected).
    float_only: bool = False
    #: Error depth in units of rounding steps, for the error model (default one step).
    error_depth: Depth = _one_step
    #: How many program nodes one generation step of this primitive may add.
    cost: int = 1
    #: "nonnegative": finite results need non-negative inputs (the generator guards them).
    domain: str = ""
    #: "nonnegative" or "bounded" (finite and moderate): what the result is known to be.
    result_range: str = ""
    #: "values": the result's values are the first operand's (layout, casts of bounded values);
    #: "bounds": the result is bounded where its operands are (negative, abs, maximum, max).
    keeps: str = ""
    #: "correct": each float result is one rounding of the exact one, as IEEE 754 defines +, -,
    #: *, /, sqrt and conversions (NumPy's float16 and bfloat16 compute them in float32 and
    #: round once more, the same single rounding for these), so a program of such and exact
    #: ones has one right answer: NumPy's, to the bit (the error model's ``exactly_rounded``).
    rounding: str = ""
    #: Drawn by the program generator (False for entries the frontend uses internally only).
    generate: bool = True
    #: NumPy's function for an entry printed as a Python operator or attribute (``a + b``,
    #: ``-a``, ``a.T``): the "numpy" spelling calls it instead.
    call: str = ""
    #: Its printed form as the array's method or operator, where it has one (``x.sum(...)``,
    #: ``a @ b``): the "methods" spelling prints (and so evaluates) this instead.
    method: Render | None = None
    #: Its printed form in the "numpy" spelling where NumPy has another name for it too
    #: (``np.amax`` beside ``np.max``): each name the frontend dispatches is met by some program.
    numpy: Render | None = None
    #: NumPy's keyword arguments of this function that the compiler refuses (UnsupportedFeature),
    #: each with values NumPy accepts (``where=True``): an invalid program passes one, so a
    #: keyword taken and ignored is seen. A keyword neither here, nor an attribute, nor ``out``
    #: is one NumPy's function lacks (a TypeError).
    refused: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    doc: str = ""

    def __post_init__(self) -> None:
        # The frontend, the generator, the references and the reproducers all trust this entry:
        # a malformed one is refused here, when the table is built, not met as a crash deep in
        # whichever of them first reads the bad field.
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"a primitive's name must be an identifier, got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: unknown kind {self.kind!r}")
        if self.kind in ELEMENTWISE_KINDS and self.scalar is None:
            raise ValueError(f"{self.name}: an elementwise primitive needs a scalar lowering")
        _check_fields(self)
        sample = self.sample_attrs()
        for spelling in SPELLINGS:
            _check_printed(self.name, spelling, self.spelled(spelling)[1], self.arity, sample)

    @property
    def elementwise(self) -> bool:
        return self.kind in ELEMENTWISE_KINDS

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"

    def sample_attrs(self) -> dict[str, Any]:
        """A valid value of each attribute, to print the entry without a program."""
        return {name: _SAMPLE_ATTR[attr.kind] for name, attr in self.attrs.items()}

    def respelled(self, spelling: str) -> bool:
        """Does ``spelling`` reach the compiler another way for this entry (another function,
        method or namespace than the default spelling's)? An index ``x[k]`` and a composite
        ``ops.gelu(x)`` are written alike in every spelling."""
        _, render = self.spelled(spelling)
        if render is not self.render:
            return True
        sample = self.sample_attrs()
        return spelling == "numpy" and bool(
            re.search(r"\bxp\b", render(["_0"] * self.arity, sample))
        )

    def spelled(self, spelling: str) -> tuple[Evaluate, Render]:
        """(evaluate, render) in ``spelling`` (see ``SPELLINGS``)."""
        if spelling not in SPELLINGS:
            raise ValueError(f"unknown spelling {spelling!r} (one of {SPELLINGS})")
        if spelling == "numpy" and self.call:
            return _numpy_call(self.call)
        if spelling == "numpy" and self.numpy is not None:
            return _printed_once(self.numpy)
        if spelling == "methods" and self.method is not None:
            return _printed_once(self.method)
        return self.evaluate, self.render

    def __reduce__(self) -> tuple:  # pickles by name: the table is the identity
        return (get, (self.name,))

    def result(self, operands: Sequence[Operand], attrs: Mapping[str, Any] | None = None) -> Any:
        """The result type of this primitive on ``operands`` (NumPy's errors if invalid)."""
        return self.infer(list(operands), dict(attrs or {}))

    def converted_dtypes(self, operands: Sequence[Operand], out: ArrayType) -> list[np.dtype]:
        if self.operand_dtypes is None:
            return [out.dtype] * len(operands)
        return self.operand_dtypes(operands, out)

    def numpy_dtypes(self, operands: Sequence[Operand], out: ArrayType) -> list[np.dtype | None]:
        """The dtype NumPy 2 computes each operand in (None: used as it is), so that another
        array library evaluating this primitive computes in NumPy's dtypes (JAX makes float32
        of int32 meeting float32, NumPy float64): elementwise operands as the lowering converts
        them (a ``where`` condition as it is), matmul and mean/var/std operands in the result
        dtype; layout, casts, gathers and composites leave their operands alone. The harness's
        JAX reference and the ``xla-cpu`` backend's graph both follow this one rule."""
        if self.kind in ("unary", "binary", "compare", "select"):
            found = [np.dtype(d) for d in self.converted_dtypes(operands, out)]
            return [None, *found[1:]] if self.kind == "select" else list(found)
        if self.kind == "matmul" or self.name in ("mean", "var", "std"):
            return [np.dtype(out.dtype)] * len(operands)
        return [None] * len(operands)

    def depth(self, types: Sequence[ArrayType], attrs: Mapping[str, Any]) -> float:
        return float(self.error_depth(types, attrs))


#: The closed sets of the string-valued metadata (``result_range`` is a comma-separated subset).
_CHOICES = {
    "domain": ("", "nonnegative"),
    "keeps": ("", "values", "bounds"),
    "rounding": ("", "correct"),
}
_RANGES = ("nonnegative", "bounded")


def _check_fields(p: Primitive) -> None:
    """Refuse an entry whose fields have the wrong types or values (see ``__post_init__``)."""
    if type(p.arity) is not int or p.arity < 0:
        raise ValueError(f"{p.name}: arity must be a non-negative int, got {p.arity!r}")
    if type(p.cost) is not int or p.cost < 1:
        raise ValueError(f"{p.name}: cost must be a positive int, got {p.cost!r}")
    for rule in ("infer", "evaluate", "render", "error_depth"):
        if not callable(getattr(p, rule)):
            raise TypeError(f"{p.name}: {rule} must be callable, got {getattr(p, rule)!r}")
    for rule in ("scalar", "operand_dtypes", "method", "numpy"):
        if getattr(p, rule) is not None and not callable(getattr(p, rule)):
            raise TypeError(f"{p.name}: {rule} must be callable or None")
    if not isinstance(p.attrs, Mapping) or not all(
        isinstance(k, str) and k.isidentifier() and isinstance(a, Attr) for k, a in p.attrs.items()
    ):
        raise TypeError(f"{p.name}: attrs must map keyword names to Attr, got {p.attrs!r}")
    for flag in ("consts", "float_only", "generate"):
        if not isinstance(getattr(p, flag), bool):
            raise TypeError(f"{p.name}: {flag} must be a bool, got {getattr(p, flag)!r}")
    for name, allowed in _CHOICES.items():
        if getattr(p, name) not in allowed:
            raise ValueError(f"{p.name}: {name} must be one of {allowed}, got {getattr(p, name)!r}")
    if p.result_range and not set(p.result_range.split(",")) <= set(_RANGES):
        raise ValueError(f"{p.name}: result_range is a comma-separated subset of {_RANGES}")
    if p.call and not p.call.isidentifier():
        raise ValueError(f"{p.name}: call must name a NumPy function, got {p.call!r}")
    if not isinstance(p.refused, Mapping) or not all(
        isinstance(k, str) and k.isidentifier() and k not in p.attrs and isinstance(v, tuple)
        for k, v in p.refused.items()
    ):
        raise TypeError(
            f"{p.name}: refused must map keywords that are not attributes to tuples of values, "
            f"got {p.refused!r}"
        )


def _check_printed(
    name: str, spelling: str, render: Render, arity: int, sample: Mapping[str, Any]
) -> None:
    """A printed form must be one Python expression: it is what ``evaluate`` runs and what a
    reproducer prints."""
    text = render([f"_{i}" for i in range(arity)], sample)
    if not isinstance(text, str):
        raise TypeError(f"{name}: its {spelling} form printed {text!r}, not a string")
    try:
        _compiled(text)
    except SyntaxError as error:
        raise ValueError(
            f"{name}: its {spelling} form {text!r} is not a Python expression ({error.msg})"
        ) from None


@functools.cache
def _numpy_call(name: str) -> tuple[Evaluate, Render]:
    return _printed_once(lambda args, attrs: f"xp.{name}({', '.join(args)})")


#: ``printed`` once per render: a spelling's rules keep their identity (and their cache).
_printed_once = functools.cache(printed)


PRIMITIVES: dict[str, Primitive] = {}


def register(primitive: Primitive) -> Primitive:
    """Add ``primitive`` to the table (its name must be new)."""
    if primitive.name in PRIMITIVES:
        raise ValueError(f"primitive {primitive.name!r} is already registered")
    PRIMITIVES[primitive.name] = primitive
    return primitive


def unregister(name: str) -> None:
    """Remove a primitive (for tests that register a toy one)."""
    PRIMITIVES.pop(name, None)


def get(name: str) -> Primitive:
    try:
        return PRIMITIVES[name]
    except KeyError:
        raise ValueError(f"unknown primitive {name!r}; known: {', '.join(PRIMITIVES)}") from None


def of_kind(*kinds: str) -> list[Primitive]:
    """Primitives of the given kinds, in table order."""
    return [p for p in PRIMITIVES.values() if p.kind in kinds]


def names() -> tuple[str, ...]:
    return tuple(PRIMITIVES)


def contraction_depth(length: int) -> float:
    """Rounding steps of a sum of ``length`` terms (pairwise or not): log2 of its length."""
    return math.log2(max(2, length))


from . import table  # noqa: E402,F401 - fills the table

__all__ = [
    "ATTR_KINDS",
    "ELEMENTWISE_KINDS",
    "KINDS",
    "PRIMITIVES",
    "REQUIRED",
    "RUN_TIME_CHECKED_KINDS",
    "SPELLINGS",
    "ArrayType",
    "Attr",
    "DefinitionError",
    "InvalidIndex",
    "UnsupportedFeature",
    "Primitive",
    "ScalarCall",
    "contraction_depth",
    "dtype_source",
    "finfo",
    "get",
    "is_float",
    "names",
    "of_kind",
    "printed",
    "register",
    "rendered",
    "rules",
    "unregister",
]
