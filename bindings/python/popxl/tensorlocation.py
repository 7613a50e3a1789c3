"""Where PopXL keeps tensors (PopXL popxl.tensorlocation): TensorStorage, ReplicatedTensorSharding,
TensorLocation, TileSet and ExecutionContext, with PopXL's member names and constructors.

On Plexus these are descriptions with no effect of their own: a variable's storage follows
from the function that made it (popxl.remote_variable for off-chip, the replica_sharded_*
functions for sharding), every op runs on compute tiles, and the Session picks the execution
context of each block."""
import enum


class TensorStorage(enum.Enum):
    """On-chip tile memory or off-chip Streaming Memory (PopXL TensorStorage). Members
    OnChip ("OnChip") and OffChip ("OffChip")."""
    OnChip = "OnChip"
    OffChip = "OffChip"


class ReplicatedTensorSharding(enum.Enum):
    """Whether a tensor is sharded over replicas (PopXL ReplicatedTensorSharding). Members
    On ("On") and Off ("Off")."""
    On = "On"
    Off = "Off"


class TileSet(enum.Enum):
    """The tiles an op runs on (PopXL TileSet, PopART's values): Compute = 0, IO = 1,
    Undefined = 2, N = 3 (the count). Plexus runs every op on compute tiles."""
    Compute = 0
    IO = 1
    Undefined = 2
    N = 3


class ExecutionContext(enum.Enum):
    """The program fragment an op belongs to (PopXL ExecutionContext, PopART's order):
    Normal, AccumulateOuterFragment, WeightsFromHostFragment, WeightsToHostFragment,
    OptimizerFromHostFragment, Subgraph. A description only on Plexus."""
    Normal = 0
    AccumulateOuterFragment = 1
    WeightsFromHostFragment = 2
    WeightsToHostFragment = 3
    OptimizerFromHostFragment = 4
    Subgraph = 5


class TensorLocation:
    """The memory characteristics of tensors (PopXL TensorLocation): `storage` (a
    TensorStorage, default OnChip) and `replicated_tensor_sharding` (a
    ReplicatedTensorSharding, default Off), read-only properties. TypeError names the argument
    that is not a member of its enum. Equal when both fields are."""

    def __init__(self, storage=TensorStorage.OnChip, replicated_tensor_sharding=ReplicatedTensorSharding.Off):
        if not isinstance(storage, TensorStorage):
            raise TypeError(f"TensorLocation: storage must be a TensorStorage, got {storage!r}")
        if not isinstance(replicated_tensor_sharding, ReplicatedTensorSharding):
            raise TypeError("TensorLocation: replicated_tensor_sharding must be a ReplicatedTensorSharding, "
                            f"got {replicated_tensor_sharding!r}")
        self._storage = storage
        self._replicated_tensor_sharding = replicated_tensor_sharding

    @property
    def storage(self):
        """The TensorStorage given to the constructor."""
        return self._storage

    @property
    def replicated_tensor_sharding(self):
        """The ReplicatedTensorSharding given to the constructor."""
        return self._replicated_tensor_sharding

    def __eq__(self, other):
        if not isinstance(other, TensorLocation):
            return NotImplemented
        return (self._storage, self._replicated_tensor_sharding) == (other._storage, other._replicated_tensor_sharding)

    def __hash__(self):
        return hash((self._storage, self._replicated_tensor_sharding))

    def __repr__(self):
        return f"TensorLocation({self._storage}, {self._replicated_tensor_sharding})"
