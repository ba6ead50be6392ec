"""The month's purchases of a fixed-asset register: a written policy, vendor bills, a sale.

The ``fixed_asset_materials`` injection (planted once, on the calendar's first day) sets up
the company's fixed-asset register and sends the papers its month-end closes work from:

- the register itself, written in the books as the scenario's (``scenario:injection``):
  the asset classes of the policy (``DefineAssetClass``), and a few assets bought years
  ago (an opening journal entry capitalized, each month since depreciated), so the books
  open with cost, accumulated depreciation and assets still depreciating;
- the written capitalization policy (``capitalization-policy.txt``, on the first day):
  the threshold (drawn per instance), the classes with their accounts, useful lives (drawn)
  and the words that name their items, and how repairs, improvements, installation and
  disposals are treated;
- the vendors' bills of each month (text, PDF or inside an email, as the scenario's
  document noise draws them): equipment, furniture, computers and perpetual software
  licences, some lines under the threshold (a laptop too cheap, three chairs whose total
  passes it but each does not), an item with its installation billed beside it (its cost
  includes it), repairs of the register's assets (expensed, however large) and upgrades
  of them (capitalized in the improved asset's class), and, on the hard tier, items
  delivered in one month and placed in service in the next;
- quotations that are no bills (hard tier);
- the operations manager's email of a sale of one of the register's assets in the last
  closed month: the buyer, the day and the price (to be collected: 1250 Other receivables).

What is due (the truth the checks grade against) is recorded in an ``InjectionPlanted``
event: the policy, the register, every bill with each line's account and the assets it
must give (class, cost, in-service date, life), and the disposal with its gain or loss.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from typing import Any

from counterparties.accruals import closed_months, month_days, period_of
from counterparties.injections import FixedAssetParams, register
from counterparties.noise import bill_format, email_request
from counterparties.planting import ACTOR, injection_rng, mark_planted
from counterparties.specs import PlannedInjection, PopulationView
from erp import commands as c
from erp.handlers import depreciation_due
from erp.money import display_cents
from sim.documents import deliver, deliver_binary, deliver_email
from sim.engine import Phase
from sim.pdf import render_text_pdf

KIND = "fixed_asset_materials"

SMALL_ACCOUNT = "6060"
"""Purchases (goods, licences, delivery, installation) as billed; what stays is expensed."""
REPAIRS_ACCOUNT = "6050"
"""Work on the register's assets (repairs, servicing, upgrades) as billed."""
DEPRECIATION_ACCOUNT = "6500"
PROCEEDS_ACCOUNT = "1250"
GAIN_LOSS_ACCOUNT = "4800"
OPENING_EQUITY = "3900"
THRESHOLDS = (200_000, 250_000, 300_000, 500_000)

CLASSES: dict[str, tuple[str, str, str, tuple[int, ...], tuple[str, ...]]] = {
    "CE": ("Computer equipment", "1510", "1591", (36, 48),
           ("laptop", "workstation", "server", "switch")),
    "SW": ("Software", "1520", "1592", (36, 60), ("licence",)),
    "FF": ("Furniture and fixtures", "1530", "1593", (84, 120),
           ("desk", "table", "chair", "cabinet")),
    "EQ": ("Equipment", "1500", "1590", (60, 84),
           ("copier", "generator", "refrigerator", "projector")),
}
"""Class id -> (name, cost account, accumulated account, lives drawn from, item words)."""

ITEMS: dict[str, tuple[str, ...]] = {
    "CE": ("Laptop, Dell Latitude 7450", "Workstation, Lenovo ThinkStation P3",
           "Server, Dell PowerEdge R760", "Network switch, Cisco C9300"),
    "SW": ("Perpetual licence, AutoCAD 2026 (5 seats)", "Perpetual licence, SQL Database 2025",
           "Perpetual licence, Adobe Acrobat Pro x10"),
    "FF": ("Conference table, walnut, 12-seat", "Reception desk with counter",
           "Ergonomic office chair, Steelcase", "Filing cabinet, steel, 4-drawer",
           "Sit-stand desk, Uplift V2"),
    "EQ": ("Multifunction copier, Canon C5850", "Standby generator, 22 kW",
           "Refrigerator, commercial, 2-door", "Projector, Epson L630U, with screen"),
}
"""What the vendors sell, per class (each names one of its class's words)."""

