"""Customers: they order, receive the company's invoices and pay them their own way.

A ``Customer`` is a SimPy process that places orders (``places_orders``) and, for
every invoice the company actually sends it (``InvoiceReceived``), a process that
pays it as its behaviour says (``pays_on_time``, ``pays_by_card``, ``pays_twice``,
...). It keeps its own books (what it was invoiced, disputed and paid) in memory and
in the world log, reads the company's books only to look (``pays_closed_invoice``,
``wrong_reference``), and never writes them. Every draw comes from its own stream
``customer:<id>``: orders from one child of it, payments from another, so that the
agent's work (which can change what is invoiced) never shifts when it orders.

The customer injections are here too (``payment_quotes_other_customers_invoice``,
``duplicate_payment``, ``payment_for_closed_invoice``, ``invoice_not_sent``).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from counterparties.injections import CustomerParams, register
from counterparties.noise import (
    CLEAN,
    DocumentNoise,
    ReferenceStyle,
    reference_style,
    remittance_format,
)
from counterparties.planting import ACTOR as INJECTION_ACTOR
from counterparties.planting import injection_id, injection_rng, mark_planted, pick
from counterparties.specs import CustomerSpec, PlannedInjection, PopulationView
from erp.events import InvoiceLine
from erp.money import display_cents, format_cents, pct_of
from sim.documents import deliver, deliver_binary, deliver_email, render_csv
from sim.engine import Engine, Phase
from sim.pdf import render_pdf
from sim.world_events import (
    Allocation,
    InjectionPlanted,
    InvoiceReceived,
    LineDisputed,
    OrderLine,
    OrderPlaced,
    PaymentMethod,
    PaymentSent,
)

if TYPE_CHECKING:
    from sim.world import World

PROCESSOR_NAME = "STRIPE PAYMENTS"
"""The payer name a card processor's payouts carry on the bank statement."""
CARD_FEE_BP = 290
CARD_FEE_FIXED = 30
"""The processor keeps 2.9% + 30 cents of each charge."""
WIRE_CHARGE_BP = (20, 200)
"""An international wire arrives short of 0.2% to 2% (intermediary banks' charges)."""
BATCH_WINDOW_DAYS = 10
"""A multi-invoice ACH covers the open invoices due up to this many days after it."""
BUSINESS_DAYS_PER_MONTH = 21
SERVICES = ("Consulting hours", "Implementation services", "Support subscription",
            "Training session", "Managed services", "Data migration", "Licence seats",
            "On-site visit")

Cents = int


@dataclass
class ReceivedInvoice:
    """An invoice in the customer's own books."""

    invoice_id: str
    amount: Cents
    due_on: date
    received_on: date
    share_bp: int = 10_000
    disputed: Cents = 0
    paid: Cents = 0
    lines: tuple[InvoiceLine, ...] = field(default=(), repr=False)

    @property
    def owed(self) -> Cents:
        """What the customer still means to pay: the amount less disputes and payments."""
        return self.amount - self.disputed - self.paid


def dollars_to_cents(dollars: float) -> Cents:
    """A dollar amount drawn as a float, as cents rounded half away from zero."""
    return int((Decimal(repr(float(dollars))) * 100).quantize(Decimal(1), ROUND_HALF_UP))


def round_half_away(x: float) -> int:
    """A float rounded to an integer, halves away from zero (never banker's rounding)."""
    return int(Decimal(repr(float(x))).quantize(Decimal(1), ROUND_HALF_UP))


def card_fee(gross: Cents) -> Cents:
    """The card processor's fee on a charge: 2.9% + 30 cents."""
    return pct_of(gross, CARD_FEE_BP) + CARD_FEE_FIXED


# --- routing invoices to their customer -----------------------------------------------

def _routes(world: World) -> dict[str, Customer]:
    """The customers of a world by id; one listener per world hands each invoice to its own
    (the table is kept with the world: its customers refer back to it)."""

    def make() -> dict[str, Customer]:
        table: dict[str, Customer] = {}

        def hand_over(event: Any, actor: str) -> None:
            customer = table.get(event.customer_id)
            if customer is not None:
                customer.receives_invoice(event)

        world.subscribe(InvoiceReceived, hand_over)
        return table

    return world.kept("counterparties.customers.routes", make)


