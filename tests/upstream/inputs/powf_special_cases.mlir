// math.powf where C's pow (and llvm.pow, which convert-math-to-llvm emits) has special cases:
// out[i] = a[i] ** b[i] for (0, 0), (nan, 0), (inf, 0), (1, nan), (1, inf), (1, -inf), (-0, 3),
// (2, 3); pow gives 1, 1, 1, 1, 1, 1, -0, 8.
module {
  func.func private @printMemrefF64(memref<*xf64>)
  func.func @kernel(%a: memref<8xf64>, %b: memref<8xf64>, %out: memref<8xf64>) {
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                                     affine_map<(d0) -> (d0)>],
                    iterator_types = ["parallel"]}
        ins(%a, %b : memref<8xf64>, memref<8xf64>) outs(%out : memref<8xf64>) {
    ^bb0(%x: f64, %y: f64, %o: f64):
      %p = math.powf %x, %y : f64
      linalg.yield %p : f64
    }
    return
  }
  func.func @main() {
    %a = memref.alloc() : memref<8xf64>
    %b = memref.alloc() : memref<8xf64>
    %out = memref.alloc() : memref<8xf64>
    %zero = arith.constant 0.0 : f64
    %nzero = arith.constant -0.0 : f64
    %one = arith.constant 1.0 : f64
    %two = arith.constant 2.0 : f64
    %three = arith.constant 3.0 : f64
    %nan = arith.constant 0x7FF8000000000000 : f64
    %inf = arith.constant 0x7FF0000000000000 : f64
    %ninf = arith.constant 0xFFF0000000000000 : f64
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    memref.store %zero, %a[%c0] : memref<8xf64>
    memref.store %zero, %b[%c0] : memref<8xf64>
    memref.store %nan, %a[%c1] : memref<8xf64>
    memref.store %zero, %b[%c1] : memref<8xf64>
    memref.store %inf, %a[%c2] : memref<8xf64>
    memref.store %zero, %b[%c2] : memref<8xf64>
    memref.store %one, %a[%c3] : memref<8xf64>
    memref.store %nan, %b[%c3] : memref<8xf64>
    memref.store %one, %a[%c4] : memref<8xf64>
    memref.store %inf, %b[%c4] : memref<8xf64>
    memref.store %one, %a[%c5] : memref<8xf64>
    memref.store %ninf, %b[%c5] : memref<8xf64>
    memref.store %nzero, %a[%c6] : memref<8xf64>
    memref.store %three, %b[%c6] : memref<8xf64>
    memref.store %two, %a[%c7] : memref<8xf64>
    memref.store %three, %b[%c7] : memref<8xf64>
    call @kernel(%a, %b, %out) : (memref<8xf64>, memref<8xf64>, memref<8xf64>) -> ()
    %u = memref.cast %out : memref<8xf64> to memref<*xf64>
    call @printMemrefF64(%u) : (memref<*xf64>) -> ()
    return
  }
}
