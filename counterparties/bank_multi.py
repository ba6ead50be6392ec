"""Several bank accounts of one company at one bank: operating, savings and a company card.

The ``multi_bank_month`` injection (planted once, on the calendar's first day) opens the
savings and card accounts in the books beside the operating one, sets up the customers
whose cheques the company deposits, and runs one month of the three accounts:

- the accounts receivable clerk records each customer's cheque in the books the day it is
  deposited (a receipt applied to its invoice); the bank credits it to the operating
  account a business day later (a cheque deposited on the statement day arrives after
  it: a deposit in transit); a returned cheque comes back unpaid (``RETURNED ITEM NSF``)
  two business days after it was credited;
- the treasurer moves money between operating and savings at the bank (the treasury's
  transfer log lists each transfer): it leaves one account on the day it is made and
  arrives in the other one or two business days later (one made near the statement day
  arrives after it: a transfer in transit);
- staff pay with the company card: each charge is a line of the card account's statement
  under the merchant's name as the card network sends it (a prefix and a store or order
  code; messy at the hard tier: cased and cut differently);
- the bank makes mistakes: the operating account's monthly service charge posted twice,
  and (``misposted_deposit``) another client's deposit credited to the savings account.
  Told of an error (``BankErrorReported`` in the books), the bank posts its correction on
  the next business day.

Each account's bank (a ``counterparties.bank.Bank``: the operating one is the
population's, charging its fee and paying interest; savings pays interest; the card
neither) keeps its own lines (``BankLinePosted`` with the account's id) and sends its own
statement on the month's last business day (``bank-statement-``, ``savings-statement-``,
``card-statement-YYYY-MM.csv``). The truth is an ``InjectionPlanted`` event: the
accounts, the deposits (in transit or returned), the transfers (in transit or not), the
card charges with the account each is coded to, the bank's errors and the card policy.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from typing import Any

import numpy as np
from pydantic import Field

from counterparties.bank import BANK_NAME, STATEMENT_AT, Bank
from counterparties.injections import Params, register
from counterparties.planting import ACTOR, injection_rng, mark_planted
from counterparties.specs import PlannedInjection, PopulationView
from erp import commands as c
from erp.money import format_cents
from sim.documents import deliver, render_csv
from sim.engine import Engine, Phase
from sim.world import LogCursor

KIND = "multi_bank_month"

OPERATING, SAVINGS, CARD = "B-OPER", "B-SAVE", "B-CARD"
ACCOUNTS = {OPERATING: ("Operating account", "000123456789", "1000"),
            SAVINGS: ("Savings account", "000198764410", "1010"),
            CARD: ("Company credit card", "4485990012347731", "2060")}
"""Bank account id -> (name, number, GL account)."""
TRANSIT_ACCOUNT = "1090"

CUSTOMERS = ("Alder Creek Dental", "Brightline Logistics", "Cobalt Ridge Partners",
             "Dovetail Architects", "Evergreen Pediatrics", "Foxglove Media",
             "Granite Peak Outfitters", "Harborview Realty", "Ironwood Analytics",
             "Juniper Legal Group", "Kestrel Engineering", "Lakeshore Veterinary")
OTHER_CLIENTS = ("HARBOR LANE DENTAL", "NORTHSIDE AUTO GLASS", "PINECREST BAKERY")
"""The bank's other clients (whose deposit it may credit to the company's account)."""

MERCHANTS = (("Amazon Marketplace", "AMZN MKTP", "6450", (2_000, 40_000)),
             ("Staples", "STAPLES", "6450", (1_500, 25_000)),
             ("Uber", "UBER *TRIP", "6400", (1_200, 9_000)),
             ("Delta Air Lines", "DELTA AIR", "6400", (18_000, 90_000)),
             ("Blue Bottle Coffee", "SQ *BLUE BOTTLE", "6400", (800, 6_000)),
             ("Zoom", "ZOOM.US", "6200", (1_499, 24_990)),
             ("Adobe", "ADOBE *ACROPRO", "6200", (2_000, 9_000)),
             ("FedEx", "FEDEX", "6000", (1_500, 12_000)))
"""Card merchants: the company's name for it, how the card network names it (a prefix),
the expense account the card policy codes it to, the range of a charge in cents."""


class MultiBankParams(Params):
    """How many of each thing happens in the month, and how messy the card statement is."""

    deposits: int = Field(default=6, ge=1, le=40)
    deposits_in_transit: int = Field(default=1, ge=0, le=10)
    returned: int = Field(default=1, ge=0, le=5)
    transfers: int = Field(default=3, ge=1, le=20)
    transfers_in_transit: int = Field(default=1, ge=0, le=5)
    card_charges: int = Field(default=8, ge=1, le=60)
    misposted_deposit: bool = True
    messy_merchants: float = Field(default=0.0, ge=0, le=1)
    """The share of card lines whose merchant name is cased or run together differently."""


@dataclass(frozen=True)
class ChequeDeposit:
    """A customer's cheque: recorded by the clerk, credited (and perhaps returned) by the bank."""

    receipt_id: str
    customer_id: str
    invoice_id: str
    amount: int
    check_number: str
    recorded_on: date
    posted_on: date
    returned_on: date | None


