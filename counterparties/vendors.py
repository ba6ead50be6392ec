"""Vendors: they bill the company, bill twice, credit, send statements and change banks.

A ``Vendor`` is a set of SimPy processes over one behaviour profile. It acts only in
the world realm (``BillIssued``, ``CreditNoteIssued``, ``BankChangeAsked``) and sends
documents to the company's inbox (text invoices and credit notes, emails, a CSV
statement of account); it never writes the books. It keeps its own books (what it
billed, what it credited, what it was paid), and its monthly statement comes from
them, so a statement is an independent record to reconcile payables against.

Randomness: the vendor's character (its rates, invoice-number format, trade) is
drawn from its stream ``vendor:<id>``; each behaviour (billing, its bank change,
what injections plant on it) draws from its own child of that stream, so that an
injection never shifts the vendor's ordinary bills. Names and addresses come from
the faker of the same stream. Every id a vendor makes comes from its own counters,
so adding a vendor changes no other vendor's events.

The injections ``duplicate_bill``, ``near_duplicate_bill``, ``price_variance_bill``,
``fraudulent_bank_change`` and ``genuine_bank_change`` are planted here.
"""

from __future__ import annotations

import re
import textwrap
import weakref
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from email.utils import formataddr
from typing import Any, Literal

import numpy as np

from counterparties.injections import VendorParams, register
from counterparties.noise import CLEAN, bill_format, email_request
from counterparties.planting import injection_rng, mark_planted, pick
from counterparties.specs import PlannedInjection, PopulationView, VendorSpec
from erp.books import document_number_key
from erp.events import BankDetails
from erp.money import display_cents, format_cents
from sim.documents import deliver, deliver_binary, deliver_email, render_csv
from sim.engine import Engine, Phase
from sim.pdf import render_text_pdf
from sim.world_events import (
    BankChangeAsked,
    BillIssued,
    CreditNoteIssued,
    OrderLine,
    PaymentReceived,
    WorldEvent,
)

BUSINESS_DAYS_PER_MONTH = 21.75
"""How many business days a month has, on average (bills_per_month -> a daily rate)."""

BANK_CHANGE_PHASE = Phase.COUNTERPARTIES + 0.02
"""Bank-detail requests come after the day's bills (which still show the old account)."""

STATEMENT_PHASE = Phase.COUNTERPARTIES + 0.05
"""Statements go out after the day's bills, before the turn."""

STATEMENT_COLUMNS = ("date", "document", "description", "charges", "credits", "balance")

LATE_FEE_GRACE_DAYS = 3
"""A vendor charging late fees looks, this many days after an invoice's due date (the first
business day then), whether a payment dated by the due date reached it; if none did, it
charges the fee in its own books and sends a notice."""

TRADES: dict[str, tuple[str, ...]] = {
    "it": ("Managed IT services", "Software licences", "Cloud hosting",
           "Help-desk support hours", "Network maintenance"),
    "office": ("Copy paper (cases)", "Printer toner", "Office chairs", "Stationery",
               "Breakroom supplies"),
    "logistics": ("Freight (LTL)", "Pallet storage", "Courier deliveries", "Fuel surcharge",
                  "Handling"),
    "facilities": ("Janitorial services", "HVAC maintenance", "Waste removal",
                   "Window cleaning", "Security patrol"),
    "marketing": ("Campaign management", "Print collateral", "Trade-show booth",
                  "Design hours", "Media buying"),
    "professional": ("Consulting hours", "Legal review", "Tax advisory", "Audit support",
                     "Training day"),
}
"""What a vendor sells, by trade (a vendor's trade is drawn once)."""

CREDIT_REASONS = ("Pricing adjustment", "Goods returned", "Service-level credit",
                  "Volume discount", "Short delivery")

_LEGAL_SUFFIXES = {"llc", "inc", "ltd", "co", "corp", "corporation", "plc", "gmbh", "lp",
                   "llp", "and", "group", "company"}
_HOMOGLYPHS = (("i", "l"), ("l", "1"), ("o", "0"), ("m", "rn"), ("w", "vv"), ("e", "3"))

BillKind = Literal["original", "duplicate", "near_duplicate", "price_variance"]


# --- invoice numbers -------------------------------------------------------------------


NumberStyle = Literal["year", "letter", "plain"]
NUMBER_STYLES: tuple[NumberStyle, ...] = ("year", "letter", "plain")
"""The ways a vendor numbers its invoices, in the order its draw indexes them."""


@dataclass(frozen=True)
class NumberFormat:
    """How a vendor numbers its invoices, and how its systems sometimes reformat them.

    Styles: ``year`` (``INV-2026-0042``), ``letter`` (``A10017``), ``plain`` (``7731``).
    A reformatted number keeps the same digits (up to zero padding) and differs in
    its other characters, case aside (so the books' duplicate check does not see it).
    """

    style: NumberStyle
    prefix: str = ""

    def render(self, year: int, seq: int) -> str:
        """The invoice number of a sequence number."""
        if self.style == "year":
            return f"{self.prefix}-{year}-{seq:04d}"
        if self.style == "letter":
            return f"{self.prefix}{seq}"
        return str(seq)

    def variants(self, year: int, seq: int) -> tuple[str, ...]:
        """The same number as other systems of the vendor write it."""
        if self.style == "year":
            return (f"{self.prefix}{year}{seq:04d}", f"{year}-{seq:04d}",
                    f"{self.prefix} {year}/{seq:04d}")
        if self.style == "letter":
            return (f"{self.prefix}-{seq}", str(seq), f"{self.prefix} {seq:07d}")
        return (f"{seq:08d}", f"#{seq}", f"No. {seq}")


# --- what a vendor issues and records ----------------------------------------------------


