// A vector.gather from a memref whose innermost stride is 2 (a slice x[..., 1:12:2] after
// bufferization): convert-vector-to-llvm leaves it unconverted.
func.func @gather(%base: memref<2x1x6xf64, strided<[12, 12, 2], offset: 1>>, %ids: vector<4xindex>,
                  %mask: vector<4xi1>, %pass: vector<4xf64>) -> vector<4xf64> {
  %c0 = arith.constant 0 : index
  %r = vector.gather %base[%c0, %c0, %c0][%ids], %mask, %pass
      : memref<2x1x6xf64, strided<[12, 12, 2], offset: 1>>, vector<4xindex>, vector<4xi1>, vector<4xf64> into vector<4xf64>
  return %r : vector<4xf64>
}
