"""Benchmarks (ledger, engine, turn, sweep), their workload generator and the demo books."""
