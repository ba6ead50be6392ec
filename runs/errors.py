"""Every exception ``runs`` raises on purpose, in one tree.

An agent's mistakes are never exceptions: a rejected command, a failed check, a timed-out
or crashed turn are data in the attempt's record. These are the harness's and the user's
faults, grouped by what the ``erpsim`` command line answers (the one mapping from errors
to exit codes is :data:`runs.cli.common.EXIT_CODES`)::

    RunsError
    ├── BadInput                    exit 2: what was given names nothing usable
    │   ├── AttemptError            an attempt that cannot be run (its folder, agent, prompt)
    │   ├── GradingError            an attempt folder that cannot be graded (no summary, store)
    │   ├── SystemsError            a system name or a systems file (also a ValueError)
    │   ├── CampaignError           a campaign that cannot be planned, started or resumed
    │   │   ├── LabelExists         the label's folder exists (and no --resume)
    │   │   ├── MatrixChanged       --resume with a matrix other than the recorded one
    │   │   └── PreflightFailed     a sweep's store, engine, image, adapter or model
    │   │                           endpoint does not answer (before the label exists)
    │   └── ResultsError            a results ledger that cannot be opened or written
    │       └── DuplicateAttempt    a second row for one attempt key
    ├── Refused                     exit 1: the data are there but do not allow the request
    │   ├── IncompleteMatrix        a campaign matrix with cells missing, doubled or extra
    │   ├── UnpairedSystems         two systems not run on the same units and repetitions
    │   └── ValidationAborted       a mutant validation whose reference run measures nothing
    └── InfrastructureError         exit 3: the environment cannot run a turn (internal to
        │                           runs.execution: a TurnOutcome.infrastructure_error)
        └── AttemptAborted          an attempt stopped at a turn that could not run

The classes keep the built-in base they had before the tree (``RuntimeError`` or
``ValueError``), so a caller that catches those still catches them.
"""

from __future__ import annotations


class RunsError(Exception):
    """Base of every exception ``runs`` raises on purpose."""


class BadInput(RunsError):
    """Bad input: an unknown label, system, scorer or folder (exit 2)."""


class AttemptError(BadInput, RuntimeError):
    """The attempt could not be run (a harness fault, not an agent's mistake)."""


class GradingError(BadInput, RuntimeError):
    """The attempt folder cannot be graded (missing store or summary): a harness fault."""


class SystemsError(BadInput, ValueError):
    """A system name or systems file that cannot be used (the message says where)."""


class CampaignError(BadInput, RuntimeError):
    """A campaign that cannot be planned, started or resumed (exit 2, one line)."""


class LabelExists(CampaignError):
    """The label's folder exists: a campaign is never overwritten."""


class MatrixChanged(CampaignError):
    """``--resume`` with a matrix that is not the one recorded in ``campaign.json``."""


class PreflightFailed(CampaignError):
    """What a sweep needs does not answer: the store URL, the docker engine or image, an
    adapter, a model endpoint (each problem names the setting); nothing was created."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("the sweep cannot start (nothing was created):\n  "
                         + "\n  ".join(problems))
        self.problems = list(problems)

    def __reduce__(self) -> tuple[object, ...]:
        return (PreflightFailed, (self.problems,))


class ResultsError(BadInput, RuntimeError):
    """The results ledger cannot be opened or written as asked."""


class DuplicateAttempt(ResultsError):
    """A second row for an attempt key that already has one."""


class Refused(RunsError):
    """The data are there but do not support the request (exit 1)."""


class IncompleteMatrix(Refused):
    """An operation that needs the complete matrix was asked of an incomplete one."""


class UnpairedSystems(Refused, ValueError):
    """Two systems were not run on the same units and repetitions: no paired comparison."""


class ValidationAborted(Refused, RuntimeError):
    """A mutant validation that cannot measure anything (the reference is not accepted,
    or replaying its commands does not reproduce its log)."""


class InfrastructureError(RunsError):
    """A harness or environment fault found while preparing or running a turn.

    Internal to :mod:`runs.execution.turn`: :func:`runs.execution.turn.run_turn` turns it into
    ``TurnOutcome.infrastructure_error``.
    """


class AttemptAborted(InfrastructureError):
    """An attempt stopped at a turn the harness could not run (the adapter could not
    start, the docker engine or the model endpoint failed): nothing about the agent.

    ``turn`` is the turn's number, ``cause`` the turn's infrastructure error and
    ``error_file`` the attempt's ``error.txt``, which says the same with the log paths.
    """

    def __init__(self, message: str, *, turn: int, cause: str,
                 error_file: str | None = None) -> None:
        super().__init__(message)
        self.turn = turn
        self.cause = cause
        self.error_file = error_file

    def __reduce__(self) -> tuple[object, ...]:
        return (_aborted, (str(self), self.turn, self.cause, self.error_file))


def _aborted(message: str, turn: int, cause: str, error_file: str | None) -> AttemptAborted:
    return AttemptAborted(message, turn=turn, cause=cause, error_file=error_file)
