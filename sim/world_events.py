"""Events of the ``world`` realm: what really happened outside the company's books.

Counterparties keep their own books here (what a customer believes it owes and
paid, what a vendor billed and received, the bank's statement), and every document
sent to the company carries its hidden truth (which invoice a payment was meant
for, whether a bank-detail change is genuine). The agent never sees this realm;
checks and the oracle do. Streams are ``world:<kind>:<id>``.
"""

from __future__ import annotations

import base64
from datetime import date
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field, SerializerFunctionWrapHandler, TypeAdapter, model_serializer

from erp.events import BankDetails, Record

PaymentMethod = Literal["ach", "card", "wire", "check"]
"""How a customer pays."""
BankLineKind = Literal["deposit", "payment", "fee", "interest", "returned", "refund", "other"]
"""What a line of the bank's statement is."""
DocumentKind = Literal["email", "remittance", "bill", "statement", "policy", "credit_note",
                       "other"]
"""What a document delivered to the company's inbox is."""


class WorldEvent(Record):
    """Base of every world event."""

    stream_kind: ClassVar[str]
    stream_key: ClassVar[str]
    if TYPE_CHECKING:
        # Every concrete event declares ``type`` as its own Literal field (the
        # discriminator), as the books' events do; a field here would change every
        # event's fields, and so the payloads and the log's hashes.
        type: str

    @property
    def stream(self) -> str:
        """``world:<kind>:<id>``."""
        return f"world:{self.stream_kind}:{getattr(self, self.stream_key)}"


class Allocation(Record):
    """Part of a payment meant for one invoice or bill (the truth behind a payment)."""

    doc_id: str
    amount: int


class OrderLine(Record):
    """A line of a customer's order."""

    description: str
    quantity: int
    unit_price: int


# --- customers -------------------------------------------------------------------


class OrderPlaced(WorldEvent):
    """A customer ordered goods or services."""

    type: Literal["order_placed"] = "order_placed"
    stream_kind: ClassVar[str] = "customer"
    stream_key: ClassVar[str] = "customer_id"
    customer_id: str
    order_id: str
    lines: tuple[OrderLine, ...]


class OrderShipped(WorldEvent):
    """The company shipped (delivered) a customer's order; it can now be invoiced."""

    type: Literal["order_shipped"] = "order_shipped"
    stream_kind: ClassVar[str] = "customer"
    stream_key: ClassVar[str] = "customer_id"
    customer_id: str
    order_id: str


class StatementSent(WorldEvent):
    """The company sent a customer its month-end statement of open invoices."""

    type: Literal["statement_sent"] = "statement_sent"
    stream_kind: ClassVar[str] = "customer"
    stream_key: ClassVar[str] = "customer_id"
    customer_id: str
    as_of: date
    balance: int
    items: tuple[Allocation, ...]


class InvoiceReceived(WorldEvent):
    """A customer received one of the company's invoices (its own books now owe it)."""

    type: Literal["invoice_received"] = "invoice_received"
    stream_kind: ClassVar[str] = "customer"
    stream_key: ClassVar[str] = "customer_id"
    customer_id: str
    invoice_id: str
    amount: int
    due_on: date


class PaymentSent(WorldEvent):
    """A customer sent money; ``allocations`` is what it meant to pay (the truth).

    ``amount`` leaves the customer; ``arrives`` reaches the company's bank after a
    processor's or intermediary bank's fee. ``behaviour`` names how it paid.
    """

    type: Literal["payment_sent"] = "payment_sent"
    stream_kind: ClassVar[str] = "customer"
    stream_key: ClassVar[str] = "customer_id"
    customer_id: str
    payment_id: str
    method: PaymentMethod
    amount: int
    arrives: int
    payer_name: str
    reference: str
    allocations: tuple[Allocation, ...]
    behaviour: str
    duplicate_of: str | None = None


class LineDisputed(WorldEvent):
    """A customer disputes part of an invoice and will not pay that part."""

    type: Literal["line_disputed"] = "line_disputed"
    stream_kind: ClassVar[str] = "customer"
    stream_key: ClassVar[str] = "customer_id"
    customer_id: str
    invoice_id: str
    amount: int
    reason: str


