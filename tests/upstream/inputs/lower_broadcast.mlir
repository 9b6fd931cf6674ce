func.func @f(%v: vector<2xf64>) -> vector<1x1x2xf64> {
  %0 = vector.broadcast %v : vector<2xf64> to vector<1x1x2xf64>
  return %0 : vector<1x1x2xf64>
}
