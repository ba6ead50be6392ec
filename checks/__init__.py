"""checks: check types, their registry, verdicts and control-account reconciliation.

- ``registry``: spec models registered by type name, the strict parser of a check list.
- ``context``: what a check sees (the store with both realms, workspace, reference files).
- ``verdict``: evaluation into a verdict (accepted, rejected, grader error) with hashes.
- ``files``: the file checks (csv_*, text_*, file_exists, custom).
- ``books``: state checks; ``control``: control-account checks; ``audit``: the event log.
- ``world``: the counterparties' own records, read from the world realm of the log.
- ``reconcile``: control accounts against subledgers and the world, itemized.

May import: erp, sim.
"""
