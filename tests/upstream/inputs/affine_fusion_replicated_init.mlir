// out = x0 @ x1 of a (1, 1) x0 = [[5]] and a (1, 2) x1 = [[7, 5]]: want [35, 25]. The fill of
// the accumulator, unrolled (a store per cell), is fused into the consumer's column loop,
// where it zeroes both cells on every iteration: column 0 is zeroed again after it was computed.
module {
  func.func private @printMemrefF32(memref<*xf32>)
  func.func @kernel(%x0: memref<1x1xf32>, %x1: memref<1x2xf32>, %out: memref<1x2xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %acc = memref.alloc() : memref<1x2xf32>
    affine.for %i = 0 to 1 {
      affine.store %zero, %acc[%i, 0] : memref<1x2xf32>
      affine.store %zero, %acc[%i, 1] : memref<1x2xf32>
    }
    affine.for %i = 0 to 1 {
      affine.for %j = 0 to 2 {
        affine.for %k = 0 to 1 {
          %a = affine.load %x0[%i, %k] : memref<1x1xf32>
          %b = affine.load %x1[%k, %j] : memref<1x2xf32>
          %s = affine.load %acc[%i, %j] : memref<1x2xf32>
          %p = arith.mulf %a, %b : f32
          %t = arith.addf %s, %p : f32
          affine.store %t, %acc[%i, %j] : memref<1x2xf32>
        }
      }
    }
    affine.for %i = 0 to 1 {
      %u = affine.load %acc[%i, 0] : memref<1x2xf32>
      affine.store %u, %out[%i, 0] : memref<1x2xf32>
      %v = affine.load %acc[%i, 1] : memref<1x2xf32>
      affine.store %v, %out[%i, 1] : memref<1x2xf32>
    }
    memref.dealloc %acc : memref<1x2xf32>
    return
  }
  func.func @main() {
    %five = arith.constant 5.0 : f32
    %seven = arith.constant 7.0 : f32
    %x0 = memref.alloc() : memref<1x1xf32>
    %x1 = memref.alloc() : memref<1x2xf32>
    %out = memref.alloc() : memref<1x2xf32>
    affine.store %five, %x0[0, 0] : memref<1x1xf32>
    affine.store %seven, %x1[0, 0] : memref<1x2xf32>
    affine.store %five, %x1[0, 1] : memref<1x2xf32>
    call @kernel(%x0, %x1, %out) : (memref<1x1xf32>, memref<1x2xf32>, memref<1x2xf32>) -> ()
    %u = memref.cast %out : memref<1x2xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
}
