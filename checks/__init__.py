"""checks: check types, their registry, verdicts and control-account reconciliation.

May import: erp, sim.
"""
