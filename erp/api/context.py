"""What every route of one app shares: the ledger, its store, the lock, the tokens.

``create_app`` makes one ``ApiContext`` and keeps it in ``app.state.context``; a
route asks for it with the ``Ctx`` parameter (see ``erp/api/params.py``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from erp import queries
from erp.api.tokens import Grant, TokenRegistry
from erp.api.wire import doc_columns, doc_row, listing_response
from erp.errors import ApiError
from erp.ledger import Ledger
from erp.store import EventStore


@dataclass(frozen=True, slots=True)
class ApiContext:
    """The books one app serves and the lock every access to them holds."""

    ledger: Ledger
    tokens: TokenRegistry
    lock: threading.Lock

    @property
    def store(self) -> EventStore:
        """The ledger's event store."""
        return self.ledger.store

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """The rows of one statement written with ``?`` placeholders."""
        store = self.ledger.store
        with store.engine.connect() as conn:
            return list(conn.exec_driver_sql(store.sql(sql), tuple(params)).all())

    @contextlib.contextmanager
    def books(self, grant: Grant) -> Iterator[Ledger]:
        """Hold the lock, refuse a token revoked meanwhile, and catch up with other writers."""
        with self.lock:
            if self.tokens.lookup(grant.token) is None:  # revoked while the request waited
                raise ApiError(401, "unauthorized", "the token was revoked")
            self.ledger.refresh()  # another writer (the engine) may have appended: cheap when not
            yield self.ledger

    def doc_listing(self, grant: Grant, kind: str, status: str | None, party: str | None,
                    fmt: str,
                    extra: Callable[[list[dict[str, Any]]], None] | None = None) -> Response:
        """The documents of one kind, filtered by status and party, as JSON or CSV."""
        with self.books(grant):
            items = [doc_row(d) for d in queries.documents(self.store, kind, status, party)]
            if extra is not None:
                extra(items)
        columns = doc_columns(kind) + (["payer", "method", "bank_account"]
                                       if kind == "receipt" else [])
        return listing_response(items, fmt, columns)


def api_context(request: Request) -> ApiContext:
    """The context of the app serving ``request`` (a FastAPI dependency)."""
    context: ApiContext = request.app.state.context
    return context