@dataclass(frozen=True)
class Transfer:
    """A transfer the treasurer made at the bank."""

    confirmation: str
    from_account: str
    to_account: str
    amount: int
    sent_on: date
    arrives_on: date


@dataclass(frozen=True)
class CardCharge:
    """A charge on the company card as the card statement shows it."""

    posted_on: date
    amount: int
    merchant: str
    statement_name: str
    account: str


class AccountBank(Bank):
    """The bank of another of the company's accounts (its own lines and statement)."""

    def __init__(self, engine: Engine, population: PopulationView, account_id: str,
                 statement_name: str, interest_bp: int) -> None:
        super().__init__(engine, population, monthly_fee=0, item_fee=0,
                         interest_bp=interest_bp)
        self.account_id = account_id
        self.statement_name = statement_name

    def start(self) -> None:
        """Pay the month's interest and send the statement on the month's last business day."""
        self.engine.daily(Phase.BANK_MORNING, self.charges_month_end)
        self.engine.daily(STATEMENT_AT, self.sends_statement)


def _cents(rng: np.random.Generator, lo: int, hi: int) -> int:
    return int(rng.integers(lo, hi + 1))


def _day_in(rng: np.random.Generator, days: list[date]) -> date:
    return days[int(rng.integers(0, len(days)))]


