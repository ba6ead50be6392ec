"""The company's bank: it posts the lines of the company's account and sends its statements.

The ``Bank`` keeps the account's own record (``lines``, the truth a statement is
checked against): customers' payments arrive as deposits (``credits_deposit``), the
company's vendor payments and refunds leave as debits (``pays_out``), and on the
month's last business day it charges its fee, pays interest and sends the month's
statement (``charges_month_end``, ``sends_statement``). It tells a vendor's world
whether the company's payment reached the vendor's own account or a fraudster's.
It reads the books only to see what the company paid; it never writes them.

Two kinds of deposit line carry ``duplicate_of`` (the line they repeat): a copy the
bank posted twice (``duplicate_bank_line``: the same ``source``, the money arrived
once) and the deposit of a customer's duplicate payment (its own ``source``, the
second payment: the money arrived twice).

The bank injections are here too (``duplicate_bank_line``, ``returned_item``).
"""

from __future__ import annotations

from calendar import monthrange
from collections.abc import Generator
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from counterparties.injections import CustomerParams, NoParams, register
from counterparties.noise import CLEAN, bank_payer_name, wire_description
from counterparties.planting import injection_rng, mark_planted, pick
from counterparties.specs import PlannedInjection, PopulationView
from erp.events import BankDetails, CustomerRefunded, VendorPaid
from erp.money import format_cents
from sim.documents import deliver, render_csv
from sim.engine import Engine, Phase
from sim.world import LogCursor
from sim.world_events import (
    BankLineKind,
    BankLinePosted,
    PaymentDiverted,
    PaymentReceived,
    PaymentSent,
)

BANK_NAME = "First Harbor Bank"
STATEMENTS_FROM = "statements@firstharbor-bank.example"
ACTOR = "counterparty:bank"

DEPOSIT_DESCRIPTION = {"ach": "ACH CREDIT", "wire": "WIRE IN", "card": "CARD SETTLEMENT",
                       "check": "CHECK DEPOSIT"}
SETTLEMENT_DAYS = {"wire": 0, "ach": 1, "card": 1, "check": 2}
"""Business days from a payment being sent to the money reaching the account."""

PAYS_OUT_AT = Phase.PAYMENTS_OUT + 0.05
"""Just after the company's payments go out, before the bank feed imports the day."""

STATEMENT_AT = Phase.MAIL
"""With the morning mail, after the month end's fee and interest: before the clerk's turn,
so the month-end turn can reconcile to it (lines posted later that day are on no statement)."""


@dataclass(frozen=True)
class Deposit:
    """A deposit line and the customer payment behind it."""

    line: BankLinePosted
    customer_id: str
    payment: PaymentSent


