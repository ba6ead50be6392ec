"""runs: attempts, agents and adapters, campaigns, results, metrics and the erpsim CLI.

The only package that composes the others; it may import all of them.

``runs.campaign_frame(label, results_dir=..., scorer=..., per="attempts"|"checks")``
returns a campaign as a pandas DataFrame (:func:`runs.campaigns.export.campaign_frame`;
imported on first use, so ``import runs`` stays light).
"""

from typing import Any


def __getattr__(name: str) -> Any:
    """``runs.campaign_frame``, imported when first asked for."""
    if name == "campaign_frame":
        from runs.campaigns.export import campaign_frame

        return campaign_frame
    raise AttributeError(f"module 'runs' has no attribute {name!r}")