class _Plan:
    """The month drawn from the injection's own random stream."""

    def __init__(self, population: PopulationView, inj: PlannedInjection) -> None:
        engine = population.engine
        self.engine = engine
        self.params: MultiBankParams = inj.params
        rng = injection_rng(engine, inj)
        cal = engine.calendar
        month = [d for d in cal.business_days()
                 if (d.year, d.month) == (cal.start.year, cal.start.month)]
        self.statement_day = month[-1]
        self.opening_savings = _cents(rng, 80_000, 160_000) * 100
        self.customers = [(f"C{n + 1:02d}", CUSTOMERS[n % len(CUSTOMERS)])
                          for n in range(min(self.params.deposits, len(CUSTOMERS)))]
        self.deposits = self._deposits(rng, month)
        self.transfers = self._transfers(rng, month)
        self.charges = self._charges(rng, month)
        self.misposted: tuple[date, int, str, str] | None = None
        if self.params.misposted_deposit:
            self.misposted = (_day_in(rng, month[2:-1]), _cents(rng, 40_000, 300_000),
                              OTHER_CLIENTS[int(rng.integers(0, len(OTHER_CLIENTS)))],
                              f"{int(rng.integers(1000, 10000))}")

    def _deposits(self, rng: np.random.Generator, month: list[date]) -> list[ChequeDeposit]:
        cal = self.engine.calendar
        p = self.params
        n_transit = min(p.deposits_in_transit, p.deposits - 1)
        early = month[1:-4]
        out: list[ChequeDeposit] = []
        for n in range(p.deposits):
            cid = self.customers[n % len(self.customers)][0]
            transit = n >= p.deposits - n_transit
            recorded = self.statement_day if transit else _day_in(rng, early)
            posted = cal.add_business_days(recorded, 1)
            out.append(ChequeDeposit(f"RCP-{n + 1:04d}", cid, f"INV-{4101 + n}",
                               _cents(rng, 600, 9_500) * 100 + _cents(rng, 0, 99),
                               f"{int(rng.integers(1000, 9999))}", recorded, posted, None))
        for k in range(min(p.returned, p.deposits - n_transit)):
            d = out[k]
            out[k] = ChequeDeposit(d.receipt_id, d.customer_id, d.invoice_id, d.amount,
                             d.check_number, d.recorded_on, d.posted_on,
                             cal.add_business_days(d.posted_on, 2))
        return sorted(out, key=lambda d: (d.recorded_on, d.receipt_id))

    def _transfers(self, rng: np.random.Generator, month: list[date]) -> list[Transfer]:
        cal = self.engine.calendar
        p = self.params
        n_transit = min(p.transfers_in_transit, p.transfers)
        out: list[Transfer] = []
        for n in range(p.transfers):
            transit = n >= p.transfers - n_transit
            days = int(rng.integers(1, 3))
            if transit:
                sent = cal.add_business_days(self.statement_day, 1 - days) if n % 2 \
                    else self.statement_day
                days = max(days, (2 if sent < self.statement_day else 1))
            else:
                sent = _day_in(rng, month[:-4])
            to_savings = rng.random() < 0.3
            amount = (_cents(rng, 10, 60) if to_savings else _cents(rng, 50, 400)) * 10_000
            src, dst = (OPERATING, SAVINGS) if to_savings else (SAVINGS, OPERATING)
            out.append(Transfer(f"TRX-{int(rng.integers(100000, 999999))}", src, dst, amount,
                                sent, cal.add_business_days(sent, days)))
        return sorted(out, key=lambda t: (t.sent_on, t.confirmation))

    def _charges(self, rng: np.random.Generator, month: list[date]) -> list[CardCharge]:
        out: list[CardCharge] = []
        for _ in range(self.params.card_charges):
            merchant, prefix, account, (lo, hi) = MERCHANTS[int(rng.integers(0, len(MERCHANTS)))]
            code = "".join(str(int(x)) for x in rng.integers(0, 10, 6))
            name = f"{prefix} {code}" if not prefix.endswith("*") else f"{prefix}{code}"
            if rng.random() < self.params.messy_merchants:
                name = (name.title() if rng.random() < 0.5 else name.replace(" ", ""))[:22]
            out.append(CardCharge(_day_in(rng, month), _cents(rng, lo, hi), merchant, name,
                                  account))
        return sorted(out, key=lambda x: x.posted_on)

    def truth(self) -> dict[str, Any]:
        """What the month holds, for the checks and the oracle."""
        def days(x: Any) -> dict[str, Any]:
            return {k: (v.isoformat() if isinstance(v, date) else v) for k, v in
                    asdict(x).items()}

        return {"statement_day": self.statement_day.isoformat(),
                "accounts": {k: {"name": n, "number": num, "gl_account": gl}
                             for k, (n, num, gl) in ACCOUNTS.items()},
                "transit_account": TRANSIT_ACCOUNT,
                "deposits": [days(d) for d in self.deposits],
                "transfers": [days(t) for t in self.transfers],
                "card_charges": [days(x) for x in self.charges],
                "misposted_deposit": None if self.misposted is None else {
                    "account": SAVINGS, "posted_on": self.misposted[0].isoformat(),
                    "amount": self.misposted[1], "counterparty": self.misposted[2]},
                "card_policy": [{"merchant": m, "statement_prefix": p, "account": a}
                                for m, p, a, _ in MERCHANTS]}


def _set_up_books(population: PopulationView, plan: _Plan) -> None:
    """Open savings and the card, register the customers and their open invoices."""
    engine = population.engine
    opened_on = engine.calendar.start - timedelta(days=1)
    cmds: list[c.Command] = [
        c.OpenBankAccount(bank_account_id=SAVINGS, name=ACCOUNTS[SAVINGS][0],
                          number=ACCOUNTS[SAVINGS][1], gl_account=ACCOUNTS[SAVINGS][2],
                          entry_date=opened_on, opening_balance=plan.opening_savings),
        c.OpenBankAccount(bank_account_id=CARD, name=ACCOUNTS[CARD][0],
                          number=ACCOUNTS[CARD][1], gl_account=ACCOUNTS[CARD][2],
                          entry_date=opened_on)]
    cmds += [c.RegisterCustomer(customer_id=cid, name=name) for cid, name in plan.customers]
    cmds += [c.IssueInvoice(invoice_id=d.invoice_id, customer_id=d.customer_id,
                            entry_date=opened_on - timedelta(days=10),
                            lines=(c.InvoiceLineIn(description="Services (April)",
                                                   unit_price=d.amount),))
             for d in plan.deposits]
    result = engine.world.execute_batch(cmds, actor=ACTOR)
    if not isinstance(result, list):
        raise RuntimeError(f"multi_bank_month: the books refused the set-up: {result.message}")


