"""Checks of a fixed-asset register's closes against what the capitalization policy made due.

The truth is the ``fixed_asset_materials`` injection's record (``InjectionPlanted`` in the
world realm, :mod:`counterparties.fixed_assets`): the written policy (threshold, classes,
lives), the opening register, every purchase bill with each line's account and the assets
it must give, and the sale of a register asset. The books are read from the erp realm.

- ``asset_bills_entered``: every bill delivered is entered once (vendor, number, date, due
  date, total), its lines on the accounts the policy's coding gives (per account, to the
  cent), at the first close on or after the day it arrived (one held to a later close and
  dated back fails); no bill the vendors did not send (a quotation is none).
- ``assets_capitalized``: from each bill, exactly the assets the policy capitalizes (class,
  cost, in-service date, life, no salvage, from the line's account, dated the invoice
  date); nothing from a bill whose lines the policy expenses; no asset of the agent's
  from anything but a bill.
- ``depreciation_run``: in each period named, each asset due posted its straight-line
  month once (the register's and the bills'; none for an asset sold in or before the
  month), and no asset anything else.
- ``asset_disposed``: the sold asset is disposed of once, on the day of the sale, with
  the price on the proceeds account, its accumulated depreciation through the month
  before, the gain or loss on the policy's account; no other asset is.
- ``asset_classes_tie``: each class's cost and accumulated-depreciation account ties to
  the fixed-asset subledger (``queries.fixed_asset_ties``) and holds what the truth's
  register, bills and sale leave on it after the last close.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import date
from typing import Any, ClassVar, Literal

from pydantic import Field

from checks.context import CheckContext, planted_truth
from checks.registry import CheckResult, CheckSpec, check_type
from checks.state import held_past_its_turn, listing, plural
from erp import events as ev
from erp import queries as q
from erp.books import document_number_key
from erp.events import decode_event
from erp.handlers import depreciation_due
from erp.money import display_cents

_KIND = "fixed_asset_materials"
_Key = tuple[str, str, int]
"""A due asset: (vendor, invoice number key, its index on the bill), or ("register", id, 0)."""


def fixed_asset_truth(ctx: CheckContext) -> dict[str, Any]:
    """The recorded truth of the instance's register and papers (empty when none)."""
    return planted_truth(ctx, _KIND)


def _events(ctx: CheckContext, *types: str) -> list[tuple[str, ev.Event]]:
    """Erp-realm events of some types up to the checked position, with their actor."""
    return [(e.actor, decode_event(e.type, e.schema_version, e.payload))
            for e in ctx.store.read(realm="erp", types=list(types), until=ctx.position)]


def _result(ok_detail: str, problems: list[str], metrics: dict[str, Any]) -> CheckResult:
    if problems:
        return CheckResult("", False, f"{plural(len(problems), 'problem')}: {listing(problems)}",
                           {**metrics, "problems": len(problems)})
    return CheckResult("", True, ok_detail, {**metrics, "problems": 0})


def _missing() -> CheckResult:
    return CheckResult("", False, f"no {_KIND} truth in the world realm (the scenario plants "
                                  "none)")


def _bill_key(vendor_id: str, number: str) -> tuple[str, str]:
    return vendor_id, document_number_key(number)


def _money(cents: int) -> str:
    return display_cents(cents)


# --- asset_bills_entered -------------------------------------------------------------------


class AssetBillsEntered(CheckSpec):
    """Every purchase bill entered once, as invoiced, its lines coded as the policy says, at
    the first turn on or after the day it arrived."""

    family: ClassVar[str] = "state"
    type: Literal["asset_bills_entered"]


