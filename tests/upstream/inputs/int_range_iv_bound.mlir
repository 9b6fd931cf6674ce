func.func @f(%m: memref<8xf64>, %x: f64) {
  affine.for %i = 0 to 8 step 2 {
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to affine_map<(d0) -> (d0 + 2)>(%i) {
      affine.store %x, %m[%j] : memref<8xf64>
    }
  }
  return
}
