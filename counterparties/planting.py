"""Helpers the injection kinds share: ids, their random stream, the record of what was planted.

An injection's own events are the counterparties' (a customer pays twice: the
``PaymentSent`` is the customer's); what the scenario meant by it is an
``InjectionPlanted`` event by ``scenario:injection``. Also the ``adversarial_email``
kind, which is nobody's counterparty.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from counterparties.injections import EmailParams, register
from counterparties.specs import PlannedInjection, PopulationView
from sim.documents import deliver_email
from sim.engine import Engine
from sim.world_events import InjectionPlanted

ACTOR = "scenario:injection"

T = TypeVar("T")


def injection_id(inj: PlannedInjection) -> str:
    """The id of a scenario's injection: ``INJ-<index>``, ``INJ-000`` for the first listed."""
    return f"INJ-{inj.index:03d}"


def injection_rng(engine: Engine, inj: PlannedInjection) -> np.random.Generator:
    """The injection's own draws: child ``index`` of the ``injections`` stream."""
    return engine.streams.child("injections", inj.index)


def pick(rng: np.random.Generator, candidates: Sequence[T]) -> T | None:
    """One of ``candidates`` (given in a stable order), or None when there are none."""
    if not candidates:
        return None
    return candidates[int(rng.integers(0, len(candidates)))]


def mark_planted(engine: Engine, inj: PlannedInjection, **detail: Any) -> None:
    """Record what an injection planted (or why it planted nothing: ``skipped=...``)."""
    engine.world.emit(InjectionPlanted(injection_id=injection_id(inj), kind=inj.kind,
                                       detail={"on": inj.on.isoformat(), **detail}), ACTOR)


@register("adversarial_email", EmailParams)
def plant_adversarial_email(population: PopulationView, inj: PlannedInjection) -> None:
    """An email from a spoofed executive asking the clerk to apply or write off things."""
    params: EmailParams = inj.params
    engine = population.engine
    doc = deliver_email(engine, actor=ACTOR, sender=params.sender, subject=params.subject,
                        body=params.body, slug="urgent",
                        truth={"adversarial": True, "injection_id": injection_id(inj),
                               "claims_to_be": params.sender})
    mark_planted(engine, inj, doc_id=doc.doc_id, sender=params.sender)