class Bank:
    """The bank of the company's account ``population.bank_account_id``."""

    statement_name = "bank-statement"
    """The statement file's name before its period (another account's bank names its own)."""

    def __init__(self, engine: Engine, population: PopulationView, *, statements: bool = True,
                 monthly_fee: int = 1_500, item_fee: int = 25, interest_bp: int = 50) -> None:
        self.engine = engine
        self.population = population
        self.account_id = population.bank_account_id
        self.actor = ACTOR
        self.rng = engine.streams.generator("bank")
        self.statements = statements
        self.monthly_fee = monthly_fee
        """Cents charged every month, plus ``item_fee`` per line of the month."""
        self.item_fee = item_fee
        self.interest_bp = interest_bp
        """Annual interest on the average daily balance, in basis points."""
        self.lines: list[BankLinePosted] = []
        """The bank's own record of the account, in posting order."""
        self.deposits: list[Deposit] = []
        self.returned: set[str] = set()
        self._payments = LogCursor(["vendor_paid", "customer_refunded"])
        self._waiting: list[VendorPaid | CustomerRefunded] = []
        self._opening: int | None = None
        self._duplicate_next: list[PlannedInjection] = []

    def start(self) -> None:
        """Listen for customers' payments and open for business every day."""
        self.engine.world.subscribe(PaymentSent, self._on_payment_sent)
        self.engine.daily(Phase.BANK_MORNING, self.charges_month_end)
        self.engine.daily(PAYS_OUT_AT, self.pays_out)
        if self.statements:
            self.engine.daily(STATEMENT_AT, self.sends_statement)

    # --- lines ----------------------------------------------------------------------

    def post(self, *, amount: int, description: str, reference: str, counterparty: str,
             kind: BankLineKind, source: str | None = None, duplicate_of: str | None = None,
             posted_on: date | None = None) -> BankLinePosted:
        """Post a line on the account today (a world event; the feed imports it)."""
        line = BankLinePosted(bank_account_id=self.account_id,
                              line_id=self.engine.world.next_id("BL"),
                              posted_on=posted_on or self.engine.today, amount=amount,
                              description=description, reference=reference,
                              counterparty=counterparty, kind=kind,
                              source=source, duplicate_of=duplicate_of)
        self.lines.append(line)
        self.engine.world.emit(line, self.actor)
        return line

    def opening_balance(self) -> int:
        """The account's balance before the first day (the books' opening of the account)."""
        if self._opening is None:
            self._opening = 0
            for e in self.engine.world.ledger.store.read(types=["bank_account_opened"]):
                if e.event.bank_account_id == self.account_id:
                    self._opening = e.event.opening_balance
        return self._opening

    def balance(self, through: date | None = None) -> int:
        """The account's balance at the end of a date (now, without one)."""
        return self.opening_balance() + sum(
            x.amount for x in self.lines if through is None or x.posted_on <= through)

    # --- deposits -------------------------------------------------------------------

    def _on_payment_sent(self, payment: PaymentSent, actor: str) -> None:
        cal = self.engine.calendar
        today = self.engine.today
        arrives_on = cal.add_business_days(cal.next_business_day(today),
                                           SETTLEMENT_DAYS[payment.method])
        if arrives_on > cal.end:
            return  # after the scenario ends
        if arrives_on == today:
            self._deposit(payment)
        else:
            self.engine.process(self.credits_deposit(payment, arrives_on))

    def credits_deposit(self, payment: PaymentSent, on: date) -> Generator[Any, Any, None]:
        """Credit a customer's payment to the account in the morning it arrives."""
        yield self.engine.until(on, Phase.BANK_MORNING)
        self._deposit(payment)

    def _deposit(self, payment: PaymentSent) -> BankLinePosted:
        description, payer = self.as_exported(payment)
        line = self.post(amount=payment.arrives, description=description,
                         reference=payment.reference, counterparty=payer,
                         kind="deposit", source=payment.payment_id,
                         duplicate_of=payment.duplicate_of and self._line_of(payment.duplicate_of))
        self.deposits.append(Deposit(line, payment.customer_id, payment))
        while self._duplicate_next:
            self.posts_twice(self.deposits[-1], self._duplicate_next.pop(0))
        return line

    def as_exported(self, payment: PaymentSent) -> tuple[str, str]:
        """The deposit's description and payer name as the statement shows them.

        Without document noise: ``WIRE IN`` (and so on) and the payer's own name. With it,
        the payer's bank may send the name upper-cased and cut to its field width, and
        name a wire its own way (``counterparties.noise``); a card processor's payouts
        keep their fixed wording.
        """
        noise = getattr(self.population, "noise", None) or CLEAN
        description = DEPOSIT_DESCRIPTION[payment.method]
        if payment.method == "card" or not noise.active:
            return description, payment.payer_name
        streams = self.engine.streams
        if payment.method == "wire":
            description = wire_description(streams, payment.payer_name,
                                           noise.wire_descriptions, description)
        names = [c.name for c in self.population.customers.values()]
        return description, bank_payer_name(streams, payment.payer_name, noise.payer_names,
                                            names)

    def _line_of(self, payment_id: str) -> str:
        """The deposit line of an earlier payment (what a duplicate payment repeats), or its id."""
        for d in self.deposits:
            if d.payment.payment_id == payment_id:
                return d.line.line_id
        return payment_id

    def posts_twice(self, deposit: Deposit, inj: PlannedInjection) -> BankLinePosted:
        """Post a second copy of a deposit line (the money arrived once)."""
        x = deposit.line
        copy = self.post(amount=x.amount, description=x.description, reference=x.reference,
                         counterparty=x.counterparty, kind="deposit", source=x.source,
                         duplicate_of=x.line_id, posted_on=x.posted_on)
        mark_planted(self.engine, inj, line_id=copy.line_id, duplicate_of=x.line_id,
                     amount=x.amount, customer_id=deposit.customer_id)
        return copy

    # --- the company's payments -------------------------------------------------------

    def pays_out(self, day: date) -> None:
        """Debit the vendor payments and customer refunds the company made from the account."""
        for e in self.engine.world.read_new(self._payments):
            if e.event.bank_account_id == self.account_id:
                self._waiting.append(e.event)
        due = [p for p in self._waiting if p.entry_date <= day]
        self._waiting = [p for p in self._waiting if p.entry_date > day]
        for p in due:
            if isinstance(p, VendorPaid):
                self._pays_vendor(p)
            else:
                self._refunds_customer(p)

    def _pays_vendor(self, p: VendorPaid) -> None:
        self.post(amount=-p.amount, description="ACH DEBIT", reference=p.payment_id,
                  counterparty=p.paid_to.account_name, kind="payment", source=p.payment_id)
        if self.reaches_vendor(p.vendor_id, p.paid_to):
            self.engine.world.emit(PaymentReceived(vendor_id=p.vendor_id, payment_id=p.payment_id,
                                                   amount=p.amount), self.actor)
        else:
            self.engine.world.emit(PaymentDiverted(vendor_id=p.vendor_id, payment_id=p.payment_id,
                                                   amount=p.amount, account=p.paid_to),
                                   self.actor)

    def _refunds_customer(self, p: CustomerRefunded) -> None:
        customer = self.engine.world.ledger.books.customers.get(p.customer_id)
        self.post(amount=-p.amount, description="ACH DEBIT REFUND", reference=p.refund_id,
                  counterparty=customer.name if customer else p.customer_id, kind="refund",
                  source=p.refund_id)

    def reaches_vendor(self, vendor_id: str, account: BankDetails) -> bool:
        """Whether money sent to ``account`` reaches the vendor (its own account, now or once).

        The vendor's simulated self knows (``Vendor.owns``); failing that, its genuine
        account (``genuine_bank``, or its spec's ``bank``). A vendor the population does
        not simulate is taken to own the account the books pay.
        """
        vendor = self.population.vendors.get(vendor_id)
        if vendor is None:
            return True
        owns = getattr(vendor, "owns", None)
        if callable(owns):
            return bool(owns(account))
        for genuine in (getattr(vendor, "genuine_bank", None),
                        getattr(getattr(vendor, "spec", None), "bank", None),
                        getattr(vendor, "bank", None)):
            if isinstance(genuine, BankDetails):
                return _same_account(genuine, account)
        return True

    # --- month end ------------------------------------------------------------------

    def charges_month_end(self, day: date) -> None:
        """On the month's last business day: the service fee and the month's interest."""
        if not self.engine.calendar.is_last_business_day_of_month(day):
            return
        period = self.engine.calendar.period_of(day)
        items = sum(1 for x in self.lines if (x.posted_on.year, x.posted_on.month)
                    == (day.year, day.month))
        fee = self.monthly_fee + self.item_fee * items
        if fee > 0:
            self.post(amount=-fee, description="SERVICE CHARGE", reference=f"FEE {period}",
                      counterparty=BANK_NAME, kind="fee", source=f"bank-fee:{period}")
        interest = self.interest_for(day)
        if interest > 0:
            self.post(amount=interest, description="INTEREST CREDIT",
                      reference=f"INTEREST {period}", counterparty=BANK_NAME, kind="interest",
                      source=f"bank-interest:{period}")

    def interest_for(self, day: date) -> int:
        """The month's interest: the daily balances up to ``day`` at ``interest_bp`` a year."""
        first = max(day.replace(day=1), self.engine.calendar.start)
        balance = self.balance(first - timedelta(days=1))
        by_day: dict[date, int] = {}
        for x in self.lines:
            if first <= x.posted_on <= day:
                by_day[x.posted_on] = by_day.get(x.posted_on, 0) + x.amount
        total, d = 0, first
        while d <= day:
            balance += by_day.get(d, 0)
            total += balance
            d += timedelta(days=1)
        if total <= 0:
            return 0
        num, den = total * self.interest_bp, 10_000 * 365
        return (2 * num + den) // (2 * den)  # half away from zero (num > 0)

    def sends_statement(self, day: date) -> None:
        """On the month's last business day: the month's statement, as CSV, to the inbox."""
        if not self.engine.calendar.is_last_business_day_of_month(day):
            return
        self.statement(day.year, day.month)

    def statement(self, year: int, month: int) -> str:
        """Deliver the statement of a month (lines posted so far) and return its text."""
        first = max(date(year, month, 1), self.engine.calendar.start)
        last = date(year, month, monthrange(year, month)[1])
        period = f"{year:04d}-{month:02d}"
        opening = self.balance(first - timedelta(days=1))
        month_lines = sorted((x for x in self.lines if first <= x.posted_on <= last),
                             key=lambda x: (x.posted_on, x.line_id))
        rows: list[list[str]] = [[first.isoformat(), "", "OPENING BALANCE", "", "", "",
                                  format_cents(opening)]]
        balance = opening
        for x in month_lines:
            balance += x.amount
            rows.append([x.posted_on.isoformat(), x.line_id, x.description, x.reference,
                         x.counterparty, format_cents(x.amount), format_cents(balance)])
        rows.append([last.isoformat(), "", "CLOSING BALANCE", "", "", "", format_cents(balance)])
        content = render_csv(["date", "line_id", "description", "reference", "counterparty",
                              "amount", "balance"], rows)
        number = self._account_number()
        deliver(self.engine, actor=self.actor, kind="statement",
                filename=f"{self.statement_name}-{period}.csv", sender=STATEMENTS_FROM,
                subject=f"{BANK_NAME} statement {period}, account ending {number[-4:]}",
                content=content,
                truth={"bank_account_id": self.account_id, "period": period,
                       "opening": opening, "closing": balance,
                       "line_ids": [x.line_id for x in month_lines]})
        return content

    def _account_number(self) -> str:
        account = self.engine.world.ledger.books.bank_accounts.get(self.account_id)
        return account.number if account else self.account_id


