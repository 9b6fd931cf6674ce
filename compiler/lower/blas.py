"""Bufferized ``linalg.matmul``/``batch_matmul`` -> OpenBLAS gemm calls (the ``cpu-blas`` target).

After bufferization every float32/float64 matmul (operands and output of one dtype: a float16
matmul accumulates in f32 and stays a loop nest, see ``takes``) is replaced by a call to a small
helper written in MLIR. The helper reads the operands' strided metadata at run time and hands
row-major or column-major operands to ``scipy_cblas_{s,d}gemm`` through their leading
dimensions; any other layout (or a C operand that is not row-major) falls back to the original
``linalg.matmul`` loop nest, so a strange stride is slow, never wrong. ``beta`` is 1 by default:
the destination was zero-filled by the ``linalg.fill`` that precedes every matmul, and gemm
accumulates onto it as matmul does; when that fill of zero immediately precedes the matmul on
the same buffer it is dropped and gemm overwrites instead (``beta`` 0), saving a pass over the
output.
"""

from __future__ import annotations

import functools
import os
import re

CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_TRANS = 101, 111, 112
_GEMM = {"f32": "scipy_cblas_sgemm", "f64": "scipy_cblas_dgemm"}
_BYTES = {"f32": 4, "f64": 8}


@functools.cache
def library_path() -> str:
    """Path of the OpenBLAS shared library shipped by scipy-openblas32."""
    import scipy_openblas32

    directory = scipy_openblas32.get_lib_dir()
    for name in sorted(os.listdir(directory)):
        if name.startswith("libscipy_openblas") and ".so" in name:
            return os.path.join(directory, name)
    raise FileNotFoundError(f"no libscipy_openblas shared library in {directory}")


def _dyn(rank: int, elt: str) -> str:
    dims = "?x" * rank
    strides = ", ".join("?" * rank)
    return f"memref<{dims}{elt}, strided<[{strides}], offset: ?>>"


def _layout(prefix: str, rows: str, cols: str, s0: str, s1: str) -> str:
    """MLIR computing %{prefix}_row (row-major usable), %{prefix}_col and %{prefix}_ld{r,c}."""
    p = prefix
    return f"""
    %{p}_r1 = arith.cmpi eq, {rows}, %c1 : index
    %{p}_c1 = arith.cmpi eq, {cols}, %c1 : index
    %{p}_cols = arith.maxui {cols}, %c1 : index
    %{p}_rows = arith.maxui {rows}, %c1 : index
    %{p}_s1u = arith.cmpi eq, {s1}, %c1 : index
    %{p}_s0u = arith.cmpi eq, {s0}, %c1 : index
    %{p}_ldr = arith.select %{p}_r1, %{p}_cols, {s0} : index
    %{p}_ldc = arith.select %{p}_c1, %{p}_rows, {s1} : index
    %{p}_unitr = arith.ori %{p}_c1, %{p}_s1u : i1
    %{p}_bigr = arith.cmpi sge, %{p}_ldr, %{p}_cols : index
    %{p}_row = arith.andi %{p}_unitr, %{p}_bigr : i1
    %{p}_unitc = arith.ori %{p}_r1, %{p}_s0u : i1
    %{p}_bigc = arith.cmpi sge, %{p}_ldc, %{p}_rows : index
    %{p}_col = arith.andi %{p}_unitc, %{p}_bigc : i1"""


def _pointer(name: str, memref: str, ty: str, offset: str, elt: str) -> str:
    return f"""
    %{name}_base = memref.extract_aligned_pointer_as_index {memref} : {ty} -> index
    %{name}_bytes = arith.muli {offset}, %c{_BYTES[elt]} : index
    %{name}_addr = arith.addi %{name}_base, %{name}_bytes : index
    %{name}_i64 = arith.index_cast %{name}_addr : index to i64
    %{name} = llvm.inttoptr %{name}_i64 : i64 to !llvm.ptr"""