@check_type(AssetBillsEntered)
def asset_bills_entered(spec: AssetBillsEntered, ctx: CheckContext) -> CheckResult:
    """Compare the books' bills with the bills the vendors sent."""
    truth = fixed_asset_truth(ctx)
    if not truth:
        return _missing()
    due = {_bill_key(x["vendor_id"], x["number"]): x for x in truth["bills"]}
    bills: dict[tuple[str, str], list[ev.BillEntered]] = defaultdict(list)
    written: dict[tuple[str, str], date] = {}
    for e in ctx.store.read(realm="erp", types=["bill_entered"], until=ctx.position):
        b = decode_event(e.type, e.schema_version, e.payload)
        assert isinstance(b, ev.BillEntered)
        key = _bill_key(b.vendor_id, b.vendor_invoice_number)
        bills[key].append(b)
        written.setdefault(key, date.fromisoformat(e.business_date))
    turns = sorted(ctx.turn_dates)
    problems: list[str] = []
    for key, x in sorted(due.items()):
        found = bills.get(key, [])
        what = f"{x['vendor_id']} invoice {x['number']}"
        if not found:
            problems.append(f"{what} ({_money(x['total'])}) not entered")
            continue
        held = held_past_its_turn(what, date.fromisoformat(x["delivered_on"]), written[key],
                                  turns)
        if held:
            problems.append(held)
        if len(found) > 1:
            problems.append(f"{what} entered {len(found)} times")
        b = found[0]
        if b.total != x["total"]:
            problems.append(f"{what}: total {_money(b.total)}, invoiced {_money(x['total'])}")
        if b.entry_date.isoformat() != x["issued_on"]:
            problems.append(f"{what}: dated {b.entry_date}, invoiced {x['issued_on']}")
        if b.due_on.isoformat() != x["due_on"]:
            problems.append(f"{what}: due {b.due_on}, the invoice says {x['due_on']}")
        want = Counter((line["account"], line["amount"]) for line in x["lines"])
        got = Counter((line.account, line.amount) for line in b.lines)
        if want != got:
            off = ", ".join(f"{_money(a)} on {acct}" for acct, a in sorted((got - want)
                                                                             .elements()))
            exp = ", ".join(f"{_money(a)} on {acct}" for acct, a in sorted((want - got)
                                                                             .elements()))
            problems.append(f"{what}: lines {off or 'missing'}, the policy codes {exp or 'none'}")
    for key, found in sorted(bills.items()):
        if key not in due:
            b = found[0]
            problems.append(f"bill {b.bill_id} ({b.vendor_id} {b.vendor_invoice_number}) is no "
                            "invoice a vendor sent")
    return _result(f"{plural(len(due), 'bill')} entered once each, coded as the policy says",
                   problems, {"bills": len(due), "entered": sum(len(v) for v in bills.values())})


# --- assets_capitalized ------------------------------------------------------------------


def _shape(class_id: str, amount: int, in_service: str, life: int, salvage: int,
           source: str, entry_date: str) -> tuple[str, int, str, int, int, str, str]:
    return class_id, amount, in_service, life, salvage, source, entry_date


def _describe(s: tuple[str, int, str, int, int, str, str]) -> str:
    cls, amount, in_service, life, salvage, source, entry = s
    return (f"{cls} {_money(amount)} in service {in_service}, {life} months"
            + (f", salvage {_money(salvage)}" if salvage else "")
            + f", from {source} on {entry}")


def match_assets(ctx: CheckContext) -> tuple[dict[str, _Key], list[str], int]:
    """The agent's assets matched to the due ones (asset id -> due key), the problems of
    the match (missing, wrong or extra assets), and how many were due."""
    truth = fixed_asset_truth(ctx)
    register = {a["asset_id"] for a in truth.get("register", [])}
    by_bill_id: dict[str, tuple[str, str]] = {}
    for _, e in _events(ctx, "bill_entered"):
        assert isinstance(e, ev.BillEntered)
        by_bill_id[e.bill_id] = _bill_key(e.vendor_id, e.vendor_invoice_number)
    due: dict[tuple[str, str], list[tuple[_Key, tuple[str, int, str, int, int, str, str]]]] = {}
    n_due = 0
    numbers: dict[tuple[str, str], str] = {}
    for b in truth.get("bills", []):
        key = _bill_key(b["vendor_id"], b["number"])
        numbers[key] = b["number"]
        due[key] = [((b["vendor_id"], b["number"], n),
                     _shape(a["class_id"], a["amount"], a["in_service"], a["life_months"], 0,
                            a["source_account"], b["issued_on"]))
                    for n, a in enumerate(b["assets"])]
        n_due += len(b["assets"])
    got: dict[tuple[str, str], list[tuple[str, tuple[str, int, str, int, int, str, str]]]] = \
        defaultdict(list)
    problems: list[str] = []
    for _, e in _events(ctx, "asset_capitalized"):
        assert isinstance(e, ev.AssetCapitalized)
        if e.asset_id in register:
            continue
        if e.source_kind != "bill":
            problems.append(f"asset {e.asset_id} capitalized from journal entry {e.source_id}, "
                            "not from a bill")
            continue
        bkey = by_bill_id.get(e.source_id, ("?", e.source_id))
        got[bkey].append((e.asset_id, _shape(e.class_id, e.amount, e.in_service_date.isoformat(),
                                             e.life_months, e.salvage, e.source_account,
                                             e.entry_date.isoformat())))
    matched: dict[str, _Key] = {}
    for bkey in sorted(set(due) | set(got)):
        want = list(due.get(bkey, []))
        have = list(got.get(bkey, []))
        for aid, shape in list(have):
            hit = next((w for w in want if w[1] == shape), None)
            if hit is not None:
                matched[aid] = hit[0]
                want.remove(hit)
                have.remove((aid, shape))
        what = f"{bkey[0]} invoice {numbers[bkey]}" if bkey in due else f"bill {bkey[1]}"
        for aid, shape in have:
            problems.append(f"{what}: asset {aid} ({_describe(shape)}) is "
                            + ("not what the policy capitalizes"
                               + (f" (due: {'; '.join(_describe(w[1]) for w in want)})"
                                  if want else " (nothing more is due from it)")))
        if not have:
            for _, shape in want:
                problems.append(f"{what}: {_describe(shape)} not capitalized")
    return matched, problems, n_due