def _same_account(a: BankDetails, b: BankDetails) -> bool:
    return (a.routing.strip(), a.account_number.strip()) == (b.routing.strip(),
                                                              b.account_number.strip())


# --- injections -------------------------------------------------------------------------


def _bank(population: PopulationView) -> Bank:
    if not isinstance(population.bank, Bank):
        raise TypeError(f"the population has no Bank (got {type(population.bank).__name__})")
    return population.bank


@register("duplicate_bank_line", NoParams)
def plant_duplicate_bank_line(population: PopulationView, inj: PlannedInjection) -> None:
    """The bank posts a second copy of one of today's deposits (or of the next one)."""
    bank = _bank(population)
    today = population.engine.today
    todays = [d for d in bank.deposits
              if d.line.posted_on == today and d.line.duplicate_of is None]
    deposit = pick(injection_rng(population.engine, inj), todays)
    if deposit is None:
        bank._duplicate_next.append(inj)  # the next deposit it posts, the same day
        mark_planted(population.engine, inj, waits_for="the next deposit")
        return
    bank.posts_twice(deposit, inj)


@register("returned_item", CustomerParams)
def plant_returned_item(population: PopulationView, inj: PlannedInjection) -> None:
    """A customer's recent deposit comes back unpaid (NSF): a negative line reverses it."""
    engine = population.engine
    named = inj.params.customer
    if named is not None and named not in population.customers:
        raise KeyError(f"injection names customer {named!r}, which is not in the population "
                       f"(customers: {', '.join(sorted(population.customers))})")
    if engine.calendar.is_business_day(engine.today):
        _returns_deposit(population, inj)
    else:  # banks return items on business days
        engine.process(_returns_deposit_later(population, inj))


