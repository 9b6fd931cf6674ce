func.func @f(%out: memref<4xf32>) {
  %cst = arith.constant dense<0.0> : vector<4xf32>
  %a = memref.alloc() : memref<4xf32>
  affine.for %i = 0 to 1 {
    vector.transfer_write %cst, %a[%i] : vector<4xf32>, memref<4xf32>
  }
  affine.for %i = 0 to 4 {
    %v = affine.load %a[%i] : memref<4xf32>
    affine.store %v, %out[%i] : memref<4xf32>
  }
  return
}
