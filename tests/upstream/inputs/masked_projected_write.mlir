// A masked transfer_write whose permutation map skips a middle memref dim (d1, of size 1).
// convert-vector-to-scf (its TransferWriteNonPermutationLowering) appends the missing dim to the
// mask (vector<4x4x1xi1>) where the vector gets it in the middle (vector<4x1x4xf64>): invalid IR.
func.func @f(%v: vector<4x4xf64>, %m: memref<3x1x3xf64>, %mask: vector<4x4xi1>) {
  %c0 = arith.constant 0 : index
  vector.transfer_write %v, %m[%c0, %c0, %c0], %mask {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2) -> (d0, d2)>} : vector<4x4xf64>, memref<3x1x3xf64>
  return
}
