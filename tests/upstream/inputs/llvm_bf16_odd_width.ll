; llc -O3 -mtriple=x86_64-- -mattr=+avx512bf16 llvm_bf16_odd_width.ll
; LLVM 22.1.8: "SoftPromoteHalfOperand Op #0: v8bf16 = scalar_to_vector ...
; LLVM ERROR: Do not know how to soft promote this operator's operand!"
; Reduced by llvm-reduce from cpu-vector's kernel of a bfloat16 program with extent 9.
define <9 x bfloat> @f(ptr %p) {
  %x = load <9 x bfloat>, ptr %p, align 2
  %r = fsub <9 x bfloat> %x, splat (bfloat 1.0)
  ret <9 x bfloat> %r
}
