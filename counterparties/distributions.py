"""Distributions that behaviour profiles use for their parameters.

Written in a scenario as ``{dist: uniform, low: 5, high: 25}``; a bare number is a
constant. Every draw takes the actor's own numpy Generator.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Dist(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Constant(_Dist):
    """Always the same value."""

    dist: Literal["constant"] = "constant"
    value: float

    def draw(self, rng: np.random.Generator) -> float:
        """The value."""
        return self.value


class Uniform(_Dist):
    """Uniform on [low, high]."""

    dist: Literal["uniform"] = "uniform"
    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if self.high < self.low:
            raise ValueError(f"high {self.high} is below low {self.low}")
        return self

    def draw(self, rng: np.random.Generator) -> float:
        """A uniform draw."""
        return float(rng.uniform(self.low, self.high))


class Normal(_Dist):
    """Normal with mean and sd, optionally clipped to [low, high]."""

    dist: Literal["normal"] = "normal"
    mean: float
    sd: float = Field(ge=0)
    low: float | None = None
    high: float | None = None

    def draw(self, rng: np.random.Generator) -> float:
        """A (clipped) normal draw."""
        x = float(rng.normal(self.mean, self.sd))
        if self.low is not None:
            x = max(self.low, x)
        if self.high is not None:
            x = min(self.high, x)
        return x


class Poisson(_Dist):
    """Poisson with rate ``lam``."""

    dist: Literal["poisson"] = "poisson"
    lam: float = Field(ge=0)

    def draw(self, rng: np.random.Generator) -> float:
        """A Poisson count."""
        return float(rng.poisson(self.lam))


class LogNormal(_Dist):
    """Log-normal: ``exp(N(mu, sigma))``, for amounts."""

    dist: Literal["lognormal"] = "lognormal"
    mu: float
    sigma: float = Field(ge=0)

    def draw(self, rng: np.random.Generator) -> float:
        """A log-normal draw."""
        return float(rng.lognormal(self.mu, self.sigma))


def _constant(v: object) -> object:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return {"dist": "constant", "value": v}
    return v


Distribution = Annotated[Constant | Uniform | Normal | Poisson | LogNormal,
                         Field(discriminator="dist")]
"""A distribution, tagged by ``dist``."""


def dist(value: object) -> object:
    """Accept a bare number as a constant distribution (a ``BeforeValidator``)."""
    return _constant(value)