def _last4(account_id: str) -> str:
    return ACCOUNTS[account_id][1][-4:]


class _Month:
    """The month as it happens: the clerk's receipts, the banks' lines, the documents."""

    def __init__(self, population: PopulationView, plan: _Plan) -> None:
        self.engine = population.engine
        self.plan = plan
        self.company = population.company_name
        self.banks: dict[str, Bank] = {OPERATING: population.bank}
        self.banks[SAVINGS] = AccountBank(self.engine, population, SAVINGS,
                                          "savings-statement", interest_bp=150)
        self.banks[CARD] = AccountBank(self.engine, population, CARD, "card-statement",
                                       interest_bp=0)
        self._reports = LogCursor(["bank_error_reported"])
        self.corrected: set[str] = set()

    def start(self) -> None:
        """Schedule every day's happenings and the bank's answer to reported errors."""
        self.banks[SAVINGS].start()
        self.banks[CARD].start()
        engine = self.engine
        engine.process(self._runs())
        engine.daily(Phase.DAY_END, self.corrects_reported_errors)

    def _at(self) -> list[tuple[date, float, Any]]:
        p = self.plan
        end = self.engine.calendar.end
        out: list[tuple[date, float, Any]] = []
        for d in p.deposits:
            out.append((d.recorded_on, Phase.COMPANY, ("record", d)))
            out.append((d.posted_on, Phase.BANK_MORNING + 0.01, ("credit", d)))
            if d.returned_on is not None:
                out.append((d.returned_on, Phase.BANK_MORNING + 0.01, ("return", d)))
        for t in p.transfers:
            out.append((t.sent_on, Phase.BANK_MORNING + 0.01, ("send", t)))
            out.append((t.arrives_on, Phase.BANK_MORNING + 0.015, ("arrive", t)))
        for x in p.charges:
            out.append((x.posted_on, Phase.BANK_MORNING + 0.01, ("charge", x)))
        if p.misposted is not None:
            out.append((p.misposted[0], Phase.BANK_MORNING + 0.012, ("misposted", None)))
        out.append((p.statement_day, Phase.BANK_MORNING + 0.02, ("duplicate_fee", None)))
        out.append((p.statement_day, STATEMENT_AT + 0.01, ("papers", None)))
        return sorted((x for x in out if x[0] <= end), key=lambda x: (x[0], x[1]))

    def _runs(self) -> Generator[Any, Any, None]:
        for day, phase, (what, item) in self._at():
            yield self.engine.until(day, phase)
            getattr(self, f"_{what}")(item)

    def _record(self, d: ChequeDeposit) -> None:
        result = self.engine.world.execute_batch([
            c.RecordReceipt(receipt_id=d.receipt_id, customer_id=d.customer_id,
                            bank_account_id=OPERATING, entry_date=d.recorded_on,
                            amount=d.amount, method="check", reference=f"CHK {d.check_number}"),
            c.ApplyReceipt(receipt_id=d.receipt_id, invoice_id=d.invoice_id, amount=d.amount,
                           entry_date=d.recorded_on)], actor=ACTOR)
        if not isinstance(result, list):
            raise RuntimeError(f"multi_bank_month: receipt {d.receipt_id} refused: "
                               f"{result.message}")

    def _name(self, customer_id: str) -> str:
        return dict(self.plan.customers)[customer_id].upper()

    def _credit(self, d: ChequeDeposit) -> None:
        self.banks[OPERATING].post(amount=d.amount, description="CHECK DEPOSIT",
                                   reference=f"CHK {d.check_number}",
                                   counterparty=self._name(d.customer_id), kind="deposit",
                                   source=d.receipt_id)

    def _return(self, d: ChequeDeposit) -> None:
        self.banks[OPERATING].post(amount=-d.amount, description="RETURNED ITEM NSF",
                                   reference=f"CHK {d.check_number}",
                                   counterparty=self._name(d.customer_id), kind="returned",
                                   source=d.receipt_id)

    def _send(self, t: Transfer) -> None:
        self.banks[t.from_account].post(
            amount=-t.amount, description=f"ONLINE TRANSFER TO ...{_last4(t.to_account)}",
            reference=t.confirmation, counterparty=self.company.upper(), kind="other",
            source=f"transfer:{t.confirmation}")

    def _arrive(self, t: Transfer) -> None:
        self.banks[t.to_account].post(
            amount=t.amount, description=f"ONLINE TRANSFER FROM ...{_last4(t.from_account)}",
            reference=t.confirmation, counterparty=self.company.upper(), kind="other",
            source=f"transfer:{t.confirmation}")

    def _charge(self, x: CardCharge) -> None:
        self.banks[CARD].post(amount=-x.amount, description=x.statement_name,
                              reference=f"CARD ...{_last4(CARD)}",
                              counterparty=x.statement_name, kind="payment",
                              source=f"card:{x.merchant}")

    def _misposted(self, _: None) -> None:
        assert self.plan.misposted is not None
        amount, client, acct = self.plan.misposted[1:]
        self.banks[SAVINGS].post(amount=amount, description="DEPOSIT",
                                 reference=f"FOR ACCT ...{acct}", counterparty=client,
                                 kind="deposit", source="error:misposted_deposit")

    def _duplicate_fee(self, _: None) -> None:
        bank = self.banks[OPERATING]
        fees = [x for x in bank.lines if x.kind == "fee"
                and x.posted_on == self.plan.statement_day]
        if fees:
            x = fees[0]
            bank.post(amount=x.amount, description=x.description, reference=x.reference,
                      counterparty=x.counterparty, kind="fee", source="error:duplicate_fee",
                      duplicate_of=x.line_id)

    def _papers(self, _: None) -> None:
        period = f"{self.plan.statement_day.year:04d}-{self.plan.statement_day.month:02d}"
        names = {a: f"{n} ...{_last4(a)}" for a, (n, _num, _gl) in ACCOUNTS.items()}
        log = render_csv(["date", "confirmation", "from_account", "to_account", "amount"],
                         [[t.sent_on.isoformat(), t.confirmation, names[t.from_account],
                           names[t.to_account], format_cents(t.amount)]
                          for t in self.plan.transfers])
        deliver(self.engine, actor=ACTOR, kind="other",
                filename=f"treasury-transfers-{period}.csv", sender="treasury@company.example",
                subject=f"Transfers between our accounts, {period}", content=log,
                truth={"transfers": [t.confirmation for t in self.plan.transfers]})
        policy = render_csv(["merchant", "statement_name_starts_with", "account"],
                            [[m, p, a] for m, p, a, _ in MERCHANTS])
        deliver(self.engine, actor=ACTOR, kind="policy", filename="card-expense-policy.csv",
                sender="controller@company.example", subject="Company card: expense coding",
                content=policy, truth={"card_policy": True})

    def corrects_reported_errors(self, day: date) -> None:
        """Answer the errors the company reported: the bank's correction, next business day."""
        cal = self.engine.calendar
        for e in self.engine.world.read_new(self._reports):
            err = e.event
            bank = self.banks.get(err.bank_account_id)
            if bank is None:
                continue
            wrong = [x for x in bank.lines if x.source and x.source.startswith("error:")
                     and x.amount == err.amount and x.line_id not in self.corrected]
            on = cal.add_business_days(day, 1)
            if not wrong or on > cal.end:
                continue
            self.corrected.add(wrong[0].line_id)
            bank.post(amount=-wrong[0].amount, description=f"CORRECTION {wrong[0].description}",
                      reference=f"ADJ {wrong[0].line_id}", counterparty=BANK_NAME,
                      kind="other", source=f"correction:{wrong[0].line_id}", posted_on=on)


@register(KIND, MultiBankParams)
def plant_multi_bank_month(population: PopulationView, inj: PlannedInjection) -> None:
    """Open savings and the card, and run the month of the three accounts."""
    plan = _Plan(population, inj)
    _set_up_books(population, plan)
    mark_planted(population.engine, inj, **plan.truth())
    _Month(population, plan).start()