REGISTER_ITEMS = (("CE", "Server, Dell PowerEdge R740"), ("EQ", "Copier, Ricoh MP 4055"),
                  ("FF", "Conference table, oak, 10-seat"), ("CE", "Network switch, HP 2930F"),
                  ("EQ", "Generator, Generac 13 kW"), ("FF", "Reception desk, laminate"))
REPAIRS = ("Repair of {what}, asset {aid}", "Service call, {aid} ({what})",
           "Maintenance, {what} {aid}", "Repair, replaced worn parts: {aid}")
UPGRADES = ("Upgrade of {aid}: adds capacity", "Improvement to {aid}: longer life",
            "Retrofit of {aid}, extends its life")
"""Work on a register asset, as the vendors word it (each fits the bill's 44 columns)."""
BUYERS = ("Second Life Office Equipment", "Midwest Asset Recovery", "Reuse Depot LLC",
          "Brightline Liquidators")


@dataclass(frozen=True)
class AssetClassTerms:
    """A class of the written policy."""

    class_id: str
    name: str
    cost_account: str
    accumulated_account: str
    life_months: int
    words: tuple[str, ...]


@dataclass
class PurchaseLine:
    """A line of a vendor bill as printed, with what the policy makes of it."""

    description: str
    quantity: int
    unit: int
    account: str
    kind: str  # "goods", "install", "repair", "upgrade"
    of_line: int | None = None
    """An installation line: the (1-based) line of the item it installs."""

    @property
    def amount(self) -> int:
        """The line's total (cents)."""
        return self.quantity * self.unit


@dataclass
class AssetDue:
    """An asset a bill must give: its class, cost, in-service date and life."""

    class_id: str
    amount: int
    in_service: date
    life_months: int
    lines: tuple[int, ...]
    source_account: str
    description: str


@dataclass
class PurchaseBill:
    """A vendor's bill for the month's purchases or work."""

    vendor_id: str
    number: str
    issued_on: date
    due_on: date
    delivered_on: date
    in_service: date
    delivered: date | None
    lines: list[PurchaseLine]
    assets: list[AssetDue] = field(default_factory=list)

    @property
    def total(self) -> int:
        """What the bill asks (cents)."""
        return sum(x.amount for x in self.lines)


@dataclass(frozen=True)
class RegisterAsset:
    """An asset of the opening register (bought before the calendar)."""

    asset_id: str
    class_id: str
    description: str
    serial: str
    cost: int
    in_service: date
    life_months: int


def month_index(period: str) -> int:
    """A month as a number (months since year 0), to count between months."""
    return int(period[:4]) * 12 + int(period[5:]) - 1


def month_name(index: int) -> str:
    """The ``YYYY-MM`` of :func:`month_index`."""
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _month_end(period: str) -> date:
    """The last day of a ``YYYY-MM`` month."""
    return month_days(period)[1]


def accumulated_before(cost: int, life: int, in_service: str, period: str) -> int:
    """What an asset has depreciated in the months before ``period``."""
    return sum(depreciation_due(cost, life, in_service, month_name(k))
               for k in range(month_index(in_service), month_index(period)))


def _money(cents: int) -> str:
    return display_cents(cents)