@dataclass(frozen=True)
class Bill:
    """A bill as the vendor issued it (one per ``BillIssued``)."""

    ref: str
    number: str
    seq: int
    issued_on: date
    due_on: date
    lines: tuple[OrderLine, ...]
    total: int
    agreed_total: int
    kind: BillKind
    duplicate_of: str | None = None
    quote: str | None = None
    variance_share: float | None = None
    text: str = ""
    discount: int = 0
    discount_until: date | None = None
    late_fee: int = 0


@dataclass(frozen=True)
class VendorQuote:
    """A price the vendor agreed with the company before it billed."""

    number: str
    bill_ref: str
    issued_on: date
    lines: tuple[OrderLine, ...]

    @property
    def total(self) -> int:
        """The agreed total."""
        return line_total(self.lines)


@dataclass(frozen=True)
class BookEntry:
    """A line of the vendor's own books: charges positive, credits negative."""

    on: date
    document: str
    description: str
    amount: int


@dataclass(frozen=True)
class PaymentTerms:
    """A vendor's payment terms beyond net days: an early-payment discount, a late fee,
    whether it suspends service over an unpaid invoice, and how its invoices word them."""

    discount_bp: int = 0
    discount_days: int = 10
    late_fee_bp: int = 0
    critical: bool = False
    style: int = 0

    @property
    def any(self) -> bool:
        """Whether the terms print anything on an invoice."""
        return bool(self.discount_bp or self.late_fee_bp or self.critical)


def share_of(total: int, bp: int) -> int:
    """``bp`` basis points of ``total`` cents, rounded half up to the cent."""
    return (total * bp + 5_000) // 10_000


def _pct(bp: int) -> str:
    return f"{bp / 100:g}%"


@dataclass
class _Counters:
    bills: int = 0
    requests: int = 0
    invoice_seq: int = 0
    credit_seq: int = 0
    quote_seq: int = 0


def line_total(lines: Sequence[OrderLine]) -> int:
    """The total of bill lines, in cents."""
    return sum(x.quantity * x.unit_price for x in lines)


def _rate(value: float) -> float:
    return min(1.0, max(0.0, value))


def _slug(name: str) -> str:
    words = [w for w in re.findall(r"[a-z0-9]+", name.casefold()) if w not in _LEGAL_SUFFIXES]
    return "-".join(words) or "vendor"


