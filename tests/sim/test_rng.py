"""Named random streams: stable, independent, never from hash() or the clock."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Iterator

import pytest
from faker import Faker

import sim.rng as rng_module
from sim.rng import Streams, name_key, weigh_once


def test_same_seed_and_name_give_the_same_draws() -> None:
    a = Streams(7).generator("customer:C0001").integers(0, 10**9, 5)
    b = Streams(7).generator("customer:C0001").integers(0, 10**9, 5)
    assert list(a) == list(b)


def test_names_and_seeds_are_independent() -> None:
    s = Streams(7)
    a = list(s.generator("customer:C0001").integers(0, 10**9, 5))
    assert a != list(s.generator("customer:C0002").integers(0, 10**9, 5))
    assert a != list(Streams(8).generator("customer:C0001").integers(0, 10**9, 5))
    # Asking for other streams first changes nothing for this one.
    s2 = Streams(7)
    for i in range(50):
        s2.generator(f"vendor:V{i}").random()
    assert a == list(s2.generator("customer:C0001").integers(0, 10**9, 5))


def test_string_seeds_and_faker() -> None:
    assert Streams("cash-application/1").integer_seed("x") == \
        Streams("cash-application/1").integer_seed("x")
    f1 = Streams(3).faker("customer:C0001").company()
    f2 = Streams(3).faker("customer:C0001").company()
    assert f1 == f2


def _drawn(fake: Faker) -> tuple[str, ...]:
    return (fake.company(), fake.name(), fake.last_name(), fake.street_address(), fake.city(),
            fake.state_abbr(), fake.zipcode(), fake.address(), fake.email())


def test_weighted_draws_are_fakers_own() -> None:
    """The names the streams' Faker gives (weights summed once per table) are stock
    Faker's for the same seed, draw for draw."""
    streams, stock = Streams(11), Faker("en_US")
    for i in range(400):
        seed = streams.integer_seed(f"customer:C{i:04d}")
        fast = streams.faker(f"customer:C{i:04d}")
        stock.seed_instance(seed)
        assert _drawn(fast) == _drawn(stock), i


def test_weighted_draws_sum_each_table_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A weighted table's weights are summed the first time it is drawn from, not at every
    draw; an unweighted sequence is drawn by Faker itself."""
    sums: list[int] = []
    real = rng_module.accumulate

    def counted(values: Iterable[float]) -> Iterator[float]:
        sums.append(1)
        return real(values)

    monkeypatch.setattr(rng_module, "accumulate", counted)
    monkeypatch.setattr(rng_module, "_CUMULATIVE", {})
    fake = Faker("en_US")
    weigh_once(fake)
    fake.seed_instance(5)
    names = [fake.last_name() for _ in range(50)]
    assert len(sums) == 1 and len(set(names)) > 10
    assert fake.random_element(("x", "y")) in ("x", "y")
    assert len(sums) == 1


def test_stable_across_processes() -> None:
    """Python's hash() is salted per process; our streams must not be."""
    code = ("from sim.rng import Streams; "
            "print(list(Streams('s').generator('customer:C1').integers(0, 10**9, 3)))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout
            for seed in ("1", "2")}
    assert len(outs) == 1


def test_name_key_is_sha256_based() -> None:
    assert name_key("a") == name_key("a")
    assert name_key("a") != name_key("b")
    assert all(0 <= k < 2**32 for k in name_key("customer:C0001"))


def test_children_are_what_generator_spawn_gives() -> None:
    s = Streams("cash-application/1")
    spawned = s.generator("customer:C0001").spawn(3)
    children = s.children("customer:C0001", 3)
    for a, b in zip(spawned, children, strict=True):
        assert list(a.integers(0, 2**62, 5)) == list(b.integers(0, 2**62, 5))
    for i in range(4):
        old = s.generator("injections").spawn(i + 1)[i]
        new = s.child("injections", i)
        assert list(old.integers(0, 2**62, 5)) == list(new.integers(0, 2**62, 5))


def test_text_seeds_are_sha256_prefixes() -> None:
    import hashlib

    import numpy as np

    from sim.rng import seeded_generator, text_random, text_seed

    digest = hashlib.sha256(b"mutants:1:drop").digest()
    assert text_seed("mutants:1:drop", 32) == int.from_bytes(digest[:4], "big")
    assert text_seed("mutants:1:drop") == int.from_bytes(digest[:8], "big")
    assert text_random("mutants:1:drop").random() == text_random("mutants:1:drop").random()
    assert list(seeded_generator(7).integers(0, 100, 5)) == \
        list(np.random.default_rng(7).integers(0, 100, 5))
    with pytest.raises(ValueError, match="bits must be a multiple of 8"):
        text_seed("x", 12)
