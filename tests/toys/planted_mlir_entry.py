"""A deliberately broken ``mlir:`` catalog entry, registered the way a plugin extends the catalog:
``planted-constants`` is a transform script that sets every f32/f64 scalar ``arith.constant`` to
1.0 (``transform.annotate``), so reduction and matmul initial values go wrong.
``tests/harness/test_mlir_variants_session.py`` loads it through ``HARNESS_PLUGINS`` and expects
a session to find it, attribute it to this entry's stage and minimize the variant to it."""

from __future__ import annotations

from compiler import mlir_variants

PLANTED = "planted-constants"

LIBRARY = """\
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %c32 = transform.structured.match ops{["arith.constant"]} filter_result_type = f32 in %root : (!transform.any_op) -> !transform.any_op
    %p32 = transform.param.constant 1.0 : f32 -> !transform.any_param
    transform.annotate %c32 "value" = %p32 : !transform.any_op, !transform.any_param
    %c64 = transform.structured.match ops{["arith.constant"]} filter_result_type = f64 in %root : (!transform.any_op) -> !transform.any_op
    %p64 = transform.param.constant 1.0 : f64 -> !transform.any_param
    transform.annotate %c64 "value" = %p64 : !transform.any_op, !transform.any_param
    transform.yield
  }
}
"""  # noqa: E501 - transform IR, one op per line


def library(text: str, entry: str) -> str:
    return LIBRARY


if PLANTED not in mlir_variants.CATALOG:
    mlir_variants.register(
        mlir_variants.Entry(
            PLANTED,
            "tensor",
            script=library,
            requires=("linalg.fill",),
            note="planted bug: every float scalar constant becomes 1.0",
        )
    )
