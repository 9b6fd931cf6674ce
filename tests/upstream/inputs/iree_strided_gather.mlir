func.func @main(%arg0: tensor<3xf32>, %arg1: tensor<2xi32>) -> tensor<2xf32> {
  %sl = tensor.extract_slice %arg0[0][2][2] : tensor<3xf32> to tensor<2xf32>
  %e = tensor.empty() : tensor<2xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%arg1 : tensor<2xi32>) outs(%e : tensor<2xf32>) {
  ^bb0(%a: i32, %out: f32):
    %i = arith.index_cast %a : i32 to index
    %v = tensor.extract %sl[%i] : tensor<2xf32>
    linalg.yield %v : f32
  } -> tensor<2xf32>
  return %g : tensor<2xf32>
}
