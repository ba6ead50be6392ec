"""``routed`` (tests/scenarios/library/attempts.py): a desk's commands go through the route
within the block, the route and the block get the desk's own ``execute``, and the desk's
own ``execute`` is back on exit, also when the block raises."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.scenarios.library.attempts import routed


class FakeDesk:
    """A desk that answers each command with what it did."""

    def __init__(self) -> None:
        self.done: list[str] = []

    def execute(self, command: str) -> str | None:
        self.done.append(command)
        return f"did {command}"


def test_the_route_sees_every_command_and_the_real_execute() -> None:
    desk = FakeDesk()
    seen: list[tuple[Callable[[str], str | None], str]] = []

    def route(real: Callable[[str], str | None], cmd: str) -> str | None:
        seen.append((real, cmd))
        return None if cmd == "drop" else real(cmd.upper())

    own = desk.execute
    with routed(desk, route) as real:
        assert real == own
        assert desk.execute("a") == "did A"
        assert desk.execute("drop") is None
        assert real("b") == "did b"  # the real one, not routed
    assert seen == [(own, "a"), (own, "drop")]
    assert desk.done == ["A", "b"]
    assert desk.execute == own and "execute" not in vars(desk)
    assert desk.execute("c") == "did c" and len(seen) == 2


def test_the_real_execute_is_back_when_the_block_raises() -> None:
    desk = FakeDesk()
    own = desk.execute
    with pytest.raises(RuntimeError, match="the solver failed"), \
            routed(desk, lambda real, cmd: real(cmd + "!")):
        assert desk.execute("a") == "did a!"
        raise RuntimeError("the solver failed")
    assert desk.execute == own and "execute" not in vars(desk)
    assert desk.execute("b") == "did b"


def test_nested_routes_unwind_one_at_a_time() -> None:
    desk = FakeDesk()
    with routed(desk, lambda real, cmd: real(cmd + "1")):
        with routed(desk, lambda real, cmd: real(cmd + "2")):
            assert desk.execute("a") == "did a21"
        assert desk.execute("b") == "did b1"
    assert desk.execute("c") == "did c"
