"""runs: attempts, agents and adapters, campaigns, results, metrics and the erpsim CLI.

The only package that composes the others; it may import all of them.
"""
