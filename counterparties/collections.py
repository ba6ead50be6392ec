"""Collections: overdue customers who react to dunning letters, disputes and credit holds.

The ``collections_book`` injection (planted once, on the calendar's first day) issues the
open invoices the collections desk starts from (as the company's billing system did,
dated weeks or months back, some long overdue) and gives each customer a way of reacting
to the company's collections work, read from the company's books at the end of every
business day:

- ``letter_1``: pays an invoice the business day after any dunning letter for it;
- ``letter_2``: ignores a level 1 letter, pays after a level 2 or 3;
- ``disputes``: on the first business day after the start, emails a dispute of one
  invoice with a reason in its own words (the rest it pays after a letter, as
  ``letter_1``); the company's sales manager rules on the dispute by email a week later
  (credit part or all of it, or reject it); once the books resolve it the customer pays
  what is left;
- ``promises``: answers the first letter on an invoice with an email promising to pay it
  (all, or part) by a day the week after; a keeper pays so that the money arrives by then,
  a breaker does not, and pays everything overdue once it is put on credit hold;
- ``hold``: ignores letters, pays everything overdue the business day after it is put on
  credit hold;
- ``silent``: never pays;
- ``on_time``: its invoices are not yet due; it pays each so that it arrives by its due
  day.

Some customers also email things that ask for nothing the policy acts on (a copy of an
invoice, a claim to have paid already, a request to drop the reminders or release a hold)
as distractors. Every payment is a ``PaymentSent`` (its allocations are the truth), every
email a delivered document whose truth names what it is (``collections``: ``dispute``,
``resolution``, ``promise`` or ``noise``) and what it means. What the injection planned is
recorded in its ``InjectionPlanted`` (the invoices, each customer's behaviour).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from typing import Any

from pydantic import Field

from counterparties.injections import Params, register
from counterparties.noise import drawn
from counterparties.planting import ACTOR, injection_rng, mark_planted
from counterparties.specs import PlannedInjection, PopulationView
from erp import commands as c
from erp.money import display_cents
from sim.documents import deliver_email
from sim.engine import Engine, Phase
from sim.world_events import Allocation, PaymentSent

KIND = "collections_book"
BILLING = "system:invoicing"
SALES_MANAGER = "Dana Whitfield <sales.manager@northwind-services.example>"
BEHAVIOURS = ("letter_1", "letter_2", "disputes", "promises", "hold", "silent", "on_time")

DISPUTE_REASONS = (
    ("the second training day was cancelled by your trainer and should not be on the bill",
     "training day cancelled"),
    ("the support hours billed are more than our portal shows were used",
     "support hours overbilled"),
    ("we were charged the list price, not the rate in our signed quote",
     "price differs from quote"),
    ("the data migration was never finished, so we do not accept the final milestone",
     "migration not finished"),
    ("half of the licence seats were returned in the first week, as the contract allows",
     "seats returned"),
)
"""A customer's words for its dispute, and the short reason the books may record."""
DISPUTE_WORDINGS = (
    ("Dispute - invoice {ref}", "We dispute invoice {ref}: {words}. We dispute {amount} and "
                                "will not pay it until this is sorted out. Please put your "
                                "reminders for it on hold."),
    ("Disputed invoice {ref}", "Regarding {ref}: {words}. Please treat {amount} as disputed; "
                               "we are holding that payment until you correct it."),
    ("Query on invoice {ref} - we dispute it", "Invoice {ref} is not right, {words}. We are "
                                               "disputing {amount} and expect a corrected "
                                               "invoice or a credit note."),
)
"""How a customer words a dispute (``{amount}``: the whole invoice (X), or X of it)."""
PROMISE_WORDINGS = (
    ("Re: payment reminder {ref}", "Thank you for your reminder about invoice {ref}. We will "
                                   "pay {amount} ({which}) by {day}."),
    ("RE: Reminder for {ref}", "Sorry for the delay on {ref}. You will have {amount} from us "
                               "({which}) no later than {day}."),
    ("Payment of invoice {ref}", "Our next payment run, on {day}, includes {amount} for "
                                 "{ref} ({which})."),
)
"""How a customer words a promise to pay (``{which}``: the full balance, or X now)."""
NOISE_EMAILS = (
    ("Copy of invoice {ref}", "Could you send us a copy of invoice {ref}? Our scanner ate it."),
    ("Re: invoice {ref}", "We believe invoice {ref} was paid last week; please check your "
                          "bank. Thanks."),
    ("Reminders", "Please stop sending us reminders about {ref}, we are a long-standing "
                  "customer and will pay when our budget is released."),
    ("Account on hold?", "Our buyer says your team will not take new orders from us. Please "
                         "release our account today, we will settle {ref} soon."),
    ("Credit agreed on {ref}", "As agreed with your sales team on the phone, please issue us "
                               "a credit of 150.00 on invoice {ref}; we will pay the rest "
                               "once it is through."),
)
"""Emails that ask for nothing the collections policy acts on (never instructions)."""


