"""The books as beancount plain text, folded from the event log alone.

Accounts are opened from the chart (``account_opened`` events) under beancount's five
roots; every event that posts (the posting rules of ``erp.postings``) becomes one
transaction dated by its accounting date, each posting carrying its party and document
as metadata; the trial balance at the last accounting date closes the file as one
zero-tolerance ``balance`` assertion per account. The read tables are never consulted,
so what beancount checks is the log itself (verify the log before exporting it).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta

from erp import events as ev
from erp.money import format_cents
from erp.postings import post
from erp.store import EventStore, StoredEvent

ROOTS: dict[str, str] = {
    "asset": "Assets",
    "liability": "Liabilities",
    "equity": "Equity",
    "revenue": "Income",
    "expense": "Expenses",
}
"""erpsim's account types and the beancount root each maps to."""


@dataclass(frozen=True)
class Exported:
    """A beancount ledger and what it was made of."""

    text: str
    accounts: dict[str, str]
    """erpsim account code -> beancount account name."""
    transactions: int
    last_date: date | None
    balances: dict[str, int]
    """erpsim account code -> balance in cents, debit positive, at the end of the log."""


def account_name(code: str, title: str, account_type: str) -> str:
    """A beancount account for an erpsim account: ``Assets:1000-Operating-bank-account``."""
    words = re.findall(r"[A-Za-z0-9]+", title)
    return f"{ROOTS[account_type]}:{'-'.join([code, *words])}"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _amount(cents: int) -> str:
    return format_cents(cents)


def _erp_events(events: Iterable[StoredEvent]) -> Iterator[tuple[StoredEvent, ev.Event]]:
    for stored in events:
        if stored.realm == "erp":
            yield stored, ev.decode_event(stored.type, stored.schema_version, stored.payload)


def export_beancount(store: EventStore) -> Exported:
    """The books of ``store`` as a beancount ledger (the caller verifies the log first)."""
    currency = "USD"
    company = "erpsim"
    opened: dict[str, tuple[str, date]] = {}
    body: list[str] = []
    balances: dict[str, int] = defaultdict(int)
    first_date: date | None = None
    last_date: date | None = None
    transactions = 0
    for stored, event in _erp_events(store.read()):
        day = date.fromisoformat(stored.business_date)
        first_date = day if first_date is None else min(first_date, day)
        if isinstance(event, ev.CompanySetUp):
            currency, company = event.currency, event.name
            continue
        if isinstance(event, ev.AccountOpened):
            opened[event.code] = (account_name(event.code, event.name, event.account_type), day)
            continue
        lines = post(event)
        if not lines:
            continue
        entry = getattr(event, "entry_date", None)
        when = entry if isinstance(entry, date) else day
        first_date = min(first_date, when)
        last_date = when if last_date is None else max(last_date, when)
        transactions += 1
        body.append(f"{when.isoformat()} * {_quote(event.type.replace('_', ' '))}")
        body.append(f"  position: {stored.position}")
        body.append(f"  actor: {_quote(stored.actor)}")
        for line in lines:
            balances[line.account] += line.amount
            name = opened[line.account][0] if line.account in opened else line.account
            body.append(f"  {name}  {_amount(line.amount)} {currency}")
            body.append(f"    doc: {_quote(line.doc_id)}")
            if line.party:
                body.append(f"    party: {_quote(line.party)}")
        body.append("")
    head = [f"option \"title\" {_quote(company)}",
            f"option \"operating_currency\" \"{currency}\"", ""]
    start = first_date or date(1970, 1, 1)
    for _code, (name, _day) in sorted(opened.items()):
        head.append(f"{start.isoformat()} open {name} {currency}")
    head.append("")
    tail: list[str] = []
    if last_date is not None:
        check_on = (last_date + timedelta(days=1)).isoformat()
        tail.append(f"; the trial balance after {last_date.isoformat()}, to the cent")
        for code, (name, _day) in sorted(opened.items()):
            tail.append(f"{check_on} balance {name}  {_amount(balances.get(code, 0))} ~ 0.00 "
                        f"{currency}")
        tail.append("")
    return Exported(text="\n".join(head + body + tail), accounts={c: n for c, (n, _) in
                                                                     opened.items()},
                    transactions=transactions, last_date=last_date,
                    balances={c: b for c, b in balances.items()})
