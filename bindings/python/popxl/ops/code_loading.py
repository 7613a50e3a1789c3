"""PopXL's code-loading op. On an IPU a graph's code can live in remote memory and be
loaded before a call; on Plexus a graph's kernels are bound when the session compiles, so
loading has no effect: the arguments are checked as PopXL checks them and nothing is
added."""
from plexus import context
from plexus.graph import Graph

CODE_LOCATIONS = ("executable", "compute_buffer", "io_buffer")


def remote_code_load(graph, destination):
    """PopXL ops.remote_code_load(graph, destination): no effect on Plexus (module doc).
    Raises TypeError (not a Graph), ValueError (the current graph loading its own code, or
    a destination that is not a code location) and NotImplementedError (a destination
    other than "executable", as PopXL)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"remote_code_load takes a Graph, got {graph!r}")
    if context.current_graph() == graph:
        raise ValueError(f"The remote_code_load op cannot load the code for the graph it resides in ({graph.name}).")
    if destination not in CODE_LOCATIONS:
        raise ValueError(f"remote_code_load: destination must be one of {CODE_LOCATIONS}, got {destination!r}")
    if destination != "executable":
        raise NotImplementedError(f"destination == '{destination}' for remote_code_load op, graph {graph.name} "
                                  "not supported.")
