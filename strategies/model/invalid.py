"""Invalid programs: a valid program plus exactly one labelled violation.

The violation is either an unchecked last equation (its result is the function's result) or
inputs whose dtypes differ from the program's. Each kind says whether NumPy itself rejects it and
which errors a conforming compiler may raise, so the error-path oracle can judge it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import codec
from .evaluate import function
from .printing import python_source, render
from .program import Program, decode_equation, encode_equation
from .types import Input, RawEquation


@dataclass(frozen=True)
class Violation:
    """One kind of invalid program: does NumPy reject it, and what a conforming compiler raises."""

    name: str
    description: str
    numpy_rejects: bool
    errors: tuple[type[BaseException], ...] = (ValueError, TypeError)


VIOLATIONS: dict[str, Violation] = {
    v.name: v
    for v in (
        # Where NumPy rejects a violation, its errors are NumPy's class (an AxisError: a
        # ValueError or an IndexError, as it is both): a caller's ``except IndexError`` written
        # for NumPy must catch the compiler's error too.
        Violation(
            "matmul_contraction", "matmul whose contracted dimensions differ", True, (ValueError,)
        ),
        Violation(
            "broadcast", "elementwise op on shapes that do not broadcast", True, (ValueError,)
        ),
        Violation("reshape_size", "reshape to a shape of a different size", True, (ValueError,)),
        Violation(
            "not_a_permutation",
            "permute_dims with axes that are not a permutation",
            True,
            (ValueError,),
        ),
        Violation(
            "axis_out_of_range",
            "reduction over an axis the operand lacks",
            True,
            (ValueError, IndexError),
        ),
        Violation(
            "index_out_of_range", "integer index past the end of a dimension", True, (IndexError,)
        ),
        # NumPy returns an empty array; the compiler has no zero-size arrays (UnsupportedFeature).
        Violation(
            "empty_slice",
            "slice selecting nothing",
            False,
            (ValueError, TypeError, NotImplementedError),
        ),
        # NumPy computes in any dtype; the compiler supports float16/32/64, bfloat16 and int32.
        Violation("unsupported_dtype", "an input of a dtype the compiler does not support", False),
        Violation(
            "heads_mismatch",
            "attention whose width is not divisible by heads",
            True,
            (ValueError,),
        ),
        Violation(
            "reshape_unknowns",
            "reshape with two unknown (negative) dimensions",
            True,
            (ValueError,),
        ),
        Violation("repeated_axis", "reduction over one axis named twice", True, (ValueError,)),
        Violation(
            "broadcast_to_shape",
            "broadcast_to a shape the operand does not fit",
            True,
            (ValueError,),
        ),
        Violation("matmul_0d", "matmul with a 0-d operand", True, (ValueError,)),
        Violation("zero_step", "slice with step 0", True, (ValueError,)),
        Violation(
            "too_many_indices",
            "more integer/slice indices than dimensions",
            True,
            (IndexError,),
        ),
        Violation("two_ellipses", "an index with two ellipses", True, (IndexError,)),
        # The table names NumPy's keywords the compiler refuses (``Primitive.refused``): it must
        # refuse them, not take and ignore them (np.sum(x, where=True), np.max(x, initial=0)).
        Violation(
            "unsupported_keyword",
            "a reduction given a keyword NumPy takes and the compiler refuses",
            False,
            (NotImplementedError,),
        ),
        Violation(
            "unknown_keyword",
            "a reduction given another reduction's keyword (np.max(x, dtype=...))",
            True,
            (TypeError,),
        ),
        # NumPy refuses ``-x`` and ``x - y`` of booleans (its TypeError), before any question of
        # what the compiler supports: a TypeError, not UnsupportedFeature.
        Violation(
            "bool_operand",
            "an op NumPy refuses on booleans (-x, x - y of two)",
            True,
            (TypeError,),
        ),
        Violation(
            "attr_type",
            "a reduction's axis or keepdims of a type NumPy refuses (a float, a string, a bool)",
            True,
            (TypeError,),
        ),
    )
}
UNSUPPORTED_DTYPES = ("int64", "int16", "uint8")


@dataclass(frozen=True)
class InvalidProgram:
    """A valid ``program`` plus one violation: an unchecked ``node`` evaluated after it (its
    result is the function's result), or ``inputs`` whose dtypes differ from the program's."""

    program: Program
    violation: str
    node: RawEquation | None
    inputs: tuple[Input, ...]

    @property
    def numpy_rejects(self) -> bool:
        """Does NumPy itself raise on this program?"""
        return VIOLATIONS[self.violation].numpy_rejects

    @property
    def errors(self) -> tuple[type[BaseException], ...]:
        """Exception types a conforming compiler may raise for it."""
        return VIOLATIONS[self.violation].errors

    # The same queries a Program answers, for code that handles either.
    @property
    def ops(self) -> tuple[str, ...]:
        return self.program.ops + ((self.node.op,) if self.node is not None else ())

    @property
    def output_type(self) -> Any:
        return self.program.output_type

    def dtypes(self) -> set[str]:
        return self.program.dtypes() | {i.dtype for i in self.inputs}

    def __len__(self) -> int:
        return len(self.program) + (self.node is not None)

    def digest(self) -> str:
        return codec.digest(self.to_dict())

    def as_function(self, namespace: Any = None, spelling: str = "array-api") -> Callable[..., Any]:
        return function(self.program, namespace, self.node, spelling=spelling)

    def with_program(
        self, program: Program, inputs: Sequence[Input] | None = None
    ) -> InvalidProgram:
        """The same violation on a (smaller) program; the invalid inputs follow ``inputs``."""
        return InvalidProgram(
            program, self.violation, self.node, tuple(program.inputs if inputs is None else inputs)
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the valid program's JSON plus the violation), for corpus files."""
        node = None
        if self.node is not None:
            node = encode_equation(self.node.op, self.node.args, self.node.attrs)
        return {
            "program": self.program.to_dict(),
            "violation": self.violation,
            "node": node,
            "inputs": [
                {"shape": list(i.shape), "dtype": i.dtype, "bound": i.bound} for i in self.inputs
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InvalidProgram:
        if data.get("violation") not in VIOLATIONS:
            raise ValueError(f"unknown violation {data.get('violation')!r}")
        node = data.get("node")
        raw = RawEquation(*decode_equation(node)) if node is not None else None
        inputs = tuple(Input(tuple(i["shape"]), i["dtype"], i.get("bound")) for i in data["inputs"])
        return cls(Program.from_dict(data["program"]), data["violation"], raw, inputs)

    def to_python(
        self, values: Sequence[np.ndarray] | None = None, *, check_compiler: bool = True, **options
    ) -> str:
        """A standalone snippet: reports whether NumPy rejects the program and asserts that
        ``compiler.jit`` does."""
        header = f"Invalid program ({self.violation}) built on {self.program.digest()[:12]}"
        return python_source(
            self.program,
            values,
            check_compiler=check_compiler,
            extra=self.node,
            inputs=self.inputs,
            header=header,
            rejects=self.errors,
            **options,
        )

    def __str__(self) -> str:
        text = str(self.program)
        if self.node is not None:
            text += f"\n  invalid: {render(self.node.op, self.node.args, self.node.attrs)}"
        changed = [
            f"x{i}: {a.dtype} (declared {b.dtype})"
            for i, (a, b) in enumerate(zip(self.inputs, self.program.inputs, strict=True))
            if a != b
        ]
        return text + "".join(f"\n  invalid input {c}" for c in changed) + f"\n  [{self.violation}]"


__all__ = ["UNSUPPORTED_DTYPES", "VIOLATIONS", "InvalidProgram", "Violation"]
