#map = affine_map<(d0) -> (-d0)>
#map1 = affine_map<(d0) -> (d0)>
module {
  func.func @kernel(%arg0: tensor<1xf64>, %arg1: tensor<1xf64>) {
    %0 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel"]} ins(%arg0 : tensor<1xf64>) outs(%arg1 : tensor<1xf64>) {
    ^bb0(%in: f64, %out: f64):
      linalg.yield %in : f64
    } -> tensor<1xf64>
    return
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%arg0: !transform.any_op) {
      %0 = transform.structured.match interface{LinalgOp} in %arg0 : (!transform.any_op) -> !transform.any_op
      %1 = transform.split_handle %0 : (!transform.any_op) -> !transform.any_op
      %transformed, %loops = transform.structured.fuse %1 tile_sizes [3] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
      transform.yield 
    }
  }
}
