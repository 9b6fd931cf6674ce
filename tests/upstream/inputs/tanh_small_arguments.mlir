// math.tanh of small arguments, where tanh(x) is x to within an ulp: out[i] = tanh(a[i]) for
// a = 0.5, 1e-3, 1e-300, 2.2250738585072014e-308 (the least normal float64).
module {
  func.func private @printMemrefF64(memref<*xf64>)
  func.func @kernel(%a: memref<4xf64>, %out: memref<4xf64>) {
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                    iterator_types = ["parallel"]}
        ins(%a : memref<4xf64>) outs(%out : memref<4xf64>) {
    ^bb0(%x: f64, %o: f64):
      %t = math.tanh %x : f64
      linalg.yield %t : f64
    }
    return
  }
  func.func @main() {
    %a = memref.alloc() : memref<4xf64>
    %out = memref.alloc() : memref<4xf64>
    %v0 = arith.constant 0.5 : f64
    %v1 = arith.constant 1.0e-3 : f64
    %v2 = arith.constant 1.0e-300 : f64
    %v3 = arith.constant 2.2250738585072014e-308 : f64
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
