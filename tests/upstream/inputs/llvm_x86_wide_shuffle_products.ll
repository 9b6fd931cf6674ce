; X86 code generation for AVX2 CPUs (x86-64-v3, haswell, skylake-avx512, x86-64-v4; not znver4, nor
; SSE-only ones) miscompiles @kernel: lanes of one <24 x float> load spread by shuffles into
; <4 x float> products (reduced by llvm-reduce from the LLVM SLP vectorizer's output for
; gpu-emulated's float32 x @ y.T of two (4, 6) arrays). The LLVM interpreter
; (lli -force-interpreter) prints x @ x.T of x = arange(24).reshape(4, 6):
;   55 145 235 325 145 451 757 1063 235 757 1279 1801 325 1063 1801 2539
; lli -O0 -mcpu=x86-64-v3 prints 231 for 235, 321 for 325, 705 for 757 ...
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@a = global [24 x float] [float 0.000000e+00, float 1.000000e+00, float 2.000000e+00, float 3.000000e+00, float 4.000000e+00, float 5.000000e+00, float 6.000000e+00, float 7.000000e+00, float 8.000000e+00, float 9.000000e+00, float 1.000000e+01, float 1.100000e+01, float 1.200000e+01, float 1.300000e+01, float 1.400000e+01, float 1.500000e+01, float 1.600000e+01, float 1.700000e+01, float 1.800000e+01, float 1.900000e+01, float 2.000000e+01, float 2.100000e+01, float 2.200000e+01, float 2.300000e+01]
@out = global [16 x float] zeroinitializer
@pa = global ptr @a
@po = global ptr @out
@fmt = constant [4 x i8] c"%g \00"

define void @kernel(ptr %0, ptr %1) {
.preheader12:
  %2 = load <24 x float>, ptr %0, align 4
  %broadcast.splat48 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 2, i32 2, i32 2, i32 2>
  %strided.vec65 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 0, i32 6, i32 12, i32 18>
  %broadcast.splat56 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 6, i32 6, i32 6, i32 6>
  %3 = fmul <4 x float> %strided.vec65, %broadcast.splat56
  %strided.vec66 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 1, i32 7, i32 13, i32 19>
  %broadcast.splat58 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 7, i32 7, i32 7, i32 7>
  %4 = fmul <4 x float> %strided.vec66, %broadcast.splat58
  %5 = fadd <4 x float> %3, %4
  %strided.vec67 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 2, i32 8, i32 14, i32 20>
  %broadcast.splat60 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 8, i32 8, i32 8, i32 8>
  %6 = fmul <4 x float> %strided.vec67, %broadcast.splat60
  %7 = fadd <4 x float> %5, %6
  %strided.vec68 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 3, i32 9, i32 15, i32 21>
  %broadcast.splat26 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 9, i32 9, i32 9, i32 9>
  %8 = fmul <4 x float> %strided.vec68, %broadcast.splat26
  %9 = fadd <4 x float> %7, %8
  %strided.vec69 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 4, i32 10, i32 16, i32 22>
  %broadcast.splat32 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 10, i32 10, i32 10, i32 10>
  %10 = fmul <4 x float> %strided.vec69, %broadcast.splat32
  %broadcast.splat38 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 11, i32 11, i32 11, i32 11>
  %broadcast.splat = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 12, i32 12, i32 12, i32 12>
  %11 = fmul <4 x float> %strided.vec65, %broadcast.splat
  %broadcast.splat18 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 13, i32 13, i32 13, i32 13>
  %12 = fmul <4 x float> %strided.vec66, %broadcast.splat18
  %13 = fadd <4 x float> %11, %12
  %broadcast.splat22 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 14, i32 14, i32 14, i32 14>
  %14 = fmul <4 x float> %strided.vec67, %broadcast.splat22
  %15 = fadd <4 x float> %13, %14
  %broadcast.splat28 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 15, i32 15, i32 15, i32 15>
  %16 = fmul <4 x float> %strided.vec68, %broadcast.splat28
  %17 = fadd <4 x float> %15, %16
  %broadcast.splat34 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 16, i32 16, i32 16, i32 16>
  %18 = fmul <4 x float> %strided.vec69, %broadcast.splat34
  %19 = fadd <4 x float> %17, %18
  %strided.vec70 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 5, i32 11, i32 17, i32 23>
  %broadcast.splat40 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 17, i32 17, i32 17, i32 17>
  %20 = fmul <4 x float> %strided.vec70, %broadcast.splat40
  %broadcast.splat16 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 18, i32 18, i32 18, i32 18>
  %21 = fmul <4 x float> %strided.vec65, %broadcast.splat16
  %broadcast.splat20 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 19, i32 19, i32 19, i32 19>
  %22 = fmul <4 x float> %strided.vec66, %broadcast.splat20
  %23 = fadd <4 x float> %21, %22
  %broadcast.splat24 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 20, i32 20, i32 20, i32 20>
  %24 = fmul <4 x float> %strided.vec67, %broadcast.splat24
  %25 = fadd <4 x float> %23, %24
  %broadcast.splat30 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 21, i32 21, i32 21, i32 21>
  %26 = fmul <4 x float> %strided.vec68, %broadcast.splat30
  %27 = fadd <4 x float> %25, %26
  %broadcast.splat36 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 22, i32 22, i32 22, i32 22>
  %28 = fmul <4 x float> %strided.vec69, %broadcast.splat36
  %29 = fadd <4 x float> %27, %28
  %broadcast.splat42 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 23, i32 23, i32 23, i32 23>
  %30 = fmul <4 x float> %strided.vec70, %broadcast.splat42
  %31 = fmul <4 x float> %strided.vec67, %broadcast.splat48
  %32 = fadd <4 x float> %strided.vec66, %31
  %broadcast.splat50 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 3, i32 3, i32 3, i32 3>
  %33 = fmul <4 x float> %strided.vec68, %broadcast.splat50
  %34 = fadd <4 x float> %32, %33
  %broadcast.splat52 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 4, i32 4, i32 4, i32 4>
  %35 = fmul <4 x float> %strided.vec69, %broadcast.splat52
  %36 = fadd <4 x float> %34, %35
  %broadcast.splat54 = shufflevector <24 x float> %2, <24 x float> zeroinitializer, <4 x i32> <i32 5, i32 5, i32 5, i32 5>
  %37 = fmul <4 x float> %strided.vec70, %broadcast.splat54
  %38 = fadd <4 x float> %36, %37
  %39 = fadd <4 x float> %9, %10
  %40 = fmul <4 x float> %strided.vec70, %broadcast.splat38
  %41 = fadd <4 x float> %39, %40
  %42 = shufflevector <4 x float> %38, <4 x float> %41, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %43 = fadd <4 x float> %19, %20
  %44 = fadd <4 x float> %29, %30
  %45 = shufflevector <4 x float> %43, <4 x float> %44, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %interleaved.vec = shufflevector <8 x float> %42, <8 x float> %45, <16 x i32> <i32 0, i32 4, i32 8, i32 12, i32 1, i32 5, i32 9, i32 13, i32 2, i32 6, i32 10, i32 14, i32 3, i32 7, i32 11, i32 15>
  store <16 x float> %interleaved.vec, ptr %1, align 4
  ret void

}

declare i32 @printf(ptr, ...)

define i32 @main() {
entry:
  %a = load ptr, ptr @pa, align 8
  %o = load ptr, ptr @po, align 8
  call void @kernel(ptr %a, ptr %o)
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %j, %loop ]
  %p = getelementptr float, ptr @out, i64 %i
  %v = load float, ptr %p, align 4
  %d = fpext float %v to double
  %r = call i32 (ptr, ...) @printf(ptr @fmt, double %d)
  %j = add i64 %i, 1
  %c = icmp eq i64 %j, 16
  br i1 %c, label %done, label %loop
done:
  ret i32 0
}

attributes #1 = { nocallback nofree nounwind willreturn memory(argmem: readwrite) }
