"""The one mapping from errors to exit codes, and the exception tree it relies on."""

from __future__ import annotations

import inspect

import pytest

import runs.errors as errors_mod
from erp.errors import IntegrityError, StoreError
from runs.cli.common import exit_code
from runs.errors import (
    AttemptAborted,
    AttemptError,
    BadInput,
    CampaignError,
    DuplicateAttempt,
    GradingError,
    IncompleteMatrix,
    InfrastructureError,
    LabelExists,
    MatrixChanged,
    PreflightFailed,
    ResultsError,
    RunsError,
    SystemsError,
    UnpairedSystems,
    ValidationAborted,
)
from scenarios.errors import ScenarioError


@pytest.mark.parametrize(("error", "code"), [
    (IntegrityError("x"), 1), (StoreError("x"), 2), (ScenarioError("x"), 2),
    (AttemptError("x"), 2), (GradingError("x"), 2), (SystemsError("x"), 2),
    (CampaignError("x"), 2), (LabelExists("x"), 2), (MatrixChanged("x"), 2),
    (ResultsError("x"), 2), (DuplicateAttempt("x"), 2), (BadInput("x"), 2),
    (IncompleteMatrix("x"), 1), (UnpairedSystems("x"), 1), (ValidationAborted("x"), 1),
    (InfrastructureError("x"), 3), (PreflightFailed(["x"]), 2),
    (AttemptAborted("x", turn=1, cause="x"), 3),
])
def test_each_error_has_the_readme_exit_code(error: BaseException, code: int) -> None:
    assert exit_code(error) == code


def test_the_tree_in_the_docstring_names_every_class() -> None:
    classes = [n for n, c in inspect.getmembers(errors_mod, inspect.isclass)
               if issubclass(c, RunsError) and c.__module__ == errors_mod.__name__]
    doc = errors_mod.__doc__ or ""
    assert len(classes) == 17
    assert all(f" {name} " in doc or doc.count(name) for name in classes)


def test_errors_keep_their_builtin_bases() -> None:
    assert issubclass(SystemsError, ValueError) and issubclass(UnpairedSystems, ValueError)
    assert issubclass(GradingError, RuntimeError) and issubclass(AttemptError, RuntimeError)
