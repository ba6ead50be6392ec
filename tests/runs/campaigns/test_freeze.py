"""``erpsim freeze`` and ``sweep --frozen``: a scorer pre-registered before the runs."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.campaigns.freeze import sealed_seeds
from runs.cli import main
from scenarios.loader import find_scenario


def _scenario_copy(tmp: Path) -> Path:
    """cash-application in a folder of its own (the tests edit it)."""
    src = find_scenario("cash-application").parent
    dst = tmp / "cash-application"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst / "scenario.yaml"


def _cli(*args: str, cwd: Path) -> tuple[int, str]:
    """Run erpsim in ``cwd`` (freezes/ and results/ are relative to it)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        res = CliRunner().invoke(main, list(args))
    finally:
        os.chdir(old)
    return res.exit_code, res.output


def test_freeze_then_sweep_records_the_manifest_everywhere(tmp_path: Path) -> None:
    y = _scenario_copy(tmp_path)
    code, out = _cli("freeze", "pilot", str(y), "--seeds", "1-2", cwd=tmp_path)
    assert code == 0, out
    manifest = json.loads((tmp_path / "freezes" / "pilot.json").read_text())
    assert manifest["seeds"] == {"rule": "listed", "seeds": [1, 2]}
    assert manifest["targets"][0]["checks"] and manifest["targets"][0]["folder_files"]
    assert f"manifest_sha256: {manifest['manifest_sha256']}" in out
    code, out = _cli("sweep", str(y), "--systems", "reference,null", "--label", "pre",
                     "--frozen", "freezes/pilot.json", "--quiet", cwd=tmp_path)
    assert code == 0, out
    folder = tmp_path / "results" / "pre"
    campaign = json.loads((folder / "campaign.json").read_text())
    assert campaign["matrix"]["seeds"] == [1, 2]
    assert campaign["preregistration"]["manifest_sha256"] == manifest["manifest_sha256"]
    verdicts = list(folder.glob("attempts/*/*/seed-*/rep-*/verdict.json"))
    assert len(verdicts) == 4
    for v in verdicts:
        assert json.loads(v.read_text())["preregistration"]["manifest_sha256"] == \
            manifest["manifest_sha256"]
    code, out = _cli("report", "pre", cwd=tmp_path)
    assert code == 0, out
    assert f"pre-registered scorer {manifest['manifest_sha256']}" in out.replace("\n", "")
    # a rescoring with the same definitions is still the pre-registered scorer; one with
    # other definitions is retrospective
    code, out = _cli("rescore", "pre", "--scorer", "current", cwd=tmp_path)
    assert code == 0, out
    code, out = _cli("report", "pre", "--scorer", "current", cwd=tmp_path)
    assert code == 0, out
    assert "pre-registered scorer" in out.replace("\n", "")


def test_a_campaign_without_a_manifest_is_reported_as_retrospective(tmp_path: Path) -> None:
    y = _scenario_copy(tmp_path)
    code, out = _cli("sweep", str(y), "--seeds", "1", "--systems", "null", "--label", "retro",
                     "--quiet", cwd=tmp_path)
    assert code == 0, out
    code, out = _cli("report", "retro", cwd=tmp_path)
    assert "retrospective scorer" in out.replace("\n", "")


def test_a_changed_bound_file_refuses_the_sweep_and_creates_no_label(tmp_path: Path) -> None:
    y = _scenario_copy(tmp_path)
    assert _cli("freeze", "pilot", str(y), "--seeds", "1", cwd=tmp_path)[0] == 0
    y.write_text(y.read_text().replace("title:", "title: (edited)", 1))
    code, out = _cli("sweep", str(y), "--systems", "null", "--label", "x", "--frozen",
                     "freezes/pilot.json", "--quiet", cwd=tmp_path)
    assert code == 1
    assert "scenario.yaml differs since the scorer was frozen" in out
    assert not (tmp_path / "results" / "x").exists()


def test_a_changed_check_definition_is_refused(tmp_path: Path) -> None:
    y = _scenario_copy(tmp_path)
    assert _cli("freeze", "pilot", str(y), "--seeds", "1", cwd=tmp_path)[0] == 0
    text = y.read_text()
    assert "older_than_days: 2" in text
    y.write_text(text.replace("older_than_days: 2", "older_than_days: 5"))
    code, out = _cli("sweep", str(y), "--systems", "null", "--label", "x", "--frozen",
                     "freezes/pilot.json", "--quiet", cwd=tmp_path)
    assert code == 1 and "since the scorer was frozen" in out


