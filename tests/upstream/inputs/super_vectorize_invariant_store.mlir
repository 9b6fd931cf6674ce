// A sum reduction into a rank-0 buffer, as convert-linalg-to-affine-loops emits it for
// linalg.reduce into a memref<f32>. Valid IR; affine-super-vectorize turns the
// loop-invariant store into a vector.transfer_write that does not verify.
func.func @sum(%in: memref<1xf32>, %acc: memref<f32>) {
  affine.for %i = 0 to 1 {
    %x = affine.load %in[%i] : memref<1xf32>
    %a = affine.load %acc[] : memref<f32>
    %s = arith.addf %x, %a : f32
    affine.store %s, %acc[] : memref<f32>
  }
  return
}
