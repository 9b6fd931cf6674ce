// out = x1 * sum(x0) with x0 = [3] and x1 = ones(1x1): want [3].
// The reduction (a loop that reads and writes %acc every iteration) is fused into the
// consumer nest: it must run exactly once.
module {
  func.func private @printMemrefF32(memref<*xf32>)
  func.func @kernel(%x0: memref<1xf32>, %x1: memref<1x1xf32>, %out: memref<1x1xf32>) {
    %zero = arith.constant 0.0 : f32
    %acc = memref.alloc() : memref<f32>
    affine.store %zero, %acc[] : memref<f32>
    affine.for %k = 0 to 1 {
      %x = affine.load %x0[%k] : memref<1xf32>
      %a = affine.load %acc[] : memref<f32>
      %s = arith.addf %x, %a : f32
      affine.store %s, %acc[] : memref<f32>
    }
    affine.for %i = 0 to 1 {
      affine.for %j = 0 to 1 {
        %y = affine.load %x1[%i, %j] : memref<1x1xf32>
        %t = affine.load %acc[] : memref<f32>
        %p = arith.mulf %y, %t : f32
        affine.store %p, %out[%i, %j] : memref<1x1xf32>
      }
    }
    memref.dealloc %acc : memref<f32>
    return
  }
  func.func @main() {
    %one = arith.constant 1.0 : f32
    %three = arith.constant 3.0 : f32
    %x0 = memref.alloc() : memref<1xf32>
    %x1 = memref.alloc() : memref<1x1xf32>
    %out = memref.alloc() : memref<1x1xf32>
    affine.store %three, %x0[0] : memref<1xf32>
    affine.for %i = 0 to 1 {
      affine.store %one, %x1[%i, 0] : memref<1x1xf32>
    }
    call @kernel(%x0, %x1, %out) : (memref<1xf32>, memref<1x1xf32>, memref<1x1xf32>) -> ()
    %u = memref.cast %out : memref<1x1xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
}