class _Plan:
    """The draws of one instance's register, policy, bills and sale, in a fixed order."""

    def __init__(self, population: PopulationView, inj: PlannedInjection) -> None:
        self.engine = population.engine
        self.params: FixedAssetParams = inj.params
        self.rng = rng = injection_rng(self.engine, inj)
        self.months = closed_months(self.engine)
        if len(self.months) < 2:
            raise ValueError(f"injection {KIND}: the calendar closes {len(self.months)} "
                             "month(s); expected at least 2 (the sale is in the last one)")
        self.vendors = [population.vendors[k] for k in sorted(population.vendors)]
        if not self.vendors:
            raise ValueError(f"injection {KIND}: the population has no vendors (raise "
                             "population.vendors.count)")
        self.threshold = THRESHOLDS[int(rng.integers(0, len(THRESHOLDS)))]
        self.classes = {cid: AssetClassTerms(cid, name, cost, acc,
                                             lives[int(rng.integers(0, len(lives)))], words)
                        for cid, (name, cost, acc, lives, words) in CLASSES.items()}
        start = self.engine.calendar.start
        self.register: list[RegisterAsset] = []
        for n in range(self.params.register_assets):
            cid, what = REGISTER_ITEMS[n % len(REGISTER_ITEMS)]
            life = self.classes[cid].life_months
            age = int(rng.integers(8, min(life - 6, 40)))
            in_service = date.fromisoformat(month_name(month_index(period_of(start)) - age)
                                            + "-01") + timedelta(days=int(rng.integers(0, 27)))
            cost = int(rng.integers(4, 25)) * self.threshold // 2 + int(rng.integers(0, 100))
            serial = f"SN {''.join(chr(65 + int(rng.integers(0, 26))) for _ in range(2))}" \
                     f"{int(rng.integers(10_000, 99_999))}"
            self.register.append(RegisterAsset(f"FA-{n + 1:06d}", cid, what, serial, cost,
                                               in_service, life))
        self.sold = self.register[int(rng.integers(0, len(self.register)))]
        """The register asset sold in the last closed month (no work is billed on it)."""
        self.bills: list[PurchaseBill] = []
        seq = {v.vendor_id: int(rng.integers(100, 900)) for v in self.vendors}
        for period in self.months:
            for _ in range(self.params.bills_per_month):
                vendor = self.vendors[int(rng.integers(0, len(self.vendors)))]
                seq[vendor.vendor_id] += 1
                self.bills.append(self._bill(vendor.vendor_id, seq[vendor.vendor_id], period))
        self.disposal = self._disposal()
        self.quotes = [self._quote(n) for n in range(self.params.quotes)]

    # --- the bills ------------------------------------------------------------------------

    def _price(self, capital: bool, several: bool = False) -> int:
        """A unit price at or over the threshold (capital: up to two and a half times it,
        a third over it for a line of several units) or under it (from a third of it), in
        cents."""
        t, u = self.threshold, float(self.rng.random())
        cents = int(self.rng.integers(0, 100))
        if capital:
            return int(t * (1 + u * (0.35 if several else 1.5))) // 100 * 100 + cents
        return int(t * (0.3 + u * 0.65)) // 100 * 100 + cents

    def _goods(self, lines: list[PurchaseLine]) -> None:
        p, rng = self.params, self.rng
        cid = sorted(ITEMS)[int(rng.integers(0, len(ITEMS)))]
        what = ITEMS[cid][int(rng.integers(0, len(ITEMS[cid])))]
        below = bool(rng.random() < p.below_share)
        qty = int(rng.integers(2, 6)) if rng.random() < p.quantity_share else 1
        unit = self._price(not below, qty > 1)
        if below and qty > 1 and unit * qty < self.threshold:
            qty = self.threshold // unit + 1  # several, whose total passes the threshold
        lines.append(PurchaseLine(what, qty, unit, SMALL_ACCOUNT, "goods"))
        if qty == 1 and rng.random() < p.bundle_share:
            fee = int(self.threshold * (0.05 + float(rng.random()) * 0.25)) // 100 * 100
            lines.append(PurchaseLine(f"Delivery and installation, item {len(lines)}", 1, fee,
                                  SMALL_ACCOUNT, "install", len(lines)))

    def _work(self, lines: list[PurchaseLine]) -> None:
        rng = self.rng
        kept = [a for a in self.register if a is not self.sold] or self.register
        asset = kept[int(rng.integers(0, len(kept)))]
        what = asset.description.split(",")[0].lower()
        if rng.random() < self.params.improvement_share:
            text = UPGRADES[int(rng.integers(0, len(UPGRADES)))]
            unit = self._price(True)
            kind = "upgrade"
        else:
            text = REPAIRS[int(rng.integers(0, len(REPAIRS)))]
            unit = int(self.threshold * (0.1 + float(rng.random()) * 1.4)) // 100 * 100 \
                + int(rng.integers(0, 100))
            kind = "repair"
        lines.append(PurchaseLine(text.format(what=what, aid=asset.asset_id), 1, unit,
                              REPAIRS_ACCOUNT, kind))

    def _bill(self, vendor_id: str, seq: int, period: str) -> PurchaseBill:
        rng, p = self.rng, self.params
        first = date.fromisoformat(f"{period}-01")
        last = _month_end(period)
        issued = first + timedelta(days=int(rng.integers(1, (last - first).days - 1)))
        lines: list[PurchaseLine] = []
        if self.register and rng.random() < p.repair_share:
            for _ in range(1 + int(rng.random() < 0.3)):
                self._work(lines)
        else:
            for _ in range(1 + int(rng.integers(0, 3))):
                self._goods(lines)
        delivered = issued - timedelta(days=int(rng.integers(0, 5)))
        delivered = max(delivered, first)
        in_service = delivered + timedelta(days=int(rng.integers(0, 3)))
        if rng.random() < p.late_service_share and period != self.months[-1]:
            in_service = last + timedelta(days=int(rng.integers(2, 10)))
        in_service = min(in_service, issued) if in_service.month == issued.month else in_service
        bill = PurchaseBill(vendor_id, f"{vendor_id.replace('V-', 'V')}-{seq:04d}", issued,
                            issued + timedelta(days=30), issued, in_service, delivered, lines)
        bill.assets = self._assets_of(bill)
        return bill

    def _assets_of(self, bill: PurchaseBill) -> list[AssetDue]:
        """What the policy capitalizes from a bill: each item whose unit cost with its
        installation is the threshold or more (one asset per line), each upgrade."""
        out = []
        for n, line in enumerate(bill.lines, start=1):
            if line.kind == "goods":
                extra = [m for m, x in enumerate(bill.lines, start=1) if x.of_line == n]
                cost = line.amount + sum(bill.lines[m - 1].amount for m in extra)
                if cost < self.threshold * line.quantity:
                    continue  # under the threshold per unit, installation included
                cid = next(k for k, items in ITEMS.items() if line.description in items)
                out.append(AssetDue(cid, cost, bill.in_service, self.classes[cid].life_months,
                                    (n, *extra), SMALL_ACCOUNT, line.description))
            elif line.kind == "upgrade":
                aid = next(a for a in self.register if a.asset_id in line.description)
                out.append(AssetDue(aid.class_id, line.amount, bill.in_service,
                                    self.classes[aid.class_id].life_months, (n,),
                                    REPAIRS_ACCOUNT, line.description))
        return out

    # --- the sale and the quotations --------------------------------------------------------

    def _disposal(self) -> dict[str, Any]:
        rng = self.rng
        period = self.months[-1]
        first, last = date.fromisoformat(f"{period}-01"), _month_end(period)
        asset = self.sold
        day = first + timedelta(days=int(rng.integers(3, (last - first).days - 6)))
        accumulated = accumulated_before(asset.cost, asset.life_months,
                                         period_of(asset.in_service), period)
        book = asset.cost - accumulated
        proceeds = int(book * (0.4 + float(rng.random()) * 1.0)) // 100 * 100
        return {"asset_id": asset.asset_id, "serial": asset.serial,
                "description": asset.description, "date": day.isoformat(),
                "told_on": (day + timedelta(days=int(rng.integers(1, 4)))).isoformat(),
                "buyer": BUYERS[int(rng.integers(0, len(BUYERS)))], "proceeds": proceeds,
                "cost": asset.cost, "accumulated": accumulated,
                "gain": proceeds - book, "period": period}

    def _quote(self, n: int) -> dict[str, Any]:
        rng = self.rng
        vendor = self.vendors[int(rng.integers(0, len(self.vendors)))]
        cid = sorted(ITEMS)[int(rng.integers(0, len(ITEMS)))]
        what = ITEMS[cid][int(rng.integers(0, len(ITEMS[cid])))]
        period = self.months[int(rng.integers(0, len(self.months)))]
        day = date.fromisoformat(f"{period}-01") + timedelta(days=int(rng.integers(2, 25)))
        return {"vendor_id": vendor.vendor_id, "number": f"Q-{int(rng.integers(1000, 9999))}",
                "on": day.isoformat(), "description": what, "amount": self._price(True)}

    def truth(self) -> dict[str, Any]:
        """What the checks grade against (JSON-ready)."""
        def bill(b: PurchaseBill) -> dict[str, Any]:
            return {"vendor_id": b.vendor_id, "number": b.number,
                    "issued_on": b.issued_on.isoformat(), "due_on": b.due_on.isoformat(),
                    "delivered_on": b.delivered_on.isoformat(),
                    "in_service": b.in_service.isoformat(), "total": b.total,
                    "lines": [{**asdict(x), "amount": x.amount} for x in b.lines],
                    "assets": [{**asdict(a), "in_service": a.in_service.isoformat(),
                                "lines": list(a.lines)} for a in b.assets]}
        return {"months": self.months,
                "policy": {"threshold": self.threshold,
                           "classes": {k: {**asdict(v), "words": list(v.words)}
                                       for k, v in self.classes.items()},
                           "expense_account": DEPRECIATION_ACCOUNT,
                           "small_account": SMALL_ACCOUNT, "repairs_account": REPAIRS_ACCOUNT,
                           "proceeds_account": PROCEEDS_ACCOUNT,
                           "gain_loss_account": GAIN_LOSS_ACCOUNT},
                "register": [{**asdict(a), "in_service": a.in_service.isoformat()}
                             for a in self.register],
                "bills": [bill(b) for b in self.bills],
                "disposal": self.disposal, "quotes": self.quotes}


