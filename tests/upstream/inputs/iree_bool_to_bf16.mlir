func.func @main(%a: tensor<2xi8>) -> tensor<2xbf16> {
  %e = tensor.empty() : tensor<2xbf16>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<2xi8>) outs(%e : tensor<2xbf16>) {
  ^bb0(%x: i8, %out: bf16):
    %b = arith.trunci %x : i8 to i1
    %w = arith.uitofp %b : i1 to f32
    %f = arith.truncf %w : f32 to bf16
    linalg.yield %f : bf16
  } -> tensor<2xbf16>
  return %g : tensor<2xbf16>
}
