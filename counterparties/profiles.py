"""Behaviour profiles: how a kind of customer or vendor acts, with distributions.

A scenario's population names profiles with mixture weights and may override any
parameter (``population.customers.params.late.days_late: {dist: uniform, ...}``).
The registries here are the contract between scenario specs and the processes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from counterparties.distributions import Constant, Distribution, Normal, Uniform, dist

D = Annotated[Distribution, BeforeValidator(dist)]


class Profile(BaseModel):
    """Base of every behaviour profile."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class CustomerProfile(Profile):
    """How a customer orders and pays. Days are relative to the invoice's due date."""

    orders_per_month: D = Uniform(low=1, high=4)
    order_lines: D = Uniform(low=1, high=3)
    line_amount: D = Uniform(low=200, high=4_000)
    pay_days_after_due: D = Normal(mean=0, sd=2, low=-5, high=5)
    share_paid: D = Constant(value=1.0)
    dispute_rate: D = Constant(value=0.0)


CUSTOMER_PROFILES: dict[str, CustomerProfile] = {
    "on_time": CustomerProfile(),
    "late": CustomerProfile(pay_days_after_due=Uniform(low=10, high=40)),
    "partial": CustomerProfile(share_paid=Constant(value=0.6)),
    "card_processor": CustomerProfile(),
    "intl_wire": CustomerProfile(pay_days_after_due=Uniform(low=0, high=6)),
    "multi_invoice_ach": CustomerProfile(orders_per_month=Uniform(low=3, high=6)),
    "customer_only_wire": CustomerProfile(),
    "wrong_reference": CustomerProfile(),
    "pays_twice": CustomerProfile(),
    "pays_closed_invoice": CustomerProfile(),
    "disputes": CustomerProfile(dispute_rate=Constant(value=0.5)),
    "never_pays": CustomerProfile(share_paid=Constant(value=0.0)),
}
"""Customer behaviours by name, with their default parameters."""


class VendorProfile(Profile):
    """How a vendor bills: how often, how much, and what goes wrong."""

    bills_per_month: D = Uniform(low=1, high=4)
    bill_amount: D = Uniform(low=300, high=9_000)
    terms_days: D = Constant(value=30)
    duplicate_rate: D = Constant(value=0.0)
    near_duplicate_rate: D = Constant(value=0.0)
    price_variance_rate: D = Constant(value=0.0)
    price_variance: D = Uniform(low=0.03, high=0.15)
    credit_note_rate: D = Constant(value=0.0)
    bank_change_rate: D = Constant(value=0.0)
    fraud_share: D = Constant(value=0.0)
    discount_bp: D = Constant(value=0)
    """An early-payment discount its invoices offer, in basis points of the total (0: none)."""
    discount_days: D = Constant(value=10)
    """Days from the invoice date the discount may be taken (2/10 net 30: 10)."""
    late_fee_bp: D = Constant(value=0)
    """A late fee it charges on an invoice not paid by its due date, in basis points."""
    critical_share: D = Constant(value=0.0)
    """The chance the vendor suspends its service when an invoice goes unpaid (a priority)."""


VENDOR_PROFILES: dict[str, VendorProfile] = {
    "reliable": VendorProfile(),
    "bills_twice": VendorProfile(duplicate_rate=Constant(value=0.3)),
    "near_duplicates": VendorProfile(near_duplicate_rate=Constant(value=0.3)),
    "price_variance": VendorProfile(price_variance_rate=Constant(value=0.4)),
    "credit_notes": VendorProfile(credit_note_rate=Constant(value=0.3)),
    "changes_bank": VendorProfile(bank_change_rate=Constant(value=1.0)),
    "impersonated": VendorProfile(bank_change_rate=Constant(value=1.0),
                                  fraud_share=Constant(value=1.0)),
    "early_discount": VendorProfile(discount_bp=Constant(value=200)),
    "late_fees": VendorProfile(late_fee_bp=Constant(value=150)),
    "discount_and_late_fee": VendorProfile(discount_bp=Constant(value=200),
                                           late_fee_bp=Constant(value=150)),
    "critical": VendorProfile(late_fee_bp=Constant(value=150),
                              critical_share=Constant(value=1.0)),
    # vendors that supply against purchase orders (counterparties.purchasing): they bill
    # only what they ship on a PO, never on their own
    "po_clean": VendorProfile(bills_per_month=Constant(value=0)),
    "po_short_ships": VendorProfile(bills_per_month=Constant(value=0)),
    "po_price_within": VendorProfile(bills_per_month=Constant(value=0)),
    "po_price_over": VendorProfile(bills_per_month=Constant(value=0)),
}
"""Vendor behaviours by name, with their default parameters."""


P = TypeVar("P", bound=Profile)


def resolve_profile(registry: Mapping[str, P], name: str,
                    overrides: Mapping[str, object] | None = None) -> P:
    """A named profile with a scenario's parameter overrides applied (validated)."""
    base = registry[name]
    if not overrides:
        return base
    data = base.model_dump()
    data.update(overrides)
    return type(base).model_validate(data)


Weight = Annotated[float, Field(ge=0)]