class AssetsCapitalized(CheckSpec):
    """From each bill exactly the assets the policy capitalizes, as it says."""

    family: ClassVar[str] = "state"
    type: Literal["assets_capitalized"]


@check_type(AssetsCapitalized)
def assets_capitalized(spec: AssetsCapitalized, ctx: CheckContext) -> CheckResult:
    """Compare the agent's assets with what the policy capitalizes from each bill."""
    if not fixed_asset_truth(ctx):
        return _missing()
    matched, problems, n_due = match_assets(ctx)
    return _result(f"{plural(n_due, 'asset')} capitalized as the policy says, nothing "
                   "expensed capitalized", problems, {"due": n_due, "matched": len(matched)})


# --- depreciation_run ---------------------------------------------------------------------


def due_assets(truth: dict[str, Any]) -> dict[_Key, tuple[str, int, int, str]]:
    """Every asset due in the register: key -> (class, cost, life, in-service month)."""
    out: dict[_Key, tuple[str, int, int, str]] = {}
    for a in truth["register"]:
        out[("register", a["asset_id"], 0)] = (a["class_id"], a["cost"], a["life_months"],
                                               a["in_service"][:7])
    for b in truth["bills"]:
        for n, a in enumerate(b["assets"]):
            out[(b["vendor_id"], b["number"], n)] = (
                a["class_id"], a["amount"], a["life_months"], a["in_service"][:7])
    return out


def expected_depreciation(truth: dict[str, Any], key: _Key, period: str) -> int:
    """What an asset due should depreciate in ``period`` (none in or after its sale)."""
    _, cost, life, start = due_assets(truth)[key]
    sale = truth["disposal"]
    if key[0] == "register" and key[1] == sale["asset_id"] and period >= sale["period"]:
        return 0
    return depreciation_due(cost, life, start, period)


class DepreciationRun(CheckSpec):
    """In each period named, each asset's month posted once, nothing else."""

    family: ClassVar[str] = "state"
    type: Literal["depreciation_run"]
    periods: tuple[str, ...] = Field(min_length=1)


@check_type(DepreciationRun)
def depreciation_run(spec: DepreciationRun, ctx: CheckContext) -> CheckResult:
    """Compare each period's depreciation with the assets due in it."""
    truth = fixed_asset_truth(ctx)
    if not truth:
        return _missing()
    matched, _, _ = match_assets(ctx)
    owner = {**{a["asset_id"]: ("register", a["asset_id"], 0) for a in truth["register"]},
             **matched}
    posted: dict[tuple[_Key, str], list[int]] = defaultdict(list)
    for _, e in _events(ctx, "asset_depreciated"):
        assert isinstance(e, ev.AssetDepreciated)
        if e.period in spec.periods:
            posted[(owner.get(e.asset_id, ("agent", e.asset_id, 0)), e.period)].append(e.amount)
    problems: list[str] = []
    total = 0
    keys = set(due_assets(truth))
    for period in spec.periods:
        for key in sorted(keys | {k for k, p in posted if p == period}):
            want = expected_depreciation(truth, key, period) if key in keys else 0
            total += want
            got = posted.get((key, period), [])
            if sum(got) != want or len(got) > 1:
                name = key[1] if key[0] in ("register", "agent") else \
                    f"{key[0]} invoice {key[1]} asset {key[2] + 1}"
                problems.append(f"{name} in {period}: depreciated {_money(sum(got))}"
                                + (f" in {len(got)} postings" if len(got) > 1 else "")
                                + f", due {_money(want)}")
    return _result(f"{', '.join(spec.periods)} depreciated as due ({_money(total)})", problems,
                   {"expected_cents": total})


# --- asset_disposed --------------------------------------------------------------------------


class SaleDisposed(CheckSpec):
    """The asset sold disposed of once, as the sale and the policy say; no other."""

    family: ClassVar[str] = "state"
    type: Literal["asset_disposed"]