def test_an_edited_manifest_other_seeds_and_other_scenarios_are_refused(tmp_path: Path) -> None:
    y = _scenario_copy(tmp_path)
    assert _cli("freeze", "pilot", str(y), "--seeds", "1", cwd=tmp_path)[0] == 0
    m = tmp_path / "freezes" / "pilot.json"
    code, out = _cli("sweep", str(y), "--seeds", "2", "--systems", "null", "--label", "x",
                     "--frozen", str(m), "--quiet", cwd=tmp_path)
    assert code == 2 and "binds other seeds" in out
    code, out = _cli("sweep", "procure-to-pay", "--systems", "null", "--label", "x",
                     "--frozen", str(m), "--quiet", cwd=tmp_path)
    assert code == 1 and "binds cash-application; this sweep names procure-to-pay" in out
    data = json.loads(m.read_text())
    data["seeds"]["seeds"] = [1, 2]
    m.write_text(json.dumps(data))
    code, out = _cli("sweep", str(y), "--systems", "null", "--label", "x", "--frozen", str(m),
                     "--quiet", cwd=tmp_path)
    assert code == 1 and "changed after it was frozen" in out
    code, out = _cli("sweep", str(y), "--systems", "null", "--label", "x", "--frozen",
                     str(tmp_path / "nope.json"), "--quiet", cwd=tmp_path)
    assert code == 2 and "cannot read the manifest" in out
    assert not (tmp_path / "results").exists()


def test_sealed_seeds_need_the_salt_and_derive_from_it(tmp_path: Path) -> None:
    y = _scenario_copy(tmp_path)
    salt = tmp_path / "salt.txt"
    salt.write_text("a secret kept apart\n")
    code, out = _cli("freeze", "sealed", str(y), "--sealed-seeds", "2", "--salt-file",
                     str(salt), cwd=tmp_path)
    assert code == 0, out
    text = (tmp_path / "freezes" / "sealed.json").read_text()
    expected = sealed_seeds(b"a secret kept apart", 2)
    assert all(str(s) not in text for s in expected)  # the seeds are not revealed
    m = "freezes/sealed.json"
    code, out = _cli("sweep", str(y), "--systems", "null", "--label", "s", "--frozen", m,
                     "--quiet", cwd=tmp_path)
    assert code == 2 and "give --salt-file" in out
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("another salt")
    code, out = _cli("sweep", str(y), "--systems", "null", "--label", "s", "--frozen", m,
                     "--salt-file", str(wrong), "--quiet", cwd=tmp_path)
    assert code == 1 and "not the one" in out
    code, out = _cli("sweep", str(y), "--systems", "null", "--label", "s", "--frozen", m,
                     "--salt-file", str(salt), "--quiet", cwd=tmp_path)
    assert code == 0, out
    campaign = json.loads((tmp_path / "results" / "s" / "campaign.json").read_text())
    assert campaign["matrix"]["seeds"] == sorted(expected)


@pytest.mark.parametrize(("args", "message"), [
    (["freeze", "pilot", "cash-application"], "give the campaign's seeds"),
    (["freeze", "pilot", "cash-application", "--sealed-seeds", "3"], "needs --salt-file"),
    (["freeze", "pilot", "cash-application", "--seeds", "0-2", "--sealed-seeds", "3"],
     "--seeds 0-2 and --sealed-seeds 3: give one"),
    (["freeze", "bad name", "cash-application", "--seeds", "1"], "expected letters"),
])
def test_freeze_refuses_bad_options(tmp_path: Path, args: list[str], message: str) -> None:
    code, out = _cli(*args, cwd=tmp_path)
    assert code == 2 and message in out
    assert not (tmp_path / "freezes").exists()


def test_a_manifest_is_never_overwritten(tmp_path: Path) -> None:
    y = _scenario_copy(tmp_path)
    assert _cli("freeze", "pilot", str(y), "--seeds", "1", cwd=tmp_path)[0] == 0
    before = (tmp_path / "freezes" / "pilot.json").read_bytes()
    code, out = _cli("freeze", "pilot", str(y), "--seeds", "2", cwd=tmp_path)
    assert code == 2 and "never overwritten" in out
    assert (tmp_path / "freezes" / "pilot.json").read_bytes() == before
