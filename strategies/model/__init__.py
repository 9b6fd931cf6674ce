"""The program model: what the harness generates, stores, evaluates, prints and minimizes.

``types`` (plain data), ``program`` (checked construction, queries, JSON), ``codec`` (attribute
kinds, canonical JSON and hashes), ``evaluate`` (one definition over any array namespace),
``printing`` (listings and reproducers), ``rewrites`` (for minimizers), ``invalid`` (programs with
one labelled violation). Ops, their metadata and evaluation rules come from the compiler's primitive
table and nothing else of the compiler; result types are NumPy's own.
"""

from compiler.primitives import InvalidIndex

from .codec import FORMAT, FORMAT_VERSION, canonical, digest
from .invalid import UNSUPPORTED_DTYPES, VIOLATIONS, InvalidProgram, Violation
from .program import REJECTIONS, Program, ProgramBuilder, normalize_attrs, primitive
from .types import (
    BOOL,
    DTYPES,
    FLOAT_DTYPES,
    LOW_PRECISION_DTYPES,
    Arg,
    Const,
    Equation,
    Input,
    RawEquation,
    Ref,
    TensorType,
    dtype_name,
    finfo,
    is_float,
    is_low_precision,
    takes_a_dim,
)

Subject = Program | InvalidProgram

__all__ = [
    "BOOL",
    "DTYPES",
    "FLOAT_DTYPES",
    "FORMAT",
    "FORMAT_VERSION",
    "LOW_PRECISION_DTYPES",
    "REJECTIONS",
    "UNSUPPORTED_DTYPES",
    "VIOLATIONS",
    "Arg",
    "Const",
    "Equation",
    "Input",
    "InvalidIndex",
    "InvalidProgram",
    "Program",
    "ProgramBuilder",
    "RawEquation",
    "Ref",
    "Subject",
    "TensorType",
    "Violation",
    "canonical",
    "digest",
    "dtype_name",
    "finfo",
    "is_float",
    "is_low_precision",
    "normalize_attrs",
    "primitive",
    "takes_a_dim",
]
