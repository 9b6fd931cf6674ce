module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.lower_broadcast
      transform.apply_patterns.canonicalization
    } {max_iterations = 3, max_num_rewrites = 100} : !transform.any_op
    transform.yield
  }
}
