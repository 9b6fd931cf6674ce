func.func @f(%v: vector<2x3xi32>) -> vector<2x3xi32> {
  %a = math.absi %v : vector<2x3xi32>
  return %a : vector<2x3xi32>
}
