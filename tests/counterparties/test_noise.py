"""Document noise: deterministic from the seed, nothing at zero, each mess as documented."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from counterparties.noise import (
    CLEAN,
    REFERENCE_STYLES,
    WIRE_DESCRIPTIONS,
    DocumentNoise,
    ReferenceStyle,
    bank_payer_name,
    reference_style,
    remittance_format,
    wire_description,
)
from sim.rng import Streams


def test_no_noise_changes_nothing() -> None:
    s = Streams("x/1")
    assert not CLEAN.active
    assert reference_style(s, "C0001", 0.0) is None
    assert bank_payer_name(s, "Garcia, Lee and Kim", 0.0) == "Garcia, Lee and Kim"
    assert wire_description(s, "Garcia, Lee and Kim", 0.0, "WIRE IN") == "WIRE IN"
    assert remittance_format(s, "advice:PAY-1", CLEAN) == "csv"


def test_the_same_seed_gives_the_same_mess_and_another_seed_another() -> None:
    def mess(seed: str) -> list[object]:
        s = Streams(seed)
        noise = DocumentNoise(pdf_remittances=0.4, text_remittances=0.3)
        return [[reference_style(s, f"C{n:04d}", 0.7) for n in range(30)],
                [bank_payer_name(s, f"Customer {n} and Sons, Inc.", 0.6) for n in range(30)],
                [remittance_format(s, f"advice:PAY-{n}", noise) for n in range(30)]]
    assert mess("cash/1") == mess("cash/1")
    assert mess("cash/1") != mess("cash/2")


def test_shares_are_shares() -> None:
    s = Streams("cash/3")
    styled = [reference_style(s, f"C{n:04d}", 0.5) for n in range(400)]
    assert 150 < sum(x is not None for x in styled) < 250
    formats = [remittance_format(s, f"doc:{n}",
                                 DocumentNoise(pdf_remittances=0.5, text_remittances=0.3))
               for n in range(400)]
    assert 150 < formats.count("pdf") < 250 and 70 < formats.count("text") < 170
    wires = {wire_description(s, f"payer {n}", 1.0, "WIRE IN") for n in range(200)}
    assert wires <= set(WIRE_DESCRIPTIONS) and len(wires) > 3


@pytest.mark.parametrize(("template", "zeros", "written"), [
    ("INV {n}", False, "INV 47498"), ("Inv#{n}", True, "Inv#047498"),
    ("/INV/{n}", False, "/INV/47498"), ("Payment for invoice {n}", False,
                                         "Payment for invoice 47498"),
])
def test_reference_styles_write_the_invoice_number(template: str, zeros: bool,
                                                   written: str) -> None:
    assert template in REFERENCE_STYLES
    assert ReferenceStyle(template, zeros).write("INV-047498") == written


def test_a_bank_upper_cases_and_cuts_names_once_per_payer() -> None:
    s = Streams("cash/4")
    names = {bank_payer_name(s, "Mccoy, Goodman and Higgins", 1.0) for _ in range(3)}
    assert len(names) == 1
    (name,) = names
    assert name == name.upper() and len(name) <= 22 and "," not in name
    assert "MCCOY GOODMAN AND HIGGINS".startswith(name)


def test_formats_cannot_take_more_than_all_documents() -> None:
    with pytest.raises(ValidationError, match="at most 1"):
        DocumentNoise(pdf_remittances=0.8, text_remittances=0.3)
    with pytest.raises(ValidationError):
        DocumentNoise(references=-0.1)
    with pytest.raises(ValidationError):
        DocumentNoise(unknown=0.5)  # type: ignore[call-arg]


def test_a_cut_never_spells_another_customers_name() -> None:
    others = ["Jefferson Group", "Jefferson Group (C0089)", "Acme Supply Co"]
    cuts = set()
    for seed in range(40):
        s = Streams(seed)
        cut = bank_payer_name(s, "Jefferson Group (C0089)", 1.0, others)
        assert cut.casefold() != "jefferson group", (seed, cut)
        assert "JEFFERSON GROUP C0089".startswith(cut)
        cuts.add(cut)
        # without the others, the same draw may cut to the other customer's name
        alone = bank_payer_name(Streams(seed), "Jefferson Group (C0089)", 1.0)
        assert alone == cut or alone == "JEFFERSON GROUP"
    assert "JEFFERSON GROUP C" in cuts or "JEFFERSON GROUP C0" in cuts
    # the payer's own name is never counted as another's
    assert bank_payer_name(Streams(1), "Jefferson Group", 1.0, others).startswith("JEFFERSON")
