; A bfloat16 extension of 4 lanes in an optnone function: llc -O1..-O3 with AVX2 asserts in
; APInt ("Value is not an N-bit unsigned value"); -O0, or the function without optnone, compiles.
define <4 x i32> @kernel(<4 x i32> %0) #0 {
  %2 = trunc <4 x i32> %0 to <4 x i16>
  %3 = bitcast <4 x i16> %2 to <4 x bfloat>
  %4 = fpext <4 x bfloat> %3 to <4 x float>
  %5 = bitcast <4 x float> %4 to <4 x i32>
  %6 = lshr <4 x i32> %5, splat (i32 16)
  ret <4 x i32> %6
}
attributes #0 = { noinline optnone }
