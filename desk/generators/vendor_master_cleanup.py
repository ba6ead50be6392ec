"""The ``vendor-master-cleanup`` generator: a vendor master with duplicates, and its clean list.

The vendors (names, bank details) are the engine's population for the task's seed. The
workspace's ``vendor_master.csv`` is the master as years of manual entry left it: some
vendors entered two or three times under another id, their names written differently
(capitals, punctuation dropped, "&" for "and", a legal suffix added, stray spaces), the
tax id with or without its dash (``12-3456789``, ``123456789``, ``12 3456789``), the bank
details of the record updated last being the current ones; and near-twins that are
**not** duplicates (a similar name with another tax id). The reference is the clean list
(one row per tax id: the lowest id survives, with the name and bank details of the
group's most recently updated record and the tax id as ``NN-NNNNNNN``) and the mapping
of every old id to its survivor.

``params.tier``: ``easy`` (10 vendors, 3 entered twice), ``medium`` (16 vendors, 6 entered
twice or three times, 2 near-twins; the default), ``hard`` (24 vendors, 10 duplicated,
4 near-twins).
"""

from __future__ import annotations

from datetime import date, timedelta

from desk.errors import GenerationError
from desk.generators import GeneratorContext, csv_bytes
from desk.simulate import simulate
from scenarios.spec import Scenario
from sim.rng import text_random

TIERS = {"easy": (10, 3, 0), "medium": (16, 6, 2), "hard": (24, 10, 4)}
"""tier: (vendors, vendors entered more than once, near-twins)."""

SUFFIXES = (" Inc.", " LLC", ", Inc", " Ltd")


def _scenario(vendors: int) -> Scenario:
    return Scenario.model_validate({
        "id": "vendor-master-gen", "title": "The vendors behind the master",
        "calendar": {"start": "2026-04-01", "end": "2026-04-01"},
        "company": {"opening": {"bank_balance": "10000.00", "ap_open_bills": 0,
                                "ar_open_invoices": 0},
                    "automation": {"order_intake": False, "auto_invoicing": False,
                                   "dispatch_invoices": False, "bank_feed": False,
                                   "auto_receipts": False, "month_end_statements": False,
                                   "controller_approves_bank_changes": False}},
        "population": {"customers": {"count": 0},
                       "vendors": {"count": vendors, "profiles": {"reliable": 1.0}}},
        "turns": {"every": "none", "prompt": "none"},
    })


def tax_id_dashed(digits: str) -> str:
    """A nine-digit employer id written ``NN-NNNNNNN``."""
    return f"{digits[:2]}-{digits[2:]}"


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``vendor_master.csv`` in the workspace; the clean list and the mapping as reference."""
    tier = str(ctx.params.get("tier", "medium"))
    if tier not in TIERS:
        raise GenerationError(f"params.tier: {tier!r} (expected one of: {', '.join(TIERS)})")
    count, dup_count, twins = TIERS[tier]
    with simulate(_scenario(count), ctx.seed) as sim:
        vendors = sorted(sim.instance.vendors, key=lambda v: v.vendor_id)
        people = [(v.name, v.bank.routing, v.bank.account_number) for v in vendors]
    rng = text_random(f"vendor-master:{ctx.seed}")
    taxes = rng.sample(range(10_000_000, 99_999_999), count + twins)
    records: list[dict[str, str]] = []
    base = date(2021, 1, 4)

    def spell(name: str) -> str:
        style = rng.randrange(5)
        if style == 0:
            return name.upper()
        if style == 1:
            return name.replace(",", "").replace(" and ", " & ")
        if style == 2:
            return name + SUFFIXES[rng.randrange(len(SUFFIXES))]
        if style == 3:
            return "  " + name.replace("-", " - ") + " "
        return name.lower().title().replace(",", "")

    def tax_text(digits: str) -> str:
        return (tax_id_dashed(digits), digits, f"{digits[:2]} {digits[2:]}")[rng.randrange(3)]

    dup = set(rng.sample(range(count), dup_count))
    for n, (name, routing, account) in enumerate(people):
        digits = f"{taxes[n]:09d}"
        copies = 1 + (n in dup) + (n in dup and rng.random() < 0.35 and tier != "easy")
        for k in range(copies):
            acct = account if k == 0 else (account if rng.random() < 0.5
                                            else f"{rng.randrange(10**9, 10**10)}")
            records.append({"name": name if k == 0 else spell(name), "tax": digits,
                            "routing": routing, "account": acct})
    for t in range(twins):
        name, routing, _ = people[rng.randrange(count)]
        records.append({"name": name.split(",")[0].split(" and ")[0] + " Holdings",
                        "tax": f"{taxes[count + t]:09d}", "routing": routing,
                        "account": f"{rng.randrange(10**9, 10**10)}"})
    days = rng.sample(range(1800), len(records))
    for rec, d in zip(records, days, strict=True):
        rec["updated"] = (base + timedelta(days=d)).isoformat()
    rng.shuffle(records)
    ids = rng.sample(range(1001, 1001 + 3 * len(records)), len(records))
    for rec, i in zip(records, ids, strict=True):
        rec["id"] = f"V{i}"
    groups: dict[str, list[dict[str, str]]] = {}
    for rec in records:
        groups.setdefault(rec["tax"], []).append(rec)
    clean, mapping = [], []
    for digits, recs in groups.items():
        keep = min(recs, key=lambda r: int(r["id"][1:]))
        latest = max(recs, key=lambda r: r["updated"])
        clean.append([keep["id"], latest["name"].strip(), tax_id_dashed(digits),
                      latest["routing"], latest["account"]])
        mapping += [[r["id"], keep["id"]] for r in recs]
    master = [[r["id"], r["name"], tax_text(r["tax"]), r["routing"], r["account"], r["updated"]]
              for r in sorted(records, key=lambda r: int(r["id"][1:]))]
    return {
        "workspace/vendor_master.csv": csv_bytes(
            ["vendor_id", "vendor_name", "tax_id", "bank_routing", "bank_account",
             "last_updated"], master),
        "reference/vendors_clean.csv": csv_bytes(
            ["vendor_id", "name", "tax_id", "bank_routing", "bank_account"],
            sorted(clean, key=lambda r: int(r[0][1:]))),
        "reference/vendor_mapping.csv": csv_bytes(
            ["old_vendor_id", "new_vendor_id"], sorted(mapping, key=lambda r: int(r[0][1:]))),
    }
