; pow(8.0, x) with no fast-math flag: LLVM's library call simplifier (opt -O1 and up) rewrites it
; as exp2(x * 3.0), whose product rounds before exp2 sees it: 355 ulps off pow at x = 300.33251
; (LLVM 22.1.8). Run by lli, before and after opt: prints pow(8.0, x) as a hex float.
@x = global double 300.33251
@fmt = private constant [4 x i8] c"%a\0A\00"

define double @power(double %x) noinline {
  %r = call double @llvm.pow.f64(double 8.0, double %x)
  ret double %r
}

define i32 @main() {
  %x = load volatile double, ptr @x
  %r = call double @power(double %x)
  call i32 (ptr, ...) @printf(ptr @fmt, double %r)
  ret i32 0
}

declare double @llvm.pow.f64(double, double)
declare i32 @printf(ptr, ...)
