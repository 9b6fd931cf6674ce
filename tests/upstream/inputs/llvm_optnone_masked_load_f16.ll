; A masked load of 8 halves in an optnone function: llc -O1..-O3 with AVX2 asserts in APInt
; ("Value is not an N-bit unsigned value"); -O0, or the function without optnone, compiles.
define <8 x half> @kernel(ptr %0, <8 x i1> %1) #0 {
  %3 = call <8 x half> @llvm.masked.load.v8f16.p0(ptr %0, <8 x i1> %1, <8 x half> zeroinitializer)
  ret <8 x half> %3
}
declare <8 x half> @llvm.masked.load.v8f16.p0(ptr, <8 x i1>, <8 x half>)
attributes #0 = { noinline optnone }
