"""A services company's books over whole months, kept by a past clerk: shared by the
reports and drafting generators (closing package, board revenue table, cash position,
P&L variance memo, dunning letters, audit support list).

The engine runs the company (customers order, are invoiced by the company's automation
and pay as their behaviour says; the bank posts their payments). A clerk of the past
keeps the books as a careful team would, from the world's truth: every deposit the bank
posted is recorded as a receipt on the operating account the day it arrives and applied
to the invoices its payer meant to pay (a processor's or bank's fee accepted as a fee
allowance on card payouts and wires, booked to 6810), and on each month's last business
day the recurring entries are posted (rent, software, contractors accrued, bank fees,
prepaid amortisation, savings interest, an equipment purchase now and then). The amounts
of the recurring entries are drawn from the seed's own stream (``desk:recurring``), so
months differ; nothing comes from the clock.

:func:`kept_books` yields a :class:`KeptBooks`: the simulation, the trial balance at each
month end, and every manual entry and receipt the clerk posted (their ids, for tasks that
trace entries to documents).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from desk.simulate import Simulation, simulate, with_behaviours
from erp import commands as c
from erp import queries as q
from erp.errors import CommandRejected
from scenarios.spec import Scenario
from sim.rng import Streams

CLERK = "clerk:history"
"""The actor of the past clerk's writes."""

RECURRING: tuple[tuple[str, str, str, int, float], ...] = (
    # (key, memo, debit account, monthly base cents, relative spread)
    ("rent", "Office rent", "6100", 1_250_000, 0.0),
    ("software", "Software subscriptions", "6200", 310_000, 0.35),
    ("contractors", "Contractor hours accrued", "6300", 1_800_000, 0.45),
    ("bank_fees", "Bank service charges", "6800", 21_000, 0.6),
    ("prepaid", "Prepaid insurance amortised", "6000", 95_000, 0.0),
)
"""The month-end entries: each is credited to its own account (see :data:`CREDIT`)."""

CREDIT = {"rent": "1000", "software": "1000", "contractors": "2100", "bank_fees": "1000",
          "prepaid": "1300"}
"""The account each recurring entry credits."""


@dataclass
class KeptBooks:
    """The simulation and what the past clerk left: trial balances and its entries."""

    sim: Simulation
    trial_balances: dict[date, dict[str, int]] = field(default_factory=dict)
    """Per month's last calendar day (and ``until``): account -> balance (debits minus
    credits), cents, as the books hold it at ``until``."""
    entries: list[dict[str, Any]] = field(default_factory=list)
    """Manual journal entries: entry_id, entry_date, memo, lines [(account, debit, credit)]."""
    receipts: list[dict[str, Any]] = field(default_factory=list)
    """Receipts: receipt_id, customer_id, entry_date, amount, reference, payment_id."""

    def names(self) -> dict[str, str]:
        """Account code -> name, from the books' chart."""
        return {a.code: a.name for a in q.chart(self.sim.ledger.store).values()}


def company_scenario(start: date, end: date, *, customers: int, vendors: int,
                     holidays: tuple[str, ...] = ()) -> Scenario:
    """The company behind the tasks: invoicing automated, receipts kept by the clerk."""
    return Scenario.model_validate({
        "id": "desk-month-books", "title": "A services company kept month by month",
        "calendar": {"start": start.isoformat(), "end": end.isoformat(),
                     "holidays": list(holidays)},
        "company": {"name": "Northwind Services LLC", "chart": "standard-services",
                    "opening": {"bank_balance": "240000.00", "ar_open_invoices": 30,
                                "ap_open_bills": 6},
                    "automation": {"order_intake": True, "auto_invoicing": True,
                                   "dispatch_invoices": True, "bank_feed": False,
                                   "auto_receipts": False, "month_end_statements": False,
                                   "controller_approves_bank_changes": False}},
        "population": {"customers": {"count": customers,
                                     "profiles": {"on_time": 0.6, "late": 0.25,
                                                  "card_processor": 0.15}},
                       "vendors": {"count": vendors}},
        "turns": {"every": "none", "prompt": "none"},
    })


def _month_ends(days: list[date]) -> set[date]:
    """The last business day of each month among ``days``."""
    out: dict[tuple[int, int], date] = {}
    for d in days:
        out[(d.year, d.month)] = max(out.get((d.year, d.month), d), d)
    return set(out.values())