# --- the register in the books ------------------------------------------------------------


def register_commands(plan: _Plan) -> list[c.Command]:
    """The classes, and the opening register: periods back to its oldest asset, an opening
    entry per asset capitalized, and every month since depreciated."""
    cmds: list[c.Command] = [
        c.DefineAssetClass(class_id=k.class_id, name=k.name, cost_account=k.cost_account,
                           accumulated_account=k.accumulated_account,
                           expense_account=DEPRECIATION_ACCOUNT)
        for k in plan.classes.values()]
    start = month_index(period_of(plan.engine.calendar.start))
    if not plan.register:
        return cmds
    oldest = min(month_index(period_of(a.in_service)) for a in plan.register)
    # the books open periods from three months before the start (sim.automation)
    cmds += [c.OpenPeriod(period=month_name(k)) for k in range(oldest, start - 3)]
    for a in plan.register:
        entry = f"JE-FA-{a.asset_id}"
        cmds.append(c.PostJournalEntry(
            entry_id=entry, entry_date=a.in_service,
            memo=f"Opening register: {a.description} ({a.serial})",
            lines=(c.JournalLineIn(account=SMALL_ACCOUNT, debit=a.cost),
                   c.JournalLineIn(account=OPENING_EQUITY, credit=a.cost))))
        cmds.append(c.CapitalizeAsset(
            asset_id=a.asset_id, class_id=a.class_id, entry_id=entry,
            source_account=SMALL_ACCOUNT, amount=a.cost, entry_date=a.in_service,
            in_service_date=a.in_service, life_months=a.life_months,
            description=f"{a.description} ({a.serial})"))
    for k in range(oldest, start):
        ids = tuple(a.asset_id for a in plan.register
                    if 1 <= k - month_index(period_of(a.in_service)) + 1 <= a.life_months)
        if ids:
            cmds.append(c.RunDepreciation(period=month_name(k), asset_ids=ids))
    return cmds


