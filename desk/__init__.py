"""desk: desk tasks (one request, a workspace, checks on the outputs) run as one-date scenarios.

A task folder (``desk/tasks/<id>/``: ``task.yaml``, ``workspace/``, ``reference/``,
``solution/solve``, ``README.md``) loads (``desk.tasks.load_task``) into a
``LoadedScenario`` of kind ``desk`` with one turn on the task's business date, run by the
same engine, adapters and verdicts as a process scenario; a task may start from books
the engine generated up to that date. ``desk.generators`` make tasks' files from the
engine with a seed. See ``desk/README.md`` for the format.

May import: erp, sim, counterparties, checks, scenarios (never runs).
"""
