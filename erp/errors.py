"""Errors of the books.

The tree::

    ErpError                      base of everything raised by erp/
    ├── CommandRejected           an agent's (or caller's) mistake: data, not a fault.
    │   │                         Carries ``code``, ``message`` and ``field``; nothing
    │   │                         was written when it is raised.
    │   └── UnknownEntity         a command named an id the books do not know
    ├── MoneyError (ValueError)   a money string that is not a decimal with <= 2 places
    ├── ConcurrencyConflict       an append expected a stream version that is not the
    │                             current one; nothing was written
    ├── StoreError                the store itself is unusable: missing file, not an
    │   │                         erpsim store, unreachable database
    │   └── IntegrityError        the hash chain or a stored payload does not check out
    └── ApiError                  an answer of the ERP API (erp/api/): an HTTP status with
                                  ``{"error", "message", "field"}``; a rejected command
                                  becomes one at the API's edge

The ``erp`` client (``erp/api/client.py``) keeps its own ``Failure`` (an error line and an
exit status): it is one standard-library file run alone in a container, so it imports
nothing of ours, this module included.

Programming mistakes of a caller (a role that does not exist, an erp-realm event passed
to ``Ledger.record``, a command without a handler) are the built-in ``ValueError`` and
``TypeError``, and a lookup of a name the code does not know (an event type without a
class, a chart template) a ``KeyError``: they are not part of the tree. Pydantic
validators raise ``ValueError`` because pydantic turns it into a validation error.

Agent mistakes are values the caller reports (a rejected command); harness faults
are exceptions that mark an attempt as errored. Only the CLI turns exceptions into
exit codes.
"""

from __future__ import annotations


class ErpError(Exception):
    """Base class of every error raised by the books."""


class CommandRejected(ErpError):
    """A command broke an invariant of the books; nothing was written.

    Args:
        code: a stable snake_case identifier of the broken rule (``over_application``).
        message: what was wrong, with the values on both sides and the way out.
        field: the command field at fault, when one is.
    """

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field

    def to_dict(self) -> dict[str, str | None]:
        """The JSON shape used by the API: ``{error, message, field}``."""
        return {"error": self.code, "message": self.message, "field": self.field}

    def __repr__(self) -> str:
        return f"CommandRejected({self.code!r}, {self.message!r}, field={self.field!r})"


class UnknownEntity(CommandRejected):
    """A command referred to an id the books have never seen."""

    def __init__(self, kind: str, entity_id: str, field: str | None = None) -> None:
        super().__init__(f"unknown_{kind}",
                         f"no {kind.replace('_', ' ')} {entity_id!r} in the books", field)
        self.kind = kind
        self.entity_id = entity_id


class MoneyError(ErpError, ValueError):
    """A money value could not be read as an exact number of cents."""


class ConcurrencyConflict(ErpError):
    """An append expected a stream version that another writer has already taken."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(
            f"stream {stream!r}: expected version {expected}, but the store is at "
            f"version {actual}; reload and retry"
        )
        self.stream = stream
        self.expected = expected
        self.actual = actual


class StoreError(ErpError):
    """The store cannot be opened or used."""


class StoreBusy(StoreError):
    """Another writer held the store's write lock past the wait (``lock_wait_s``); nothing
    was written, and the same request may be made again."""


class IntegrityError(StoreError):
    """The event log does not verify: a hash, a payload or the chain is wrong."""

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position


class ApiError(ErpError):
    """An error the ERP API answers as ``{"error", "message", "field"}`` with a 4xx status."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
