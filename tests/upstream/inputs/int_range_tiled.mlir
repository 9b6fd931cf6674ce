func.func @f(%m: memref<3xf64>, %x: f64) {
  affine.for %i = 0 to 3 step 2 {
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to min affine_map<(d0) -> (d0 + 2, 3)>(%i) {
      affine.store %x, %m[%j] : memref<3xf64>
    }
  }
  return
}
