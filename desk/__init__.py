"""desk: desk tasks (one request, a workspace, checks on the outputs) run as one-date scenarios.

May import: erp, sim, counterparties, checks, scenarios.
"""
