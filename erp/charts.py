"""Chart-of-accounts templates shipped with the books."""

from __future__ import annotations

from erp.commands import OpenAccount
from erp.events import AccountType, ControlKind

_STANDARD_SERVICES: tuple[tuple[str, str, AccountType, ControlKind | None], ...] = (
    ("1000", "Operating bank account", "asset", "bank"),
    ("1010", "Savings bank account", "asset", "bank"),
    ("1200", "Accounts receivable", "asset", "ar"),
    ("1300", "Prepaid expenses", "asset", None),
    ("1500", "Equipment", "asset", None),
    ("2000", "Accounts payable", "liability", "ap"),
    ("2100", "Accrued liabilities", "liability", None),
    ("2150", "Unapplied cash", "liability", "unapplied_cash"),
    ("2200", "Sales tax payable", "liability", None),
    ("3000", "Owner's equity", "equity", None),
    ("3900", "Opening balance equity", "equity", None),
    ("4000", "Service revenue", "revenue", None),
    ("4050", "Sales returns and allowances", "revenue", None),
    ("4900", "Interest income", "revenue", None),
    ("6000", "General expenses", "expense", None),
    ("6100", "Rent", "expense", None),
    ("6200", "Software subscriptions", "expense", None),
    ("6300", "Contractors", "expense", None),
    ("6800", "Bank fees", "expense", None),
    ("6810", "Card processing fees", "expense", None),
    ("6900", "Bad debt expense", "expense", None),
)

_SERVICES_WITH_TERMS = (*_STANDARD_SERVICES,
                        ("4950", "Purchase discounts", "revenue", None),
                        ("6850", "Late fees", "expense", None))
"""The services chart plus the accounts of vendor payment terms: early-payment discounts
taken and vendors' late fees (the ``payment-run`` scenario)."""

_SERVICES_WITH_PURCHASING = (*_STANDARD_SERVICES,
                             ("1400", "Inventory", "asset", None),
                             ("2050", "Goods received not invoiced", "liability", None),
                             ("5900", "Purchase price variance", "expense", None))
"""The services chart plus the accounts of purchasing: goods bought for stock, the accrual
for goods received but not yet billed, and what bills charge above or below PO prices
(the ``three-way-match`` scenario)."""

_SERVICES_WITH_FIXED_ASSETS = (*_STANDARD_SERVICES,
                               ("1250", "Other receivables", "asset", None),
                               ("1510", "Computer equipment", "asset", None),
                               ("1520", "Software", "asset", None),
                               ("1530", "Furniture and fixtures", "asset", None),
                               ("1590", "Accumulated depreciation - equipment", "asset", None),
                               ("1591", "Accumulated depreciation - computer equipment",
                                "asset", None),
                               ("1592", "Accumulated amortization - software", "asset", None),
                               ("1593", "Accumulated depreciation - furniture", "asset", None),
                               ("4800", "Gain or loss on disposal of assets", "revenue", None),
                               ("6050", "Repairs and maintenance", "expense", None),
                               ("6060", "Small tools and equipment", "expense", None),
                               ("6500", "Depreciation expense", "expense", None))
"""The services chart plus the accounts of a fixed-asset register: cost and accumulated
depreciation per asset class, what a sold asset's buyer owes, the gain or loss on disposal,
repairs and small tools expensed, and depreciation (the ``fixed-assets`` scenario)."""

_SERVICES_FISCAL_YEAR = (*_STANDARD_SERVICES,
                         ("3100", "Retained earnings", "equity", None))
"""The services chart plus retained earnings, where the year-end close puts the year's net
income (the ``fiscal-year`` scenario)."""

_SERVICES_WITH_PAYROLL = (*_STANDARD_SERVICES,
                          ("2300", "Payroll withholdings payable", "liability", None),
                          ("2310", "Employer payroll taxes payable", "liability", None),
                          ("6400", "Wages and salaries", "expense", None),
                          ("6410", "Employer payroll taxes", "expense", None))
"""The services chart plus the accounts of a payroll register: what is withheld from the
employees and the employer's own payroll taxes until they are paid over, wages and the
employer's taxes (the ``payroll-and-sales-tax`` scenario; sales tax is 2200)."""

_SERVICES_WITH_CARD = (*_STANDARD_SERVICES,
                       ("1090", "Transfers in transit", "asset", None),
                       ("2060", "Company credit card", "liability", "bank"),
                       ("6400", "Travel and meals", "expense", None),
                       ("6450", "Office supplies", "expense", None))
"""The services chart plus what several bank accounts need: the clearing account of
transfers between them while in transit, the company card (a liability bank account) and
the expenses its charges go to (the ``bank-reconciliation-multi`` scenario)."""

CHARTS: dict[str, tuple[tuple[str, str, AccountType, ControlKind | None], ...]] = {
    "standard-services": _STANDARD_SERVICES,
    "services-with-terms": _SERVICES_WITH_TERMS,
    "services-with-purchasing": _SERVICES_WITH_PURCHASING,
    "services-with-fixed-assets": _SERVICES_WITH_FIXED_ASSETS,
    "services-with-card": _SERVICES_WITH_CARD,
    "services-fiscal-year": _SERVICES_FISCAL_YEAR,
    "services-with-payroll": _SERVICES_WITH_PAYROLL,
}


def chart_commands(name: str) -> list[OpenAccount]:
    """The ``OpenAccount`` commands of a chart template (``standard-services``)."""
    try:
        rows = CHARTS[name]
    except KeyError:
        raise KeyError(f"unknown chart {name!r} (expected one of: {', '.join(sorted(CHARTS))})"
                       ) from None
    return [OpenAccount(code=code, name=title, account_type=kind, control=control)
            for code, title, kind, control in rows]
