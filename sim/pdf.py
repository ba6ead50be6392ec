"""Text PDFs of the outside world's papers (remittance advices, vendor bills).

Drawn with ReportLab's canvas (pinned: the bytes depend on its version) in *invariant*
mode, so the same calls give the same bytes on any machine (a fixed creation date and
document id), with page compression off. A document is a letterhead, a few lines of
text, a table drawn cell by cell at its columns' positions (as a real generated PDF
is: a reader gets the text back, not the table), and closing lines.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

_TOP, _BOTTOM, _LEFT, _LEADING = 740.0, 60.0, 56.0, 15.0


def _ascii(text: str) -> str:
    return text.encode("ascii", "replace").decode("ascii")


def render_pdf(*, title: str, heading: Sequence[str], columns: Sequence[str],
               rows: Sequence[Sequence[str]], footer: Sequence[str] = (),
               widths: Sequence[float] | None = None) -> bytes:
    """A one-table document as PDF bytes; numbers (the last columns) right-aligned."""
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=letter, invariant=1, pageCompression=0)
    c.setTitle(_ascii(title))
    span = 500.0
    widths = list(widths) if widths is not None else [span / max(1, len(columns))] * len(columns)
    xs = [_LEFT + sum(widths[:i]) for i in range(len(columns))]
    y = _TOP

    def line(text: str, *, bold: bool = False, size: float = 10) -> None:
        nonlocal y
        if y < _BOTTOM:
            c.showPage()
            y = _TOP
        c.setFont("Helvetica-Bold" if bold else "Helvetica", size)
        c.drawString(_LEFT, y, _ascii(text))
        y -= _LEADING

    def row(cells: Sequence[str], *, bold: bool = False) -> None:
        nonlocal y
        if y < _BOTTOM:
            c.showPage()
            y = _TOP
        c.setFont("Helvetica-Bold" if bold else "Helvetica", 9)
        for i, cell in enumerate(cells):
            numeric = i > 0 and cell.replace(",", "").replace(".", "").replace("-", "").isdigit()
            if numeric:
                c.drawRightString(xs[i] + widths[i] - 6, y, _ascii(cell))
            else:
                c.drawString(xs[i], y, _ascii(cell))
        y -= _LEADING

    for n, text in enumerate(heading):
        line(text, bold=n == 0, size=13 if n == 0 else 10)
    y -= _LEADING / 2
    row(columns, bold=True)
    c.setLineWidth(0.6)
    c.line(_LEFT, y + _LEADING - 3, _LEFT + span, y + _LEADING - 3)
    for cells in rows:
        row(cells)
    y -= _LEADING / 2
    for text in footer:
        line(text)
    c.showPage()
    c.save()
    return buf.getvalue()


def render_text_pdf(*, title: str, text: str, size: float = 9) -> bytes:
    """A plain-text document (an invoice as its vendor's system prints it) as PDF bytes,
    one line of text per printed line in a monospaced font, pages as it fills them."""
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=letter, invariant=1, pageCompression=0)
    c.setTitle(_ascii(title))
    y = _TOP
    leading = size * 1.35
    c.setFont("Courier", size)
    for raw in text.splitlines():
        if y < _BOTTOM:
            c.showPage()
            c.setFont("Courier", size)
            y = _TOP
        if raw.strip():
            c.drawString(_LEFT, y, _ascii(raw))
        y -= leading
    c.showPage()
    c.save()
    return buf.getvalue()
