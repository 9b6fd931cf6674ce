// out1 = sum(a), out2 = sum(b): two reductions share one filled init (as CSE leaves them), each
// materialized into its own output buffer. Right: [3, 30]. After eliminate-empty-tensors and
// one-shot-bufferize, out2 is copied from out1's buffer after out1 overwrote it: [3, 3].
module {
  memref.global "private" constant @a : memref<2xf32> = dense<[1.0, 2.0]>
  memref.global "private" constant @b : memref<2xf32> = dense<[10.0, 20.0]>
  func.func private @printMemrefF32(memref<*xf32>)
  func.func @kernel(%a: memref<2xf32>, %b: memref<2xf32>, %o1: memref<f32>, %o2: memref<f32>) {
    %zero = arith.constant 0.0 : f32
    %ta = bufferization.to_tensor %a restrict : memref<2xf32> to tensor<2xf32>
    %tb = bufferization.to_tensor %b restrict : memref<2xf32> to tensor<2xf32>
    %e = tensor.empty() : tensor<f32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %r1 = linalg.reduce ins(%ta : tensor<2xf32>) outs(%init : tensor<f32>) dimensions = [0]
      (%in: f32, %acc: f32) {
        %s = arith.addf %in, %acc : f32
        linalg.yield %s : f32
      }
    %r2 = linalg.reduce ins(%tb : tensor<2xf32>) outs(%init : tensor<f32>) dimensions = [0]
      (%in: f32, %acc: f32) {
        %s = arith.addf %in, %acc : f32
        linalg.yield %s : f32
      }
    bufferization.materialize_in_destination %r1 in restrict writable %o1 : (tensor<f32>, memref<f32>) -> ()
    bufferization.materialize_in_destination %r2 in restrict writable %o2 : (tensor<f32>, memref<f32>) -> ()
    return
  }
  func.func @main() {
    %a = memref.get_global @a : memref<2xf32>
    %b = memref.get_global @b : memref<2xf32>
    %out = memref.alloc() : memref<2xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %o1 = memref.subview %out[0] [1] [1] : memref<2xf32> to memref<f32, strided<[], offset: 0>>
    %o2 = memref.subview %out[1] [1] [1] : memref<2xf32> to memref<f32, strided<[], offset: 1>>
    %t1 = memref.alloc() : memref<f32>
    %t2 = memref.alloc() : memref<f32>
    call @kernel(%a, %b, %t1, %t2) : (memref<2xf32>, memref<2xf32>, memref<f32>, memref<f32>) -> ()
    memref.copy %t1, %o1 : memref<f32> to memref<f32, strided<[], offset: 0>>
    memref.copy %t2, %o2 : memref<f32> to memref<f32, strided<[], offset: 1>>
    %u = memref.cast %out : memref<2xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
}
