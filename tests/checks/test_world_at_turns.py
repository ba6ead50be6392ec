"""``books_match_world`` with ``at_turns``: one date rule at a time."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from checks.control import BooksMatchWorld


def test_at_turns_takes_no_as_of() -> None:
    with pytest.raises(ValidationError, match="at_turns judges every turn's date: give it no"):
        BooksMatchWorld(type="books_match_world", parties="customers", at_turns=True,
                        as_of="2026-05-29")
    with pytest.raises(ValidationError, match="once, at the end: not daily"):
        BooksMatchWorld(type="books_match_world", parties="customers", at_turns=True,
                        daily=True)
    spec = BooksMatchWorld(type="books_match_world", parties="customers", at_turns=True)
    assert spec.at_turns and spec.as_of is None
