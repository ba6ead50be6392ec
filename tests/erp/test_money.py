"""Money at the edges: parsing and formatting decimal strings, percentages in integers."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from erp.errors import MoneyError
from erp.money import (
    MAX_CENTS,
    Cents,
    DecimalMoney,
    MoneyStr,
    display_cents,
    format_cents,
    parse_cents,
    pct_of,
)

# parse_cents reads at most 15 whole digits, so this is the largest amount a string can carry.
MAX_STRING_CENTS = 10**17 - 1
RANGE = ("expected from -99999999999999999 to 99999999999999999 cents, i.e. at most 15 whole "
         "digits")


def shown(value: object) -> str:
    """How a refusal quotes the value (a Decimal by its text, as a CSV cell would show it)."""
    return repr(str(value)) if isinstance(value, Decimal) else repr(value)


# --- parse_cents: what it accepts ------------------------------------------------------


@pytest.mark.parametrize(("value", "cents"), [
    (0, 0),
    (124050, 124050),
    (-7, -7),
    ("0", 0),
    ("12", 1200),
    ("12.3", 1230),
    ("1240.5", 124050),
    ("1240.50", 124050),
    ("0.01", 1),
    ("0.1", 10),
    ("-30.00", -3000),
    ("-0.05", -5),
    ("+5", 500),
    ("+5.25", 525),
    ("-0.00", 0),
    ("1,234.56", 123456),
    ("1,234,567.89", 123456789),
    ("1_000", 100000),
    ("  12.34\n", 1234),
    ("999999999999999.99", MAX_STRING_CENTS),
    ("-999999999999999.99", -MAX_STRING_CENTS),
    (Decimal("12.34"), 1234),
    (Decimal("-0.5"), -50),
    (Decimal("1E+2"), 10000),
])
def test_parse_cents_accepts(value: object, cents: int) -> None:
    assert parse_cents(value) == cents
    assert type(parse_cents(value)) is int


# --- parse_cents: what it refuses, and what the message says ---------------------------


@pytest.mark.parametrize("value", [12.34, 0.0, -1.5, float("nan"), float("inf")])
def test_parse_cents_refuses_floats(value: float) -> None:
    with pytest.raises(MoneyError) as info:
        parse_cents(value)
    msg = str(info.value)
    assert repr(value) in msg
    assert "is a float" in msg


@pytest.mark.parametrize("value", ["1.234", "-0.001", "12.345", "1,000.125", "+1.999",
                                   Decimal("1.005")])
def test_parse_cents_refuses_more_than_two_decimals(value: object) -> None:
    with pytest.raises(MoneyError) as info:
        parse_cents(value)
    assert shown(value) in str(info.value)
    assert "more than two decimal places" in str(info.value)


@pytest.mark.parametrize("value", ["", " ", "abc", "12.34.56", "1e3", "$12.00", "12.00 USD",
                                   "--5", "+-5", ".5", "5.", "12 .34", "0x10", "NaN",
                                   Decimal("NaN"), Decimal("Infinity")])
def test_parse_cents_refuses_non_numbers(value: object) -> None:
    with pytest.raises(MoneyError) as info:
        parse_cents(value)
    msg = str(info.value)
    assert shown(value) in msg
    assert "is not a decimal amount" in msg


@pytest.mark.parametrize("value", [None, b"12.34", [1234], {"amount": "1.00"}, object()])
def test_parse_cents_refuses_other_types(value: object) -> None:
    with pytest.raises(MoneyError) as info:
        parse_cents(value)
    assert repr(value) in str(info.value)
    assert "is not money" in str(info.value)


@pytest.mark.parametrize("value", [True, False])
def test_parse_cents_refuses_bools(value: bool) -> None:
    # bool is an int subclass: True must not become one cent.
    with pytest.raises(MoneyError) as info:
        parse_cents(value)
    assert f"{value!r} is not money" in str(info.value)


def test_parse_cents_names_the_field() -> None:
    with pytest.raises(MoneyError) as info:
        parse_cents("1.234", what="lines[2].unit_price")
    assert str(info.value) == "lines[2].unit_price: '1.234' has more than two decimal places"


def test_money_error_is_a_value_error() -> None:
    # pydantic turns ValueError into a validation error, so commands refuse bad money cleanly.
    with pytest.raises(ValueError, match="is a float"):
        parse_cents(1.5)


@pytest.mark.parametrize("value", ["12,50", "1,2,3", "1,0000.00"])
def test_parse_cents_refuses_misplaced_thousands_separators(value: str) -> None:
    with pytest.raises(MoneyError, match="',' only separates thousands"):
        parse_cents(value)


@pytest.mark.parametrize(("value", "cents"), [("1,240.50", 124050), ("-12,345,678.9", -1234567890),
                                              ("1_000", 100000)])
def test_parse_cents_accepts_grouped_thousands(value: str, cents: int) -> None:
    assert parse_cents(value) == cents


def test_parse_cents_refuses_non_ascii_digits() -> None:
    for text in ("\u0661\u0662.34", "\u0661\u0662.345"):
        with pytest.raises(MoneyError) as info:
            parse_cents(text)
        assert str(info.value) == (f"amount: {text!r} is not a decimal amount "
                                   "(expected e.g. '1240.00')")


# --- the limits: MAX_CENTS both ways, for integers, strings and Decimals -------------------


def test_max_cents_is_fifteen_whole_digits_and_fits_a_bigint() -> None:
    assert MAX_CENTS == MAX_STRING_CENTS == 99_999_999_999_999_999
    assert MAX_CENTS < 2**63 - 1
    assert format_cents(MAX_CENTS) == "999999999999999.99"


@pytest.mark.parametrize("value", [MAX_CENTS, -MAX_CENTS, MAX_CENTS - 1, -MAX_CENTS + 1])
def test_integer_cents_up_to_max_cents_are_accepted(value: int) -> None:
    assert parse_cents(value) == value


@pytest.mark.parametrize("value", [MAX_CENTS + 1, -MAX_CENTS - 1, 10**18, -10**18, 10**30,
                                   -10**30, -10**300])
def test_integer_cents_beyond_max_cents_are_refused_naming_value_and_range(value: int) -> None:
    with pytest.raises(MoneyError) as info:
        parse_cents(value, what="lines[0].amount")
    assert str(info.value) == f"lines[0].amount: {value!r} cents is out of range ({RANGE})"


@pytest.mark.parametrize(("value", "cents"), [
    ("999999999999999.99", MAX_CENTS),
    ("-999999999999999.99", -MAX_CENTS),
    ("+999999999999999.99", MAX_CENTS),
    ("999,999,999,999,999.99", MAX_CENTS),
    ("999999999999999", MAX_CENTS - 99),
    ("0999999999999999.99", MAX_CENTS),      # a leading zero is not a sixteenth digit
    ("0000000000000000001.50", 150),
    (Decimal("999999999999999.99"), MAX_CENTS),
    (Decimal("-999999999999999.99"), -MAX_CENTS),
])
def test_strings_up_to_fifteen_whole_digits_are_accepted(value: object, cents: int) -> None:
    assert parse_cents(value) == cents


@pytest.mark.parametrize(("value", "shown"), [
    ("1000000000000000.00", "'1000000000000000.00'"),
    ("1000000000000000", "'1000000000000000'"),
    ("-1000000000000000.00", "'-1000000000000000.00'"),
    ("1,000,000,000,000,000.00", "'1,000,000,000,000,000.00'"),
    ("9" * 40, repr("9" * 40)),
    (Decimal("1E+15"), "'1000000000000000'"),
    (Decimal("-1E+30"), repr("-1" + "0" * 30)),
])
def test_strings_beyond_fifteen_whole_digits_are_refused_naming_value_and_range(
        value: object, shown: str) -> None:
    with pytest.raises(MoneyError) as info:
        parse_cents(value)
    assert str(info.value) == f"amount: {shown} is out of range ({RANGE})"


def test_a_huge_digit_string_is_refused_at_once() -> None:
    # more digits than int() converts (4300): refused by its length, never converted
    with pytest.raises(MoneyError, match="out of range"):
        parse_cents("-" + "9" * 5000)


def test_the_default_field_name_and_the_float_message() -> None:
    with pytest.raises(MoneyError) as info:
        parse_cents(1.5)
    assert str(info.value) == ("amount: 1.5 is a float; money must be a decimal string like "
                               "'12.34' or integer cents (floats cannot hold cents exactly)")
    with pytest.raises(MoneyError) as info:
        parse_cents(None)
    assert str(info.value) == ("amount: None is not money (expected a decimal string like "
                               "'12.34')")
    with pytest.raises(MoneyError) as info:
        parse_cents(True)
    assert str(info.value) == "amount: True is not money (expected a decimal string like '12.34')"


@pytest.mark.parametrize(("value", "shown"), [(Decimal("NaN"), "'NaN'"),
                                              (Decimal("-Infinity"), "'-Infinity'")])
def test_a_decimal_that_is_no_number_is_quoted_as_written(value: Decimal, shown: str) -> None:
    with pytest.raises(MoneyError) as info:
        parse_cents(value)
    assert str(info.value) == f"amount: {shown} is not a decimal amount (expected e.g. '1240.00')"


# --- the model types: Cents, MoneyStr, DecimalMoney ----------------------------------------


class _Amounts(BaseModel):
    cents: Cents
    wire: MoneyStr
    text: DecimalMoney


def test_the_model_types_read_cents_and_decimal_strings() -> None:
    m = _Amounts(cents="12.34", wire=MAX_CENTS, text="-999999999999999.99")
    assert (m.cents, m.wire, m.text) == (1234, MAX_CENTS, -MAX_CENTS)
    assert m.model_dump(mode="json") == {"cents": 1234, "wire": "999999999999999.99",
                                         "text": "-999999999999999.99"}
    assert _Amounts(cents=5, wire="0.05", text="0").model_dump() == {
        "cents": 5, "wire": "0.05", "text": "0.00"}


@pytest.mark.parametrize(("field", "value", "message"), [
    ("cents", "1.234", "amount: '1.234' has more than two decimal places"),
    ("cents", MAX_CENTS + 1, f"amount: {MAX_CENTS + 1} cents is out of range ({RANGE})"),
    ("wire", 1.5, "amount: 1.5 is a float"),
    ("wire", "1000000000000000", f"amount: '1000000000000000' is out of range ({RANGE})"),
    ("text", 250000, "250000: write money as a decimal string like '250000.00' (a bare number "
                     "could mean units or cents)"),
    ("text", 2.5, "2.5: write money as a decimal string like '250000.00'"),
    ("text", True, "amount: True is not money"),
    ("text", "-1000000000000000.00", "out of range"),
])
def test_the_model_types_refuse_bad_money_naming_the_field(field: str, value: object,
                                                           message: str) -> None:
    good = {"cents": 1, "wire": 1, "text": "1"}
    with pytest.raises(ValidationError) as info:
        _Amounts(**{**good, field: value})
    errors = info.value.errors()
    assert [e["loc"] for e in errors] == [(field,)]
    assert message in errors[0]["msg"], errors[0]["msg"]


def test_parse_cents_accepts_numpy_integers() -> None:
    import numpy as np

    assert parse_cents(np.int64(1250)) == 1250
    with pytest.raises(MoneyError, match="is a float"):
        parse_cents(np.float64(12.5))


# --- formatting ----------------------------------------------------------------------------


@pytest.mark.parametrize(("cents", "plain", "shown"), [
    (0, "0.00", "0.00"),
    (5, "0.05", "0.05"),
    (-5, "-0.05", "-0.05"),
    (100, "1.00", "1.00"),
    (-123456, "-1234.56", "-1,234.56"),
    (123456789, "1234567.89", "1,234,567.89"),
    (100000000, "1000000.00", "1,000,000.00"),
    (MAX_STRING_CENTS, "999999999999999.99", "999,999,999,999,999.99"),
])
def test_format_and_display(cents: int, plain: str, shown: str) -> None:
    assert format_cents(cents) == plain
    assert display_cents(cents) == shown


money = st.integers(min_value=-MAX_STRING_CENTS, max_value=MAX_STRING_CENTS)


@given(money)
def test_format_then_parse_round_trips(cents: int) -> None:
    assert parse_cents(format_cents(cents)) == cents


@given(money)
def test_display_then_parse_round_trips(cents: int) -> None:
    assert parse_cents(display_cents(cents)) == cents


@given(money)
def test_parse_of_the_decimal_agrees_with_decimal(cents: int) -> None:
    assert parse_cents(Decimal(cents) / 100) == cents


def test_amounts_beyond_fifteen_digits_are_refused_by_name() -> None:
    too_big = format_cents(MAX_STRING_CENTS + 1)
    with pytest.raises(MoneyError, match=r"'1000000000000000\.00' is out of range"):
        parse_cents(too_big)


# --- pct_of --------------------------------------------------------------------------------


@pytest.mark.parametrize(("cents", "bp", "expected"), [
    (10000, 825, 825),          # exact
    (12345, 825, 1018),         # 1018.4625 rounds down
    (1, 5000, 1),               # 0.5 rounds away from zero
    (-1, 5000, -1),
    (3, 5000, 2),               # 1.5
    (-3, 5000, -2),
    (5, 5000, 3),               # 2.5: half away from zero, not to even
    (-5, 5000, -3),
    (1, 4999, 0),               # 0.4999
    (-1, 4999, 0),
    (1, 5001, 1),
    (-1, 5001, -1),
    (10, 2500, 3),              # 2.5
    (-10, 2500, -3),
    (1, -5000, -1),             # a negative rate is symmetric too
    (-1, -5000, 1),
    (0, 825, 0),
    (123456, 0, 0),
    (199, 10000, 199),
])
def test_pct_of_rounds_half_away_from_zero(cents: int, bp: int, expected: int) -> None:
    assert pct_of(cents, bp) == expected


@given(st.integers(min_value=-10**15, max_value=10**15),
       st.integers(min_value=-100_000, max_value=100_000))
def test_pct_of_matches_decimal_half_up(cents: int, bp: int) -> None:
    # Decimal's ROUND_HALF_UP is half away from zero for negatives as well.
    exact = Decimal(cents) * Decimal(bp) / Decimal(10000)
    assert pct_of(cents, bp) == int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))


@given(st.integers(min_value=-10**12, max_value=10**12), st.integers(min_value=0, max_value=50_000))
def test_pct_of_is_odd(cents: int, bp: int) -> None:
    assert pct_of(-cents, bp) == -pct_of(cents, bp)
