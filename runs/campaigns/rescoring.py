"""Rescoring a campaign: every retained attempt graded again with a named version of the
checks (``current`` or a folder of ``<scenario-id>.yaml``), one content-hashed receipt per
graded attempt binding the new verdict to the outputs and the scorer manifest; nothing
else changes. An attempt whose books do not verify, or that cannot be read, is reported
and gets no receipt."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from runs.campaigns.reading import Campaign
from runs.errors import BadInput

# --- rescoring ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scorer:
    """A named version of the check definitions, for every scenario of a campaign.

    ``manifest_sha256`` is the sha256 of the canonical JSON of ``{scenario id: [check
    definitions]}`` over every scenario: the scorer's fingerprint in each receipt.
    """

    name: str
    source: str
    checks: dict[str, tuple[Any, ...]]
    manifest_sha256: str


def scorer_manifest(checks: Mapping[str, Sequence[Any]]) -> str:
    """sha256 of the canonical definitions of every scenario's checks (sorted by id)."""
    import orjson

    data = {sid: [spec.model_dump(mode="json") for spec in specs]
            for sid, specs in sorted(checks.items())}
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _targets(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """campaign.json's scenario entries by name (``{name, kind, source, sha256}``)."""
    m = data.get("matrix")
    items = m.get("scenarios", []) if isinstance(m, dict) else []
    return {str(t["name"]): t for t in items
            if isinstance(t, dict) and isinstance(t.get("name"), str)}


def _load_one(sid: str, target: dict[str, Any], scenario_dir: Path | None) -> Any:
    """The loaded scenario (or desk task) ``sid``, or ``None`` when found nowhere."""
    from scenarios.errors import ScenarioError
    from scenarios.loader import find_scenario, load_scenario

    kind = target.get("kind", "scenario")
    candidates: list[tuple[str, str | Path]] = []
    if scenario_dir is not None:
        candidates += [("scenario", scenario_dir / sid / "scenario.yaml"),
                       ("scenario", scenario_dir / f"{sid}.yaml"), ("desk", scenario_dir / sid)]
    if isinstance(target.get("source"), str):
        candidates.append((kind, target["source"]))
    candidates.append((kind, sid))
    for how, cand in candidates:
        if isinstance(cand, Path) and not cand.exists():
            continue
        try:
            if how == "desk":
                import desk.tasks

                loaded = desk.tasks.load_task(cand).loaded
            else:
                loaded = load_scenario(find_scenario(cand))
        except (ScenarioError, ImportError, ValueError, OSError):
            continue
        if loaded.scenario.id == sid:
            return loaded
    return None


def load_scenarios(ids: Sequence[str], *, campaign_data: dict[str, Any],
                   scenario_dir: Path | None) -> dict[str, Any]:
    """The loaded scenario (or desk task) of each id, looked up in order: ``scenario_dir``
    (``DIR/<id>/scenario.yaml``, ``DIR/<id>.yaml`` or a desk task folder ``DIR/<id>``),
    the source campaign.json records, the built-in library (or desk tasks) by name.
    :class:`BadInput` when one is found nowhere."""
    if scenario_dir is not None and not scenario_dir.is_dir():
        raise BadInput(f"--scenario-dir {scenario_dir}: not a folder (expected a folder "
                       "holding <scenario-id>/scenario.yaml or <scenario-id>.yaml)")
    targets = _targets(campaign_data)
    out = {sid: _load_one(sid, targets.get(sid, {}), scenario_dir) for sid in ids}
    missing = [sid for sid, loaded in out.items() if loaded is None]
    if missing:
        raise BadInput(f"scenario(s) {', '.join(missing)}: not found (looked in "
                       f"{'--scenario-dir, ' if scenario_dir else ''}the source campaign.json "
                       "records and the built-in library; expected --scenario-dir DIR "
                       "holding <scenario-id>/scenario.yaml)")
    return out


def changed_scenarios(loaded: dict[str, Any], campaign_data: dict[str, Any]) -> list[str]:
    """Scenarios whose files differ from those the campaign ran (recorded sha256)."""
    targets = _targets(campaign_data)
    return sorted(sid for sid, ls in loaded.items()
                  if targets.get(sid, {}).get("sha256") not in (None, ls.sha256))


def resolve_scorer(name: str, loaded: dict[str, Any]) -> Scorer:
    """The scorer ``name``: ``current`` (each scenario's checks as loaded now) or a folder
    holding ``<scenario-id>.yaml`` files, each with a ``checks:`` list."""
    from checks.registry import CheckSpecError, parse_checks
    from scenarios.loader import parse_yaml

    if name == "current":
        checks = {sid: tuple(ls.checks) for sid, ls in loaded.items()}
        return Scorer("current", "current scenario definitions", checks,
                      scorer_manifest(checks))
    folder = Path(name)
    if not folder.is_dir():
        raise BadInput(f"--scorer {name!r}: unknown scorer (expected 'current' or a folder "
                       "holding <scenario-id>.yaml files with a checks: list)")
    checks = {}
    for sid in loaded:
        path = folder / f"{sid}.yaml"
        if not path.is_file():
            raise BadInput(f"--scorer {name}: no {path} (expected one <scenario-id>.yaml "
                           f"with a checks: list for each scenario of the campaign: "
                           f"{', '.join(sorted(loaded))})")
        try:
            data = parse_yaml(path.read_text(encoding="utf-8"))
        except Exception as e:  # yaml errors, unreadable files
            raise BadInput(f"--scorer {name}: {path}: unreadable ({e})") from None
        if not isinstance(data, dict) or "checks" not in data:
            raise BadInput(f"--scorer {name}: {path}: expected a mapping with a checks: list")
        try:
            checks[sid] = tuple(parse_checks(data["checks"], where=f"{path.name}: checks"))
        except CheckSpecError as e:
            raise BadInput(f"--scorer {name}: {e}") from None
    return Scorer(folder.resolve().name, str(folder.resolve()), checks,
                  scorer_manifest(checks))


@dataclass(frozen=True)
class Rescored:
    """One attempt rescored: its receipt (``None``: not graded, nothing stored), whether the
    receipt was new, what no longer matches, and why it was not graded."""

    row: Any
    receipt: Any | None
    written: bool
    outputs_differ: bool
    """The evaluated outputs or final log hash differ from what the ledger recorded."""
    problem: str | None = None
    """Why the attempt was not graded (``None`` when it was)."""
    outcome: str = "graded"
    """``graded``; ``skipped`` (the row records no finished attempt: an infrastructure
    error); ``refused`` (its books do not verify: the log, the file, the read tables or the
    head); ``error`` (its folder or store cannot be read: a grader error)."""

    @property
    def new_status(self) -> str | None:
        """The new verdict's status (``None``: the attempt was not graded)."""
        if self.receipt is None:
            return None
        status = self.receipt.verdict.get("status")
        return None if status is None else str(status)


def rescore_attempt(campaign: Campaign, row: Any, loaded: Any, scorer: Scorer, *,
                    store_url: str | None = None) -> Any:
    """A receipt for ``row`` graded again with ``scorer`` (runs nothing, writes nothing).

    Grades the attempt folder's books, verified first (the chain, the file, the read
    tables against the log, and the log's head against the attempt's final hash and the
    ledger row's), and its final workspace, with the scorer's checks for its scenario.
    ``store_url`` replaces the PostgreSQL URL the attempt's summary records. Raises
    ``IntegrityError`` when the books do not verify and ``GradingError`` (or another
    ``ErpError``, ``OSError``) when the attempt cannot be read: no receipt then. The
    original ``verdict.json`` is only hashed.
    """
    from runs.campaigns.ledger import Receipt
    from runs.grading import VERDICT_FILE, grade_folder

    folder = campaign.attempt_dir(row)
    original = folder / VERDICT_FILE
    original_sha = (hashlib.sha256(original.read_bytes()).hexdigest()
                    if original.is_file() else None)
    specs = scorer.checks[row.scenario]
    verdict = grade_folder(folder, replace(loaded, checks=tuple(specs)), write=False,
                           store_url=store_url, expect_head=row.final_hash or None)
    return Receipt.create(tuple(row.key), scorer_name=scorer.name,
                          scorer_definitions_sha256=scorer.manifest_sha256,
                          verdict=verdict.to_json(), original_verdict_status=row.verdict_status,
                          original_verdict_sha256=original_sha, outputs=dict(verdict.outputs))


def rescore_campaign(campaign: Campaign, scorer: Scorer, loaded: dict[str, Any], *,
                     store_url: str | None = None,
                     progress: Callable[[int], None] | None = None) -> list[Rescored]:
    """Rescore every attempt of the campaign and store one receipt for each attempt graded
    (idempotent). An attempt that is not graded (:attr:`Rescored.outcome` ``skipped``,
    ``refused`` or ``error``) gets no receipt: a receipt is always a verdict."""
    from erp.errors import ErpError, IntegrityError
    from runs.campaigns.ledger import ResultsLedger
    from runs.errors import GradingError

    out: list[Rescored] = []
    with ResultsLedger.open(campaign.ledger_path) as ledger:
        for n, row in enumerate(campaign.rows, 1):
            if row.verdict_status is None and row.status == "infrastructure_error":
                out.append(Rescored(row, None, False, False,
                                    f"no finished attempt ({row.status}: {row.error})",
                                    "skipped"))
            else:
                try:
                    receipt = rescore_attempt(campaign, row, loaded[row.scenario], scorer,
                                              store_url=store_url)
                except IntegrityError as e:
                    out.append(Rescored(row, None, False, False, str(e), "refused"))
                except (GradingError, ErpError, OSError) as e:
                    out.append(Rescored(row, None, False, False,
                                        f"{type(e).__name__}: {e}", "error"))
                else:
                    written = ledger.write_receipt(receipt)
                    differ = (dict(receipt.outputs) != dict(row.outputs or {})
                              or receipt.verdict.get("final_log_hash") != row.final_hash)
                    out.append(Rescored(row, receipt, written, differ))
            if progress is not None:
                progress(n)
    return out
