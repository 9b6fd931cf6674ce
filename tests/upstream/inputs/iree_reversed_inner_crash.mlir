func.func @main(%x: tensor<2x6xf32>, %y: tensor<2x1xf32>) -> tensor<2x6xf32> {
  %e = tensor.empty() : tensor<2x6xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, 5 - d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<2x6xf32>, tensor<2x1xf32>) outs(%e : tensor<2x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.addf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<2x6xf32>
  return %r : tensor<2x6xf32>
}