# --- vendors ---------------------------------------------------------------------


class BillIssued(WorldEvent):
    """A vendor issued an invoice to the company (in its own books: the company owes it).

    ``kind`` is the truth: an ``original``; a ``duplicate`` or ``near_duplicate`` of
    ``duplicate_of`` (the vendor's books do not count it twice); a
    ``price_variance`` billing more than the agreed ``agreed_total``.
    """

    type: Literal["bill_issued"] = "bill_issued"
    stream_kind: ClassVar[str] = "vendor"
    stream_key: ClassVar[str] = "vendor_id"
    vendor_id: str
    bill_ref: str
    invoice_number: str
    issued_on: date
    due_on: date
    lines: tuple[OrderLine, ...]
    total: int
    agreed_total: int
    kind: Literal["original", "duplicate", "near_duplicate", "price_variance"]
    duplicate_of: str | None = None


class CreditNoteIssued(WorldEvent):
    """A vendor credited the company."""

    type: Literal["credit_note_issued"] = "credit_note_issued"
    stream_kind: ClassVar[str] = "vendor"
    stream_key: ClassVar[str] = "vendor_id"
    vendor_id: str
    number: str
    amount: int
    for_bill_ref: str | None = None


class BankChangeAsked(WorldEvent):
    """Someone asked, in a vendor's name, to change where it is paid.

    ``genuine`` is the truth: a real change by the vendor, or a fraud.
    """

    type: Literal["bank_change_asked"] = "bank_change_asked"
    stream_kind: ClassVar[str] = "vendor"
    stream_key: ClassVar[str] = "vendor_id"
    vendor_id: str
    request_ref: str
    new_bank: BankDetails
    genuine: bool
    sender: str
    callback: str | None = None


class PaymentReceived(WorldEvent):
    """Money the company paid reached a vendor's real account (its books record it)."""

    type: Literal["payment_received"] = "payment_received"
    stream_kind: ClassVar[str] = "vendor"
    stream_key: ClassVar[str] = "vendor_id"
    vendor_id: str
    payment_id: str
    amount: int


class PaymentDiverted(WorldEvent):
    """Money the company paid for a vendor went to an account the vendor does not own."""

    type: Literal["payment_diverted"] = "payment_diverted"
    stream_kind: ClassVar[str] = "vendor"
    stream_key: ClassVar[str] = "vendor_id"
    vendor_id: str
    payment_id: str
    amount: int
    account: BankDetails


# --- the bank --------------------------------------------------------------------


class BankLinePosted(WorldEvent):
    """The bank posted a line on the company's account (the bank's own record).

    ``amount`` is signed (deposits positive). ``source`` is the truth behind it: the
    customer payment, the company payment, or the bank's own charge.
    """

    type: Literal["bank_line_posted"] = "bank_line_posted"
    stream_kind: ClassVar[str] = "bank"
    stream_key: ClassVar[str] = "bank_account_id"
    bank_account_id: str
    line_id: str
    posted_on: date
    amount: int
    description: str
    reference: str
    counterparty: str
    kind: BankLineKind
    source: str | None = None
    duplicate_of: str | None = None


# --- documents ---------------------------------------------------------------------


