"""The ``demand-forecast`` generator: order history up to the task date, the future as truth.

The engine runs the company's customers (each ordering at its own rate, one to three
lines of the service catalogue per order) from ``HISTORY_START`` through
``HORIZON`` business days after the task date. The workspace gets the orders placed up
to the task date (``order_history.csv``); the reference gets what the simulation's
customers actually ordered in the horizon, per item (``actual_demand.csv``): the
truth is the simulated future itself, the dates after the turn, never shown to the
agent. The prompt asks for one row per item that appears in the history, so the truth
holds exactly those items (an item first ordered after the task date cannot be
forecast; one not ordered again scores against 0), and ``history_items.csv``
(reference) lists them for the check that the forecast names each once and no other.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import date

from counterparties.customers import SERVICES
from desk.generators import GeneratorContext, csv_bytes
from desk.simulate import simulate
from scenarios.spec import Scenario
from sim.calendar import BusinessCalendar
from sim.world_events import OrderPlaced, decode_world_event

HISTORY_START = date(2026, 1, 5)
HORIZON = 20
"""Business days after the task date that the forecast covers."""
CUSTOMERS = 40


def _books_scenario(day: date, horizon: int = HORIZON) -> Scenario:
    """The customers and the calendar: the history, the task date, the horizon."""
    history = BusinessCalendar(HISTORY_START, day, frozenset()).business_days()
    return Scenario.model_validate({
        "id": "demand-gen", "title": "Orders behind the forecast task",
        "calendar": {"start": HISTORY_START.isoformat(),
                     "business_days": len(history) + horizon},
        "company": {"automation": {"order_intake": False, "auto_invoicing": False,
                                   "dispatch_invoices": False, "bank_feed": False,
                                   "auto_receipts": False, "month_end_statements": False,
                                   "controller_approves_bank_changes": False}},
        "population": {"customers": {
            "count": CUSTOMERS, "profiles": {"on_time": 0.7, "multi_invoice_ach": 0.3}}},
        "turns": {"every": "none", "prompt": "none"},
    })


def generate(ctx: GeneratorContext) -> dict[str, bytes]:
    """``order_history.csv``; ``actual_demand.csv`` and ``history_items.csv`` (reference)."""
    horizon = int(ctx.params.get("horizon", HORIZON))
    with simulate(_books_scenario(ctx.day, horizon), ctx.seed) as sim:
        sim.engine.finish()
        orders = [(_day(e.business_date), decode_world_event(e.type, e.payload))
                  for e in sim.ledger.store.read(types=["order_placed"])]
    placed = []
    for on, order in orders:
        assert isinstance(order, OrderPlaced)
        placed.append((on, order))
    history, truth = demand_tables(placed, ctx.day)
    return {
        "workspace/order_history.csv": csv_bytes(
            ["date", "order_id", "customer_id", "item", "quantity"], history),
        "reference/actual_demand.csv": csv_bytes(["item", "quantity"], truth),
        "reference/history_items.csv": csv_bytes(["item"], [[item] for item, _ in truth]),
    }


def demand_tables(orders: Sequence[tuple[date, OrderPlaced]], day: date
                  ) -> tuple[list[list[str]], list[list[str]]]:
    """The history's rows (orders placed up to ``day``) and the truth: per item of the
    history (catalogue order first, then any other by name), its quantity ordered after
    ``day``, 0 when none."""
    history: list[list[str]] = []
    future: Counter[str] = Counter()
    for on, order in orders:
        for line in order.lines:
            if on <= day:
                history.append([on.isoformat(), order.order_id, order.customer_id,
                                line.description, str(line.quantity)])
            else:
                future[line.description] += line.quantity
    seen = {row[3] for row in history}
    items = [s for s in SERVICES if s in seen] + sorted(seen - set(SERVICES))
    return history, [[item, str(future.get(item, 0))] for item in items]


def _day(value: object) -> date:
    return value if isinstance(value, date) else date.fromisoformat(str(value))
