// out[i, 0] = in[i]: a rank-reducing tensor.insert_slice (what
// linalg-fold-unit-extent-dims{use-rank-reducing-slices=true} leaves behind for a 2x1 result).
module {
  memref.global "private" constant @init : memref<2xf64> = dense<[1.0, 2.0]>
  func.func private @printMemrefF64(memref<*xf64>)
  func.func @kernel(%in: memref<2xf64>, %out: memref<2x1xf64>) {
    %a = bufferization.to_tensor %in restrict : memref<2xf64> to tensor<2xf64>
    %e = tensor.empty() : tensor<2x1xf64>
    %r = tensor.insert_slice %a into %e[0, 0] [2, 1] [1, 1] : tensor<2xf64> into tensor<2x1xf64>
    bufferization.materialize_in_destination %r in restrict writable %out : (tensor<2x1xf64>, memref<2x1xf64>) -> ()
    return
  }
  func.func @main() {
    %in = memref.get_global @init : memref<2xf64>
    %out = memref.alloc() : memref<2x1xf64>
    %m1 = arith.constant -1.0 : f64
    linalg.fill ins(%m1 : f64) outs(%out : memref<2x1xf64>)
    call @kernel(%in, %out) : (memref<2xf64>, memref<2x1xf64>) -> ()
    %u = memref.cast %out : memref<2x1xf64> to memref<*xf64>
    call @printMemrefF64(%u) : (memref<*xf64>) -> ()
    return
  }
}