def helpers(elt: str) -> str:
    """The gemm declaration and the 2-D and batched helpers for one element type."""
    t2, t3 = _dyn(2, elt), _dyn(3, elt)
    gemm = _GEMM[elt]
    meta = f"memref<{elt}>, index, index, index, index, index"
    return f"""
  func.func private @{gemm}(i32, i32, i32, i32, i32, i32, {elt}, !llvm.ptr, i32, !llvm.ptr, i32,
      {elt}, !llvm.ptr, i32)
  func.func private @__blas_matmul_{elt}(%A: {t2}, %B: {t2}, %C: {t2}, %beta: {elt}) {{
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %baseA, %offA, %sizesA:2, %stridesA:2 = memref.extract_strided_metadata %A : {t2} -> {meta}
    %baseB, %offB, %sizesB:2, %stridesB:2 = memref.extract_strided_metadata %B : {t2} -> {meta}
    %baseC, %offC, %sizesC:2, %stridesC:2 = memref.extract_strided_metadata %C : {t2} -> {meta}
    {_layout("a", "%sizesA#0", "%sizesA#1", "%stridesA#0", "%stridesA#1")}
    {_layout("b", "%sizesB#0", "%sizesB#1", "%stridesB#0", "%stridesB#1")}
    {_layout("c", "%sizesC#0", "%sizesC#1", "%stridesC#0", "%stridesC#1")}
    %a_ok = arith.ori %a_row, %a_col : i1
    %b_ok = arith.ori %b_row, %b_col : i1
    %ab_ok = arith.andi %a_ok, %b_ok : i1
    %ok = arith.andi %ab_ok, %c_row : i1
    scf.if %ok {{
      %order = arith.constant {CBLAS_ROW_MAJOR} : i32
      %notrans = arith.constant {CBLAS_NO_TRANS} : i32
      %trans = arith.constant {CBLAS_TRANS} : i32
      %ta = arith.select %a_row, %notrans, %trans : i32
      %tb = arith.select %b_row, %notrans, %trans : i32
      %lda_i = arith.select %a_row, %a_ldr, %a_ldc : index
      %ldb_i = arith.select %b_row, %b_ldr, %b_ldc : index
      %lda = arith.index_cast %lda_i : index to i32
      %ldb = arith.index_cast %ldb_i : index to i32
      %ldc = arith.index_cast %c_ldr : index to i32
      %m = arith.index_cast %sizesA#0 : index to i32
      %k = arith.index_cast %sizesA#1 : index to i32
      %n = arith.index_cast %sizesB#1 : index to i32
      %one = arith.constant 1.0 : {elt}
      {_pointer("pa", "%A", t2, "%offA", elt)}
      {_pointer("pb", "%B", t2, "%offB", elt)}
      {_pointer("pc", "%C", t2, "%offC", elt)}
      func.call @{gemm}(%order, %ta, %tb, %m, %n, %k, %one, %pa, %lda, %pb, %ldb, %beta, %pc, %ldc)
        : (i32, i32, i32, i32, i32, i32, {elt}, !llvm.ptr, i32, !llvm.ptr, i32, {elt}, !llvm.ptr,
           i32) -> ()
    }} else {{
      %zero = arith.constant 0.0 : {elt}
      %overwrite = arith.cmpf oeq, %beta, %zero : {elt}
      scf.if %overwrite {{
        linalg.fill ins(%zero : {elt}) outs(%C : {t2})
      }}
      linalg.matmul ins(%A, %B : {t2}, {t2}) outs(%C : {t2})
    }}
    return
  }}
  func.func private @__blas_batch_matmul_{elt}(%A: {t3}, %B: {t3}, %C: {t3}, %beta: {elt}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %batch = memref.dim %A, %c0 : {t3}
    %m = memref.dim %A, %c1 : {t3}
    %k = memref.dim %A, %c2 : {t3}
    %n = memref.dim %B, %c2 : {t3}
    scf.for %i = %c0 to %batch step %c1 {{
      %a = memref.subview %A[%i, 0, 0] [1, %m, %k] [1, 1, 1] : {t3} to {t2}
      %b = memref.subview %B[%i, 0, 0] [1, %k, %n] [1, 1, 1] : {t3} to {t2}
      %c = memref.subview %C[%i, 0, 0] [1, %m, %n] [1, 1, 1] : {t3} to {t2}
      func.call @__blas_matmul_{elt}(%a, %b, %c, %beta) : ({t2}, {t2}, {t2}, {elt}) -> ()
    }}
    return
  }}
"""


def _operations(block_owner) -> list:
    """Every operation nested in ``block_owner``, outermost first."""
    found = []
    stack = [block_owner]
    while stack:
        op = stack.pop()
        found.append(op)
        for region in op.regions:
            for block in region.blocks:
                stack.extend(reversed(list(block.operations)))
    return found


def _zero_fill_before(op):
    """The ``linalg.fill`` of zero into ``op``'s output right before it, if there is one: then
    gemm can overwrite (beta = 0) and the fill is dropped."""
    from mlir import ir

    block = op.block
    previous = None
    for candidate in block.operations:
        if candidate.operation == op:
            break
        previous = candidate.operation
    if previous is None or previous.name != "linalg.fill":
        return None
    value, target = previous.operands[0], previous.operands[1]
    if target != op.operands[2]:
        return None
    owner = value.owner
    if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
        owner = owner.operation
    if getattr(owner, "name", "") != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.FloatAttr) or attr.value != 0.0:
        return None
    return previous


_MATMUL = re.compile(r"linalg\.(?:batch_)?matmul ins\([^:]*:\s*(.*?)\)\s*outs\([^:]*:\s*(.*?)\)")
_STRIDED = re.compile(r"strided<\[([^\]]*)\]")


