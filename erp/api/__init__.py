"""The ERP API room: the books over HTTP for one agent turn, and the ``erp`` client.

``server.py`` builds the FastAPI app (``create_app``) and serves it (``ApiServer``);
``tokens.py`` holds the turn's bearer tokens; ``routers/`` has one module per
resource; ``wire.py`` and ``params.py`` the shapes and parameters they share.
``client.py`` is the agents' ``erp`` command: one standard-library file that imports
nothing of ours, so that it runs alone in any container with ``python3``.

This package's ``__init__`` imports nothing, so that ``python -m erp.api.client`` and
the ``erp`` console script start without loading FastAPI.
"""