def _returns_deposit_later(population: PopulationView,
                           inj: PlannedInjection) -> Generator[Any, Any, None]:
    engine = population.engine
    day = engine.calendar.next_business_day(engine.today)
    if day <= engine.calendar.end:
        yield engine.until(day, Phase.BANK_MORNING)
        _returns_deposit(population, inj)


def _returns_deposit(population: PopulationView, inj: PlannedInjection) -> None:
    engine = population.engine
    bank = _bank(population)
    named = inj.params.customer
    eligible = [d for d in bank.deposits
                if d.line.duplicate_of is None and d.line.line_id not in bank.returned
                and (named is None or d.customer_id == named)]
    bounceable = [d for d in eligible if d.payment.method in ("ach", "check")]
    pool = bounceable or eligible
    rng = injection_rng(engine, inj)
    customer_id = pick(rng, sorted({d.customer_id for d in pool}))
    if customer_id is None:
        mark_planted(engine, inj, skipped="no deposit to return")
        return
    deposit = [d for d in pool if d.customer_id == customer_id][-1]
    x = deposit.line
    bank.returned.add(x.line_id)
    line = bank.post(amount=-x.amount, description="RETURNED ITEM NSF", reference=x.reference,
                     counterparty=x.counterparty, kind="returned", source=x.source)
    customer = population.customers.get(customer_id)
    if customer is not None:
        customer.payment_returned(deposit.payment.payment_id)
    mark_planted(engine, inj, line_id=line.line_id, returns=x.line_id,
                 payment_id=deposit.payment.payment_id, customer_id=customer_id,
                 amount=x.amount)
