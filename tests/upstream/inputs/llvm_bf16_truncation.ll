; float32 -> bfloat16, the plain conversion of LangRef's default FP environment (subnormals kept).
define bfloat @narrow(float %x) {
  %y = fptrunc float %x to bfloat
  ret bfloat %y
}
