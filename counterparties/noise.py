"""Document noise: the outside world writes its papers its own way, as real ones are.

A scenario (or its difficulty tier, ``scenarios/tiers.py``) sets a ``DocumentNoise``:
the share of counterparties or documents each kind of mess applies to. All zero (the
default) changes nothing, so a scenario without noise gives exactly the log it gave
before noise existed. Every choice is drawn from a stream of its own, named after what
it decides (``noise:reference:C0012``, ``noise:payer:<name>``, ``noise:doc:<id>``), so the
noise never shifts another draw of the instance and the same seed gives the same papers.

- ``references``: a customer writes invoice numbers its own way (``INV 47498``,
  ``Inv#47511``, ``/INV/47526``, ``Payment for invoice 47512``, with or without the
  leading zeros), chosen once per customer;
- ``payer_names``: the payer's bank sends its name upper-cased, without punctuation and
  cut to its field width (``GARCIA LEE AND K``), chosen once per payer name;
- ``wire_descriptions``: the payer's bank names an incoming wire its own way
  (``FEDWIRE CREDIT``, ``INCOMING WIRE TRF``, ``SWIFT MT103 CR``...);
- ``pdf_remittances`` / ``text_remittances``: the share of remittance advices sent as
  a PDF or as plain text instead of CSV, drawn per document;
- ``pdf_bills`` / ``emails``: the share of vendor bills sent as a PDF, or inside an
  email under a free-text request (``pay this one early``), instead of a text file.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sim.rng import Streams

Share = Annotated[float, Field(ge=0, le=1)]


class DocumentNoise(BaseModel):
    """How messy the outside world's documents are: a share (0 to 1) per kind of mess."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    references: Share = 0.0
    payer_names: Share = 0.0
    wire_descriptions: Share = 0.0
    pdf_remittances: Share = 0.0
    text_remittances: Share = 0.0
    pdf_bills: Share = 0.0
    emails: Share = 0.0

    @model_validator(mode="after")
    def _formats_add_up(self) -> DocumentNoise:
        total = self.pdf_remittances + self.text_remittances
        if total > 1:
            raise ValueError(f"pdf_remittances + text_remittances is {total:g} (expected at "
                             "most 1: the rest are CSV)")
        bills = self.pdf_bills + self.emails
        if bills > 1:
            raise ValueError(f"pdf_bills + emails is {bills:g} (expected at most 1: the rest "
                             "of the bills are text files)")
        return self

    @property
    def active(self) -> bool:
        """Whether any noise applies."""
        return any(v > 0 for v in self.model_dump().values())


CLEAN = DocumentNoise()
"""No noise: every document as the clean scenarios write it."""


def _chance(streams: Streams, name: str, share: float) -> float | None:
    """A uniform draw of the stream ``name`` when it falls under ``share``, else None."""
    if share <= 0:
        return None
    u = float(streams.generator(name).random())
    return u / share if u < share else None


# --- invoice references -------------------------------------------------------------------

REFERENCE_STYLES = ("INV {n}", "Inv#{n}", "/INV/{n}", "Payment for invoice {n}", "INV{n}",
                    "inv-{n}", "Invoice No. {n}", "INV.{n}")
"""How customers write an invoice number ``{n}`` (its digits, with or without zeros)."""


@dataclass(frozen=True)
class ReferenceStyle:
    """One customer's way of writing invoice numbers."""

    template: str
    zeros: bool

    def write(self, invoice_id: str) -> str:
        """``invoice_id`` (``INV-000123``) as this customer writes it."""
        digits = re.sub(r"\D", "", invoice_id)
        if not digits:
            return invoice_id
        return self.template.format(n=digits if self.zeros else digits.lstrip("0") or "0")


def reference_style(streams: Streams, customer_id: str, share: float) -> ReferenceStyle | None:
    """The customer's own way of writing invoice numbers, or None (it writes them as issued)."""
    if _chance(streams, f"noise:reference:{customer_id}", share) is None:
        return None
    rng = streams.generator(f"noise:reference-style:{customer_id}")
    template = REFERENCE_STYLES[int(rng.integers(0, len(REFERENCE_STYLES)))]
    return ReferenceStyle(template, zeros=bool(rng.random() < 0.3))


# --- the bank's export --------------------------------------------------------------------

