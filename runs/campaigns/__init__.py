"""Campaigns: plan, executors, results ledger, metrics, reading, exports, rescoring."""