@check_type(SaleDisposed)
def asset_disposed(spec: SaleDisposed, ctx: CheckContext) -> CheckResult:
    """Compare the books' disposals with the sale."""
    truth = fixed_asset_truth(ctx)
    if not truth:
        return _missing()
    sale = truth["disposal"]
    policy = truth["policy"]
    found = [e for _, e in _events(ctx, "asset_disposed") if isinstance(e, ev.AssetDisposed)]
    problems: list[str] = []
    mine = [e for e in found if e.asset_id == sale["asset_id"]]
    for e in found:
        if e.asset_id != sale["asset_id"]:
            problems.append(f"asset {e.asset_id} disposed of on {e.entry_date}; only "
                            f"{sale['asset_id']} was sold")
    if not mine:
        problems.append(f"{sale['asset_id']} ({sale['description']}) sold on {sale['date']} "
                        "is not disposed of")
    else:
        e = mine[0]
        for name, got, exp in (
                ("dated", e.entry_date.isoformat(), sale["date"]),
                ("proceeds", _money(e.proceeds), _money(sale["proceeds"])),
                ("proceeds account", e.proceeds_account, policy["proceeds_account"]),
                ("gain/loss account", e.gain_loss_account, policy["gain_loss_account"]),
                ("accumulated depreciation", _money(e.accumulated), _money(sale["accumulated"])),
                ("gain (loss negative)", _money(e.gain), _money(sale["gain"]))):
            if got != exp:
                problems.append(f"{sale['asset_id']} disposal: {name} {got}, expected {exp}")
    return _result(f"{sale['asset_id']} disposed of on {sale['date']}, gain "
                   f"{_money(sale['gain'])}", problems,
                   {"gain_cents": sale["gain"], "disposals": len(found)})


# --- asset_classes_tie -------------------------------------------------------------------------


def expected_balances(truth: dict[str, Any], through: str) -> dict[str, int]:
    """Each class account's balance (debit positive) once every month through ``through``
    is depreciated and the sale recorded: cost on the cost accounts, accumulated
    depreciation (negative) on the contra accounts."""
    classes = truth["policy"]["classes"]
    out: dict[str, int] = defaultdict(int)
    for k in classes.values():
        out[k["cost_account"]] += 0
        out[k["accumulated_account"]] += 0
    sale = truth["disposal"]
    for key, (cid, cost, life, start) in sorted(due_assets(truth).items()):
        if key[0] == "register" and key[1] == sale["asset_id"]:
            continue
        k = classes[cid]
        out[k["cost_account"]] += cost
        first = int(start[:4]) * 12 + int(start[5:]) - 1
        last = int(through[:4]) * 12 + int(through[5:]) - 1
        out[k["accumulated_account"]] -= sum(
            depreciation_due(cost, life, start, f"{m // 12:04d}-{m % 12 + 1:02d}")
            for m in range(first, last + 1))
    return dict(out)


class AssetClassesTie(CheckSpec):
    """Each class account ties to the subledger and holds what the truth leaves on it."""

    family: ClassVar[str] = "control"
    type: Literal["asset_classes_tie"]


@check_type(AssetClassesTie)
def asset_classes_tie(spec: AssetClassesTie, ctx: CheckContext) -> CheckResult:
    """Set each class account's GL balance against the subledger and the truth."""
    truth = fixed_asset_truth(ctx)
    if not truth:
        return _missing()
    problems: list[str] = []
    ties = q.fixed_asset_ties(ctx.store, position=ctx.position)
    for t in ties:
        if t.difference:
            problems.append(f"{t.account} {t.name}: GL {_money(t.gl_balance)}, subledger "
                            f"{_money(t.subledger_total)}")
    want = expected_balances(truth, max(truth["months"]))
    gl = {t.account: t.gl_balance for t in ties}
    for account, amount in sorted(want.items()):
        have = gl.get(account, q.account_balance(ctx.store, account, position=ctx.position))
        if have != amount:
            problems.append(f"{account}: balance {_money(have)}, the register leaves "
                            f"{_money(amount)}")
    return _result(f"{plural(len(want), 'class account')} tie to the subledger and the "
                   "register", problems, {"accounts": len(want)})


__all__ = ["AssetBillsEntered", "AssetClassesTie", "AssetsCapitalized", "DepreciationRun",
           "SaleDisposed", "asset_bills_entered", "asset_classes_tie", "asset_disposed",
           "assets_capitalized", "depreciation_run", "due_assets", "expected_balances",
           "expected_depreciation", "fixed_asset_truth", "match_assets"]