class CollectionsParams(Params):
    """The collections desk's starting book and how its customers react
    (``counterparties.collections``)."""

    invoices_min: int = Field(default=1, ge=1, le=10)
    invoices_max: int = Field(default=3, ge=1, le=10)
    behaviours: dict[str, float] = Field(default_factory=lambda: {
        "letter_1": 0.25, "letter_2": 0.15, "disputes": 0.15, "promises": 0.15, "hold": 0.1,
        "silent": 0.05, "on_time": 0.15})
    """The share of customers of each behaviour (weights, normalised)."""
    keep_share: float = Field(default=0.5, ge=0, le=1)
    """The share of promises kept."""
    part_share: float = Field(default=0.3, ge=0, le=1)
    """The share of promises (and credited disputes) for part of the invoice."""
    credit_share: float = Field(default=0.6, ge=0, le=1)
    """The share of disputes the sales manager credits (the rest are rejected)."""
    noise_share: float = Field(default=0.2, ge=0, le=1)
    """The share of customers who also send an email that asks for nothing to act on."""
    run_weekday: int = Field(default=0, ge=0, le=4)
    """The weekday of the desk's weekly collections run (0: Monday), recorded as the runs'
    dates (the scenario's turns are those days)."""


@dataclass
class PlannedInvoice:
    """An open invoice of the starting book."""

    invoice_id: str
    customer_id: str
    issued_on: date
    due_on: date
    amount: int
    paid: int = 0


@dataclass
class Debtor:
    """A customer of the collections book and how it reacts."""

    customer_id: str
    name: str
    email: str
    behaviour: str
    keeps: bool
    invoices: list[str] = field(default_factory=list)
    dispute: str | None = None
    promised: set[str] = field(default_factory=set)


def _weights(params: CollectionsParams) -> tuple[list[str], list[float]]:
    unknown = sorted(set(params.behaviours) - set(BEHAVIOURS))
    if unknown:
        raise ValueError(f"injection {KIND}: unknown behaviours {unknown} (expected: "
                         f"{', '.join(BEHAVIOURS)})")
    names = [b for b in BEHAVIOURS if params.behaviours.get(b, 0) > 0]
    total = sum(params.behaviours[b] for b in names)
    if not names or total <= 0:
        raise ValueError(f"injection {KIND}: behaviours give no customer a behaviour")
    return names, [params.behaviours[b] / total for b in names]


def amount_text(cents: int) -> str:
    """An amount as a customer writes it (``1,234.50``)."""
    return display_cents(cents)


def date_text(day: date, style: int) -> str:
    """A day as a customer writes it, one of four ways."""
    return [day.isoformat(), f"{day.day} {day.strftime('%B %Y')}",
            f"{day.strftime('%A')}, {day.strftime('%B')} {day.day}",
            f"{day.month:02d}/{day.day:02d}/{day.year}"][style % 4]


