"""Named random streams, all spawned from one scenario seed.

A stream's identity is its name: the name is turned into integers by sha256 and
used as the spawn key of a numpy ``SeedSequence`` under the scenario seed. Adding
a counterparty never shifts another's draws, and nothing depends on Python's
``hash()`` or the wall clock. Faker instances are seeded from the same tree with
``seed_instance`` (never the global ``Faker.seed``).
"""

from __future__ import annotations

import hashlib

import numpy as np
from faker import Faker


def name_key(name: str) -> tuple[int, ...]:
    """A stream name as spawn-key integers (four 32-bit words of its sha256)."""
    digest = hashlib.sha256(name.encode()).digest()
    return tuple(int.from_bytes(digest[i:i + 4], "big") for i in range(0, 16, 4))


def seed_entropy(seed: int | str) -> int:
    """A scenario seed as SeedSequence entropy (strings are hashed with sha256)."""
    if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0:
        return seed
    return int.from_bytes(hashlib.sha256(str(seed).encode()).digest()[:16], "big")


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
        fake.seed_instance(self.integer_seed(name))
        return fake
