"""Documents counterparties send: the delivery helpers live in ``sim.documents``
(the company's own automation sends documents too); this module re-exports them."""

from sim.documents import (
    COMPANY_ADDRESS,
    deliver,
    deliver_email,
    render_csv,
    render_email,
)

__all__ = ["COMPANY_ADDRESS", "deliver", "deliver_email", "render_csv", "render_email"]
