"""The project's one seeded-random recipe: named streams from a seed, by sha256.

A stream's identity is its name: the name is turned into integers by sha256 and
used as the spawn key of a numpy ``SeedSequence`` under the scenario seed. Adding
a counterparty never shifts another's draws, and nothing depends on Python's
``hash()`` or the wall clock. Faker instances are seeded from the same tree with
``seed_instance`` (never the global ``Faker.seed``).

Every other seeded draw of the project comes from here too:

- ``Streams.children(name, n)``: the independent sub-streams of one stream (a customer's
  orders and its payments; an injection's own draws as child ``index`` of
  ``injections``), as ``Generator.spawn`` makes them;
- ``text_seed(text, bits)``: an integer seed derived from a text by sha256 (a campaign's
  bootstrap seed, a mutation sample's seed);
- ``text_random(text)``: a standard-library ``random.Random`` for code that wants its
  API (``sample``), seeded with ``text_seed(text)``;
- ``seeded_generator(seed)``: a numpy Generator for an integer seed a user gives (the
  same as ``numpy.random.default_rng(seed)``).
"""

from __future__ import annotations

import hashlib
import random
from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any

import numpy as np
from faker import Faker

MAX_SEED = 2**63 - 1
"""The largest seed: a signed 64-bit integer, as the stores, the results ledger and the
summaries hold it (a larger one would be accepted here and refused by SQLite later)."""


def name_key(name: str) -> tuple[int, ...]:
    """A stream name as spawn-key integers (four 32-bit words of its sha256)."""
    digest = hashlib.sha256(name.encode()).digest()
    return tuple(int.from_bytes(digest[i:i + 4], "big") for i in range(0, 16, 4))


def text_seed(text: str, bits: int = 64) -> int:
    """An integer seed from a text: the first ``bits`` bits of its sha256, big-endian.

    ``bits`` is a multiple of 8 up to 256 (a 32-bit seed to print, a 64-bit one to seed
    ``random.Random``, 128 bits of ``SeedSequence`` entropy).
    """
    if bits % 8 or not 8 <= bits <= 256:
        raise ValueError(f"bits must be a multiple of 8 from 8 to 256 (got {bits})")
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:bits // 8], "big")


def text_random(text: str) -> random.Random:
    """A standard-library ``random.Random`` seeded with ``text_seed(text)`` (64 bits)."""
    return random.Random(text_seed(text))


def seeded_generator(seed: int) -> np.random.Generator:
    """A numpy Generator for an integer seed (what ``numpy.random.default_rng(seed)`` gives)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))


def seed_entropy(seed: int | str) -> int:
    """A scenario seed as SeedSequence entropy (strings are hashed with sha256)."""
    if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0:
        return seed
    return text_seed(str(seed), 128)


class Streams:
    """The random streams of one scenario instance."""

    def __init__(self, seed: int | str) -> None:
        self.seed = seed
        self._entropy = seed_entropy(seed)
        self._fakers: dict[str, Faker] = {}

    def sequence(self, name: str) -> np.random.SeedSequence:
        """The SeedSequence of a named stream."""
        return np.random.SeedSequence(self._entropy, spawn_key=name_key(name))

    def generator(self, name: str) -> np.random.Generator:
        """A numpy Generator for a named stream (``customer:C0012``)."""
        return np.random.Generator(np.random.PCG64(self.sequence(name)))

    def children(self, name: str, n: int) -> list[np.random.Generator]:
        """The first ``n`` sub-streams of a named stream, independent of it and of each
        other (the Generators ``generator(name).spawn(n)`` gives)."""
        return [np.random.Generator(np.random.PCG64(s)) for s in self.sequence(name).spawn(n)]

    def child(self, name: str, index: int) -> np.random.Generator:
        """Sub-stream ``index`` of a named stream (``children(name, index + 1)[index]``)."""
        seq = self.sequence(name)
        key = (*seq.spawn_key, index)
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seq.entropy,
                                                                          spawn_key=key)))

    def integer_seed(self, name: str) -> int:
        """A 63-bit integer seed for a named stream (for libraries that want one)."""
        return int(self.sequence(name).generate_state(2, np.uint64)[0] >> np.uint64(1))

    def faker(self, name: str, locale: str = "en_US") -> Faker:
        """A Faker seeded for a named stream (``seed_instance``, never the global seed).

        Building a Faker costs about a millisecond, so one instance per locale is kept
        and reseeded: use what it gives before asking for another stream's faker.
        """
        fake = self._fakers.get(locale)
        if fake is None:
            fake = self._fakers[locale] = Faker(locale)
            weigh_once(fake)
        fake.seed_instance(self.integer_seed(name))
        return fake


_CUMULATIVE: dict[int, tuple[OrderedDict[Any, float], tuple[Any, ...], list[float]]] = {}
"""Per weighted table of Faker's (by identity, the table kept alive with it): its keys and
their cumulative weights."""


def _cumulative(table: OrderedDict[Any, float]) -> tuple[tuple[Any, ...], list[float]]:
    found = _CUMULATIVE.get(id(table))
    if found is None or found[0] is not table:
        found = _CUMULATIVE[id(table)] = (table, tuple(table), list(accumulate(table.values())))
    return found[1], found[2]


def weigh_once(fake: Faker) -> None:
    """Make ``fake``'s weighted draws (a last name from about a thousand weighted ones, a
    street format) add up their weights once per table instead of at every draw.

    Faker draws one element of a weighted table (an ``OrderedDict`` of weights) with
    ``random.choices(keys, weights=values)``, which sums the weights again at every call:
    a thousand additions per last name, most of a company name's cost. Given those sums
    as ``cum_weights``, ``random.choices`` draws the same element from the same random
    state, so every name is what Faker gives (a test compares them seed by seed). An
    unweighted draw, or a provider that draws without weights, is Faker's own.
    """
    for factory in fake.factories:
        for provider in factory.providers:
            if not getattr(provider, "__use_weighting__", False):
                continue
            provider.random_element = _weighed(provider, provider.random_element)


def _weighed(provider: Any, draw: Callable[[Any], Any]) -> Callable[..., Any]:
    def random_element(elements: Sequence[Any] | OrderedDict[Any, float] = ("a", "b", "c")
                       ) -> Any:
        if type(elements) is not OrderedDict:
            return draw(elements)
        keys, cum = _cumulative(elements)
        return provider.generator.random.choices(keys, cum_weights=cum)[0]
    return random_element
