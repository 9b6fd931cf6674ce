; A masked store of lane 0 only of a truncated <4 x i32>: it writes one i16, 2 bytes.
; The loop vectorizer's folded tail of the rounding loop of gpu-emulated's bfloat16 mean, once
; the 9-trip loop is unrolled (its mask is then constant).
define void @store_first_lane(<4 x i32> %v, ptr %p) {
  %t = trunc <4 x i32> %v to <4 x i16>
  call void @llvm.masked.store.v4i16.p0(<4 x i16> %t, ptr align 2 %p, <4 x i1> <i1 true, i1 false, i1 false, i1 false>)
  ret void
}

declare void @llvm.masked.store.v4i16.p0(<4 x i16>, ptr, <4 x i1>)
