"""erp: the company's books, event-sourced.

Owns the event store (SQLite or PostgreSQL), the domain's commands and events,
the command handlers and their invariants, the posting rules, the projections
(GL, subledgers, documents, bank statement, audit trail) and the queries over
them. It imports no other package of erpsim; every other package may import it.
See ``erp/README.md``.
"""
