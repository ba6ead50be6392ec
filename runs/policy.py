"""A scenario's policy table: every rule its prompts, guide or policy state, with the checks
that enforce it and the mutation operators that break it.

The table is ``policy.yaml`` in the scenario's (or desk task's) folder::

    rules:
      - id: 1
        rule: Apply a receipt to the paying customer's invoices.
        source: policy/cash-application-policy.md#1
        checks: [receivables-match-customers]
        mutants: [same_party_doc, other_party_doc]

and the folder's ``README.md`` holds the table :func:`policy_table` makes of it, between
``<!-- policy table -->`` and ``<!-- end policy table -->``. :func:`check_policy` (``erpsim
validate NAME --policy``) finds, per rule: no check, a check the scenario does not have,
no operator or an unknown one, and, over the mutation runs given, no mutant of its
operators that one of its checks caught; and a README table that is not the generated one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runs.policy_table import PolicyTable, Rule, load_policy
from runs.validate import CLASSES, MutantOutcome
from scenarios.loader import LoadedScenario

BEGIN = "<!-- policy table -->"
END = "<!-- end policy table -->"


@dataclass
class RuleFinding:
    """What checking one rule found."""

    rule: Rule
    caught: int = 0
    problems: list[str] = field(default_factory=list)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def policy_table(table: PolicyTable) -> str:
    """The README's markdown table of the rules (what ``--policy`` compares with)."""
    lines = [BEGIN, "| # | rule | source | checks | mutant classes (operators) |",
             "| --- | --- | --- | --- | --- |"]
    for r in table.rules:
        classes = sorted({CLASSES.get(m, "?") for m in r.mutants})
        ops = ", ".join(f"`{m}`" for m in r.mutants)
        lines.append(f"| {r.id} | {_cell(r.rule)} | {_cell(r.source)} | "
                     f"{', '.join(f'`{x}`' for x in r.checks)} | "
                     f"{', '.join(classes)} ({ops}) |")
    lines.append(END)
    return "\n".join(lines)


def readme_table(folder: Path) -> str | None:
    """The policy table in the folder's README, markers included (None: none there)."""
    readme = folder / "README.md"
    if not readme.is_file():
        return None
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        return None
    return text[text.index(BEGIN):text.index(END) + len(END)]


def write_readme_table(folder: Path, table: PolicyTable) -> None:
    """Put the generated table into the folder's README (replacing the one there)."""
    readme = folder / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    new = policy_table(table)
    old = readme_table(folder)
    if old is not None:
        text = text.replace(old, new)
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + "## Policy\n\n" + new + "\n"
    readme.write_text(text, encoding="utf-8")


def check_policy(loaded: LoadedScenario, outcomes: Sequence[MutantOutcome],
                 reasons: Mapping[str, str] | None = None) -> list[RuleFinding]:
    """Each rule's findings; a README table that is not the generated one is a problem of
    every rule (:class:`BadInput` when there is no policy table at all). ``reasons``: an
    output operator with no candidate -> why (quoted when its rule has no caught mutant)."""
    folder = loaded.base_dir
    table = load_policy(folder)
    names = {spec.label(i) for i, spec in enumerate(loaded.checks)}
    readme = readme_table(folder)
    stale = readme != policy_table(table)
    out = []
    for r in table.rules:
        f = RuleFinding(r)
        if not r.checks:
            f.problems.append("no check")
        unknown = [x for x in r.checks if x not in names]
        if unknown:
            f.problems.append(f"no such check: {', '.join(unknown)}")
        if not r.mutants:
            f.problems.append("no mutant operator")
        bad_ops = [m for m in r.mutants if m not in CLASSES]
        if bad_ops:
            f.problems.append(f"no such operator: {', '.join(bad_ops)}")
        mine = [o for o in outcomes if o.mutation.op in r.mutants]
        f.caught = sum(1 for o in mine if not o.equivalent and o.caught
                       and any(x == c or x.startswith(c + "/")  # a custom's own results
                               for x in o.failed for c in r.checks))
        if r.mutants and not f.caught:
            counted = sum(1 for o in mine if not o.equivalent)
            why = [f"{m}: {reasons[m]}" for m in r.mutants if reasons and m in reasons]
            f.problems.append(f"no mutant of {', '.join(r.mutants)} caught by its checks "
                              f"({len(mine)} drawn, {counted} counted"
                              + (f"; not drawn: {'; '.join(why)}" if why else "") + ")")
        if stale:
            f.problems.append("README.md's policy table is not the one policy.yaml gives"
                              if readme is not None else "README.md has no policy table")
        out.append(f)
    return out
