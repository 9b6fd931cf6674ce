// out[i, 0] = x[ids[i], 2] for x = [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and ids = [0, 1, 2]: a
// gather from the column slice x[:, 2:3] (rows 3 apart), as this project emits a gather.
module {
  memref.global "private" constant @x : memref<3x3xf32> = dense<[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]>
  memref.global "private" constant @ids : memref<3xi32> = dense<[0, 1, 2]>
  func.func private @printMemrefF32(memref<*xf32>)
  func.func @kernel(%xm: memref<3x3xf32>, %im: memref<3xi32>, %out: memref<3x1xf32>) {
    %x = bufferization.to_tensor %xm restrict : memref<3x3xf32> to tensor<3x3xf32>
    %ids = bufferization.to_tensor %im restrict : memref<3xi32> to tensor<3xi32>
    %col = tensor.extract_slice %x[0, 2] [3, 1] [1, 1] : tensor<3x3xf32> to tensor<3x1xf32>
    %e = tensor.empty() : tensor<3x1xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<3xi32>) outs(%e : tensor<3x1xf32>) {
    ^bb0(%id: i32, %o: f32):
      %row = arith.index_cast %id : i32 to index
      %j = linalg.index 1 : index
      %v = tensor.extract %col[%row, %j] : tensor<3x1xf32>
      linalg.yield %v : f32
    } -> tensor<3x1xf32>
    bufferization.materialize_in_destination %g in restrict writable %out : (tensor<3x1xf32>, memref<3x1xf32>) -> ()
    return
  }
  func.func @main() {
    %x = memref.get_global @x : memref<3x3xf32>
    %ids = memref.get_global @ids : memref<3xi32>
    %out = memref.alloc() : memref<3x1xf32>
    call @kernel(%x, %ids, %out) : (memref<3x3xf32>, memref<3xi32>, memref<3x1xf32>) -> ()
    %u = memref.cast %out : memref<3x1xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
}
