"""What an agent touches: the memory tools, lifecycle hooks (auto-recall, auto-capture), the
system-prompt sections, the pre-compaction flush, session capture.

``memwell.agent`` was one module; its names now live in :mod:`memwell.agent.lifecycle` (served
from here, with a DeprecationWarning, for one release).
"""

from memwell.util.moved_paths import moved_attributes

__getattr__ = moved_attributes(__name__, "memwell.agent.lifecycle")
