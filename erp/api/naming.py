"""The API's names for things, without the web framework: a command's path segment, the
money fields of a command body, and what a document row calls its party and reference.

Kept apart from :mod:`erp.api.wire` so that a process that only talks to the API (an
adapter, a client) reads the same names without importing FastAPI.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator

from erp import money

MONEY_KEYS = frozenset({"amount", "total", "subtotal", "tax", "unit_price", "opening_balance",
                        "credit_limit", "clerk_write_off_limit", "clerk_fee_allowance_fixed",
                        "open_amount", "debit", "credit", "balance",
                        "salvage", "proceeds", "cost", "accumulated", "gain",
                        "net_income",
                        "gross", "withheld", "employer_taxes", "net", "gross_sales",
                        "taxable_sales", "exempt_sales", "tax_due", "gross_total", "net_total"})
"""Integer-cent keys of event payloads and rows, rendered as decimal strings."""


def kebab(name: str) -> str:
    """``ApplyReceipt`` -> ``apply-receipt``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def is_money_annotation(annotation: Any, metadata: Iterable[Any] = ()) -> bool:
    """Whether a field annotation is one of the books' money types."""
    for m in metadata:
        if isinstance(m, BeforeValidator) and m.func in (money._to_cents,
                                                         money._decimal_text_to_cents):
            return True
    if typing.get_origin(annotation) is Annotated:
        base, *meta = typing.get_args(annotation)
        return is_money_annotation(base, meta)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(is_money_annotation(a) for a in typing.get_args(annotation))
    return False


def nested_model(annotation: Any) -> tuple[type[BaseModel], bool] | None:
    """A model inside an annotation: ``(model, is_sequence)``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return nested_model(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        for a in typing.get_args(annotation):
            found = nested_model(a)
            if found is not None:
                return found
        return None
    if origin in (tuple, list):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        if args:
            found = nested_model(args[0])
            if found is not None:
                return found[0], True
    return None


def money_fields(model: type[BaseModel]) -> dict[str, Any]:
    """The money fields of a model: ``{name: True | (nested spec, is_sequence)}``."""
    spec: dict[str, Any] = {}
    for name, f in model.model_fields.items():
        if is_money_annotation(f.annotation, f.metadata):
            spec[name] = True
            continue
        nested = nested_model(f.annotation)
        if nested is not None:
            inner = money_fields(nested[0])
            if inner:
                spec[name] = (inner, nested[1])
    return spec


PARTY_NAME = {"invoice": "customer", "receipt": "customer", "credit_memo": "customer",
              "refund": "customer", "return": "customer", "bill": "vendor",
              "vendor_credit": "vendor",
              "payment": "vendor", "bank_change": "vendor", "statement_line": "counterparty"}
REFERENCE_NAME = {"bill": "vendor_invoice_number", "vendor_credit": "vendor_credit_number",
                  "credit_memo": "invoice", "refund": "receipt", "return": "receipt",
                  "payment": "run",
                  "bank_change": "new_bank", "journal": "source", "fee": "memo",
                  "interest": "memo"}