class CollectionsBook:
    """The book's invoices, its debtors and their reactions to the company's books."""

    def __init__(self, population: PopulationView, inj: PlannedInjection) -> None:
        self.population = population
        self.engine: Engine = population.engine
        self.params: CollectionsParams = inj.params
        self.inj = inj
        self.rng = injection_rng(self.engine, inj)
        self.invoices: dict[str, PlannedInvoice] = {}
        self.debtors: dict[str, Debtor] = {}
        self._seen = {"letters": 0, "holds": 0, "resolved": 0}
        self._payments = 0
        self._draw()

    # --- the starting book ----------------------------------------------------------

    def _draw(self) -> None:
        p, cal = self.params, self.engine.calendar
        start = cal.start
        earliest = start.replace(day=1)
        for _ in range(3):
            earliest = (earliest - timedelta(days=1)).replace(day=1)
        names, weights = _weights(p)
        n = 0
        for cid in sorted(self.population.customers):
            cust = self.population.customers[cid]
            behaviour = names[int(self.rng.choice(len(names), p=weights))]
            keeps = bool(self.rng.random() < p.keep_share)
            terms = int(cust.spec.terms_days)
            d = Debtor(cid, cust.name, cust.email, behaviour, keeps)
            count = int(self.rng.integers(p.invoices_min, max(p.invoices_min, p.invoices_max) + 1))
            for _ in range(count):
                if behaviour == "on_time":
                    past_due = -int(self.rng.integers(3, 20))
                else:
                    past_due = int(self.rng.integers(-10, 80))
                past_due = min(past_due, (start - earliest).days - terms - 1)
                issued = start - timedelta(days=terms + past_due)
                n += 1
                amount = int(self.rng.integers(4, 120)) * 5_000 + int(self.rng.integers(0, 100))
                inv = PlannedInvoice(f"INV-{n:06d}", cid, issued, issued + timedelta(days=terms),
                                     amount)
                self.invoices[inv.invoice_id] = inv
                d.invoices.append(inv.invoice_id)
            if behaviour == "disputes":
                d.dispute = max(d.invoices, key=lambda i: (self.invoices[i].amount, i))
            self.debtors[cid] = d

    def issue(self) -> None:
        """Issue the starting invoices (the billing system, before the first turn)."""
        cmds: list[c.Command] = [
            c.IssueInvoice(invoice_id=i.invoice_id, customer_id=i.customer_id,
                           entry_date=i.issued_on, due_on=i.due_on,
                           lines=(c.InvoiceLineIn(description="Services", unit_price=i.amount),))
            for i in sorted(self.invoices.values(), key=lambda x: x.invoice_id)]
        if cmds:
            result = self.engine.world.execute_batch(cmds, actor=BILLING)
            if not isinstance(result, list):
                raise RuntimeError(f"injection {KIND}: the starting invoices were refused: "
                                   f"{result.message}")

    def runs(self) -> list[date]:
        """The days of the weekly collections runs: the calendar's business days on the
        run weekday."""
        cal = self.engine.calendar
        return [d for d in cal.business_days() if d.weekday() == self.params.run_weekday]

    def truth(self) -> dict[str, Any]:
        """What was planned (JSON-ready)."""
        return {"runs": [d.isoformat() for d in self.runs()],
                "invoices": [{**asdict(i), "issued_on": i.issued_on.isoformat(),
                              "due_on": i.due_on.isoformat()} for i in self.invoices.values()],
                "debtors": [{"customer_id": d.customer_id, "behaviour": d.behaviour,
                             "keeps": d.keeps, "invoices": d.invoices, "dispute": d.dispute}
                            for d in self.debtors.values()]}

    # --- helpers ------------------------------------------------------------------------

    def quote(self, cid: str, invoice_id: str) -> str:
        """The invoice number as the customer writes it."""
        return str(self.population.customers[cid].quote(invoice_id))

    def _gen(self, *key: str) -> Any:
        return self.engine.streams.generator(":".join(("collections", *key)))

    def owed(self, invoice_id: str) -> int:
        """What the customer still owes on an invoice in its own view: less what it paid
        and what the company credited."""
        inv = self.invoices[invoice_id]
        credited = sum(d.amount for d in self._resolutions() if d.invoice_id == invoice_id)
        return max(0, inv.amount - inv.paid - credited)

    def _resolutions(self) -> list[Any]:
        books = self.engine.world.ledger.books.collections
        return [self._credit_of(d.dispute_id) for d in books.disputes.values()
                if d.outcome == "credited"]

    def _credit_of(self, dispute_id: str) -> Any:
        for e in self.engine.world.ledger.store.read(stream=f"dispute:{dispute_id}",
                                                     types=["dispute_resolved"]):
            return e.event
        raise KeyError(dispute_id)

    def pay(self, cid: str, invoice_ids: list[str], why: str) -> None:
        """Send one ACH for what is owed on these invoices, quoting them."""
        allocs = [(i, self.owed(i)) for i in invoice_ids]
        allocs = [(i, a) for i, a in allocs if a > 0]
        if not allocs:
            return
        self._send(cid, allocs, why)

    def _send(self, cid: str, allocs: list[tuple[str, int]], why: str) -> None:
        for i, a in allocs:
            self.invoices[i].paid += a
        self._payments += 1
        self.engine.world.emit(PaymentSent(
            customer_id=cid, payment_id=f"PAY-{cid}-K{self._payments:04d}", method="ach",
            amount=sum(a for _, a in allocs), arrives=sum(a for _, a in allocs),
            payer_name=self.debtors[cid].name,
            reference=" ".join(self.quote(cid, i) for i, _ in allocs),
            allocations=tuple(Allocation(doc_id=i, amount=a) for i, a in allocs),
            behaviour=f"collections:{why}"), f"counterparty:{cid}")

    def overdue(self, cid: str, day: date) -> list[str]:
        """The customer's invoices past due on ``day`` that it still owes."""
        return [i for i in self.debtors[cid].invoices
                if self.invoices[i].due_on < day and self.owed(i) > 0]

    def later(self, day: date, n: int, phase: Phase, fn: Any, *args: Any) -> None:
        """Run ``fn(*args)`` ``n`` business days after ``day`` (if the calendar runs)."""
        cal = self.engine.calendar
        on = cal.add_business_days(day, n)
        if on > cal.end:
            return

        def go() -> Generator[Any, Any, None]:
            yield self.engine.until(on, phase)
            fn(*args)
        self.engine.process(go())

    def email(self, cid: str, subject: str, body: str, truth: dict[str, Any]) -> None:
        """An email from the customer's accounts payable."""
        d = self.debtors[cid]
        deliver_email(self.engine, actor=f"counterparty:{cid}", sender=f"{d.name} <{d.email}>",
                      subject=subject, body=body + f"\n\nAccounts payable\n{d.name}\n",
                      slug="collections", truth={"collections": truth.pop("what"),
                                                 "customer_id": cid, **truth})

    # --- the plan of the first week ------------------------------------------------------

    def plan(self) -> None:
        """Disputes, distractors and on-time payments, drawn before anything happens."""
        cal = self.engine.calendar
        for cid, d in sorted(self.debtors.items()):
            if d.dispute is not None:
                self.later(cal.start, 1, Phase.MAIL, self.send_dispute, cid)
            if drawn(self.engine.streams, f"collections:noise:{cid}", self.params.noise_share):
                self.later(cal.start, 2, Phase.MAIL, self.send_noise, cid)
            if d.behaviour == "on_time":
                for i in d.invoices:
                    inv = self.invoices[i]
                    send = self._two_days_before(inv.due_on)
                    if cal.start <= send <= cal.end:
                        self.later(send, 0, Phase.COUNTERPARTIES, self.pay, cid, [i], "on_time")

    def _two_days_before(self, day: date) -> date:
        cal = self.engine.calendar
        d = day
        for _ in range(2):
            d -= timedelta(days=1)
            while not cal.is_business_day(d):
                d -= timedelta(days=1)
        return d

    def send_dispute(self, cid: str) -> None:
        """Email the dispute of the customer's largest invoice; the sales manager's ruling
        follows a week later."""
        d = self.debtors[cid]
        assert d.dispute is not None
        inv = self.invoices[d.dispute]
        rng = self._gen("dispute", cid)
        words, reason = DISPUTE_REASONS[int(rng.integers(0, len(DISPUTE_REASONS)))]
        part = bool(rng.random() < self.params.part_share)
        disputed = inv.amount if not part else max(100, inv.amount // 100 * int(
            rng.integers(20, 60)))
        ref = self.quote(cid, inv.invoice_id)
        amount_words = (f"the whole invoice ({amount_text(inv.amount)})" if not part else
                        f"{amount_text(disputed)} of it")
        subject, body = DISPUTE_WORDINGS[int(self._gen("wording", "dispute", cid).integers(
            0, len(DISPUTE_WORDINGS)))]
        self.email(cid, subject.format(ref=ref),
                   "Hello,\n\n" + body.format(ref=ref, words=words, amount=amount_words),
                   {"what": "dispute", "invoice_id": inv.invoice_id, "amount": disputed,
                    "reason": reason})
        credit = bool(rng.random() < self.params.credit_share)
        credited = 0
        if credit:
            credited = disputed if rng.random() >= self.params.part_share else \
                max(100, disputed // 200 * 100)
        self.later(self.engine.today, 5, Phase.MAIL, self.send_ruling, cid, inv.invoice_id,
                   credited, reason)

    def send_ruling(self, cid: str, invoice_id: str, credited: int, reason: str) -> None:
        """The sales manager's ruling on a dispute (an internal email)."""
        d = self.debtors[cid]
        if credited:
            body = (f"Hi,\n\nI looked into {d.name}'s dispute of invoice {invoice_id} "
                    f"({reason}). They are right: please issue them a credit of "
                    f"{amount_text(credited)} against the invoice and close the dispute. The "
                    "rest of the invoice stands.\n\nDana\nSales manager")
        else:
            body = (f"Hi,\n\nI looked into {d.name}'s dispute of invoice {invoice_id} "
                    f"({reason}). We have the signed delivery records: the dispute is "
                    "rejected, they owe the invoice in full. Please close the dispute as "
                    "rejected and carry on collecting.\n\nDana\nSales manager")
        deliver_email(self.engine, actor=ACTOR, sender=SALES_MANAGER,
                      subject=f"Ruling on the {d.name} dispute ({invoice_id})", body=body,
                      slug="ruling",
                      truth={"collections": "resolution", "customer_id": cid,
                             "invoice_id": invoice_id,
                             "outcome": "credited" if credited else "rejected",
                             "amount": credited})

    def send_noise(self, cid: str) -> None:
        """An email that asks for nothing the policy acts on."""
        d = self.debtors[cid]
        rng = self._gen("noise-email", cid)
        subject, body = NOISE_EMAILS[int(rng.integers(0, len(NOISE_EMAILS)))]
        ref = self.quote(cid, d.invoices[0])
        self.email(cid, subject.format(ref=ref), "Hello,\n\n" + body.format(ref=ref),
                   {"what": "noise", "invoice_id": d.invoices[0]})

    # --- reacting to the books -------------------------------------------------------

    def react(self, day: date) -> None:
        """At the end of a business day: answer the day's letters, holds and rulings."""
        books = self.engine.world.ledger.books.collections
        letters = list(books.letters.values())
        for e in letters[self._seen["letters"]:]:
            self._on_letter(e.customer_id, e.invoice_id, e.level, day)
        self._seen["letters"] = len(letters)
        holds = list(books.holds.values())
        for h in holds[self._seen["holds"]:]:
            d = self.debtors.get(h.customer_id)
            if d is not None and (d.behaviour == "hold" or (d.behaviour == "promises"
                                                            and not d.keeps)):
                self.later(day, 1, Phase.COUNTERPARTIES, self._pay_overdue, h.customer_id,
                           "hold")
        self._seen["holds"] = len(holds)
        resolved = [x for x in books.disputes.values() if x.outcome is not None]
        for x in resolved[self._seen["resolved"]:]:
            if x.customer_id in self.debtors and x.invoice_id in self.invoices:
                self.later(day, 1, Phase.COUNTERPARTIES, self.pay, x.customer_id,
                           [x.invoice_id], "after_ruling")
        self._seen["resolved"] = len(resolved)

    def _pay_overdue(self, cid: str, why: str) -> None:
        self.pay(cid, self.overdue(cid, self.engine.today), why)

    def _on_letter(self, cid: str, invoice_id: str, level: int, day: date) -> None:
        d = self.debtors.get(cid)
        if d is None or invoice_id not in self.invoices or invoice_id == d.dispute:
            return
        if d.behaviour in ("letter_1", "disputes") or (d.behaviour == "letter_2"
                                                       and level >= 2):
            self.later(day, 1, Phase.COUNTERPARTIES, self.pay, cid, [invoice_id],
                       f"letter_{level}")
        elif d.behaviour == "promises" and invoice_id not in d.promised:
            d.promised.add(invoice_id)
            self.later(day, 1, Phase.MAIL, self._promise, cid, invoice_id)

    def _promise(self, cid: str, invoice_id: str) -> None:
        d = self.debtors[cid]
        owed = self.owed(invoice_id)
        if owed <= 0:
            return
        rng = self._gen("promise", cid, invoice_id)
        amount = owed if rng.random() >= self.params.part_share else max(
            100, owed // 200 * 100)
        cal = self.engine.calendar
        pay_by = cal.add_business_days(self.engine.today, int(rng.integers(6, 8)))
        ref = self.quote(cid, invoice_id)
        style = int(rng.integers(0, 4))
        which = ("the full balance" if amount == owed
                 else f"{amount_text(amount)} now, the rest later")
        subject, body = PROMISE_WORDINGS[int(self._gen("wording", "promise", cid,
                                                       invoice_id).integers(
            0, len(PROMISE_WORDINGS)))]
        self.email(cid, subject.format(ref=ref),
                   "Hello,\n\n" + body.format(ref=ref, amount=amount_text(amount), which=which,
                                               day=date_text(pay_by, style)),
                   {"what": "promise", "invoice_id": invoice_id, "amount": amount,
                    "pay_by": pay_by.isoformat(), "kept": d.keeps})
        if d.keeps:
            send = max(self._two_days_before(pay_by), cal.add_business_days(self.engine.today, 1))
            self.later(send, 0, Phase.COUNTERPARTIES, self._pay_part, cid, invoice_id, amount)

    def _pay_part(self, cid: str, invoice_id: str, amount: int) -> None:
        pay = min(amount, self.owed(invoice_id))
        if pay > 0:
            self._send(cid, [(invoice_id, pay)], "promise_kept")


@register(KIND, CollectionsParams)
def plant_collections_book(population: PopulationView, inj: PlannedInjection) -> None:
    """Issue the starting book, record the plan, and set the customers reacting."""
    book = CollectionsBook(population, inj)
    book.issue()
    mark_planted(population.engine, inj, **book.truth())
    book.plan()
    population.engine.daily(Phase.DAY_END, book.react)
