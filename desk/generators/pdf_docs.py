"""Text PDFs for the extraction tasks (invoices, statements, agreements, receipts).

Documents are drawn with ReportLab's canvas (pinned in pyproject.toml: the bytes depend
on its version) in *invariant* mode, so the same calls give the same bytes on any
machine (a fixed creation date and document id), and with page compression off, so
each page's text layer is a plain content stream of ``BT 1 0 0 1 x y Tm (text) Tj ET``
runs in the base-14 fonts (WinAnsi). That is a real, ordinary text PDF any PDF reader
opens; it is also readable with a few lines of the Python standard library, which is
what the tasks' reference solutions do (the agent image has no PDF library).
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from reportlab.lib.pagesizes import A4, letter
from reportlab.pdfgen import canvas

PAGE_SIZES = {"letter": letter, "a4": A4, "receipt": (226.8, 566.9)}
"""Page sizes by name; ``receipt`` is an 80 mm till roll cut at 200 mm."""


class DeskPdf:
    """One PDF document drawn page by page; ``data()`` gives its bytes.

    Coordinates are PDF points from the bottom-left corner. Text is kept to the WinAnsi
    range of the base-14 fonts (ASCII here).
    """

    def __init__(self, title: str, *, size: str = "letter", author: str = "") -> None:
        self._buf = io.BytesIO()
        self.width, self.height = PAGE_SIZES[size]
        self._c = canvas.Canvas(self._buf, pagesize=PAGE_SIZES[size], invariant=1,
                                pageCompression=0)
        self._c.setTitle(title)
        if author:
            self._c.setAuthor(author)
        self._open = False

    def text(self, x: float, y: float, s: str, *, size: float = 10, bold: bool = False,
             align: str = "left", italic: bool = False) -> None:
        """Draw ``s`` at (x, y): ``align`` left (x is the start), right (x is the end) or
        center."""
        if not s.isascii():
            raise ValueError(f"PDF text must be ASCII here: {s!r}")
        font = "Helvetica" + ("-BoldOblique" if bold and italic else "-Bold" if bold
                              else "-Oblique" if italic else "")
        self._c.setFont(font, size)
        self._open = True
        if align == "right":
            self._c.drawRightString(x, y, s)
        elif align == "center":
            self._c.drawCentredString(x, y, s)
        else:
            self._c.drawString(x, y, s)

    def lines(self, x: float, y: float, texts: Sequence[str], *, size: float = 10,
              leading: float = 13, bold: bool = False) -> float:
        """Draw ``texts`` one under another from (x, y); the y below the last."""
        for t in texts:
            self.text(x, y, t, size=size, bold=bold)
            y -= leading
        return y

    def rule(self, x1: float, y1: float, x2: float, y2: float, *, width: float = 0.6) -> None:
        """A straight line (table rules, boxes)."""
        self._c.setLineWidth(width)
        self._c.line(x1, y1, x2, y2)
        self._open = True

    def new_page(self) -> None:
        """End this page and start the next."""
        self._c.showPage()
        self._open = False

    def data(self) -> bytes:
        """The document's bytes (ends the last page)."""
        if self._open:
            self._c.showPage()
        self._c.save()
        return self._buf.getvalue()


def wrap_words(text: str, width: int) -> list[str]:
    """``text`` cut at spaces into lines of at most ``width`` characters."""
    out: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        out.append(line)
    return out
