"""The books as beancount plain text, folded from the event log alone.

Accounts are opened from the chart (``account_opened`` events) under beancount's five
roots, each ``open`` carrying the erpsim code and title as metadata; an account the
books posted to without the chart opening it (a company posting account left out of the
chart) is opened too, under the root its role among the company's accounts gives. Every
event that posts (the posting rules of ``erp.postings``) becomes one transaction dated by
its accounting date, each posting carrying its party and document as metadata; the trial
balance at the last accounting date closes the file as one zero-tolerance ``balance``
assertion per account. The read tables are never consulted, so what beancount checks is
the log itself (verify the log before exporting it).

Every code the books accept (``erp.commands.Code``: letters, digits, ``.`` and ``-``)
gives a valid beancount account, and distinct codes give distinct accounts
(:func:`account_name`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta

from erp import events as ev
from erp.money import format_cents
from erp.postings import Posting, post
from erp.store import EventStore, StoredEvent

ROOTS: dict[str, str] = {
    "asset": "Assets",
    "liability": "Liabilities",
    "equity": "Equity",
    "revenue": "Income",
    "expense": "Expenses",
}
"""erpsim's account types and the beancount root each maps to."""

COMPANY_ACCOUNT_TYPES: dict[str, str] = {
    "ar": "asset",
    "unapplied_cash": "liability",
    "ap": "liability",
    "tax_payable": "liability",
    "revenue": "revenue",
    "expense": "expense",
    "bad_debt": "expense",
    "card_fees": "expense",
    "bank_fees": "expense",
    "interest_income": "revenue",
    "sales_returns": "revenue",
    "opening_equity": "equity",
}
"""Each of the company's posting accounts (``erp.events.CompanyAccounts``) and the type of
account its role makes it: the root of one the chart never opened."""

UNCHARTED_TYPE = "equity"
"""The type given to an account posted to that neither the chart nor a company role types."""

UNCHARTED_TITLE = "Not in the chart"
"""The title of an account posted to that the chart never opened."""

_PLAIN_CODE = re.compile(r"[A-Z0-9][A-Za-z0-9]*", re.ASCII)
_CODE_ESCAPES = {".": "-D", "-": "-H"}


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
    asserted: str = ""
    """When the ``balance`` assertions hold: ``after 2026-05-31``, or ``before 9999-12-31
    (no day follows it)``; empty when nothing posted (no assertions)."""


def account_name(code: str, title: str, account_type: str) -> str:
    """A beancount account for an erpsim account: ``Assets:1000-Operating-bank-account``.

    A code that is already a beancount name component (a capital letter or a digit, then
    letters and digits) is kept and followed by the title's ASCII words, each after one
    ``-``. Any other code (``abc``, ``1000.10``, ``-5``) becomes ``X--`` and the code with
    ``.`` written ``-D`` and ``-`` written ``-H``, then ``--`` and the words. No plain name
    holds ``--`` and an escaped code holds none, so the code can be read back from the name
    alone: distinct codes never share an account, whatever their titles.
    """
    words = re.findall(r"[A-Za-z0-9]+", title)
    if _PLAIN_CODE.fullmatch(code):
        component = "-".join([code, *words])
    else:
        escaped = "".join(_CODE_ESCAPES.get(ch, ch) for ch in code)
        component = "--".join([f"X--{escaped}", "-".join(words)] if words else
                              [f"X--{escaped}"])
    return f"{ROOTS[account_type]}:{component}"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _amount(cents: int) -> str:
    return format_cents(cents)


def _erp_events(events: Iterable[StoredEvent]) -> Iterator[tuple[StoredEvent, ev.Event]]:
    for stored in events:
        if stored.realm == "erp":
            yield stored, ev.decode_event(stored.type, stored.schema_version, stored.payload)


@dataclass(frozen=True)
class _Transaction:
    when: date
    narration: str
    position: int
    actor: str
    lines: tuple[Posting, ...]


