"""What the harness tries: the program model and the Hypothesis strategies that draw programs.

``model`` holds the program model (build, check, save, hash, evaluate, print and rewrite programs;
invalid programs with one labelled violation); ``gen`` holds the strategies (shapes, values,
programs, invalid programs). This package reads the compiler's primitive table
(``compiler.primitives``) for the rules and metadata of every op, and nothing else of the
compiler; it never imports ``harness``.
"""

from .gen.invalid import invalid_programs
from .gen.programs import Sample, cast_pairs, op_dtype_pairs, programs, samples
from .gen.shapes import (
    MATMUL_KINDS,
    AttentionConfig,
    MatmulShapes,
    Reduction,
    attention_configs,
    broadcastable_shapes,
    dtypes,
    float_dtypes,
    matmul_shapes,
    mutually_broadcastable_shapes,
    permutations,
    reductions,
    reshapes,
    shapes,
    slices,
    valid_tuple_axes,
)
from .gen.state import generation_order
from .gen.values import REGIMES, elements, input_values, regimes, values
from .model import (
    DTYPES,
    FLOAT_DTYPES,
    FORMAT_VERSION,
    UNSUPPORTED_DTYPES,
    VIOLATIONS,
    Const,
    Equation,
    Input,
    InvalidIndex,
    InvalidProgram,
    Program,
    ProgramBuilder,
    RawEquation,
    Ref,
    Subject,
    TensorType,
    Violation,
)

__all__ = [
    "DTYPES",
    "FLOAT_DTYPES",
    "FORMAT_VERSION",
    "MATMUL_KINDS",
    "REGIMES",
    "UNSUPPORTED_DTYPES",
    "VIOLATIONS",
    "AttentionConfig",
    "Const",
    "Equation",
    "Input",
    "InvalidIndex",
    "InvalidProgram",
    "MatmulShapes",
    "Program",
    "ProgramBuilder",
    "RawEquation",
    "Reduction",
    "Ref",
    "Sample",
    "Subject",
    "TensorType",
    "Violation",
    "attention_configs",
    "broadcastable_shapes",
    "dtypes",
    "elements",
    "float_dtypes",
    "generation_order",
    "input_values",
    "invalid_programs",
    "matmul_shapes",
    "mutually_broadcastable_shapes",
    "permutations",
    "cast_pairs",
    "op_dtype_pairs",
    "programs",
    "reductions",
    "regimes",
    "reshapes",
    "samples",
    "shapes",
    "slices",
    "valid_tuple_axes",
    "values",
]
