; llvm.maximum/llvm.minimum of a number known never NaN (an integer converted) and a signaling
; NaN: LangRef says NaN; X86 code generation (LLVM 22.1.8) returns the number. Run by lli:
; each line prints "nan" when right; a quiet NaN instead of 0x7ff0000000000001 prints "nan".
@i = global i32 -7
@s = global i64 9218868437227405313 ; 0x7ff0000000000001, a signaling NaN
@fmt = private constant [4 x i8] c"%g\0A\00"

define double @max(i32 %i, double %y) noinline {
  %x = sitofp i32 %i to double
  %m = call double @llvm.maximum.f64(double %x, double %y)
  ret double %m
}

define double @min(i32 %i, double %y) noinline {
  %x = sitofp i32 %i to double
  %m = call double @llvm.minimum.f64(double %y, double %x)
  ret double %m
}

define i32 @main() {
  %i = load volatile i32, ptr @i
  %bits = load volatile i64, ptr @s
  %y = bitcast i64 %bits to double
  %a = call double @max(i32 %i, double %y)
  call i32 (ptr, ...) @printf(ptr @fmt, double %a)
  %b = call double @min(i32 %i, double %y)
  call i32 (ptr, ...) @printf(ptr @fmt, double %b)
  ret i32 0
}

declare double @llvm.maximum.f64(double, double)
declare double @llvm.minimum.f64(double, double)
declare i32 @printf(ptr, ...)
