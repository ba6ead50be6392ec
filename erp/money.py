"""Money: an integer count of cents inside, decimal strings only at the edges."""

from __future__ import annotations

import numbers
import re
from decimal import Decimal
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

from erp.errors import MoneyError

_DECIMAL = re.compile(r"^([+-])?([0-9]+)(?:\.([0-9]{1,2}))?$", re.ASCII)
_GROUPED = re.compile(r"^[+-]?[0-9]{1,3}(?:[,_][0-9]{3})+(?:\.[0-9]*)?$", re.ASCII)
MAX_WHOLE_DIGITS = 15
MAX_CENTS = 10**(MAX_WHOLE_DIGITS + 2) - 1
"""The largest magnitude accepted: 15 digits of whole units, and it fits a BIGINT."""
_RANGE = f"expected from -{MAX_CENTS} to {MAX_CENTS} cents, i.e. at most 15 whole digits"


def parse_cents(value: object, *, what: str = "amount") -> int:
    """Read a money value as integer cents.

    Accepts an integer (already cents, including numpy's) or a decimal string with
    at most two places (``"1240.5"``, ``"-30.00"``, ``"1,240.50"`` with correctly
    grouped thousands). Refuses floats, more than two decimals, a decimal comma,
    and anything that is not a number.
    """
    if isinstance(value, bool):
        raise MoneyError(f"{what}: {value!r} is not money (expected a decimal string like '12.34')")
    if isinstance(value, numbers.Integral):
        cents = int(value)
        if not -MAX_CENTS <= cents <= MAX_CENTS:
            raise MoneyError(f"{what}: {value!r} cents is out of range ({_RANGE})")
        return cents
    if isinstance(value, float | numbers.Real) and not isinstance(value, Decimal):
        raise MoneyError(
            f"{what}: {value!r} is a float; money must be a decimal string like '12.34' "
            "or integer cents (floats cannot hold cents exactly)"
        )
    if isinstance(value, Decimal):
        value = format(value, "f")
    if not isinstance(value, str):
        raise MoneyError(f"{what}: {value!r} is not money (expected a decimal string like '12.34')")
    text = value.strip()
    if ("," in text or "_" in text):
        if not _GROUPED.match(text):
            raise MoneyError(f"{what}: {value!r} is not a decimal amount (',' only separates "
                             "thousands, as in '1,240.50'; the decimal mark is '.')")
        text = text.replace(",", "").replace("_", "")
    m = _DECIMAL.match(text)
    if m is None:
        if re.match(r"^[+-]?[0-9]+\.[0-9]{3,}$", text, re.ASCII):
            raise MoneyError(f"{what}: {value!r} has more than two decimal places")
        raise MoneyError(f"{what}: {value!r} is not a decimal amount (expected e.g. '1240.00')")
    sign, whole, frac = m.groups()
    if len(whole.lstrip("0")) > MAX_WHOLE_DIGITS:  # before int(): a long digit string is slow
        raise MoneyError(f"{what}: {value!r} is out of range ({_RANGE})")
    cents = int(whole) * 100 + int((frac or "0").ljust(2, "0"))
    return -cents if sign == "-" else cents


def format_cents(cents: int) -> str:
    """Render cents as a plain decimal string: ``-123456`` -> ``'-1234.56'``."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole}.{frac:02d}"


def display_cents(cents: int) -> str:
    """Render cents for people: ``-123456`` -> ``'-1,234.56'``."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{frac:02d}"


def _to_cents(value: object) -> int:
    try:
        return parse_cents(value)
    except MoneyError as e:
        raise ValueError(str(e)) from None


Cents = Annotated[int, BeforeValidator(_to_cents)]
"""Integer cents in models; also accepts a decimal string on input."""

MoneyStr = Annotated[int, BeforeValidator(_to_cents),
                     PlainSerializer(format_cents, return_type=str)]
"""Integer cents inside; serialized as a decimal string (for the API's edges)."""


def pct_of(cents: int, basis_points: int) -> int:
    """``cents * basis_points / 10000`` rounded half away from zero, in integers."""
    num = cents * basis_points
    q, r = divmod(abs(num), 10000)
    if r * 2 >= 10000:
        q += 1
    return q if num >= 0 else -q


def _decimal_text_to_cents(value: object) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(f"{value!r}: write money as a decimal string like '250000.00' "
                         "(a bare number could mean units or cents)")
    return _to_cents(value)


DecimalMoney = Annotated[int, BeforeValidator(_decimal_text_to_cents),
                         PlainSerializer(format_cents, return_type=str)]
"""Integer cents inside, but only a decimal string on input (for files people write)."""
