// Row maxima of a 2x3x3 f64 buffer: out[i, j] = max_k in[i, j, k].
module {
  func.func private @printMemrefF64(memref<*xf64>)
  func.func @kernel(%in: memref<2x3x3xf64>, %out: memref<2x3xf64>) {
    %ninf = arith.constant 0xFFF0000000000000 : f64
    linalg.fill ins(%ninf : f64) outs(%out : memref<2x3xf64>)
    linalg.reduce ins(%in : memref<2x3x3xf64>) outs(%out : memref<2x3xf64>) dimensions = [2]
      (%x: f64, %acc: f64) {
        %m = arith.maximumf %x, %acc : f64
        linalg.yield %m : f64
      }
    return
  }
  func.func @main() {
    %in = memref.alloc() : memref<2x3x3xf64>
    %out = memref.alloc() : memref<2x3xf64>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    // in[i, j, k] = i*9 + j*3 + k - 8  (so the maxima are -6, -3, 0, 3, 6, 9)
    scf.for %i = %c0 to %c2 step %c1 {
      scf.for %j = %c0 to %c3 step %c1 {
        scf.for %k = %c0 to %c3 step %c1 {
          %a = arith.muli %i, %c3 : index
          %b = arith.addi %a, %j : index
          %c = arith.muli %b, %c3 : index
          %d = arith.addi %c, %k : index
          %e = arith.index_cast %d : index to i64
          %f = arith.sitofp %e : i64 to f64
          %eight = arith.constant 8.0 : f64
          %g = arith.subf %f, %eight : f64
          memref.store %g, %in[%i, %j, %k] : memref<2x3x3xf64>
        }
      }
    }
    call @kernel(%in, %out) : (memref<2x3x3xf64>, memref<2x3xf64>) -> ()
    %u = memref.cast %out : memref<2x3xf64> to memref<*xf64>
    call @printMemrefF64(%u) : (memref<*xf64>) -> ()
    return
  }
}
