func.func @main(%a: tensor<2xi8>) -> tensor<1xf32> {
  %e = tensor.empty() : tensor<1x2xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<2xi8>) outs(%e : tensor<1x2xf32>) {
  ^bb0(%x: i8, %out: f32):
    %f = arith.uitofp %x : i8 to f32
    linalg.yield %f : f32
  } -> tensor<1x2xf32>
  %sl = tensor.extract_slice %g[0, 1][1, 1][1, 4] : tensor<1x2xf32> to tensor<1x1xf32>
  %shape = arith.constant dense<[1]> : tensor<1xindex>
  %r = tensor.reshape %sl(%shape) : (tensor<1x1xf32>, tensor<1xindex>) -> tensor<1xf32>
  return %r : tensor<1xf32>
}