def export_beancount(store: EventStore) -> Exported:
    """The books of ``store`` as a beancount ledger (the caller verifies the log first)."""
    currency = "USD"
    company = "erpsim"
    chart: dict[str, tuple[str, str]] = {}  # code -> (title, account type)
    roles: dict[str, str] = {}  # code -> type, from the company's posting accounts
    transactions: list[_Transaction] = []
    balances: dict[str, int] = defaultdict(int)
    first_date: date | None = None
    for stored, event in _erp_events(store.read()):
        day = date.fromisoformat(stored.business_date)
        first_date = day if first_date is None else min(first_date, day)
        if isinstance(event, ev.CompanySetUp):
            currency, company = event.currency, event.name
            roles = {getattr(event.accounts, role): kind
                     for role, kind in COMPANY_ACCOUNT_TYPES.items()}
            continue
        if isinstance(event, ev.AccountOpened):
            chart[event.code] = (event.name, event.account_type)
            continue
        lines = post(event)
        if not lines:
            continue
        entry = getattr(event, "entry_date", None)
        when = entry if isinstance(entry, date) else day
        first_date = min(first_date, when)
        transactions.append(_Transaction(when, event.type.replace("_", " "), stored.position,
                                         stored.actor, lines))
        for line in lines:
            balances[line.account] += line.amount
    # Names only now: an account may be posted to before the chart opens it, or never.
    for code in balances:
        if code not in chart:
            chart[code] = (UNCHARTED_TITLE, roles.get(code, UNCHARTED_TYPE))
    names = {code: account_name(code, title, kind) for code, (title, kind) in chart.items()}
    start = first_date or date(1970, 1, 1)
    head = [f"option \"title\" {_quote(company)}",
            f"option \"operating_currency\" \"{currency}\"", ""]
    for code in sorted(chart):
        head.append(f"{start.isoformat()} open {names[code]} {currency}")
        head.append(f"  code: {_quote(code)}")
        head.append(f"  name: {_quote(chart[code][0])}")
    head.append("")
    body: list[str] = []
    for t in transactions:
        body.append(f"{t.when.isoformat()} * {_quote(t.narration)}")
        body.append(f"  position: {t.position}")
        body.append(f"  actor: {_quote(t.actor)}")
        for line in t.lines:
            body.append(f"  {names[line.account]}  {_amount(line.amount)} {currency}")
            body.append(f"    doc: {_quote(line.doc_id)}")
            if line.party:
                body.append(f"    party: {_quote(line.party)}")
        body.append("")
    last_date = max((t.when for t in transactions), default=None)
    tail, asserted = _assertions(transactions, chart, names, currency)
    return Exported(text="\n".join(head + body + tail), accounts=names,
                    transactions=len(transactions), last_date=last_date,
                    balances=dict(balances), asserted=asserted)


def _assertions(transactions: list[_Transaction], chart: dict[str, tuple[str, str]],
                names: dict[str, str], currency: str) -> tuple[list[str], str]:
    """The trial balance as zero-tolerance ``balance`` assertions on the day after the last
    accounting date. beancount asserts a balance at the start of its day: when the last
    date is the last day a date can name (9999-12-31), no day follows it, and the balances
    asserted on it are those before its postings, which the comment says."""
    if not transactions:
        return [], ""
    last = max(t.when for t in transactions)
    totals: dict[str, int] = defaultdict(int)
    if last < date.max:
        check_on, said = last + timedelta(days=1), f"after {last.isoformat()}"
    else:
        check_on, said = last, f"before {last.isoformat()} (no day follows it)"
    for t in transactions:
        if t.when < check_on:
            for line in t.lines:
                totals[line.account] += line.amount
    out = [f"; the trial balance {said}, to the cent"]
    for code in sorted(chart):
        out.append(f"{check_on.isoformat()} balance {names[code]}  "
                   f"{_amount(totals.get(code, 0))} ~ 0.00 {currency}")
    out.append("")
    return out, said
