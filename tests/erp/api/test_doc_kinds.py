"""The API serves every kind of document the books keep: a kind the projections write but
the API's kind list lacks could be listed by its own route and never shown by id
(``erp purchase-orders show`` answered ``invalid_parameter: kind``)."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import erp.projections
from erp.api.wire import DOC_KINDS, DocKind


def _kinds_the_books_write() -> set[str]:
    source = Path(erp.projections.__file__).read_text()
    return set(re.findall(r'_new\(\s*\w+,\s*"([a-z_]+)"', source))


def test_every_document_kind_the_books_write_is_served() -> None:
    written = _kinds_the_books_write()
    assert {"invoice", "bill", "purchase_order", "goods_receipt"} <= written  # the scan reads
    assert written - set(DOC_KINDS) == set()


def test_the_kind_parameter_type_lists_the_same_kinds() -> None:
    assert typing.get_args(DocKind) == DOC_KINDS
