"""Lowering: graph -> MLIR text (``emit``, memref and tensor ABIs) and the BLAS stage (``blas``)."""
