"""A generated command stream: a small company's business, day by day.

Used by ``erpsim demo`` (to build a company's books) and ``erpsim bench ledger``
(a realistic mix through the full command path). Deterministic for a seed: the
random stream is seeded by sha256 of the seed, never by ``hash()`` or the clock.
Every generated command is valid for the books it has built so far.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta

from erp import commands as c
from erp.charts import chart_commands
from erp.events import BankDetails, Role
from erp.ledger import Submission
from erp.money import pct_of
from sim.rng import text_random

BANK = "B-OPER"
SYSTEM = "system:setup"


def seeded_random(*parts: object) -> random.Random:
    """A ``random.Random`` seeded by sha256 of the parts (``sim.rng.text_random``)."""
    return text_random("/".join(map(str, parts)))


@dataclass
class _State:
    invoices: dict[str, tuple[str, int, date]] = field(default_factory=dict)  # id -> cust, open
    bills: dict[str, tuple[str, int, date]] = field(default_factory=dict)
    journal: list[str] = field(default_factory=list)
    n_inv: int = 0
    n_rct: int = 0
    n_bill: int = 0
    n_pay: int = 0
    n_line: int = 0
    n_je: int = 0
    n_fee: int = 0
    n_cm: int = 0
    n_vc: int = 0
    first_month: str = ""
    closed: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class DayBatch:
    """One business day's submissions and how many events they will write."""

    day: date
    submissions: list[Submission]
    events: int


def _months(start: date, months: int) -> list[str]:
    out, y, m = [], start.year, start.month
    for _ in range(months):
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def setup_batch(start: date, *, customers: int, vendors: int, months: int,
                opening_bank: int = 25_000_000) -> DayBatch:
    """Company, chart, periods, bank account, customers and vendors."""
    rng = seeded_random("workload-setup", customers, vendors)
    cmds: list[c.Command] = [c.SetUpCompany(name="Northwind Services LLC")]
    cmds += chart_commands("standard-services")
    cmds += [c.OpenPeriod(period=p) for p in _months(start, months)]
    cmds.append(c.OpenBankAccount(bank_account_id=BANK, name="Operating account",
                                  number="000123456789", gl_account="1000", entry_date=start,
                                  opening_balance=opening_bank))
    for i in range(1, customers + 1):
        cmds.append(c.RegisterCustomer(customer_id=f"C{i:04d}", name=f"Customer {i:04d}",
                                       terms_days=rng.choice((15, 30, 30, 45))))
    for i in range(1, vendors + 1):
        cmds.append(c.RegisterVendor(
            vendor_id=f"V{i:04d}", name=f"Vendor {i:04d}", terms_days=rng.choice((15, 30)),
            bank=BankDetails(account_name=f"Vendor {i:04d}",
                             routing=f"{rng.randrange(10**8, 10**9)}",
                             account_number=f"{rng.randrange(10**9, 10**10)}")))
    subs = [Submission(cmd, SYSTEM, "system", start) for cmd in cmds]
    return DayBatch(start, subs, len(subs))


def business_days(start: date) -> Iterator[date]:
    """Weekdays from ``start`` on."""
    d = start
    while True:
        if d.weekday() < 5:
            yield d
        d += timedelta(days=1)


def generate_workload(seed: int | str = 0, *, start: date = date(2026, 1, 5), customers: int = 40,
             vendors: int = 15, target_events: int | None = None, days: int | None = None,
             invoices_per_day: int = 12, months: int = 24) -> Iterator[DayBatch]:
    """Day batches: set-up first, then business days until a day or event count."""
    setup = setup_batch(start, customers=customers, vendors=vendors, months=months)
    yield setup
    rng = seeded_random("workload", seed)
    st = _State(first_month=start.strftime("%Y-%m"))
    total = setup.events
    for n, day in enumerate(business_days(start)):
        if days is not None and n >= days:
            return
        if target_events is not None and total >= target_events:
            return
        subs, events = _day(rng, st, day, customers, vendors, invoices_per_day)
        if target_events is not None and total + events > target_events:
            subs, events = _trim(subs, target_events - total)
            yield DayBatch(day, subs, events)
            return  # later days would build on commands that were cut
        total += events
        yield DayBatch(day, subs, events)