# --- the papers ---------------------------------------------------------------------------


def render_policy(company: str, plan: _Plan) -> str:
    """The written capitalization policy (plain text)."""
    rows = [f"  {k.class_id:<4}{k.name:<26}{k.cost_account:<8}{k.accumulated_account:<8}"
            f"{k.life_months:>4} months   {', '.join(k.words)}"
            for k in plan.classes.values()]
    t = _money(plan.threshold)
    return "\n".join([
        f"{company.upper()}", "FIXED ASSET CAPITALIZATION POLICY", "",
        f"1. Threshold. An item costing USD {t} or more per unit, including the delivery "
        "and", "   installation billed for it, is capitalized as a fixed asset; below the "
        "threshold", f"   it is expensed (it stays on {SMALL_ACCOUNT} Small tools and "
        "equipment), however many", "   units a line has.",
        "2. Coding. Enter every purchase bill as invoiced, one line per invoice line: work "
        "on", f"   our assets (repairs, servicing, upgrades) on {REPAIRS_ACCOUNT} Repairs "
        f"and maintenance, everything", f"   else (goods, licences, delivery, installation) "
        f"on {SMALL_ACCOUNT}. Then capitalize from the", "   line's account, dated the "
        "bill's invoice date.",
        "3. One asset per invoice line of an item (all its units), its cost the line's "
        "amount", "   plus the delivery and installation lines for that item.",
        "4. Repairs and maintenance keep an asset working and are always expensed, "
        "whatever", "   they cost. An upgrade or improvement (it adds capacity or extends "
        "the asset's life)", "   is capitalized as an asset of its own, in the class of "
        "the asset it improves.",
        "5. Classes (depreciation expense 6500; straight line, no salvage value):",
        "  class name                      cost    accum.   life        items",
        *rows,
        "6. Depreciation starts in the month the asset is placed in service (a full "
        "month,", "   whatever the day) and is run once for every month at its close.",
        "7. Disposals. An asset sold is taken off the register on the day of the sale, "
        "before", "   that month's depreciation is run (no depreciation in the month of "
        "sale): its cost", f"   and accumulated depreciation out, the price owed by the "
        f"buyer on {PROCEEDS_ACCOUNT} Other", f"   receivables, the gain or loss on "
        f"{GAIN_LOSS_ACCOUNT} Gain or loss on disposal of assets.", ""])