def takes(elements: list[str]) -> bool:
    """Does the BLAS stage take a matmul with these operand and output element types? Only all
    ``f32`` (sgemm) or all ``f64`` (dgemm): OpenBLAS has no f16/bf16 gemm, so a float16 matmul
    (``f16`` operands into an ``f32`` accumulator) stays the loop nest."""
    return len(set(elements)) == 1 and elements[0] in _GEMM


def _element_of(memref: str) -> str:
    """The element type of a ``memref<...>`` type's text."""
    shape = memref.split("memref<", 1)[-1].split(",")[0].rstrip(">")
    return shape.rsplit("x", 1)[-1].strip()


def _layout_path(memref: str, shape_rank: int) -> str:
    """How the BLAS helper passes one operand of a static type: ``row-major`` (unit inner stride,
    packed rows), ``leading-dimension`` (unit inner stride, padded rows), ``column-major``
    (transposed), or ``fallback`` (anything else: the loop nest)."""
    match = _STRIDED.search(memref)
    if match is None:
        return "row-major"
    strides = [s.strip() for s in match.group(1).split(",")]
    if len(strides) < 2 or "?" in strides[-1] or "?" in strides[-2]:
        return "dynamic"
    inner, outer = int(strides[-1]), int(strides[-2])
    dims = [int(d) for d in re.findall(r"(\d+)x", memref.split(",")[0])]
    cols = dims[-1] if dims else 1
    rows = dims[-2] if len(dims) >= 2 else 1
    if inner == 1 or cols == 1:
        return "row-major" if outer == cols or rows == 1 else "leading-dimension"
    if outer == 1 or rows == 1:
        return "column-major"
    return "fallback"


def paths(bufferized: str) -> list[str]:
    """For each float matmul of a bufferized module, the path its operands take through the BLAS
    stage: ``gemm`` (every operand passed directly), ``gemm-ld``, ``gemm-transposed`` or
    ``fallback`` (some operand only the loop nest can read). Shapes and strides are static
    here, so this is what the helper decides at run time."""
    found = []
    for line in bufferized.splitlines():
        match = _MATMUL.search(line)
        if match is None:
            continue
        operands = [t.strip() for t in re.split(r",\s*(?=memref<)", match.group(1))]
        output = match.group(2).strip()
        if not takes([_element_of(t) for t in (*operands, output)]):
            continue  # a float16 matmul (f16 operands, f32 accumulator) stays a loop nest
        layouts = [_layout_path(t, 2) for t in operands] + [_layout_path(output, 2)]
        if "fallback" in layouts or layouts[-1] != "row-major":
            found.append("fallback")
        elif "column-major" in layouts:
            found.append("gemm-transposed")
        elif "leading-dimension" in layouts:
            found.append("gemm-ld")
        else:
            found.append("gemm")
    return found


def substitute(module) -> int:
    """Replace the float matmuls of a bufferized module by BLAS helper calls; returns how many."""
    from mlir import ir

    targets = []
    for op in _operations(module.operation):
        name = op.operation.name
        if name not in ("linalg.matmul", "linalg.batch_matmul"):
            continue
        operands = list(op.operation.operands)
        types = [v.type for v in operands]
        if len(types) != 3 or not all(isinstance(t, ir.MemRefType) for t in types):
            continue
        elt = str(types[0].element_type)
        if not takes([str(t.element_type) for t in types]):
            continue
        targets.append((op.operation, name, elt))
    if not targets:
        return 0
    used = sorted({elt for _, _, elt in targets})
    helper_module = ir.Module.parse("module {" + "".join(helpers(e) for e in used) + "}")
    for op, name, elt in targets:
        rank = 2 if name == "linalg.matmul" else 3
        dynamic = ir.Type.parse(_dyn(rank, elt))
        fill = _zero_fill_before(op)
        element_type = ir.Type.parse(elt)
        with ir.InsertionPoint(op), op.location:
            casts = [
                ir.Operation.create("memref.cast", results=[dynamic], operands=[value]).result
                for value in op.operands
            ]
            # beta = 0 when the zero fill right before is dropped; otherwise accumulate onto
            # whatever the destination holds, as linalg.matmul does.
            beta = ir.Operation.create(
                "arith.constant",
                results=[element_type],
                attributes={"value": ir.FloatAttr.get(element_type, 0.0 if fill else 1.0)},
            ).result
            callee = f"__blas_{'matmul' if rank == 2 else 'batch_matmul'}_{elt}"
            ir.Operation.create(
                "func.call",
                results=[],
                operands=casts + [beta],
                attributes={"callee": ir.FlatSymbolRefAttr.get(callee)},
            )
        op.erase()
        if fill is not None:
            fill.erase()
    body = module.body
    for func in list(helper_module.body.operations):
        func.operation.move_before(body.operations[0])
    module.operation.verify()
    return len(targets)
