"""The API's routes, one module per resource, each an ``APIRouter``.

``ROUTERS`` is the order ``create_app`` includes them in (commands first, as the
routes were always listed). A route reaches the books through the ``Ctx``
parameter (``erp/api/context.py``) and the caller's grant through ``Auth``.
"""

from __future__ import annotations

from fastapi import APIRouter

from erp.api.routers import (
    audit,
    bank,
    commands,
    documents,
    gl,
    journal,
    master_data,
    meta,
    payables,
    receivables,
    reports,
)

ROUTERS: tuple[APIRouter, ...] = (
    commands.router, meta.router, master_data.router, receivables.router, payables.router,
    journal.router, documents.router, reports.router, gl.router, bank.router, audit.router)
