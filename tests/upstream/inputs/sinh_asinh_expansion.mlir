// math.sinh and math.asinh of arguments where their textbook formulas cancel: out[i] =
// sinh(a[i]) for i < 2 and asinh(a[i]) for i >= 2, a = 1e-17, 0.5, -1e10, 1e-17 (float64).
module {
  func.func private @printMemrefF64(memref<*xf64>)
  func.func @kernel(%a: memref<4xf64>, %out: memref<4xf64>) {
    %c2 = arith.constant 2 : index
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                    iterator_types = ["parallel"]}
        ins(%a : memref<4xf64>) outs(%out : memref<4xf64>) {
    ^bb0(%x: f64, %o: f64):
      %i = linalg.index 0 : index
      %first = arith.cmpi ult, %i, %c2 : index
      %s = math.sinh %x : f64
      %t = math.asinh %x : f64
      %r = arith.select %first, %s, %t : f64
      linalg.yield %r : f64
    }
    return
  }
  func.func @main() {
    %a = memref.alloc() : memref<4xf64>
    %out = memref.alloc() : memref<4xf64>
    %v0 = arith.constant 1.0e-17 : f64
    %v1 = arith.constant 0.5 : f64
    %v2 = arith.constant -1.0e10 : f64
    %v3 = arith.constant 1.0e-17 : f64
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    memref.store %v0, %a[%c0] : memref<4xf64>
    memref.store %v1, %a[%c1] : memref<4xf64>
    memref.store %v2, %a[%c2] : memref<4xf64>
    memref.store %v3, %a[%c3] : memref<4xf64>
    func.call @kernel(%a, %out) : (memref<4xf64>, memref<4xf64>) -> ()
    %cast = memref.cast %out : memref<4xf64> to memref<*xf64>
    call @printMemrefF64(%cast) : (memref<*xf64>) -> ()
    memref.dealloc %a : memref<4xf64>
    memref.dealloc %out : memref<4xf64>
    return
  }
}