NAME_WIDTHS = (14, 16, 18, 22)
"""Field widths payer banks cut names to (an ACH originator name is 16 characters)."""


def bank_payer_name(streams: Streams, name: str, share: float,
                    others: Collection[str] = ()) -> str:
    """The payer's name as its bank sends it: as it is, or upper-cased, plain and cut.

    ``others`` are the other parties' names: a cut that would spell one of them exactly
    (``Jefferson Group (C0089)`` cut to ``JEFFERSON GROUP`` beside a customer named
    ``Jefferson Group``) is cut wider, as a bank field that fits the distinguishing part
    would; such a line would otherwise name another customer to every reader, the bank
    feed included, and no one could tell the payments apart.
    """
    if _chance(streams, f"noise:payer:{name}", share) is None:
        return name
    rng = streams.generator(f"noise:payer-width:{name}")
    width = NAME_WIDTHS[int(rng.integers(0, len(NAME_WIDTHS)))]
    plain = re.sub(r"\s+", " ", re.sub(r"[^A-Za-z0-9& -]", " ", name)).strip().upper()
    taken = {o.casefold() for o in others if o.casefold() != name.casefold()}
    cut = plain[:width].rstrip()
    while cut.casefold() in taken and len(cut) < len(plain):
        width += 1
        cut = plain[:width].rstrip()
    return cut


WIRE_DESCRIPTIONS = ("FEDWIRE CREDIT", "INCOMING WIRE TRF", "WIRE TRANSFER CREDIT",
                     "SWIFT MT103 CR", "INTL WIRE IN", "WT FED CREDIT", "BOOK TRANSFER WIRE")
"""How payer banks name an incoming wire on the statement."""


def wire_description(streams: Streams, payer: str, share: float, default: str) -> str:
    """The statement's description of a wire from ``payer``: the bank's own wording."""
    if _chance(streams, f"noise:wire:{payer}", share) is None:
        return default
    rng = streams.generator(f"noise:wire-wording:{payer}")
    return WIRE_DESCRIPTIONS[int(rng.integers(0, len(WIRE_DESCRIPTIONS)))]


# --- document formats ---------------------------------------------------------------------

DocFormat = Literal["csv", "pdf", "text"]


def remittance_format(streams: Streams, key: str, noise: DocumentNoise) -> DocFormat:
    """The format of one remittance advice (``key`` names it): CSV, PDF or plain text."""
    if noise.pdf_remittances <= 0 and noise.text_remittances <= 0:
        return "csv"
    u = float(streams.generator(f"noise:doc:{key}").random())
    if u < noise.pdf_remittances:
        return "pdf"
    if u < noise.pdf_remittances + noise.text_remittances:
        return "text"
    return "csv"


BillFormat = Literal["text", "pdf", "email"]

EMAIL_REQUESTS = (
    "Could you let us know when this will be paid? Our month end is coming up.",
    "We would be grateful if you could pay this one early, ahead of your usual run.",
    "Please confirm you have received it and send the remittance advice to this address.",
    "Could you also send us an updated statement of our account when you have a moment?",
    "If anything on it does not match your order, just reply and we will sort it out.",
    "Our accounts team asks that you settle it in full this week, whatever the terms say.",
)
"""What a vendor writes above an invoice it sends in an email (free text, never policy)."""


def bill_format(streams: Streams, key: str, noise: DocumentNoise) -> BillFormat:
    """How one vendor bill (``key`` names it) is sent: a text file, a PDF, or an email."""
    if noise.pdf_bills <= 0 and noise.emails <= 0:
        return "text"
    u = float(streams.generator(f"noise:bill:{key}").random())
    if u < noise.pdf_bills:
        return "pdf"
    if u < noise.pdf_bills + noise.emails:
        return "email"
    return "text"


def email_request(streams: Streams, key: str) -> str:
    """The free-text request a vendor writes above an emailed bill (its own stream)."""
    rng = streams.generator(f"noise:request:{key}")
    return EMAIL_REQUESTS[int(rng.integers(0, len(EMAIL_REQUESTS)))]


def drawn(streams: Streams, name: str, share: float) -> bool:
    """Whether a document or party named ``name`` falls under ``share`` (its own stream)."""
    return _chance(streams, f"noise:{name}", share) is not None
