func.func @f(%in: memref<6xf32>, %out: memref<6xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  scf.for %i = %c0 to %c6 step %c4 {
    %n = affine.min affine_map<(d0) -> (4, -d0 + 6)>(%i)
    %a = memref.subview %in[%i] [%n] [1] : memref<6xf32> to memref<?xf32, strided<[1], offset: ?>>
    %b = memref.subview %out[%i] [%n] [1] : memref<6xf32> to memref<?xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a : memref<?xf32, strided<[1], offset: ?>>) outs(%b : memref<?xf32, strided<[1], offset: ?>>) {
    ^bb0(%x: f32, %y: f32):
      %z = arith.negf %x : f32
      linalg.yield %z : f32
    }
  }
  return
}
