"""``Books.apply`` finds its rule by the event's exact type: every erp event type has one."""

from __future__ import annotations

import re

import pytest

from erp import events as ev
from erp.books import _BOOKS_RULES, Books


def test_every_event_type_of_the_books_has_a_rule() -> None:
    assert sorted(c.__name__ for c in ev.EVENT_CLASSES.values() if c not in _BOOKS_RULES) == []
    assert set(_BOOKS_RULES) <= set(ev.EVENT_CLASSES.values())


def test_an_object_that_is_no_event_of_the_books_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match=re.escape("Books.apply: no rule for event type str")):
        Books().apply("not an event")  # type: ignore[arg-type]