# --- the customer ---------------------------------------------------------------------

Payer = Callable[["Customer", ReceivedInvoice, date], Generator[Any, Any, None]]


class Customer:
    """A customer of the company: orders, receives invoices, pays them its own way."""

    def __init__(self, engine: Engine, population: PopulationView, spec: CustomerSpec) -> None:
        if spec.behaviour not in PAYERS:
            raise ValueError(f"customer {spec.customer_id}: unknown behaviour "
                             f"{spec.behaviour!r} (expected one of: {', '.join(sorted(PAYERS))})")
        self.engine = engine
        self.population = population
        self.spec = spec
        self.customer_id = spec.customer_id
        self.name = spec.name
        self.profile = spec.profile
        self.actor = f"counterparty:{spec.customer_id}"
        self._order_rng, self._pay_rng = engine.streams.children(
            f"customer:{spec.customer_id}", 2)
        self.invoices: dict[str, ReceivedInvoice] = {}
        """The customer's own books: every invoice it received."""
        self.payments: dict[str, PaymentSent] = {}
        """Every payment it sent, duplicates included."""
        self._orders = 0
        self._payment_count = 0
        self.repaid_closed: set[str] = set()
        noise = getattr(population, "noise", None) or CLEAN
        self.noise: DocumentNoise = noise
        self.reference_style: ReferenceStyle | None = reference_style(
            engine.streams, spec.customer_id, noise.references)
        """How it writes invoice numbers (None: as the company issued them)."""

    def quote(self, invoice_id: str) -> str:
        """An invoice number as this customer writes it on a payment or a remittance."""
        return invoice_id if self.reference_style is None else self.reference_style.write(
            invoice_id)

    def start(self) -> None:
        """Start ordering and listen for the company's invoices."""
        _routes(self.engine.world)[self.customer_id] = self
        self.engine.process(self.places_orders())

    # --- ordering -----------------------------------------------------------------

    def places_orders(self) -> Generator[Any, Any, None]:
        """Order on business days, with geometric gaps at ``orders_per_month``."""
        days = self.engine.calendar.business_days()
        rng = self._order_rng
        i = -1
        while True:
            rate = self.profile.orders_per_month.draw(rng)
            if rate <= 0:
                i += BUSINESS_DAYS_PER_MONTH  # no order this month
            else:
                i += int(rng.geometric(min(1.0, rate / BUSINESS_DAYS_PER_MONTH)))
            if i >= len(days):
                return
            lines = self._order_lines(rng)
            yield self.engine.until(days[i], Phase.COUNTERPARTIES)
            self._orders += 1
            self.engine.world.emit(OrderPlaced(
                customer_id=self.customer_id, order_id=f"SO-{self.customer_id}-{self._orders:04d}",
                lines=lines), self.actor)

    def _order_lines(self, rng: np.random.Generator) -> tuple[OrderLine, ...]:
        n = max(1, round_half_away(self.profile.order_lines.draw(rng)))
        lines = []
        for _ in range(n):
            description = SERVICES[int(rng.integers(0, len(SERVICES)))]
            quantity = int(rng.integers(1, 6))
            total = max(100, dollars_to_cents(self.profile.line_amount.draw(rng)))
            lines.append(OrderLine(description=description, quantity=quantity,
                                   unit_price=max(1, (2 * total + quantity) // (2 * quantity))))
        return tuple(lines)

    # --- invoices -----------------------------------------------------------------

    def receives_invoice(self, event: InvoiceReceived) -> None:
        """Book an invoice the company sent and plan how (and whether) to pay it."""
        if event.invoice_id in self.invoices:
            return  # sent twice: the customer's books already hold it
        cal = self.engine.calendar
        today = self.engine.today
        inv = ReceivedInvoice(event.invoice_id, event.amount, event.due_on, today)
        self.invoices[inv.invoice_id] = inv
        rng = self._pay_rng
        days_after_due = round_half_away(self.profile.pay_days_after_due.draw(rng))
        share = self.profile.share_paid.draw(rng)
        dispute_rate = self.profile.dispute_rate.draw(rng)
        disputes = float(rng.random()) < dispute_rate
        inv.share_bp = max(0, min(10_000, round_half_away(share * 10_000)))
        target = max(event.due_on + timedelta(days=days_after_due), today + timedelta(days=1))
        pay_on = cal.next_business_day(target)
        if disputes:
            inv.lines = self._invoice_lines(inv.invoice_id)
            if len(inv.lines) >= 2:
                line = inv.lines[int(rng.integers(0, len(inv.lines)))]
                dispute_on = cal.next_business_day(today, inclusive=False)
                if dispute_on <= cal.end:
                    self.engine.process(self.disputes_a_line(inv, line, dispute_on))
        if inv.share_bp == 0 or pay_on > cal.end:
            return  # never pays, or not before the scenario ends
        self.engine.process(PAYERS[self.spec.behaviour](self, inv, pay_on))

    def _invoice_lines(self, invoice_id: str) -> tuple[InvoiceLine, ...]:
        """The lines of an invoice the customer received (the company's document)."""
        for e in self.engine.world.ledger.store.read(stream=f"invoice:{invoice_id}",
                                                     types=["invoice_issued"]):
            return tuple(e.event.lines)
        return ()

    def disputes_a_line(self, inv: ReceivedInvoice, line: InvoiceLine,
                        on: date) -> Generator[Any, Any, None]:
        """Email a dispute of one line of an invoice; the rest will be paid."""
        yield self.engine.until(on, Phase.MAIL)
        inv.disputed = line.amount
        reason = "not delivered as ordered"
        self.engine.world.emit(LineDisputed(customer_id=self.customer_id,
                                            invoice_id=inv.invoice_id, amount=line.amount,
                                            reason=reason), self.actor)
        body = (f"Hello,\n\nWe dispute one line of invoice {inv.invoice_id}: "
                f"'{line.description}' ({line.quantity} x {format_cents(line.unit_price)} = "
                f"{display_cents(line.amount)}), {reason}.\nWe will pay the rest of the "
                f"invoice, {display_cents(inv.amount - line.amount)}, on its terms.\n\n"
                f"Accounts payable\n{self.name}\n")
        deliver_email(self.engine, actor=self.actor, sender=self.email,
                      subject=f"Dispute: invoice {inv.invoice_id}", body=body, slug="dispute",
                      truth={"customer_id": self.customer_id, "invoice_id": inv.invoice_id,
                             "disputed": line.amount, "line": line.description})

    @property
    def email(self) -> str:
        """The customer's accounts-payable address."""
        slug = "".join(ch for ch in self.name.lower() if ch.isalnum())[:24] or "customer"
        return f"ap@{slug}.example"

    # --- paying: one process per behaviour ----------------------------------------------

    def pays_on_time(self, inv: ReceivedInvoice, pay_on: date) -> Generator[Any, Any, None]:
        """Pay the invoice by ACH around its due date, quoting its number."""
        yield self.engine.until(pay_on, Phase.COUNTERPARTIES)
        self._pays_plainly(inv, "disputes" if inv.disputed else "on_time")

    def pays_late(self, inv: ReceivedInvoice, pay_on: date) -> Generator[Any, Any, None]:
        """Pay the invoice by ACH weeks after its due date, quoting its number."""
        yield self.engine.until(pay_on, Phase.COUNTERPARTIES)
        self._pays_plainly(inv, "late")

    def pays_partially(self, inv: ReceivedInvoice, pay_on: date) -> Generator[Any, Any, None]:
        """Pay a share of the invoice (a genuine partial payment) naming the invoice."""
        yield self.engine.until(pay_on, Phase.COUNTERPARTIES)
        amount = self.share_due(inv)
        if amount > 0:
            self._send(method="ach", amount=amount,
                       reference=f"PARTIAL PMT {self.quote(inv.invoice_id)}",
                       allocations=[(inv.invoice_id, amount)], behaviour="partial")

    def pays_by_card(self, inv: ReceivedInvoice, pay_on: date) -> Generator[Any, Any, None]:
        """Pay through a card processor: it pays out net of its fee and sends a remittance."""
        yield self.engine.until(pay_on, Phase.COUNTERPARTIES)
        gross = self.share_due(inv)
        fee = card_fee(gross)
        payout = "po_" + "".join(self._pay_rng.choice(list(string.ascii_letters + string.digits),
                                                      size=14))
        if gross <= fee:
            return
        net = gross - fee
        p = self._send(method="card", amount=gross, arrives=net, payer_name=PROCESSOR_NAME,
                       reference=f"STRIPE PAYOUT {payout}", behaviour="card_processor",
                       allocations=[(inv.invoice_id, gross)])
        truth = {"payment_id": p.payment_id, "customer_id": self.customer_id,
                 "allocations": [a.model_dump() for a in p.allocations], "gross": gross,
                 "fee": fee, "net": net}
        subject = f"Payout {payout}: {display_cents(net)} on its way"
        fmt = remittance_format(self.engine.streams, f"payout:{payout}", self.noise)
        if fmt == "csv":
            content = render_csv(
                ["payout_id", "customer", "invoice", "gross", "fee", "net"],
                [[payout, self.name, inv.invoice_id, format_cents(gross), format_cents(fee),
                  format_cents(net)]])
            deliver(self.engine, actor=self.actor, kind="remittance",
                    filename=f"stripe-payout-{payout}.csv", sender="payouts@stripe.example",
                    subject=subject, content=content, truth=truth)
            return
        written = self.quote(inv.invoice_id)
        heading = [f"{PROCESSOR_NAME}: payout report", f"Payout {payout}",
                   f"Paid out {self.engine.today.isoformat()} to {self.population.company_name}"]
        cells = [self.name, written, display_cents(gross), display_cents(fee),
                 display_cents(net)]
        if fmt == "pdf":
            data = render_pdf(title=f"Payout {payout}", heading=heading,
                              columns=["Customer", "Description", "Gross", "Fee", "Net"],
                              rows=[cells], widths=[150, 130, 75, 70, 75],
                              footer=[f"Net paid out {display_cents(net)}"])
            deliver_binary(self.engine, actor=self.actor, kind="remittance",
                           filename=f"stripe-payout-{payout}.pdf",
                           sender="payouts@stripe.example", subject=subject, data=data,
                           truth=truth)
            return
        text = "\n".join([*heading, "", f"Customer:    {self.name}",
                           f"Description: {written}", f"Gross:       {display_cents(gross)}",
                           f"Fee:         {display_cents(fee)}",
                           f"Net:         {display_cents(net)}", ""])
        deliver(self.engine, actor=self.actor, kind="remittance",
                filename=f"stripe-payout-{payout}.txt", sender="payouts@stripe.example",
                subject=subject, content=text, truth=truth)

    def pays_by_international_wire(self, inv: ReceivedInvoice,
                                   pay_on: date) -> Generator[Any, Any, None]:
        """Wire the invoice from abroad; intermediary banks keep up to about 2% on the way."""
        yield self.engine.until(pay_on, Phase.COUNTERPARTIES)
        amount = self.share_due(inv)
        charge = pct_of(amount, int(self._pay_rng.integers(WIRE_CHARGE_BP[0],
                                                           WIRE_CHARGE_BP[1] + 1)))
        if amount <= 0:
            return
        self._send(method="wire", amount=amount, arrives=amount - charge,
                   reference=f"/RFB/{self.quote(inv.invoice_id)}", behaviour="intl_wire",
                   allocations=[(inv.invoice_id, amount)])

    def pays_in_one_ach(self, inv: ReceivedInvoice, pay_on: date) -> Generator[Any, Any, None]:
        """Pay every open invoice due soon in one ACH, with a remittance advice listing them."""
        yield self.engine.until(pay_on, Phase.COUNTERPARTIES)
        batch = self._open_invoices(inv, pay_on + timedelta(days=BATCH_WINDOW_DAYS))
        if not batch:
            return  # an earlier batch paid it
        pid = self._next_payment_id()
        ids = [i.invoice_id for i, _ in batch]
        reference = (f"PMT {pid} INV {' '.join(self.quote(i) for i in ids)}" if len(ids) <= 6
                     else f"PMT {pid} SEE REMITTANCE")
        p = self._send(method="ach", amount=sum(a for _, a in batch), reference=reference,
                       allocations=[(i.invoice_id, a) for i, a in batch],
                       behaviour="multi_invoice_ach", payment_id=pid)
        subject = f"Remittance advice {pid}: {len(batch)} invoices, {display_cents(p.amount)}"
        truth = {"payment_id": pid, "customer_id": self.customer_id,
                 "allocations": [a.model_dump() for a in p.allocations]}
        fmt = remittance_format(self.engine.streams, f"advice:{pid}", self.noise)
        if fmt == "csv":
            content = render_csv(["payer", "payment_id", "payment_date", "invoice_id", "amount"],
                                 [[self.name, pid, self.engine.today.isoformat(), i.invoice_id,
                                   format_cents(a)] for i, a in batch])
            deliver(self.engine, actor=self.actor, kind="remittance",
                    filename=f"remittance-{pid}.csv", sender=self.email, subject=subject,
                    content=content, truth=truth)
            return
        heading = [f"{self.name}", f"Remittance advice {pid}",
                   f"Payment date {self.engine.today.isoformat()}, by ACH to "
                   f"{self.population.company_name}"]
        rows = [[self.quote(i.invoice_id), display_cents(i.amount), display_cents(a)]
                for i, a in batch]
        footer = [f"Total paid {display_cents(p.amount)}"]
        if fmt == "pdf":
            data = render_pdf(title=f"Remittance advice {pid}", heading=heading,
                              columns=["Invoice", "Invoice amount", "Amount paid"], rows=rows,
                              widths=[200, 150, 150], footer=footer)
            deliver_binary(self.engine, actor=self.actor, kind="remittance",
                           filename=f"remittance-{pid}.pdf", sender=self.email,
                           subject=subject, data=data, truth=truth)
            return
        table = [f"{r[0]:<28}{r[1]:>16}{r[2]:>16}" for r in rows]
        text = "\n".join([*heading, "", f"{'Invoice':<28}{'Amount':>16}{'Paid':>16}", *table,
                           "", *footer, ""])
        deliver(self.engine, actor=self.actor, kind="remittance",
                filename=f"remittance-{pid}.txt", sender=self.email, subject=subject,
                content=text, truth=truth)

    def wires_without_reference(self, inv: ReceivedInvoice,
                                pay_on: date) -> Generator[Any, Any, None]:
        """Wire every invoice due by now in one go, quoting only the customer's name."""
        yield self.engine.until(pay_on, Phase.COUNTERPARTIES)
        # Everything due up to this invoice, so the wire covers the oldest first (as the
        # company's policy reads a wire that names no invoice).
        batch = self._open_invoices(inv, max(pay_on, inv.due_on))
        if batch:
            self._send(method="wire", amount=sum(a for _, a in batch), reference=self.name,
                       allocations=[(i.invoice_id, a) for i, a in batch],
                       behaviour="customer_only_wire")

    def quotes_another_customers_invoice(self, inv: ReceivedInvoice,
                                         pay_on: date) -> Generator[Any, Any, None]:
        """Pay its own invoice, quoting another customer's invoice number by mistake."""
        yield self.engine.until(pay_on, Phase.COUNTERPARTIES)
        self.pays_with_wrong_reference(inv, self._pay_rng)

    def pays_twice(self, inv: ReceivedInvoice, pay_on: date) -> Generator[Any, Any, None]:
        """Pay the invoice, then send the very same payment again a few days later."""
        yield self.engine.until(pay_on, Phase.COUNTERPARTIES)
        first = self._pays_plainly(inv, "pays_twice")
        if first is None:
            return
        again = self.engine.calendar.add_business_days(pay_on, int(self._pay_rng.integers(2, 6)))
        if again > self.engine.calendar.end:
            return
        yield self.engine.until(again, Phase.COUNTERPARTIES)
        self.pays_again(first)

    def pays_closed_invoice(self, inv: ReceivedInvoice,
                            pay_on: date) -> Generator[Any, Any, None]:
        """Pay the invoice, and once more an invoice of its own the company already closed."""
        yield self.engine.until(pay_on, Phase.COUNTERPARTIES)
        self._pays_plainly(inv, "on_time")
        closed = self.closed_invoices()
        if closed:
            self.pays_closed(closed[0])

    def never_pays(self, inv: ReceivedInvoice, pay_on: date) -> Generator[Any, Any, None]:
        """Never pay (the invoice stays in its books, owed)."""
        return
        yield  # a generator that ends at once

    # --- what the processes share -------------------------------------------------

    def share_due(self, inv: ReceivedInvoice) -> Cents:
        """What it pays on an invoice now: its share of the undisputed amount, at most owed."""
        if inv.share_bp >= 10_000:
            return max(0, inv.owed)
        return max(0, min(inv.owed, pct_of(inv.amount - inv.disputed, inv.share_bp)))

    def _open_invoices(self, inv: ReceivedInvoice,
                       due_by: date) -> list[tuple[ReceivedInvoice, Cents]]:
        """Open invoices to pay together: ``inv`` (unless paid) and the others due by a date."""
        if self.share_due(inv) <= 0:
            return []
        out = [(i, self.share_due(i)) for i in self.invoices.values()
               if i.share_bp > 0 and (i is inv or i.due_on <= due_by)]
        return sorted(((i, a) for i, a in out if a > 0),
                      key=lambda x: (x[0].due_on, x[0].invoice_id))

    def _pays_plainly(self, inv: ReceivedInvoice, behaviour: str) -> PaymentSent | None:
        """One ACH for the invoice, quoting its number."""
        amount = self.share_due(inv)
        if amount <= 0:
            return None
        return self._send(method="ach", amount=amount, reference=self.quote(inv.invoice_id),
                          allocations=[(inv.invoice_id, amount)], behaviour=behaviour)

    def pays_with_wrong_reference(self, inv: ReceivedInvoice, rng: np.random.Generator,
                                  amount: Cents | None = None) -> PaymentSent | None:
        """Pay ``inv`` by ACH quoting another customer's invoice (from the company's books)."""
        amount = self.share_due(inv) if amount is None else amount
        u = float(rng.random())  # drawn whatever the books hold, so later draws never shift
        if amount <= 0:
            return None
        books = self.engine.world.ledger.books
        others = sorted(i for i, s in books.invoices.items() if s.customer_id != self.customer_id)
        open_others = [i for i in others if books.invoices[i].open > 0]
        pool = open_others or others
        quoted = pool[int(u * len(pool))] if pool else inv.invoice_id
        return self._send(method="ach", amount=amount, reference=self.quote(quoted),
                          allocations=[(inv.invoice_id, amount)], behaviour="wrong_reference")

    def closed_invoices(self) -> list[str]:
        """Its own invoices the company's books show as paid in full (not yet paid again)."""
        books = self.engine.world.ledger.books
        return sorted(i for i in self.invoices
                      if i not in self.repaid_closed and i in books.invoices
                      and books.invoices[i].open == 0 and books.invoices[i].total > 0)

    def pays_closed(self, invoice_id: str,
                    behaviour: str = "pays_closed_invoice") -> PaymentSent:
        """Pay an invoice again in full (it is closed, or already paid in its own books)."""
        self.repaid_closed.add(invoice_id)
        amount = self.invoices[invoice_id].amount - self.invoices[invoice_id].disputed
        return self._send(method="ach", amount=amount, reference=self.quote(invoice_id),
                          allocations=[(invoice_id, amount)], behaviour=behaviour)

    def pays_again(self, payment: PaymentSent) -> PaymentSent:
        """Send a payment a second time (the customer's books do not count it as paying)."""
        return self._send(method=payment.method, amount=payment.amount, arrives=payment.arrives,
                          payer_name=payment.payer_name, reference=payment.reference,
                          allocations=[(a.doc_id, a.amount) for a in payment.allocations],
                          behaviour=payment.behaviour, duplicate_of=payment.payment_id)

    def payment_returned(self, payment_id: str) -> None:
        """The bank returned one of its payments unpaid: its books owe that money again."""
        p = self.payments.get(payment_id)
        if p is None or p.duplicate_of is not None:
            return
        for a in p.allocations:
            if a.doc_id in self.invoices:
                self.invoices[a.doc_id].paid -= a.amount

    def _next_payment_id(self) -> str:
        self._payment_count += 1
        return f"PAY-{self.customer_id}-{self._payment_count:04d}"

    def _send(self, *, method: PaymentMethod, amount: Cents, reference: str,
              allocations: Iterable[tuple[str, Cents]], behaviour: str,
              arrives: Cents | None = None, payer_name: str | None = None,
              payment_id: str | None = None, duplicate_of: str | None = None) -> PaymentSent:
        """Send money: book it in its own books and record it in the world."""
        allocs = tuple(Allocation(doc_id=d, amount=a) for d, a in allocations)
        p = PaymentSent(customer_id=self.customer_id,
                        payment_id=payment_id or self._next_payment_id(),
                        method=method, amount=amount,
                        arrives=amount if arrives is None else arrives,
                        payer_name=payer_name or self.name, reference=reference,
                        allocations=allocs, behaviour=behaviour, duplicate_of=duplicate_of)
        if duplicate_of is None:
            for a in allocs:
                if a.doc_id in self.invoices:
                    self.invoices[a.doc_id].paid += a.amount
        self.payments[p.payment_id] = p
        self.engine.world.emit(p, self.actor)
        return p


PAYERS: dict[str, Payer] = {
    "on_time": Customer.pays_on_time,
    "late": Customer.pays_late,
    "partial": Customer.pays_partially,
    "card_processor": Customer.pays_by_card,
    "intl_wire": Customer.pays_by_international_wire,
    "multi_invoice_ach": Customer.pays_in_one_ach,
    "customer_only_wire": Customer.wires_without_reference,
    "wrong_reference": Customer.quotes_another_customers_invoice,
    "pays_twice": Customer.pays_twice,
    "pays_closed_invoice": Customer.pays_closed_invoice,
    "disputes": Customer.pays_on_time,
    "never_pays": Customer.never_pays,
}
"""How each customer behaviour pays an invoice it received."""


# --- invoices the company does not send -----------------------------------------------


class UnsentInvoices(set[str]):
    """Invoice ids the company's dispatch skips, and customers whose next invoice it skips.

    The automation asks ``invoice_id in unsent`` once per new invoice, in log order;
    an ``invoice_not_sent`` injection arms ``withhold_next(customer)``, and the first
    invoice of that customer issued after the arming is caught here and recorded.
    """

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine
        self._armed: dict[str, list[tuple[str, frozenset[str]]]] = {}

    def withhold_next(self, customer_id: str, injection: str) -> None:
        """The customer's next invoice (one not in the books yet) will not be sent."""
        books = self.engine.world.ledger.books
        existing = frozenset(i for i, s in books.invoices.items() if s.customer_id == customer_id)
        self._armed.setdefault(customer_id, []).append((injection, existing))

    def __contains__(self, invoice_id: object) -> bool:
        if set.__contains__(self, invoice_id):
            return True
        if not self._armed or not isinstance(invoice_id, str):
            return False
        inv = self.engine.world.ledger.books.invoices.get(invoice_id)
        queue = self._armed.get(inv.customer_id) if inv is not None else None
        if inv is None or not queue or invoice_id in queue[0][1]:
            return False
        injection, _ = queue.pop(0)
        if not queue:
            del self._armed[inv.customer_id]
        self.add(invoice_id)
        self.engine.world.emit(InjectionPlanted(
            injection_id=injection, kind="invoice_not_sent",
            detail={"customer_id": inv.customer_id, "invoice_id": invoice_id,
                    "withheld": True}), INJECTION_ACTOR)
        return True


# --- injections -----------------------------------------------------------------------


def _customers(population: PopulationView, params: CustomerParams,
               eligible: Callable[[Customer], bool]) -> list[Customer]:
    """The named customer (if eligible), or every eligible customer, in id order."""
    if params.customer is not None:
        c = population.customers.get(params.customer)
        if c is None:
            raise KeyError(f"injection names customer {params.customer!r}, which is not in the "
                           f"population (customers: {', '.join(sorted(population.customers))})")
        return [c] if eligible(c) else []
    return [population.customers[k] for k in sorted(population.customers)
            if eligible(population.customers[k])]


def _oldest_owed(c: Customer) -> ReceivedInvoice | None:
    owed = [i for i in c.invoices.values() if i.owed > 0]
    return min(owed, key=lambda i: (i.due_on, i.invoice_id), default=None)


@register("payment_quotes_other_customers_invoice", CustomerParams)
def plant_wrong_reference(population: PopulationView, inj: PlannedInjection) -> None:
    """A customer pays its oldest open invoice quoting another customer's invoice number."""
    engine = population.engine
    rng = injection_rng(engine, inj)
    c = pick(rng, _customers(population, inj.params, lambda c: _oldest_owed(c) is not None))
    if c is None:
        mark_planted(engine, inj, skipped="no customer owes an invoice it received")
        return
    inv = _oldest_owed(c)
    assert inv is not None
    p = c.pays_with_wrong_reference(inv, rng, c.share_due(inv) or inv.owed)  # even if it never pays
    assert p is not None
    mark_planted(engine, inj, customer_id=c.customer_id, payment_id=p.payment_id,
                 invoice_id=inv.invoice_id, quoted=p.reference)


@register("duplicate_payment", CustomerParams)
def plant_duplicate_payment(population: PopulationView, inj: PlannedInjection) -> None:
    """A customer sends its latest payment a second time."""
    engine = population.engine

    def latest(c: Customer) -> PaymentSent | None:
        firsts = [p for p in c.payments.values() if p.duplicate_of is None]
        return firsts[-1] if firsts else None

    c = pick(injection_rng(engine, inj),
             _customers(population, inj.params, lambda c: latest(c) is not None))
    if c is None:
        mark_planted(engine, inj, skipped="no customer has paid yet")
        return
    first = latest(c)
    assert first is not None
    again = c.pays_again(first)
    mark_planted(engine, inj, customer_id=c.customer_id, payment_id=again.payment_id,
                 duplicate_of=first.payment_id)


@register("payment_for_closed_invoice", CustomerParams)
def plant_payment_for_closed_invoice(population: PopulationView, inj: PlannedInjection) -> None:
    """A customer pays an invoice the company's books show paid (else one it paid already)."""
    engine = population.engine

    def paid_already(c: Customer) -> list[str]:
        return sorted(i.invoice_id for i in c.invoices.values()
                      if i.owed <= 0 and i.paid > 0 and i.invoice_id not in c.repaid_closed)

    pool = _customers(population, inj.params, lambda c: bool(c.closed_invoices()))
    closed_in_books = bool(pool)
    if not pool:
        pool = _customers(population, inj.params, lambda c: bool(paid_already(c)))
    c = pick(injection_rng(engine, inj), pool)
    if c is None:
        mark_planted(engine, inj, skipped="no customer has a closed or paid invoice")
        return
    invoice_id = (c.closed_invoices() if closed_in_books else paid_already(c))[0]
    p = c.pays_closed(invoice_id)
    mark_planted(engine, inj, customer_id=c.customer_id, payment_id=p.payment_id,
                 invoice_id=invoice_id, closed_in_books=closed_in_books)


@register("invoice_not_sent", CustomerParams)
def plant_invoice_not_sent(population: PopulationView, inj: PlannedInjection) -> None:
    """The company will not send a customer's next invoice (so the customer never pays it)."""
    engine = population.engine
    c = pick(injection_rng(engine, inj), _customers(population, inj.params, lambda c: True))
    if c is None:
        mark_planted(engine, inj, skipped="no customers")
        return
    unsent = population.unsent_invoices
    if not isinstance(unsent, UnsentInvoices):
        raise TypeError("population.unsent_invoices must be an UnsentInvoices "
                        f"(got {type(unsent).__name__})")
    unsent.withhold_next(c.customer_id, injection_id(inj))
    mark_planted(engine, inj, customer_id=c.customer_id, withholds="next invoice")
