// A gather: row ids of rank 2 pick rows of a 1x3 table. Vectorized with masking (the innermost
// extent 3 padded to 4) and vectorize_nd_extract, the tensor.extract becomes a contiguous
// vector.transfer_read of rank 2 (the leading loop dim broadcast), masked with the loop rank's
// vector<1x1x4xi1>: "'vector.mask' op expects a 'vector<1x4xi1>' mask".
#ids = affine_map<(d0, d1, d2) -> (d0, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @gather(%table: tensor<1x3xf32>, %ids: tensor<1x1xindex>) -> tensor<1x1x3xf32> {
  %e = tensor.empty() : tensor<1x1x3xf32>
  %r = linalg.generic {indexing_maps = [#ids, #out], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<1x1xindex>) outs(%e : tensor<1x1x3xf32>) {
  ^bb0(%row: index, %out: f32):
    %col = linalg.index 2 : index
    %x = tensor.extract %table[%row, %col] : tensor<1x3xf32>
    linalg.yield %x : f32
  } -> tensor<1x1x3xf32>
  return %r : tensor<1x1x3xf32>
}
