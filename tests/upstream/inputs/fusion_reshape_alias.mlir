// out[i, j] = in[i, j] - sum_j in[i, :]   (the reduction result is read back through a
// memref.reshape of its buffer, as one-shot-bufferize produces for tensor.reshape)
module {
  memref.global "private" constant @shape : memref<2xindex> = dense<[2, 1]>
  func.func private @printMemrefF32(memref<*xf32>)
  func.func @kernel(%in: memref<2x3xf32>, %out: memref<2x3xf32>) {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %acc = memref.alloc() : memref<2xf32>
    affine.for %i = 0 to 2 {
      affine.store %zero, %acc[%i] : memref<2xf32>
    }
    affine.for %i = 0 to 2 {
      affine.for %j = 0 to 3 {
        %x = affine.load %in[%i, %j] : memref<2x3xf32>
        %a = affine.load %acc[%i] : memref<2xf32>
        %s = arith.addf %x, %a : f32
        affine.store %s, %acc[%i] : memref<2xf32>
      }
    }
    %shape = memref.get_global @shape : memref<2xindex>
    %r = memref.reshape %acc(%shape) : (memref<2xf32>, memref<2xindex>) -> memref<2x1xf32>
    affine.for %i = 0 to 2 {
      affine.for %j = 0 to 3 {
        %x = affine.load %in[%i, %j] : memref<2x3xf32>
        %t = affine.load %r[%i, %c0] : memref<2x1xf32>
        %d = arith.subf %x, %t : f32
        affine.store %d, %out[%i, %j] : memref<2x3xf32>
      }
    }
    memref.dealloc %acc : memref<2xf32>
    return
  }
  func.func @main() {
    %one = arith.constant 1.0 : f32
    %in = memref.alloc() : memref<2x3xf32>
    %out = memref.alloc() : memref<2x3xf32>
    affine.for %i = 0 to 2 {
      affine.for %j = 0 to 3 {
        affine.store %one, %in[%i, %j] : memref<2x3xf32>
      }
    }
    call @kernel(%in, %out) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
    %u = memref.cast %out : memref<2x3xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
}
