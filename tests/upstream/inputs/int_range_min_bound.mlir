func.func @f(%m: memref<3xf64>, %x: f64, %n: index) {
  affine.for %j = 0 to min affine_map<()[s0] -> (s0, 3)>()[%n] {
    affine.store %x, %m[%j] : memref<3xf64>
  }
  return
}
