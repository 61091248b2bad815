"""The default programs: where the generated API appends ops (``main``) and where parameters'
initializers go (``startup``), outside any ``program_guard`` and inside one.

Plain state, set by ``program`` (which creates the first two programs and owns
``program_guard``) and read by blocks and the generated API, which sit below or beside it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: programs build on this module
    from .program import Program

main: Program
startup: Program
