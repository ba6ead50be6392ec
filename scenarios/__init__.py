"""scenarios: scenario specs (pydantic), the strict YAML loader and the built-in library.

May import: erp, sim, counterparties, checks.
"""
