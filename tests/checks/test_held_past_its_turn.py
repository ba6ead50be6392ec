"""``held_past_its_turn``: a document written later than the first turn after it arrived."""

from __future__ import annotations

from datetime import date

from checks.state import held_past_its_turn

TURNS = [date(2026, 5, 4), date(2026, 5, 11), date(2026, 5, 18)]


def test_written_at_the_first_turn_on_or_after_arrival_is_no_problem() -> None:
    assert held_past_its_turn("bill B1", date(2026, 5, 5), date(2026, 5, 11), TURNS) is None
    # a document that arrives on a turn's day is that turn's
    assert held_past_its_turn("bill B1", date(2026, 5, 11), date(2026, 5, 11), TURNS) is None
    # written before the first turn after its arrival is not held back either
    assert held_past_its_turn("bill B1", date(2026, 5, 11), date(2026, 5, 4), TURNS) is None


def test_written_at_a_later_turn_names_both_turns() -> None:
    assert held_past_its_turn("bill B1", date(2026, 5, 5), date(2026, 5, 18), TURNS) == (
        "bill B1 arrived 2026-05-05 and was entered in the turn of 2026-05-18, not the turn "
        "of 2026-05-11")
    assert held_past_its_turn("register R1", date(2026, 5, 11), date(2026, 5, 18), TURNS,
                              "first posted") == (
        "register R1 arrived 2026-05-11 and was first posted in the turn of 2026-05-18, not "
        "the turn of 2026-05-11")


def test_arrival_after_the_last_turn_has_no_turn_to_miss() -> None:
    assert held_past_its_turn("bill B1", date(2026, 5, 19), date(2026, 6, 1), TURNS) is None
    assert held_past_its_turn("bill B1", date(2026, 5, 5), date(2026, 6, 1), []) is None
