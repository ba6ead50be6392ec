"""The one mapping from errors to exit codes, and the exception tree it relies on."""

from __future__ import annotations

import inspect
import os
import signal
import time

import pytest

import runs.errors as errors_mod
from erp.errors import IntegrityError, StoreError
from runs.cli.common import exit_code, interruptible
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


# --- interruptions ------------------------------------------------------------------------


class _Finalizer:
    """Its finalizer sends this process SIGINT: the handler's KeyboardInterrupt is raised
    inside ``__del__``, where Python prints it ("Exception ignored in") and goes on."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs between two of these bytecodes
            pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # expected
def test_an_interrupt_swallowed_in_a_finalizer_still_stops_the_block(
        capsys: pytest.CaptureFixture[str]) -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    steps = 0
    with pytest.raises(SystemExit) as info, interruptible("the thing did not finish") as it:
        _Finalizer()  # dropped at once: the interrupt is raised and swallowed in __del__
        assert it.requested
        for steps in range(1, 4):  # noqa: B007  a loop's steps, each checking
            it.check()
    assert (info.value.code, steps) == (130, 1)
    assert "interrupted: the thing did not finish" in capsys.readouterr().err
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_sigterm_interrupts_the_block_and_an_ignored_sigint_stays_ignored() -> None:
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(SystemExit) as info, interruptible("x") as it:
            os.kill(os.getpid(), signal.SIGINT)  # ignored, as a background job's is
            time.sleep(0.05)
            assert not it.requested
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        assert info.value.code == 130 and it.requested
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_without_at_once_a_signal_only_asks_and_the_block_stops_at_its_next_check() -> None:
    with pytest.raises(SystemExit) as info, interruptible("x", at_once=False) as it:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler has run: nothing was raised where the step was
        assert it.requested
        it.check()
        raise AssertionError("check() did not raise")
    assert info.value.code == 130
