"""Differential and structural testing of the compiler: cases, references, oracles, a corpus of
minimized findings, and the fuzzing CLI (``python -m harness``)."""
