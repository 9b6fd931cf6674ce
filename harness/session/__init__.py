"""Fuzzing sessions: what a session tries (``generate``), the drivers and the time box
(``fuzz``), and the live progress line and summary (``progress``)."""