def render_bill(vendor: Any, company: str, bill: PurchaseBill) -> str:
    """A purchase bill as the vendor's system prints it (plain text, 78 columns)."""
    head = [vendor.name.upper(), vendor.address[0], vendor.address[1],
            f"Phone {vendor.phone} | {vendor.email}", "", f"INVOICE {bill.number}", "",
            f"Invoice number:    {bill.number}",
            f"Invoice date:      {bill.issued_on.isoformat()}",
            f"Due date:          {bill.due_on.isoformat()}",
            f"Bill to:           {company}"]
    if bill.delivered is not None and bill.delivered != bill.in_service:
        head.append(f"Delivered:         {bill.delivered.isoformat()}")
    work = all(x.kind in ("repair", "upgrade") for x in bill.lines)
    head.append(f"{'Work completed:' if work else 'Placed in service:':<19}"
                f"{bill.in_service.isoformat()}")
    rows = [f"{n:>2} {x.description[:44]:<44}{x.quantity:>4}{_money(x.unit):>13}"
            f"{_money(x.amount):>13}" for n, x in enumerate(bill.lines, start=1)]
    return "\n".join([
        *head, "", f"{'#':>2} {'Description':<44}{'Qty':>4}{'Unit price':>13}{'Amount':>13}",
        "-" * 76, *rows, "-" * 76, f"{'Total USD':>63}{_money(bill.total):>13}", "",
        f"Please quote invoice {bill.number} with your payment.", ""])


def render_quote(vendor: Any, quote: dict[str, Any]) -> str:
    """A quotation (no bill: nothing to enter)."""
    return "\n".join([
        vendor.name.upper(), f"Phone {vendor.phone} | {vendor.email}", "",
        f"QUOTATION {quote['number']}", "", f"Quotation date: {quote['on']}",
        "Valid for 30 days. This is not an invoice.", "",
        f"{quote['description'][:44]:<44}{_money(quote['amount']):>16}", ""])


