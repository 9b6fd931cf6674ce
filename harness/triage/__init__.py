"""Triage of findings: one signature ("same failure"), minimization, attribution and export."""