def _trim(subs: list[Submission], budget: int) -> tuple[list[Submission], int]:
    """The longest valid prefix of a day that writes at most ``budget`` events.

    The statement import may be cut short; matches of lines it no longer holds go.
    """
    out, used, imported = [], 0, None
    for s in subs:
        cmd = s.command
        if isinstance(cmd, c.ImportStatementLines):
            room = budget - used
            if room <= 0:
                break
            lines = cmd.lines[:room]
            imported = {line.line_id for line in lines}
            out.append(Submission(c.ImportStatementLines(bank_account_id=cmd.bank_account_id,
                                                         lines=lines), s.actor, s.role,
                                  s.business_date))
            used += len(lines)
            continue
        if isinstance(cmd, c.MatchStatementLine) and imported is not None \
                and cmd.line_id not in imported:
            continue
        if isinstance(cmd, c.RecordBankFee) and imported is not None \
                and cmd.line_id not in imported:
            continue
        cost = 2 if isinstance(cmd, c.RecordBankFee) and cmd.line_id else 1
        if used + cost > budget:
            break
        out.append(s)
        used += cost
    return out, used


def _day(rng: random.Random, st: _State, day: date, customers: int, vendors: int,
         per_day: int) -> tuple[list[Submission], int]:
    clerk = f"agent:clerk-{day.isoformat()}"
    cmds: list[tuple[c.Command, str, Role]] = []
    lines: list[c.StatementLineIn] = []
    matches: list[c.MatchStatementLine] = []

    def add(cmd: c.Command, actor: str = clerk, role: Role = "clerk") -> None:
        cmds.append((cmd, actor, role))

    # Sales: invoices with one to three lines.
    for _ in range(rng.randint(per_day // 2, per_day * 3 // 2)):
        st.n_inv += 1
        iid = f"INV-{st.n_inv:07d}"
        cust = f"C{rng.randint(1, customers):04d}"
        inv_lines = tuple(c.InvoiceLineIn(description="Consulting hours",
                                          quantity=rng.randint(1, 40),
                                          unit_price=rng.choice((9500, 12500, 15000)),
                                          account="4000")
                          for _ in range(rng.randint(1, 3)))
        add(c.IssueInvoice(invoice_id=iid, customer_id=cust, entry_date=day, lines=inv_lines))
        st.invoices[iid] = (cust, sum(x.quantity * x.unit_price for x in inv_lines), day)
    # Collections: older invoices get paid, some partially; receipts hit the bank.
    payable = [k for k, (_, _, d) in st.invoices.items() if (day - d).days >= 3]
    for iid in rng.sample(payable, min(len(payable), rng.randint(per_day // 2, per_day))):
        cust, open_, _ = st.invoices[iid]
        kind = rng.random()
        card_fee = pct_of(open_, 290) + 30 if kind < 0.1 and open_ > 1_000 else 0  # card processor
        amount = open_ - card_fee if kind < 0.85 else max(1, open_ * 6 // 10)
        st.n_rct += 1
        rid = f"RCT-{st.n_rct:07d}"
        add(c.RecordReceipt(receipt_id=rid, customer_id=cust, bank_account_id=BANK,
                            entry_date=day, amount=amount, method="card" if card_fee else "ach",
                            reference=iid))
        add(c.ApplyReceipt(receipt_id=rid, invoice_id=iid, amount=amount, entry_date=day))
        if card_fee:
            add(c.GrantFeeAllowance(invoice_id=iid, amount=card_fee, entry_date=day))
        if amount + card_fee == open_:
            del st.invoices[iid]
        else:
            st.invoices[iid] = (cust, open_ - amount, st.invoices[iid][2])
        st.n_line += 1
        lid = f"SL-{st.n_line:07d}"
        lines.append(c.StatementLineIn(line_id=lid, entry_date=day, amount=amount,
                                       description=f"ACH CREDIT {cust}", reference=iid))
        matches.append(c.MatchStatementLine(line_id=lid,
                                            targets=(c.MatchRef(kind="receipt", doc_id=rid),)))
    # Purchases: bills, approved by the controller.
    for _ in range(rng.randint(per_day // 4, per_day // 2)):
        st.n_bill += 1
        bid = f"BILL-{st.n_bill:07d}"
        vendor = f"V{rng.randint(1, vendors):04d}"
        amount = rng.randint(5_000, 400_000)
        add(c.EnterBill(bill_id=bid, vendor_id=vendor, vendor_invoice_number=f"VI-{st.n_bill}",
                        entry_date=day, lines=(c.BillLineIn(
                            description="Services", amount=amount,
                            account=rng.choice(("6000", "6100", "6200", "6300"))),)))
        add(c.ApproveBill(bill_id=bid), f"agent:controller-{day.isoformat()}", "controller")
        st.bills[bid] = (vendor, amount, day)
    # Now and then a credit memo on an open invoice, and a vendor credit on an open bill.
    if st.invoices and rng.random() < 0.3:
        iid = rng.choice(sorted(st.invoices))
        cust, open_, issued = st.invoices[iid]
        credit = max(1, open_ // 10)
        st.n_cm += 1
        add(c.IssueCreditMemo(credit_memo_id=f"CM-{st.n_cm:07d}", invoice_id=iid, amount=credit,
                              reason="Service credit", entry_date=day))
        st.invoices[iid] = (cust, open_ - credit, issued)
    if st.bills and rng.random() < 0.2:
        bid = rng.choice(sorted(st.bills))
        vendor, open_, entered = st.bills[bid]
        credit = max(1, open_ // 20)
        st.n_vc += 1
        vcid = f"VC-{st.n_vc:07d}"
        add(c.RecordVendorCredit(credit_id=vcid, vendor_id=vendor, entry_date=day,
                                 vendor_credit_number=f"CN-{st.n_vc}", amount=credit,
                                 account="6000"))
        add(c.ApplyVendorCredit(credit_id=vcid, bill_id=bid, amount=credit, entry_date=day))
        st.bills[bid] = (vendor, open_ - credit, entered)
    due = [k for k, (_, _, d) in st.bills.items() if (day - d).days >= 5]
    for bid in rng.sample(due, min(len(due), rng.randint(per_day // 4, per_day // 2))):
        vendor, amount, _ = st.bills.pop(bid)
        st.n_pay += 1
        pid = f"PAY-{st.n_pay:07d}"
        add(c.PayVendor(payment_id=pid, vendor_id=vendor, bank_account_id=BANK, entry_date=day,
                        applications=(c.BillPayment(bill_id=bid, amount=amount),)))
        st.n_line += 1
        lid = f"SL-{st.n_line:07d}"
        lines.append(c.StatementLineIn(line_id=lid, entry_date=day, amount=-amount,
                                       description=f"ACH DEBIT {vendor}", reference=pid))
        matches.append(c.MatchStatementLine(line_id=lid,
                                            targets=(c.MatchRef(kind="payment", doc_id=pid),)))
    # Journal entries: accruals, now and then reversed.
    for _ in range(rng.randint(0, 3)):
        st.n_je += 1
        jid = f"JE-{st.n_je:07d}"
        amt = rng.randint(1_000, 250_000)
        add(c.PostJournalEntry(entry_id=jid, entry_date=day, memo="Accrued expenses", lines=(
            c.JournalLineIn(account=rng.choice(("6000", "6200", "6300")), debit=amt),
            c.JournalLineIn(account="2100", credit=amt))))
        st.journal.append(jid)
    if st.journal and rng.random() < 0.3:
        jid = st.journal.pop(0)
        st.n_je += 1
        add(c.ReverseJournalEntry(entry_id=jid, reversal_id=f"JE-{st.n_je:07d}", entry_date=day))
    # Month-end close: the controller closes last month once the first week is over.
    last_month = (day.replace(day=1) - timedelta(days=1)).strftime("%Y-%m")
    if day.day >= 6 and last_month not in st.closed and last_month >= st.first_month:
        add(c.ClosePeriod(period=last_month), f"agent:controller-{day.isoformat()}",
            "controller")
        st.closed.add(last_month)
    # The bank's side: the day's statement lines, a fee now and then, then matching.
    bank_fee: c.RecordBankFee | None = None
    if rng.random() < 0.2:
        st.n_line += 1
        st.n_fee += 1
        fee_amount = rng.choice((1_500, 2_500, 3_000))
        lid = f"SL-{st.n_line:07d}"
        lines.append(c.StatementLineIn(line_id=lid, entry_date=day, amount=-fee_amount,
                                       description="SERVICE CHARGE"))
        bank_fee = c.RecordBankFee(fee_id=f"FEE-{st.n_fee:07d}", bank_account_id=BANK,
                              entry_date=day, amount=fee_amount, memo="monthly fee", line_id=lid)
    out = [Submission(cmd, actor, role, day) for cmd, actor, role in cmds]
    events = len(out)
    if lines:
        out.append(Submission(c.ImportStatementLines(bank_account_id=BANK, lines=tuple(lines)),
                              "system:bank-feed", "system", day))
        events += len(lines)
        out += [Submission(m, clerk, "clerk", day) for m in matches]
        events += len(matches)
    if bank_fee is not None:
        out.append(Submission(bank_fee, clerk, "clerk", day))
        events += 2
    return out, events
