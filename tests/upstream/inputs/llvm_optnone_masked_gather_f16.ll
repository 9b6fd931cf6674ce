; A masked gather of 16 halves in an optnone function: llc -O1..-O3 with AVX2 asserts in APInt
; ("Value is not an N-bit unsigned value"); -O0, or the function without optnone, compiles.
define <16 x half> @kernel(<16 x i1> %0) #0 {
  %2 = call <16 x half> @llvm.masked.gather.v16f16.v16p0(<16 x ptr> zeroinitializer, <16 x i1> %0, <16 x half> zeroinitializer)
  ret <16 x half> %2
}
declare <16 x half> @llvm.masked.gather.v16f16.v16p0(<16 x ptr>, <16 x i1>, <16 x half>)
attributes #0 = { noinline optnone }