def render_sale(company: str, sale: dict[str, Any], by_id: bool) -> str:
    """The operations manager's email of an asset sold."""
    which = f"{sale['description']} ({sale['serial']})"
    if by_id:
        which += f", asset {sale['asset_id']} in the register"
    return "\n".join([
        "Hi,", "", f"We sold our old {which} to {sale['buyer']} on {sale['date']}.",
        f"The agreed price is USD {_money(sale['proceeds'])}; they will pay it within 30 days, "
        "no invoice from us is needed.", "Please take it off the register.", "",
        "Thanks,", "Dana Whitfield", f"Operations manager, {company}", ""])


def _send_bill(population: PopulationView, bill: PurchaseBill) -> None:
    engine = population.engine
    vendor = population.vendors[bill.vendor_id]
    key = f"fixed-assets:{bill.vendor_id}:{bill.number}"
    text = render_bill(vendor, population.company_name, bill)
    truth = {"invoice": bill.number, "vendor_id": bill.vendor_id, "amount": bill.total,
             "assets": len(bill.assets)}
    fmt = bill_format(engine.streams, key, population.noise)
    name = f"invoice-{bill.number}"
    subject = f"Invoice {bill.number} from {vendor.name}"
    if fmt == "pdf":
        deliver_binary(engine, actor=vendor.actor, kind="bill", filename=f"{name}.pdf",
                       sender=vendor.email, subject=subject,
                       data=render_text_pdf(title=subject, text=text), truth=truth)
    elif fmt == "email":
        body = f"Hello,\n\n{email_request(engine.streams, key)}\n\n{text}"
        deliver_email(engine, actor=vendor.actor, sender=f"{vendor.name} <{vendor.email}>",
                      subject=subject, body=body, slug=name, truth=truth)
    else:
        deliver(engine, actor=vendor.actor, kind="bill", filename=f"{name}.txt",
                sender=vendor.email, subject=subject, content=text, truth=truth)


def _delivers(population: PopulationView, plan: _Plan) -> Generator[Any, Any, None]:
    engine = population.engine
    days: dict[date, list[tuple[str, Any]]] = {}
    days.setdefault(engine.calendar.start, []).append(("policy", None))
    for b in plan.bills:
        days.setdefault(b.delivered_on, []).append(("bill", b))
    for q in plan.quotes:
        days.setdefault(date.fromisoformat(q["on"]), []).append(("quote", q))
    days.setdefault(date.fromisoformat(plan.disposal["told_on"]), []).append(("sale", None))
    for day in sorted(days):
        yield engine.until(day, Phase.MAIL)
        for what, item in days[day]:
            if what == "policy":
                deliver(engine, actor=ACTOR, kind="other", filename="capitalization-policy.txt",
                        sender="controller@northwind-services.example",
                        subject="Fixed asset capitalization policy",
                        content=render_policy(population.company_name, plan))
            elif what == "bill":
                _send_bill(population, item)
            elif what == "quote":
                vendor = population.vendors[item["vendor_id"]]
                deliver(engine, actor=vendor.actor, kind="other",
                        filename=f"quotation-{item['number']}.txt", sender=vendor.email,
                        subject=f"Quotation {item['number']}",
                        content=render_quote(vendor, item))
            else:
                sale = plan.disposal
                deliver_email(engine, actor=ACTOR,
                              sender="Dana Whitfield <operations@northwind-services.example>",
                              subject="Sold: old " + sale["description"].split(",")[0].lower(),
                              body=render_sale(population.company_name, sale,
                                               plan.params.sale_names_asset),
                              slug="asset-sale", truth={"disposal": sale["asset_id"]})


@register(KIND, FixedAssetParams)
def plant_fixed_asset_materials(population: PopulationView, inj: PlannedInjection) -> None:
    """Set up the register, draw the policy, bills and sale, record what is due, send the
    papers."""
    plan = _Plan(population, inj)
    engine = population.engine
    result = engine.world.execute_batch(register_commands(plan), actor=ACTOR)
    if not isinstance(result, list):
        raise RuntimeError(f"injection {KIND}: the opening register was refused: "
                           f"{result.message}")
    mark_planted(engine, inj, **plan.truth())
    engine.process(_delivers(population, plan))
