"""Hypothesis strategies: shapes (``shapes``), values and their regimes (``values``), valid
programs and samples (``programs``), and invalid programs (``invalid``)."""