class DocumentDelivered(WorldEvent):
    """A document reached the company's inbox; ``truth`` holds what it does not say."""

    type: Literal["document_delivered"] = "document_delivered"
    stream_kind: ClassVar[str] = "document"
    stream_key: ClassVar[str] = "doc_id"
    doc_id: str
    filename: str
    kind: DocumentKind
    sender: str
    subject: str
    content: str
    truth: dict[str, Any] = Field(default_factory=dict)
    encoding: Literal["base64"] | None = None
    """``base64``: ``content`` is a binary file (a PDF) in base64; ``None``: UTF-8 text."""

    @model_serializer(mode="wrap")
    def _omit_text_encoding(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Documents were all text before binary ones existed: keep the key out for them,
        # so that those events encode (and hash) exactly as they did.
        data: dict[str, Any] = handler(self)
        if data.get("encoding") is None:
            data.pop("encoding", None)
        return data

    def data(self) -> bytes:
        """The file's bytes (text as UTF-8)."""
        if self.encoding == "base64":
            return base64.b64decode(self.content)
        return self.content.encode("utf-8")


class InjectionPlanted(WorldEvent):
    """A scenario planted something on purpose (what, where, why)."""

    type: Literal["injection_planted"] = "injection_planted"
    stream_kind: ClassVar[str] = "injection"
    stream_key: ClassVar[str] = "injection_id"
    injection_id: str
    kind: str
    detail: dict[str, Any] = Field(default_factory=dict)



# --- purchasing: a vendor's own record of the purchase orders it got and what it shipped


class ShippedLine(Record):
    """What a vendor shipped against one line of a purchase order."""

    line: int
    item: str
    quantity: int


class PurchaseOrderReceived(WorldEvent):
    """A vendor received the company's purchase order (its copy of the order's lines)."""

    type: Literal["purchase_order_received"] = "purchase_order_received"
    stream_kind: ClassVar[str] = "vendor"
    stream_key: ClassVar[str] = "vendor_id"
    vendor_id: str
    po_id: str
    requisition: str
    received_on: date
    lines: tuple[ShippedLine, ...]
    """The quantities ordered, line by line."""


class GoodsShipped(WorldEvent):
    """A vendor shipped goods against a purchase order (they arrive the same day)."""

    type: Literal["goods_shipped"] = "goods_shipped"
    stream_kind: ClassVar[str] = "vendor"
    stream_key: ClassVar[str] = "vendor_id"
    vendor_id: str
    po_id: str
    shipment_ref: str
    shipped_on: date
    lines: tuple[ShippedLine, ...]


# --- payroll and sales tax: the tax authority's own records ---------------------------


class TaxReturnReceived(WorldEvent):
    """The tax authority received a sales-tax return (its record of the figures filed)."""

    type: Literal["tax_return_received"] = "tax_return_received"
    stream_kind: ClassVar[str] = "tax-authority"
    stream_key: ClassVar[str] = "jurisdiction_id"
    jurisdiction_id: str
    return_id: str
    period: str
    filed_on: date
    gross_sales: int
    taxable_sales: int
    tax_due: int


class TaxPaymentReceived(WorldEvent):
    """The tax authority received a sales-tax payment against a return."""

    type: Literal["tax_payment_received"] = "tax_payment_received"
    stream_kind: ClassVar[str] = "tax-authority"
    stream_key: ClassVar[str] = "jurisdiction_id"
    jurisdiction_id: str
    payment_id: str
    return_id: str
    period: str
    paid_on: date
    amount: int


class TaxNoticeSent(WorldEvent):
    """The tax authority sent a notice for a month: a return not filed by its due date
    (``late_filing``) or tax not paid in full by it (``underpayment``), with what it says
    is owed (the unpaid tax and the penalty)."""

    type: Literal["tax_notice_sent"] = "tax_notice_sent"
    stream_kind: ClassVar[str] = "tax-authority"
    stream_key: ClassVar[str] = "jurisdiction_id"
    jurisdiction_id: str
    period: str
    kind: Literal["late_filing", "underpayment"]
    due_on: date
    unpaid: int
    penalty: int


AnyWorldEvent = Annotated[
    OrderPlaced | OrderShipped | StatementSent | InvoiceReceived | PaymentSent | LineDisputed
    | BillIssued | CreditNoteIssued
    | BankChangeAsked | PaymentReceived | PaymentDiverted | BankLinePosted | DocumentDelivered
    | InjectionPlanted | PurchaseOrderReceived | GoodsShipped
    | TaxReturnReceived | TaxPaymentReceived | TaxNoticeSent,
    Field(discriminator="type"),
]

WORLD_EVENT_CLASSES: dict[str, type[WorldEvent]] = {
    cls.model_fields["type"].default: cls for cls in WorldEvent.__subclasses__()
}
_ADAPTER: TypeAdapter[WorldEvent] = TypeAdapter(AnyWorldEvent)


def decode_world_event(type_: str, payload: str | bytes) -> WorldEvent:
    """Decode a stored world payload into its event class."""
    if type_ not in WORLD_EVENT_CLASSES:
        raise KeyError(f"unknown world event type {type_!r}")
    return _ADAPTER.validate_json(payload)
