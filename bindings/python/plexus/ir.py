"""The IR (PopXL popxl.Ir) and its graphs, replica groupings (seed 001, 13.2),
in_sequence scopes and blocks (seed 003's poptorch.Block)."""
import contextlib

from plexus import context, graph
from plexus.graph import Graph
from plexus._lib import ffi, lib, check


class ReplicaGrouping:
    """Replicas grouped by `group_size` and `stride` over `replication_factor` replicas
    (seed 001, 13.2; PopXL popxl.ReplicaGrouping). Replica r is in group
    (r // (stride * group_size)) * stride + r % stride. Immutable; made by
    Ir.replica_grouping(). Raises plexus.InvalidGrouping for an invalid grouping."""

    __slots__ = ("_c",)

    def __init__(self, replication_factor, group_size=None, stride=1):
        self._c = ffi.new("plx_replica_grouping*")
        check(lib.plx_replica_grouping_create(int(replication_factor), int(group_size or 0), int(stride), self._c))

    @classmethod
    def _of(cls, c_value):
        g = cls.__new__(cls)
        g._c = ffi.new("plx_replica_grouping*", c_value)
        return g

    @property
    def replication_factor(self):
        """R, the replicas the grouping parts up."""
        return self._c.replication_factor

    @property
    def group_size(self):
        """Replicas per group."""
        return self._c.group_size

    @property
    def stride(self):
        """Replica index difference between two members of a group."""
        return self._c.stride

    @property
    def num_groups(self):
        """R / group_size."""
        n = ffi.new("int64_t*")
        check(lib.plx_replica_grouping_get_num_groups(self._c, n))
        return n[0]

    def members(self, group):
        """The replicas of group `group`, ascending (a row of seed 001's tables 13.1-13.3)."""
        out = ffi.new("int64_t[]", self.group_size)
        count = ffi.new("size_t*")
        check(lib.plx_replica_grouping_get_members(self._c, int(group), out, self.group_size, count))
        return [out[i] for i in range(count[0])]

    def group(self, replica):
        """The group replica `replica` belongs to."""
        g = ffi.new("int64_t*")
        check(lib.plx_replica_grouping_get_group(self._c, int(replica), g))
        return g[0]

    def transpose(self):
        """The orthogonal grouping: each new group takes one member of every old group."""
        out = ffi.new("plx_replica_grouping*")
        check(lib.plx_replica_grouping_transpose(self._c, out))
        return ReplicaGrouping._of(out[0])

    def assignment(self):
        """The group of every replica, [replication_factor] ints (PopXL's .assignment)."""
        return [self.group(r) for r in range(self.replication_factor)]

    def __repr__(self):
        return (f"ReplicaGrouping(num_replicas={self.replication_factor}, stride={self.stride}, "
                f"group_size={self.group_size})")


class Ir:
    """An IR: tensors, ops and streams (PopXL popxl.Ir). `replication` is the replication
    factor R (seed 001, 13.1; settable until the first tensor is added). Owns its plx_ir,
    freed when the last Python reference (the Ir, its tensors, a Session) goes.
    Not thread-safe: build one Ir from one thread at a time."""

    def __init__(self, replication=1):
        out = ffi.new("plx_ir**")
        check(lib.plx_ir_create(out))
        self._ptr = ffi.gc(out[0], lib.plx_ir_destroy)
        self._names = {}
        self.variables = []        # every variable tensor, in creation order
        self.h2d_streams = []
        self.d2h_streams = []
        self.replication_factor = replication
        main = ffi.new("plx_graph*")
        check(lib.plx_ir_get_main_graph(self._ptr, main))
        self._main_graph_id = main[0]
        self.by_ref_inputs = set()  # ids of subgraph inputs every call passes by reference
        self.transfers = {}  # user stream -> [(runtime stream, transfer dims)] in program order (plexus.transfers)
        self.hidden = {"inputs": {}, "outputs": {}, "added": set()}  # transfers inside subgraphs (plexus.transfers)
        self.constants = {}  # tensor id -> the constant's data (host copy), for get_tensor_data
        self.variable_info = {}  # tensor id -> (ReplicaGrouping, retrieval mode) of each variable

    @property
    def replication_factor(self):
        """R: replicas of the graph (seed 001, 13.1). Set it before adding tensors."""
        r = ffi.new("int64_t*")
        check(lib.plx_ir_get_replication_factor(self._ptr, r))
        return r[0]

    @replication_factor.setter
    def replication_factor(self, value):
        """Sets R; InvalidArgument once the IR has tensors or for R < 1."""
        check(lib.plx_ir_set_replication_factor(self._ptr, int(value)))

    @property
    def main_graph(self):
        """The main graph (a plexus.Graph; `with ir.main_graph:` makes it current on this
        thread): where variables and streams live, and what a Session runs."""
        return Graph(self, self._main_graph_id, "main")  # made per use: a Graph keeps its Ir alive

    def create_empty_graph(self, name=None):
        """A new subgraph with no inputs, ops or outputs (PopXL Ir.create_empty_graph);
        `name` (default "graph") is made unique among the Ir's graphs."""
        name = self.unique_name(name or "graph")
        out = ffi.new("plx_graph*")
        check(lib.plx_ir_create_graph(self._ptr, name.encode(), out))
        return Graph(self, out[0], name)

    def create_graph(self, fn, *args, **kwargs):
        """A subgraph from Python callable `fn` or a plexus.Module (PopXL Ir.create_graph):
        the Tensors among args and kwargs become its inputs, fn's result its outputs
        (plexus.graph.create_graph gives the rules and errors)."""
        return graph.create_graph(self, fn, *args, **kwargs)

    def replica_grouping(self, stride=1, group_size=None):
        """A grouping of this IR's replicas, PopXL's argument order (stride first);
        group_size defaults to R // stride (PopXL's default)."""
        return ReplicaGrouping(self.replication_factor, group_size, stride)

    def unique_name(self, prefix):
        """`prefix`, then prefix_1, prefix_2, ... : names for tensors the user left unnamed."""
        n = self._names.get(prefix, 0)
        self._names[prefix] = n + 1
        return prefix if n == 0 else f"{prefix}_{n}"


@contextlib.contextmanager
def in_sequence(enabled=True):
    """Ops added inside run in the order they were added even without a data dependency
    (PopXL popxl.in_sequence; seed 001 listing 13.2)."""
    if not enabled:
        yield
        return
    ir = context.current_ir()
    check(lib.plx_ir_begin_sequence(ir._ptr))
    try:
        yield
    finally:
        check(lib.plx_ir_end_sequence(ir._ptr))


class Block:
    """A named block of ops on a device within a replica (seed 003's poptorch.Block and
    BeginBlock): `with plexus.Block("conv", device=0):`. device -1 (the default) leaves the
    placement to the Session's `stages`. Blocks are grouped into stages by
    Session(stages=[["b1", "b2"], ...]) or [Stage(...)]."""

    def __init__(self, name, device=-1):
        self.name, self.device = str(name), int(device)

    def __enter__(self):
        ir = context.current_ir()
        check(lib.plx_ir_begin_block(ir._ptr, self.name.encode(), self.device))
        self._ir = ir
        return self

    def __exit__(self, *exc):
        check(lib.plx_ir_end_block(self._ir._ptr))
        return False


class Stage:
    """A pipeline stage (seed 003's poptorch.Stage): blocks run on `device` of each replica
    (-1: the stage's index)."""

    def __init__(self, *blocks, device=-1):
        self.blocks, self.device = [b.name if isinstance(b, Block) else str(b) for b in blocks], int(device)
