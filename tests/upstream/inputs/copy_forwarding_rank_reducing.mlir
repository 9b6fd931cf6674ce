func.func @f(%arg0: memref<2x2xf64>) -> vector<1x1x2x2xf64> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f64
  %alloc = memref.alloc() : memref<1x1x2x2xf64>
  %sub = memref.subview %alloc[0, 0, 0, 0] [1, 1, 2, 2] [1, 1, 1, 1] : memref<1x1x2x2xf64> to memref<2x2xf64, strided<[2, 1]>>
  memref.copy %arg0, %sub : memref<2x2xf64> to memref<2x2xf64, strided<[2, 1]>>
  %r = vector.transfer_read %alloc[%c0, %c0, %c0, %c0], %pad {in_bounds = [true, true, true, true]} : memref<1x1x2x2xf64>, vector<1x1x2x2xf64>
  return %r : vector<1x1x2x2xf64>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    %v = transform.structured.vectorize_children_and_apply_patterns %f : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
