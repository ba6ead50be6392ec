"""Documents sent to the company, as the files a person would get.

``deliver`` records a ``DocumentDelivered`` world event (content and hidden truth)
that the runner turns into a file of the agent's inbox. Emails are real RFC 5322
messages (``.eml``), remittance advices and statements are CSV (or, with document
noise, PDF or text), bills are text (or PDF); a binary document is kept as base64
(``deliver_binary``).
"""

from __future__ import annotations

import base64
import csv
import io
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Any

from sim.engine import Engine
from sim.world_events import DocumentDelivered, DocumentKind

COMPANY_ADDRESS = "ap-ar@northwind-services.example"


def number_digits(number: str) -> str:
    """A document number's digits without zero padding (what a reformatting keeps).

    A vendor that reformats its invoice numbers (``INV-0042`` as ``42``) and the audit
    check that catches the resent bill both compare numbers this way.
    """
    return re.sub(r"\D", "", number).lstrip("0")


def render_email(*, sender: str, to: str, subject: str, body: str, when: datetime,
                 message_id: str) -> str:
    """An RFC 5322 email message as text (no wall clock: the date is the sim's)."""
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = format_datetime(when)
    msg["Message-ID"] = f"<{message_id}@erpsim.example>"
    msg.set_content(body)
    return msg.as_string()


def render_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """CSV text with a header row and ``\\n`` line ends."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def deliver(engine: Engine, *, actor: str, kind: DocumentKind, filename: str, sender: str,
            subject: str, content: str, truth: dict[str, Any] | None = None) -> DocumentDelivered:
    """Put a document in the company's inbox now (a world event with its truth)."""
    doc_id = engine.world.next_id("DOC")
    doc = DocumentDelivered(doc_id=doc_id, filename=f"{doc_id}-{filename}", kind=kind,
                            sender=sender, subject=subject, content=content,
                            truth=truth or {})
    engine.world.emit(doc, actor)
    return doc


def deliver_binary(engine: Engine, *, actor: str, kind: DocumentKind, filename: str,
                   sender: str, subject: str, data: bytes,
                   truth: dict[str, Any] | None = None) -> DocumentDelivered:
    """Put a binary document (a PDF) in the company's inbox now (stored as base64)."""
    doc_id = engine.world.next_id("DOC")
    doc = DocumentDelivered(doc_id=doc_id, filename=f"{doc_id}-{filename}", kind=kind,
                            sender=sender, subject=subject,
                            content=base64.b64encode(data).decode("ascii"), truth=truth or {},
                            encoding="base64")
    engine.world.emit(doc, actor)
    return doc


def deliver_email(engine: Engine, *, actor: str, sender: str, subject: str, body: str,
                  kind: DocumentKind = "email", truth: dict[str, Any] | None = None,
                  slug: str = "email") -> DocumentDelivered:
    """Deliver an email (``.eml``) dated at the engine's current moment."""
    day = engine.today
    hours = (engine.env.now % 1.0) * 24
    when = datetime(day.year, day.month, day.day, int(hours), int((hours % 1) * 60),
                    tzinfo=UTC)
    doc_id = f"{engine.world.next_id('MSG')}"
    text = render_email(sender=sender, to=COMPANY_ADDRESS, subject=subject, body=body, when=when,
                        message_id=doc_id)
    return deliver(engine, actor=actor, kind=kind, filename=f"{slug}.eml", sender=sender,
                   subject=subject, content=text, truth=truth)
