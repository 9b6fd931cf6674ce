// A gather of rank 0: one id picks a row of a 2x1x1 table. Vectorized with vectorize_nd_extract,
// the tensor.extract of a 0-d linalg.generic is classified as a gather (its result is no 1-D
// vector), which builds a vector.gather with a scalar index operand:
// "'vector.gather' op operand #4 must be vector of integer or index values, but got 'index'".
#map = affine_map<() -> ()>
func.func @gather(%table: tensor<2x1x1xf32>, %ids: tensor<i32>) -> tensor<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tensor.empty() : tensor<f32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = []}
      ins(%ids : tensor<i32>) outs(%e : tensor<f32>) {
  ^bb0(%id: i32, %out: f32):
    %i = arith.index_cast %id : i32 to index
    %low = arith.maxsi %i, %c0 : index
    %row = arith.minsi %low, %c1 : index
    %x = tensor.extract %table[%row, %c0, %c0] : tensor<2x1x1xf32>
    linalg.yield %x : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
