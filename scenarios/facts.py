"""The facts a turn's prompt may state, computed from the books and the inbox at the turn.

A prompt template names them as placeholders (``{unapplied_receipts}``, ``{role}``...);
the attempt runner fills them with :func:`prompt_facts` when the turn starts, so a prompt
says only what the books and the inbox hold at that moment. ``tests/scenarios`` renders
every turn of every library scenario and checks each stated fact against the books.

| placeholder | what it is |
| --- | --- |
| ``role`` | the turn's role in the books (``clerk`` or ``controller``) |
| ``unapplied_receipts`` | receipts holding unapplied cash in the books now |
| ``deposits_through`` | the date of the latest receipt the bank feed has recorded (``none yet``) |
| ``unmatched_lines`` | bank statement lines not yet matched in the books |
| ``open_bills`` | approved bills with an open balance in the books |
"""

from __future__ import annotations

from datetime import date

from erp import queries as q
from erp.store import EventStore

FACTS = ("role", "unapplied_receipts", "deposits_through", "unmatched_lines", "open_bills")
"""The placeholders :func:`prompt_facts` fills."""


def prompt_facts(store: EventStore, day: date, role: str) -> dict[str, str]:
    """Every fact of :data:`FACTS` as the books hold it now (the turn's start), counted
    by the database (the tables grow through a year; the facts are a few numbers)."""
    through = q.latest_document_date(store, "receipt", through=day)
    return {"role": role,
            "unapplied_receipts": str(q.count_documents(store, "receipt", open_only=True)),
            "deposits_through": through or "none yet",
            "unmatched_lines": str(q.count_statement_lines(store, status="unmatched")),
            "open_bills": str(q.count_documents(store, "bill", open_only=True,
                                                statuses=("approved", "partially_paid")))}
