"""One run per family: read, apply the method, verify, measure, write.

``run(settings)`` dispatches on the settings' type to the family's run
function; each family's settings model and run function live in the module
of this package named for the family. The command line only maps its flags
to a settings model, calls :func:`run` and prints.
"""

from __future__ import annotations

from anonlab.runs.common import RunResult

__all__ = ["RunResult"]
