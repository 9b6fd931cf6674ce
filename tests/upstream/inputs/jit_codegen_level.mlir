module {
  llvm.func @sum(%arg0: !llvm.ptr, %arg1: i64) -> f64 {
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %zero = llvm.mlir.constant(0.0 : f64) : f64
    llvm.br ^loop(%c0, %zero : i64, f64)
  ^loop(%i: i64, %acc: f64):
    %done = llvm.icmp "sge" %i, %arg1 : i64
    llvm.cond_br %done, ^exit, ^body
  ^body:
    %p = llvm.getelementptr %arg0[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f64
    %v = llvm.load %p : !llvm.ptr -> f64
    %a = llvm.fadd %acc, %v : f64
    %n = llvm.add %i, %c1 : i64
    llvm.br ^loop(%n, %a : i64, f64)
  ^exit:
    llvm.return %acc : f64
  }
}
