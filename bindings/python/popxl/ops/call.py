"""popxl.ops.call: calls of graphs and their CallSiteInfo (plexus.ops.call)."""
from plexus.ops.call import call, call_with_info, repeat, repeat_with_info, CallSiteInfo  # noqa: F401

__all__ = ["call", "call_with_info", "repeat", "repeat_with_info", "CallSiteInfo"]
