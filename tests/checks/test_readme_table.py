"""checks/README.md's check-type table lists every registered check type, as registered."""

from __future__ import annotations

import re
from pathlib import Path

from checks.registry import REGISTRY, load_builtin

README = Path(__file__).resolve().parents[2] / "checks" / "README.md"
ROW = re.compile(r"^\| (\w+) \| `(\w+)` \| ([^|]*(?:\\\|[^|]*)*) \|")
COMMON = {"type", "name", "required", "daily"}


def readme_rows() -> dict[str, tuple[str, str]]:
    """The table's rows: type name -> (family, fields column); a type listed twice fails."""
    rows: dict[str, tuple[str, str]] = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m is None:
            continue
        family, name, fields = m.groups()
        assert name not in rows, f"checks/README.md lists {name!r} twice"
        rows[name] = (family, fields)
    return rows


def test_every_registered_type_is_in_the_table_with_its_family() -> None:
    """A check type registered by checks.registry's modules but absent from the table fails."""
    load_builtin()
    rows = readme_rows()
    missing = sorted(set(REGISTRY) - set(rows))
    assert not missing, f"checks/README.md's table lacks: {', '.join(missing)}"
    wrong = sorted(f"{n} (README {rows[n][0]}, registered {t.family})"
                   for n, t in REGISTRY.items() if rows[n][0] != t.family)
    assert not wrong, f"wrong family in checks/README.md: {'; '.join(wrong)}"


def test_no_row_names_an_unregistered_type() -> None:
    """A row of a type no module registers (renamed or removed) fails."""
    load_builtin()
    extra = sorted(set(readme_rows()) - set(REGISTRY))
    assert not extra, f"checks/README.md lists unregistered types: {', '.join(extra)}"


def test_required_fields_are_named() -> None:
    """Every required field of a type's spec model appears in its row's fields column."""
    load_builtin()
    rows = readme_rows()
    unnamed = []
    for name, t in REGISTRY.items():
        words = set(re.findall(r"\w+", rows[name][1]))
        for field, info in t.model.model_fields.items():
            if field not in COMMON and info.is_required() and field not in words:
                unnamed.append(f"{name}.{field}")
    assert not unnamed, f"required fields not in checks/README.md: {', '.join(sorted(unnamed))}"