@contextmanager
def kept_books(scenario: Scenario, seed: int, *, until: date,
               behaviours: dict[str, str] | None = None,
               opening: dict[str, int] | None = None) -> Iterator[KeptBooks]:
    """Run the company to ``until``'s turn moment, the past clerk keeping the books.

    ``opening`` adds opening balances of non-control accounts (prepaid, equipment)
    against owner's equity on the first day, when 60,000.00 also moves to savings.
    """
    setup = with_behaviours(behaviours) if behaviours else None
    rng = Streams(f"month-books/{seed}").generator("desk:recurring")
    with simulate(scenario, seed, setup=setup) as sim:
        kb = KeptBooks(sim)
        days = [d for d in sim.instance.calendar.business_days() if d <= until]
        ends = _month_ends(days)
        seen_lines: set[str] = set()
        n_entry = 0
        for i, d in enumerate(days):
            sim.engine.run_to_turn(d)
            if i == 0 and opening:
                lines = [c.JournalLineIn(account=a, debit=v) for a, v in sorted(opening.items())]
                lines.append(c.JournalLineIn(account="3000", credit=sum(opening.values())))
                _run(sim, d, c.PostOpeningBalances(entry_date=d, lines=tuple(lines)),
                     role="controller")
                _post(kb, d, "JE-OPEN-SAV", "Transfer to savings",
                      (("1010", 6_000_000, 0), ("1000", 0, 6_000_000)))
            _record_deposits(kb, d, seen_lines)
            if d in ends and d != until:
                n_entry = _recurring(kb, d, rng, n_entry)
        for d in sorted(ends | {until}):
            last = month_of(d)[1] if d != until else d
            tb = q.trial_balance(sim.ledger.store, as_of=min(last, until))
            kb.trial_balances[min(last, until)] = {r.account: r.debit - r.credit for r in tb}
        yield kb


def _run(sim: Simulation, day: date, cmd: c.Command, role: str = "clerk") -> None:
    sim.ledger.execute(cmd, actor=CLERK, role=role,  # type: ignore[arg-type]
                       business_date=day)


def _record_deposits(kb: KeptBooks, day: date, seen: set[str]) -> None:
    """Record and apply every customer deposit the bank has posted by ``day``."""
    sim = kb.sim
    payments = {p.payment_id: p for p in sim.events("payment_sent")}
    books = sim.ledger.books
    bank_id = sorted(books.bank_accounts)[0]
    for line in sim.events("bank_line_posted"):
        if line.line_id in seen or line.posted_on > day:
            continue
        seen.add(line.line_id)
        pay = payments.get(line.source)
        if line.amount <= 0 or pay is None or line.duplicate_of is not None:
            continue
        rid = f"RCT-{len(kb.receipts) + 1:05d}"
        _run(sim, day, c.RecordReceipt(receipt_id=rid, customer_id=pay.customer_id,
                                       bank_account_id=bank_id, entry_date=line.posted_on,
                                       amount=line.amount, method=str(pay.method),
                                       reference=line.reference, payer=pay.payer_name))
        kb.receipts.append({"receipt_id": rid, "customer_id": pay.customer_id,
                            "entry_date": line.posted_on, "amount": line.amount,
                            "reference": line.reference, "payment_id": pay.payment_id})
        cash = line.amount
        for a in pay.allocations:
            inv = sim.ledger.books.invoices.get(a.doc_id)
            if inv is None or inv.open <= 0:
                continue
            meant = min(a.amount, inv.open)
            applied = min(meant, cash)
            if applied > 0:
                _run(sim, day, c.ApplyReceipt(receipt_id=rid, invoice_id=a.doc_id,
                                              amount=applied, entry_date=line.posted_on))
                cash -= applied
            short = meant - applied
            if short > 0 and pay.amount > pay.arrives:
                with contextlib.suppress(CommandRejected):  # a fee above the open amount
                    _run(sim, day, c.GrantFeeAllowance(invoice_id=a.doc_id, amount=short,
                                                       entry_date=line.posted_on,
                                                       account="6810"))


def _recurring(kb: KeptBooks, day: date, rng: Any, n: int) -> int:
    """Post the month's recurring entries on its last business day."""
    for key, memo, account, base, spread in RECURRING:
        factor = 1.0 + (float(rng.uniform(-spread, spread)) if spread else 0.0)
        cents = int(rng.integers(0, 100)) if spread else 0
        amount = round(base * factor / 100.0) * 100 + cents
        n += 1
        entry_id = f"JE-{day:%y%m}-{n:03d}"
        lines = ((account, amount, 0), (CREDIT[key], 0, amount))
        _post(kb, day, entry_id, f"{memo} {day:%B %Y}", lines)
    if float(rng.random()) < 0.5:
        n += 1
        amount = int(rng.integers(180_000, 900_000))
        _post(kb, day, f"JE-{day:%y%m}-{n:03d}", f"Equipment purchase {day:%B %Y}",
              (("1500", amount, 0), ("1000", 0, amount)))
    n += 1
    interest = int(rng.integers(9_000, 26_000))
    _post(kb, day, f"JE-{day:%y%m}-{n:03d}", f"Savings interest {day:%B %Y}",
          (("1010", interest, 0), ("4900", 0, interest)))
    return n


def _post(kb: KeptBooks, day: date, entry_id: str, memo: str,
          lines: tuple[tuple[str, int, int], ...]) -> None:
    cmd = c.PostJournalEntry(entry_id=entry_id, entry_date=day, memo=memo, lines=tuple(
        c.JournalLineIn(account=a, debit=dr or None, credit=cr or None) for a, dr, cr in lines))
    _run(kb.sim, day, cmd, role="controller")
    kb.entries.append({"entry_id": entry_id, "entry_date": day, "memo": memo,
                       "lines": list(lines)})


def month_of(day: date) -> tuple[date, date]:
    """The first and last calendar day of ``day``'s month."""
    first = day.replace(day=1)
    nxt = (first + timedelta(days=32)).replace(day=1)
    return first, nxt - timedelta(days=1)