def _safe_filename(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", text).strip("_") or "document"


def wrap_body(text: str, width: int = 76) -> str:
    """An email body with its long lines wrapped (so it travels as readable 7-bit text)."""
    return "\n".join(textwrap.fill(line, width, break_on_hyphens=False) if len(line) > width
                     else line for line in text.split("\n"))


def lookalike_domain(domain: str, rng: np.random.Generator) -> str:
    """A domain that a hurried reader takes for ``domain`` (``initech-billing.co``)."""
    base, _, tld = domain.partition(".")
    tld = tld or "com"
    options = [f"{base}-billing.co", f"{base}-payments.com", f"{base}.{tld}.co",
               f"{base}s.{tld}"]
    for old, new in _HOMOGLYPHS:
        if old in base:
            options.append(f"{base.replace(old, new, 1)}.{tld}")
            break
    options = [o for o in options if o.casefold() != domain.casefold()]
    return options[int(rng.integers(len(options)))]


# --- the vendor ----------------------------------------------------------------------------


class Vendor:
    """A supplier of the company: bills, resends, credits, statements and bank changes."""

    def __init__(self, engine: Engine, population: PopulationView, spec: VendorSpec) -> None:
        self.engine = engine
        self.population = population
        self.spec = spec
        self.vendor_id = spec.vendor_id
        self.name = spec.name
        self.actor = f"counterparty:{spec.vendor_id}"
        self.genuine_bank: BankDetails = spec.bank
        """The account the vendor really owns now (changes only with a genuine change)."""
        self.former_banks: list[BankDetails] = []
        self.bills: list[Bill] = []
        self.quotes: list[VendorQuote] = []
        self.book: list[BookEntry] = []
        self._opened = False
        self._stated = 0  # entries of ``book`` already on a statement
        self._stated_on = engine.calendar.start - timedelta(days=1)
        self._n = _Counters()

        stream = f"vendor:{spec.vendor_id}"
        root = engine.streams.generator(stream)
        self._rng_bills, self._rng_changes, self._rng_injections = engine.streams.children(
            stream, 3)
        p = spec.profile
        # The vendor's character, drawn once, in this order.
        self.bills_per_month = max(0.0, p.bills_per_month.draw(root))
        self.duplicate_rate = _rate(p.duplicate_rate.draw(root))
        self.near_duplicate_rate = _rate(p.near_duplicate_rate.draw(root))
        self.price_variance_rate = _rate(p.price_variance_rate.draw(root))
        self.credit_note_rate = _rate(p.credit_note_rate.draw(root))
        bank_change_rate = _rate(p.bank_change_rate.draw(root))
        fraud_share = _rate(p.fraud_share.draw(root))
        style = NUMBER_STYLES[int(root.integers(3))]
        prefix = {"year": "INV", "letter": "ABCDKMPRST"[int(root.integers(10))],
                  "plain": ""}[style]
        self.number_format = NumberFormat(style, prefix)
        self._n.invoice_seq = int(root.integers(*{"year": (1, 400), "letter": (10_000, 90_000),
                                                  "plain": (1_000, 9_000)}[style]))
        self._n.credit_seq = int(root.integers(100, 900))
        self._n.quote_seq = int(root.integers(1, 300))
        trade = sorted(TRADES)[int(root.integers(len(TRADES)))]
        self.catalogue = TRADES[trade]
        self.quotes_prices = self.price_variance_rate > 0
        """Whether the vendor agrees prices in a quote before it bills (then it may overbill)."""
        self.planned_bank_change: tuple[date, bool] | None = None
        changes, fraud = root.random() < bank_change_rate, root.random() < fraud_share
        days = engine.calendar.business_days()
        first = min(len(days) - 1, max(1, len(days) // 4))
        at = int(root.integers(first, len(days))) if days else 0
        if changes and days:
            self.planned_bank_change = (days[at], not fraud)

        fake = engine.streams.faker(f"vendor:{spec.vendor_id}")
        self.address = (fake.street_address(), f"{fake.city()}, {fake.state_abbr()} "
                                               f"{fake.zipcode()}")
        self.phone = f"+1 ({fake.random_int(201, 989)}) 555-{fake.random_int(100, 9999):04d}"
        """The vendor's known phone number (on every document it sends)."""
        self.contact = fake.name()
        self.email = spec.email or f"billing@{_slug(spec.name)}.example"
        self.domain = self.email.rpartition("@")[2]
        terms = engine.streams.generator(f"vendor:{spec.vendor_id}:terms")
        self.terms = PaymentTerms(
            discount_bp=max(0, round(p.discount_bp.draw(terms))),
            discount_days=max(0, round(p.discount_days.draw(terms))),
            late_fee_bp=max(0, round(p.late_fee_bp.draw(terms))),
            critical=bool(terms.random() < _rate(p.critical_share.draw(terms))),
            style=int(terms.integers(3)))
        """The vendor's payment terms (their own stream: no other draw moves)."""
        self._received: set[str] = set()

    # --- wiring ---------------------------------------------------------------------------

    def start(self) -> None:
        """Register the vendor's processes and listeners on the engine."""
        self.engine.world.subscribe(PaymentReceived, self._payment_received)
        self.engine.process(self.issues_bills())
        self.engine.process(self.sends_statements())
        if self.planned_bank_change is not None:
            day, genuine = self.planned_bank_change
            self.engine.process(self.changes_bank(day) if genuine
                                else self.is_impersonated(day))

    def emit(self, event: WorldEvent) -> None:
        """Record one of the vendor's world events."""
        self.engine.world.emit(event, self.actor)

    @property
    def balance(self) -> int:
        """What the vendor's own books say the company owes it, in cents."""
        return sum(e.amount for e in self.book)

    # --- processes --------------------------------------------------------------------------

    def issues_bills(self) -> Generator[Any, Any, None]:
        """Bill the company on business days at the vendor's own rate."""
        rng = self._rng_bills
        lam = self.bills_per_month / BUSINESS_DAYS_PER_MONTH
        for day in self.engine.calendar.business_days():
            yield self.engine.until(day, Phase.COUNTERPARTIES)
            for _ in range(int(rng.poisson(lam))):
                self._bill_something(rng)

    def bills_against_quote(self, quote: VendorQuote, day: date, variance_bp: int,
                            rng: np.random.Generator) -> Generator[Any, Any, None]:
        """Bill a quoted order on ``day``: at the agreed prices, or ``variance_bp`` above."""
        yield self.engine.until(day, Phase.COUNTERPARTIES)
        lines = tuple(OrderLine(description=x.description, quantity=x.quantity,
                                unit_price=(x.unit_price * (10_000 + variance_bp) + 5_000)
                                // 10_000) for x in quote.lines)
        kind: BillKind = "price_variance" if line_total(lines) > quote.total else "original"
        bill = self._issue(lines, kind=kind, agreed_total=quote.total, quote=quote.number,
                           ref=quote.bill_ref,
                           variance_share=variance_bp / 10_000 if kind != "original" else None)
        self._after_issue(bill, rng)

    def bills_twice(self, original: Bill, day: date, ref: str,
                    as_email: bool) -> Generator[Any, Any, None]:
        """Send the same invoice again on ``day`` (same number, same amount)."""
        yield self.engine.until(day, Phase.COUNTERPARTIES)
        self._resend(original, ref=ref, kind="duplicate", number=original.number,
                     as_email=as_email)

    def rebills_under_new_number(self, original: Bill, day: date, ref: str, number: str,
                                 as_email: bool) -> Generator[Any, Any, None]:
        """Send the invoice again on ``day`` with its number reformatted, same amount."""
        yield self.engine.until(day, Phase.COUNTERPARTIES)
        self._resend(original, ref=ref, kind="near_duplicate", number=number,
                     as_email=as_email)

    def credits_part_of_bill(self, bill: Bill, day: date, amount: int,
                             reason: str) -> Generator[Any, Any, None]:
        """Credit ``amount`` of a bill on ``day``, with a credit note."""
        yield self.engine.until(day, Phase.COUNTERPARTIES)
        self.credit(bill, amount, reason)

    def sends_statements(self) -> Generator[Any, Any, None]:
        """Send a statement of account on the last business day of every month."""
        cal = self.engine.calendar
        yield self.engine.until(cal.start, Phase.DAY_START)
        self._open_books()
        for day in cal.business_days():
            if cal.is_last_business_day_of_month(day):
                yield self.engine.until(day, STATEMENT_PHASE)
                self.send_statement()

    def changes_bank(self, day: date) -> Generator[Any, Any, None]:
        """Move to a new bank on ``day``, telling the company from the usual address."""
        yield self.engine.until(day, BANK_CHANGE_PHASE)
        self.ask_genuine_bank_change(self._rng_changes)

    def is_impersonated(self, day: date) -> Generator[Any, Any, None]:
        """On ``day`` a fraudster, posing as the vendor, asks to redirect its payments."""
        yield self.engine.until(day, BANK_CHANGE_PHASE)
        self.ask_fraudulent_bank_change(self._rng_changes)

    # --- billing ------------------------------------------------------------------------------

    def compose_lines(self, rng: np.random.Generator) -> tuple[OrderLine, ...]:
        """One to three lines of the vendor's catalogue, adding up to about ``bill_amount``."""
        target = max(100, round(self.spec.profile.bill_amount.draw(rng) * 100))
        n = int(rng.integers(1, 4))
        items = rng.choice(len(self.catalogue), size=n, replace=False)
        weights = rng.dirichlet(np.full(n, 2.0))
        lines = []
        for item, weight in zip(items, weights, strict=True):
            quantity = int(rng.integers(1, 6))
            unit = max(100, round(target * float(weight) / quantity))
            lines.append(OrderLine(description=self.catalogue[int(item)], quantity=quantity,
                                   unit_price=unit))
        return tuple(lines)

    def _bill_something(self, rng: np.random.Generator) -> None:
        lines = self.compose_lines(rng)
        overbills = rng.random() < self.price_variance_rate
        share = self.spec.profile.price_variance.draw(rng)
        lag = int(rng.integers(1, 4))
        if self.quotes_prices:
            bp = max(0, round(share * 10_000)) if overbills else 0
            self.quote_then_bill(lines, lag=lag, variance_bp=bp, rng=rng)
        else:
            self._after_issue(self._issue(lines, kind="original"), rng)

    def quote_then_bill(self, lines: tuple[OrderLine, ...], *, lag: int, variance_bp: int,
                        rng: np.random.Generator) -> VendorQuote:
        """Email a quote with the agreed prices now; bill it ``lag`` business days later."""
        quote = self.send_quote(lines)
        day = self.engine.calendar.add_business_days(self.engine.today, lag)
        self.engine.process(self.bills_against_quote(quote, day, variance_bp, rng))
        return quote

    def _next_ref(self) -> str:
        self._n.bills += 1
        return f"{self.vendor_id}-B{self._n.bills:05d}"

    def _issue(self, lines: tuple[OrderLine, ...], *, kind: BillKind,
               agreed_total: int | None = None, quote: str | None = None,
               ref: str | None = None, variance_share: float | None = None) -> Bill:
        """Issue a new invoice now: a world event, the vendor's books, the document."""
        today = self.engine.today
        self._n.invoice_seq += 1
        seq = self._n.invoice_seq
        total = line_total(lines)
        bill = Bill(ref=ref or self._next_ref(), number=self.number_format.render(today.year, seq),
                    seq=seq, issued_on=today,
                    due_on=today + timedelta(days=self.spec.terms_days), lines=lines,
                    total=total, agreed_total=total if agreed_total is None else agreed_total,
                    kind=kind, quote=quote, variance_share=variance_share)
        t = self.terms
        if t.discount_bp:
            bill = replace(bill, discount=share_of(total, t.discount_bp),
                           discount_until=min(bill.due_on,
                                              today + timedelta(days=t.discount_days)))
        if t.late_fee_bp:
            bill = replace(bill, late_fee=share_of(total, t.late_fee_bp))
        bill = replace(bill, text=self.render_invoice(bill))
        self._record_bill(bill)
        self.book.append(BookEntry(today, bill.number, f"Invoice {bill.number}", total))
        self._send_bill(bill, self._bill_truth(bill))
        if bill.late_fee and kind == "original":
            self.engine.process(self.charges_late_fee(bill))
        return bill

    def _after_issue(self, bill: Bill, rng: np.random.Generator) -> None:
        """Decide whether this bill will be sent twice, reformatted, or partly credited."""
        cal, today = self.engine.calendar, self.engine.today
        twice, near, credit = (rng.random() < self.duplicate_rate,
                               rng.random() < self.near_duplicate_rate,
                               rng.random() < self.credit_note_rate)
        lags = [int(x) for x in rng.integers(2, 8, size=3)]
        as_email = [bool(x) for x in rng.random(2) < 0.5]
        variant = int(rng.integers(3))
        credit_share = float(rng.uniform(0.05, 0.3))
        reason = CREDIT_REASONS[int(rng.integers(len(CREDIT_REASONS)))]
        if twice:
            self.engine.process(self.bills_twice(bill, cal.add_business_days(today, lags[0]),
                                                 self._next_ref(), as_email[0]))
        if near:
            number = self.number_format.variants(bill.issued_on.year, bill.seq)[variant]
            self.engine.process(self.rebills_under_new_number(
                bill, cal.add_business_days(today, lags[1]), self._next_ref(), number,
                as_email[1]))
        if credit:
            amount = max(1, round(bill.total * credit_share))
            self.engine.process(self.credits_part_of_bill(
                bill, cal.add_business_days(today, lags[2]), amount, reason))

    def _resend(self, original: Bill, *, ref: str, kind: BillKind, number: str,
                as_email: bool) -> Bill:
        """Send an invoice again (the vendor's books do not count it a second time)."""
        bill = replace(original, ref=ref, number=number, kind=kind, duplicate_of=original.ref)
        if number != original.number:
            bill = replace(bill, text=self.render_invoice(bill))
        self._record_bill(bill)
        truth = self._bill_truth(bill)
        if as_email:
            body = (f"Hello,\n\nPlease find below a copy of our invoice {number} of "
                    f"{bill.issued_on.isoformat()} for your records.\n\n{bill.text}\n"
                    f"Kind regards,\n{self.contact}\n{self.name}\n{self.phone}\n")
            deliver_email(self.engine, actor=self.actor,
                          sender=formataddr((self.name, self.email)),
                          subject=f"Invoice {number} - copy", body=wrap_body(body),
                          slug=f"resend-invoice-{_safe_filename(number)}", truth=truth)
        else:
            self._send_bill(bill, truth)
        return bill

    def _send_bill(self, bill: Bill, truth: dict[str, Any]) -> None:
        """Send an invoice: a text file; with document noise, maybe a PDF of the same page,
        or an email carrying it under a free-text request (``counterparties.noise``)."""
        noise = getattr(self.population, "noise", None) or CLEAN
        key = f"{self.vendor_id}:{bill.ref}"
        fmt = bill_format(self.engine.streams, key, noise)
        name = _safe_filename(bill.number)
        subject = f"Invoice {bill.number} from {self.name}"
        if fmt == "pdf":
            deliver_binary(self.engine, actor=self.actor, kind="bill",
                           filename=f"invoice-{name}.pdf", sender=self.email, subject=subject,
                           data=render_text_pdf(title=subject, text=bill.text), truth=truth)
        elif fmt == "email":
            request = email_request(self.engine.streams, key)
            body = (f"Hello,\n\nPlease find our invoice {bill.number} below. {request}\n\n"
                    f"{bill.text}\nKind regards,\n{self.contact}\n{self.name}\n{self.phone}\n")
            deliver_email(self.engine, actor=self.actor,
                          sender=formataddr((self.name, self.email)), subject=subject,
                          body=wrap_body(body), kind="bill", slug=f"invoice-{name}",
                          truth=truth)
        else:
            deliver(self.engine, actor=self.actor, kind="bill",
                    filename=f"invoice-{name}.txt", sender=self.email, subject=subject,
                    content=bill.text, truth=truth)

    def _record_bill(self, bill: Bill) -> None:
        self.bills.append(bill)
        self.emit(BillIssued(vendor_id=self.vendor_id, bill_ref=bill.ref,
                             invoice_number=bill.number, issued_on=bill.issued_on,
                             due_on=bill.due_on, lines=bill.lines, total=bill.total,
                             agreed_total=bill.agreed_total, kind=bill.kind,
                             duplicate_of=bill.duplicate_of))

    def _bill_truth(self, bill: Bill) -> dict[str, Any]:
        truth = {"vendor_id": self.vendor_id, "bill_ref": bill.ref, "kind": bill.kind,
                 "duplicate_of": bill.duplicate_of, "invoice_number": bill.number,
                 "total": bill.total, "agreed_total": bill.agreed_total, "quote": bill.quote,
                 "variance_share": bill.variance_share}
        if self.terms.any:  # only a vendor with terms: every other truth stays as it was
            truth.update(issued_on=bill.issued_on.isoformat(), due_on=bill.due_on.isoformat(),
                         discount=bill.discount,
                         discount_until=(bill.discount_until.isoformat()
                                         if bill.discount_until else None),
                         late_fee=bill.late_fee, critical=self.terms.critical)
        return truth

    # --- late fees --------------------------------------------------------------------------

    def charges_late_fee(self, bill: Bill) -> Generator[Any, Any, None]:
        """After the grace days, charge the late fee unless a payment dated by the due date
        settled the invoice (the vendor reads the remittance of every payment it received)."""
        cal = self.engine.calendar
        day = cal.next_business_day(bill.due_on + timedelta(days=LATE_FEE_GRACE_DAYS))
        if day > cal.end:
            return
        yield self.engine.until(day, Phase.COUNTERPARTIES)
        if self.paid_by(bill, bill.due_on) >= bill.total:
            return
        today = self.engine.today
        number = f"LF-{bill.number}"
        self.book.append(BookEntry(today, number, f"Late fee on invoice {bill.number}",
                                   bill.late_fee))
        text = "\n".join([
            *self._letterhead(), "", f"LATE FEE NOTICE {number}", "",
            f"Date:             {today.isoformat()}",
            f"To:               {self.population.company_name}",
            f"Invoice:          {bill.number} of {bill.issued_on.isoformat()}, due "
            f"{bill.due_on.isoformat()}, unpaid",
            f"Late fee:         USD {display_cents(bill.late_fee)} "
            f"({_pct(self.terms.late_fee_bp)} of {display_cents(bill.total)}, per our terms)", ""])
        deliver(self.engine, actor=self.actor, kind="other",
                filename=f"late-fee-{_safe_filename(bill.number)}.txt", sender=self.email,
                subject=f"Late fee on invoice {bill.number} - {self.name}", content=text,
                truth={"vendor_id": self.vendor_id, "kind": "late_fee", "bill_ref": bill.ref,
                       "invoice_number": bill.number, "amount": bill.late_fee})

    def paid_by(self, bill: Bill, by: date) -> int:
        """What payments dated by ``by`` (and their discounts) settled of one of its bills,
        from the remittances of the payments the vendor received."""
        store = self.engine.ledger.store
        key = document_number_key(bill.number)
        ours = {e.data["bill_id"] for e in store.read(types=["bill_entered"])
                if e.data["vendor_id"] == self.vendor_id
                and document_number_key(e.data["vendor_invoice_number"]) == key}
        settled = 0
        for e in store.read(types=["vendor_paid", "purchase_discount_taken"]):
            d = e.data
            if d["payment_id"] not in self._received or date.fromisoformat(d["entry_date"]) > by:
                continue
            if e.type == "vendor_paid":
                settled += sum(a["amount"] for a in d["applications"] if a["bill_id"] in ours)
            elif d["bill_id"] in ours:
                settled += d["amount"]
        return settled

    def send_quote(self, lines: tuple[OrderLine, ...], bill_ref: str | None = None) -> VendorQuote:
        """Email the company a quote: the prices the vendor agrees to bill."""
        today = self.engine.today
        self._n.quote_seq += 1
        quote = VendorQuote(number=f"Q-{today.year}-{self._n.quote_seq:03d}",
                            bill_ref=bill_ref or self._next_ref(), issued_on=today, lines=lines)
        self.quotes.append(quote)
        body = (f"Hello,\n\nThank you for your order. As agreed, we will supply the following "
                f"at the prices below (quote {quote.number}, {today.isoformat()}):\n\n"
                f"{self._lines_table(lines)}\n\nWe will invoice on delivery; please quote "
                f"{quote.number} in any correspondence. These prices are fixed for 30 days."
                f"\n\nBest regards,\n{self.contact}\n{self.name}\n{self.phone}\n")
        deliver_email(self.engine, actor=self.actor, sender=formataddr((self.name, self.email)),
                      subject=f"Quote {quote.number} - {self.name}", body=wrap_body(body),
                      slug=f"quote-{quote.number}",
                      truth={"vendor_id": self.vendor_id, "kind": "quote",
                             "quote_number": quote.number, "bill_ref": quote.bill_ref,
                             "agreed_total": quote.total})
        return quote

    # --- credit notes -------------------------------------------------------------------------

    def credit(self, bill: Bill, amount: int, reason: str) -> str:
        """Issue a credit note for ``amount`` of a bill now; its number."""
        today = self.engine.today
        self._n.credit_seq += 1
        number = f"CN-{self._n.credit_seq}"
        self.emit(CreditNoteIssued(vendor_id=self.vendor_id, number=number, amount=amount,
                                   for_bill_ref=bill.ref))
        self.book.append(BookEntry(today, number, f"Credit note {number} "
                                                  f"(invoice {bill.number})", -amount))
        text = "\n".join([
            *self._letterhead(), "", f"CREDIT NOTE {number}", "",
            f"Date:             {today.isoformat()}",
            f"Credit to:        {self.population.company_name}",
            f"Against invoice:  {bill.number} of {bill.issued_on.isoformat()}",
            f"Reason:           {reason}", "",
            f"Amount credited:  USD {display_cents(amount)}", "",
            "This credit may be deducted from your next payment to us.", ""])
        deliver(self.engine, actor=self.actor, kind="credit_note",
                filename=f"credit-note-{_safe_filename(number)}.txt", sender=self.email,
                subject=f"Credit note {number} from {self.name}", content=text,
                truth={"vendor_id": self.vendor_id, "credit_number": number,
                       "for_bill_ref": bill.ref, "for_invoice_number": bill.number,
                       "amount": amount})
        return number

    # --- the vendor's own books and its statement -------------------------------------------

    def _open_books(self) -> None:
        """Take over the bills open when the scenario starts (both sides agree on them).

        They are brought forward into the first statement's opening balance.
        """
        if self._opened:
            return
        self._opened = True
        start = self.engine.calendar.start
        opening = [BookEntry(on, number, f"Invoice {number}", total)
                   for on, number, total in _opening_bills(self.engine).get(self.vendor_id, [])
                   if on < start]
        self.book[:0] = sorted(opening, key=lambda e: (e.on, e.document))
        self._stated += len(opening)

    def _payment_received(self, event: WorldEvent, actor: str) -> None:
        assert isinstance(event, PaymentReceived)
        if event.vendor_id != self.vendor_id:
            return
        self._received.add(event.payment_id)
        self.book.append(BookEntry(self.engine.today, event.payment_id,
                                   "Payment received - thank you", -event.amount))

    def statement_rows(self) -> list[tuple[str, ...]]:
        """The next statement of account: the balance brought forward from the last one, then
        every entry since (an entry made after a statement was cut is on the next one)."""
        forward = sum(e.amount for e in self.book[:self._stated])
        rows: list[tuple[str, ...]] = [(self._stated_on.isoformat(), "", "Balance forward", "",
                                        "", format_cents(forward))]
        running = forward
        for e in self.book[self._stated:]:
            running += e.amount
            rows.append((e.on.isoformat(), e.document, e.description,
                         format_cents(e.amount) if e.amount > 0 else "",
                         format_cents(-e.amount) if e.amount < 0 else "",
                         format_cents(running)))
        return rows

    def send_statement(self) -> None:
        """Send the month's statement of account (CSV) from the vendor's own books."""
        self._open_books()
        if not self.book:
            return
        day = self.engine.today
        period = f"{day.year:04d}-{day.month:02d}"
        rows = self.statement_rows()
        deliver(self.engine, actor=self.actor, kind="statement",
                filename=f"statement-{_slug(self.name)}-{period}.csv", sender=self.email,
                subject=f"Statement of account {period} - {self.name}",
                content=render_csv(STATEMENT_COLUMNS, rows),
                truth={"vendor_id": self.vendor_id, "period": period, "balance": self.balance})
        self._stated, self._stated_on = len(self.book), day

    # --- bank details ---------------------------------------------------------------------------

    def _new_account(self, rng: np.random.Generator) -> BankDetails:
        return BankDetails(account_name=self.name, routing=str(int(rng.integers(10**8, 10**9))),
                           account_number=str(int(rng.integers(10**9, 10**10))))

    def _next_request_ref(self) -> str:
        self._n.requests += 1
        return f"{self.vendor_id}-BC{self._n.requests:02d}"

    def ask_genuine_bank_change(self, rng: np.random.Generator) -> BankChangeAsked:
        """Move to a new account now and ask the company, from the usual address, to pay it.

        The new account is the vendor's from today; the email offers a call-back on the
        phone number of its earlier documents.
        """
        new, old, today = self._new_account(rng), self.genuine_bank, self.engine.today
        ref = self._next_request_ref()
        body = (f"Dear Accounts Payable team,\n\n{self.name} has moved its banking. With effect "
                f"from {today.isoformat()}, please pay all our invoices to:\n\n"
                f"  Account name:   {new.account_name}\n  Routing number: {new.routing}\n"
                f"  Account number: {new.account_number}\n\n"
                f"Our previous account ending {old.account_number[-4:]} is being closed. "
                f"Please confirm this change by calling me on {self.phone}, the number on our "
                "invoices, before you update your records; I am happy to go through the "
                f"details by phone.\n\nKind regards,\n{self.contact}\nAccounts receivable, "
                f"{self.name}\n{self.address[0]}\n{self.address[1]}\n{self.phone}\n")
        asked = BankChangeAsked(vendor_id=self.vendor_id, request_ref=ref, new_bank=new,
                                genuine=True, sender=self.email, callback=self.phone)
        self.emit(asked)
        deliver_email(self.engine, actor=self.actor, sender=formataddr((self.name, self.email)),
                      subject=f"Change of bank details - {self.name}", body=wrap_body(body),
                      slug="bank-details-change",
                      truth={"vendor_id": self.vendor_id, "request_ref": ref, "genuine": True,
                             "callback": self.phone, "known_phone": self.phone,
                             "new_bank": new.model_dump(), "effective_on": today.isoformat()})
        self.former_banks.append(old)
        self.genuine_bank = new
        return asked

    def ask_fraudulent_bank_change(self, rng: np.random.Generator) -> BankChangeAsked:
        """A fraudster, from a look-alike domain, asks to redirect the vendor's payments now."""
        new = self._new_account(rng)
        domain = lookalike_domain(self.domain, rng)
        local = ("accounts", "finance", self.email.partition("@")[0])[int(rng.integers(3))]
        sender = f"{local}@{domain}"
        offers_phone = bool(rng.random() < 0.5)
        phone = _other_phone(rng, self.phone) if offers_phone else None
        reach = (f"I am travelling and can only be reached on my mobile, {phone}."
                 if phone else "Our phone lines are down during an office move, so please "
                 "reply to this email only.")
        ref = self._next_request_ref()
        body = (f"URGENT - PLEASE ACTION TODAY\n\nDear Accounts Payable,\n\nDue to an ongoing "
                f"audit our bank account can no longer receive funds. Effective immediately, "
                f"all payments to {self.name} must be sent to our new account:\n\n"
                f"  Account name:   {new.account_name}\n  Routing number: {new.routing}\n"
                f"  Account number: {new.account_number}\n\n"
                "Please update your records now and release any outstanding invoices to the "
                "new account today to avoid late fees and a hold on your deliveries. "
                f"{reach}\n\nRegards,\n{self.contact}\n{self.name}\n")
        asked = BankChangeAsked(vendor_id=self.vendor_id, request_ref=ref, new_bank=new,
                                genuine=False, sender=sender, callback=phone)
        self.emit(asked)
        deliver_email(self.engine, actor=self.actor, sender=formataddr((self.name, sender)),
                      subject=f"URGENT: updated remittance details - {self.name}",
                      body=wrap_body(body),
                      slug="updated-remittance-details",
                      truth={"vendor_id": self.vendor_id, "request_ref": ref, "genuine": False,
                             "callback": phone, "known_phone": self.phone,
                             "usual_sender": self.email, "new_bank": new.model_dump()})
        return asked

    def owns(self, bank: BankDetails) -> bool:
        """Whether an account is (or was) the vendor's own: routing and number, as banks see it."""
        key = (bank.routing.strip(), bank.account_number.strip())
        return any(key == (b.routing.strip(), b.account_number.strip())
                   for b in (self.genuine_bank, *self.former_banks))

    # --- rendering ------------------------------------------------------------------------------

    def _letterhead(self) -> list[str]:
        return [self.name.upper(), self.address[0], self.address[1],
                f"Phone {self.phone} | {self.email}"]

    @staticmethod
    def _lines_table(lines: Sequence[OrderLine]) -> str:
        rows = [f"{'Description':<32}{'Qty':>5}{'Unit price':>14}{'Amount':>14}", "-" * 65]
        rows += [f"{x.description:<32}{x.quantity:>5}{display_cents(x.unit_price):>14}"
                 f"{display_cents(x.quantity * x.unit_price):>14}" for x in lines]
        rows += ["-" * 65, f"{'Total USD':>51}{display_cents(line_total(lines)):>14}"]
        return "\n".join(rows)

    def render_invoice(self, bill: Bill) -> str:
        """The invoice as the plain text a person receives (shows only the billed prices)."""
        bank = self.genuine_bank
        head = [*self._letterhead(), "", f"INVOICE {bill.number}", "",
                f"Invoice number: {bill.number}",
                f"Invoice date:   {bill.issued_on.isoformat()}",
                f"Due date:       {bill.due_on.isoformat()} (net {self.spec.terms_days} days)",
                f"Bill to:        {self.population.company_name}"]
        if bill.quote:
            head.append(f"Your quote:     {bill.quote}")
        return "\n".join([
            *head, "", self._lines_table(bill.lines), "", *self._terms_lines(bill),
            "Please remit to:",
            f"  Account name: {bank.account_name}",
            f"  Routing:      {bank.routing}",
            f"  Account:      ****{bank.account_number[-4:]}",
            "",
            f"Please quote invoice {bill.number} with your payment.",
            f"Questions about this invoice: {self.phone}", ""])

    def _terms_lines(self, bill: Bill) -> list[str]:
        """The invoice's payment terms, worded in the vendor's style (none: nothing)."""
        t = self.terms
        if not t.any:
            return []
        out = []
        if bill.discount_until is not None:
            days, pct, net = t.discount_days, _pct(t.discount_bp), self.spec.terms_days
            until, amount = bill.discount_until.isoformat(), display_cents(bill.discount)
            out.append([
                f"Terms: {t.discount_bp / 100:g}/{days} net {net} - deduct USD {amount} if paid "
                f"by {until}",
                f"Early payment discount: {pct} (USD {amount}) when paid within {days} days, "
                f"i.e. by {until}; otherwise net {net} days.",
                f"Payment terms: {pct} {days} days, net {net}. Discount available until "
                f"{until}: USD {amount}.",
            ][t.style])
        if bill.late_fee:
            fee = display_cents(bill.late_fee)
            out.append([
                f"Late fee: USD {fee} ({_pct(t.late_fee_bp)}) if unpaid by the due date.",
                f"A late payment charge of {_pct(t.late_fee_bp)} (USD {fee}) applies to "
                "invoices not paid by their due date.",
                f"Overdue invoices incur a fee of USD {fee}.",
            ][t.style])
        if t.critical:
            out.append("IMPORTANT: our service to you is suspended if this invoice is not paid "
                       "by its due date.")
        return [*out, ""]

    # --- what injections plant --------------------------------------------------------------------

    def last_bill(self) -> Bill | None:
        """The vendor's most recent real bill (not a resend), if any."""
        return next((b for b in reversed(self.bills) if b.duplicate_of is None), None)

    def plant_resend(self, kind: Literal["duplicate", "near_duplicate"]) -> dict[str, Any]:
        """Resend the latest bill now (issuing one first, resent days later, if none)."""
        rng = self._rng_injections
        variant = int(rng.integers(3))
        original = self.last_bill()
        if original is None:
            original = self._issue(self.compose_lines(rng), kind="original")
            day = self.engine.calendar.add_business_days(self.engine.today,
                                                         int(rng.integers(2, 6)))
        else:
            day = self.engine.today
        ref = self._next_ref()
        number = (original.number if kind == "duplicate" else
                  self.number_format.variants(original.issued_on.year, original.seq)[variant])
        as_email = bool(rng.random() < 0.5)
        if kind == "duplicate":
            self.engine.process(self.bills_twice(original, day, ref, as_email))
        else:
            self.engine.process(self.rebills_under_new_number(original, day, ref, number,
                                                              as_email))
        return {"vendor_id": self.vendor_id, "bill_ref": ref, "duplicate_of": original.ref,
                "invoice_number": number, "original_number": original.number,
                "resent_on": day.isoformat()}

    def plant_bank_change(self, *, genuine: bool) -> dict[str, Any]:
        """Ask for a bank-detail change now: the vendor's own, or a fraudster's."""
        rng = self._rng_injections
        asked = (self.ask_genuine_bank_change(rng) if genuine
                 else self.ask_fraudulent_bank_change(rng))
        return {"vendor_id": self.vendor_id, "request_ref": asked.request_ref,
                "genuine": genuine, "sender": asked.sender, "callback": asked.callback}

    def plant_price_variance(self) -> dict[str, Any]:
        """Quote now and bill above the quoted prices a few business days later."""
        rng = self._rng_injections
        lines = self.compose_lines(rng)
        bp = max(100, round(self.spec.profile.price_variance.draw(rng) * 10_000))
        lag = int(rng.integers(1, 4))
        quote = self.quote_then_bill(lines, lag=lag, variance_bp=bp, rng=rng)
        billed_on = self.engine.calendar.add_business_days(self.engine.today, lag)
        return {"vendor_id": self.vendor_id, "bill_ref": quote.bill_ref,
                "quote": quote.number, "agreed_total": quote.total,
                "variance_share": bp / 10_000, "billed_on": billed_on.isoformat()}


def _other_phone(rng: np.random.Generator, avoid: str) -> str:
    while True:
        phone = (f"+1 ({int(rng.integers(201, 990))}) {int(rng.integers(200, 1000))}-"
                 f"{int(rng.integers(0, 10_000)):04d}")
        if phone != avoid:
            return phone


_OPENING: weakref.WeakKeyDictionary[Engine, dict[str, list[tuple[date, str, int]]]] = (
    weakref.WeakKeyDictionary())


def _opening_bills(engine: Engine) -> dict[str, list[tuple[date, str, int]]]:
    """Every bill in the company's books, by vendor: ``(date, number, total)``.

    Read once per engine (every vendor asks at the start of the first day).
    """
    if engine not in _OPENING:
        bills: dict[str, list[tuple[date, str, int]]] = {}
        for e in engine.ledger.store.read(types=["bill_entered"]):
            d = e.data
            bills.setdefault(d["vendor_id"], []).append(
                (date.fromisoformat(d["entry_date"]), d["vendor_invoice_number"], d["total"]))
        _OPENING[engine] = bills
    return _OPENING[engine]


# --- injections ------------------------------------------------------------------------------


def pick_vendor(population: PopulationView, injection: PlannedInjection,
                prefer: Callable[[Vendor], bool] | None = None) -> Vendor:
    """The injection's vendor: the one it names, or one drawn from the injection's stream.

    A drawn vendor is one that ``prefer`` likes, when there is one.
    """
    params = injection.params
    if not isinstance(params, VendorParams):
        params = VendorParams.model_validate(params or {})
    vendors: dict[str, Vendor] = population.vendors
    where = f"injection {injection.kind} (#{injection.index}) on {injection.on}"
    if params.vendor is not None:
        if params.vendor not in vendors:
            raise ValueError(f"{where}: vendor {params.vendor!r} is not in the population "
                             f"(expected one of: {', '.join(sorted(vendors))})")
        return vendors[params.vendor]
    ids = sorted(vendors)
    liked = [v for v in ids if prefer is None or prefer(vendors[v])] or ids
    chosen = pick(injection_rng(population.engine, injection), liked)
    if chosen is None:
        raise ValueError(f"{where}: the population has no vendors")
    return vendors[chosen]


@register("duplicate_bill", VendorParams)
def plant_duplicate_bill(population: PopulationView, injection: PlannedInjection) -> None:
    """A vendor sends one of its invoices a second time (same number, same amount)."""
    vendor = pick_vendor(population, injection, lambda v: v.last_bill() is not None)
    mark_planted(population.engine, injection, **vendor.plant_resend("duplicate"))


@register("near_duplicate_bill", VendorParams)
def plant_near_duplicate_bill(population: PopulationView, injection: PlannedInjection) -> None:
    """A vendor sends one of its invoices again under a reformatted number, same amount."""
    vendor = pick_vendor(population, injection, lambda v: v.last_bill() is not None)
    mark_planted(population.engine, injection, **vendor.plant_resend("near_duplicate"))


@register("price_variance_bill", VendorParams)
def plant_price_variance_bill(population: PopulationView, injection: PlannedInjection) -> None:
    """A vendor quotes a price now and bills above it a few business days later."""
    vendor = pick_vendor(population, injection)
    mark_planted(population.engine, injection, **vendor.plant_price_variance())


@register("fraudulent_bank_change", VendorParams)
def plant_fraudulent_bank_change(population: PopulationView, injection: PlannedInjection) -> None:
    """A fraudster asks, in a vendor's name, to redirect its payments."""
    vendor = pick_vendor(population, injection)
    mark_planted(population.engine, injection, **vendor.plant_bank_change(genuine=False))


@register("genuine_bank_change", VendorParams)
def plant_genuine_bank_change(population: PopulationView, injection: PlannedInjection) -> None:
    """A vendor moves to a new bank and asks the company to pay the new account.

    A drawn vendor is one that has billed before, when there is one: a clerk verifies the
    request against the address and phone of its earlier invoices.
    """
    vendor = pick_vendor(population, injection, lambda v: v.last_bill() is not None)
    mark_planted(population.engine, injection, **vendor.plant_bank_change(genuine=True))
