// out[i] = in[i] for i = 0, 2, 4, 6 (a loop of step 2); the other elements stay 0:
// want [1, 0, 3, 0, 5, 0, 7, 0].
module {
  func.func private @printMemrefF32(memref<*xf32>)
  func.func @kernel(%in: memref<8xf32>, %out: memref<8xf32>) {
    affine.for %i = 0 to 8 step 2 {
      %v = affine.load %in[%i] : memref<8xf32>
      affine.store %v, %out[%i] : memref<8xf32>
    }
    return
  }
  func.func @main() {
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %in = memref.alloc() : memref<8xf32>
    %out = memref.alloc() : memref<8xf32>
    affine.for %i = 0 to 8 {
      %c = arith.index_cast %i : index to i32
      %f = arith.sitofp %c : i32 to f32
      %v = arith.addf %f, %one : f32
      affine.store %v, %in[%i] : memref<8xf32>
      affine.store %zero, %out[%i] : memref<8xf32>
    }
    call @kernel(%in, %out) : (memref<8xf32>, memref<8xf32>) -> ()
    %u = memref.cast %out : memref<8xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
}
