"""What a session hands back: the report page (``page``, drawn by ``svg`` from the summary data
that ``data`` defines and reads) and the reproducers of corpus entries (``reproducer``)."""

from .page import write_report
from .reproducer import reproducer, tool_versions

__all__ = ["reproducer", "tool_versions", "write_report"]
