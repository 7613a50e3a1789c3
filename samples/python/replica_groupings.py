#!/usr/bin/env python3
"""replica_groupings.py: seed 001 (PopXL user guide 13, "Replication") as runnable code
with the plexus package.

  13.2  replica groupings: tables 13.1-13.3, the groups of 16 replicas for group_size 4
        stride 1, group_size 4 stride 4, and group_size 1 (ReplicaGrouping.members).
  13.3  listing 13.1: variables with different groupings on 8 replicas, read back by a
        session in their retrieval mode (13.4): "one_per_group" gives [num_groups] +
        base_shape (the group dim left out for a single group), "all_replicas" gives
        [replication_factor] + base_shape. The seed's text of the listing breaks off at
        tensor_5; it is completed here from its comment (orthogonal groups, stride 2).
        The listing's np.ndarray(shape) (uninitialised memory) is replaced by values
        that tell the groups apart: group g's value is g * 100 + arange(9).
  13.3  listing 13.2: a remote variable with one group per replica, `v += 1` between
        remote_load and remote_store inside `with ir.main_graph, plexus.in_sequence():`,
        run once and read back.

    PYTHONPATH=build/python PLEXUS_PLUGIN_PATH=build/lib python3 samples/python/replica_groupings.py
"""
import sys

import numpy as np

import plexus
from plexus import dtypes, ops


def print_table(number, ir, group_size, stride):
    """Prints seed 001's table `number`: each group of ir.replica_grouping(group_size, stride)
    and its replicas."""
    grouping = ir.replica_grouping(group_size=group_size, stride=stride)
    print(f"Table 13.{number}: replication factor {ir.replication_factor}, group_size {grouping.group_size}, "
          f"stride {grouping.stride} ({grouping.num_groups} groups)")
    print("  Group | Replicas")
    for g in range(grouping.num_groups):
        print(f"  {g:5d} | {', '.join(str(r) for r in grouping.members(g))}")


def tables():
    """Tables 13.1-13.3 of seed 001 (13.2 Replica grouping) for 16 replicas."""
    ir = plexus.Ir(replication=16)
    print_table(1, ir, group_size=4, stride=1)
    print_table(2, ir, group_size=4, stride=4)
    print_table(3, ir, group_size=1, stride=1)


def group_values(num_groups, base_shape):
    """[num_groups] + base_shape float32 values, group g holding g * 100 + arange."""
    size = int(np.prod(base_shape))
    return np.stack([g * 100 + np.arange(size, dtype=np.float32).reshape(base_shape) for g in range(num_groups)])


def listing_13_1():
    """Listing 13.1: variables of several groupings on 8 replicas, read back in their
    retrieval modes (13.4). Returns {name: shape read back}."""
    replication_factor = 8
    ir = plexus.Ir(replication=replication_factor)

    with ir.main_graph:

        base_shape = [3, 3]

        # Create a tensor with default settings, that is: load same value to all replicas.
        tensor_1 = plexus.variable(group_values(1, base_shape)[0], name="tensor_1")

        # Create a tensor with one variable on each of the replicas:
        tensor_2 = plexus.variable(
            group_values(replication_factor, base_shape),
            replica_grouping=ir.replica_grouping(group_size=1),
            name="tensor_2",
        )

        # Create a tensor where two and two replicas are grouped together
        group_size = 2
        tensor_3 = plexus.variable(
            group_values(replication_factor // group_size, base_shape),
            replica_grouping=ir.replica_grouping(group_size=2),
            name="tensor_3",
        )

        # Create a tensor where tensors are grouped with an orthogonal replica.
        # (The listing names it tensor_3 again; tensor_3b keeps both readable.)
        tensor_3b = plexus.variable(
            group_values(ir.replica_grouping(stride=4).num_groups, base_shape),
            replica_grouping=ir.replica_grouping(stride=4),
            name="tensor_3b",
        )

        # Create a tensor which is grouped across sequential replicas (0 and 1, 2 and 3) and
        # return all the group's variables when requested. The returned array will be of shape
        # [replication_factor] + base_shape
        group_size = 2
        tensor_4 = plexus.variable(
            group_values(replication_factor // group_size, base_shape),
            replica_grouping=ir.replica_grouping(group_size=2),
            retrieval_mode="all_replicas",
            name="tensor_4",
        )

        # Create a tensor which is grouped across orthogonal replicas (0 and 2, 1 and 3)
        # and return all the group's variables when requested. The returned array will be of shape
        # [replication_factor] + base_shape
        stride = 2
        tensor_5 = plexus.variable(
            group_values(stride, base_shape),
            replica_grouping=ir.replica_grouping(stride=2),
            retrieval_mode="all_replicas",
            name="tensor_5",
        )

    tensors = [("tensor_1", tensor_1, None, "one_per_group"),
               ("tensor_2", tensor_2, ir.replica_grouping(group_size=1), "one_per_group"),
               ("tensor_3", tensor_3, ir.replica_grouping(group_size=2), "one_per_group"),
               ("tensor_3b", tensor_3b, ir.replica_grouping(stride=4), "one_per_group"),
               ("tensor_4", tensor_4, ir.replica_grouping(group_size=2), "all_replicas"),
               ("tensor_5", tensor_5, ir.replica_grouping(stride=2), "all_replicas")]
    shapes = {}
    print(f"Listing 13.1: {replication_factor} replicas, base_shape {base_shape}; each read back by a session "
          "(13.4 retrieval modes; a row's value: the group it came from)")
    with plexus.Session(ir) as session:
        for name, tensor, grouping, mode in tensors:
            data = session.get_tensor_data(tensor)
            shapes[name] = list(data.shape)
            where = (f"group_size {grouping.group_size}, stride {grouping.stride}, {grouping.num_groups} groups"
                     if grouping else "one group of all replicas")
            rows = data.reshape(-1, 9)[:, 0] // 100 if data.ndim > 2 else [int(data.flat[0]) // 100]
            print(f"  {name}: {where}, {mode}: read back {list(data.shape)}; rows from groups "
                  f"{[int(r) for r in rows]}")
    return shapes


def listing_13_2():
    """Listing 13.2: a remote variable with a replica grouping of one replica per group,
    incremented in place between remote_load and remote_store. Returns the values read back."""
    ir = plexus.Ir(replication=2)

    num_groups = 2
    v_h = np.arange(0, num_groups * 32).reshape((num_groups, 32))

    rg = ir.replica_grouping(group_size=ir.replication_factor // num_groups)

    with ir.main_graph, plexus.in_sequence():
        remote_buffer = plexus.remote_buffer((32,), dtypes.int32)
        remote_v = plexus.remote_variable(v_h, remote_buffer, replica_grouping=rg)

        v = ops.remote_load(remote_buffer, 0)

        v += 1

        ops.remote_store(remote_buffer, 0, v)

    with plexus.Session(ir) as session:
        before = session.get_tensor_data(remote_v)
        session.run()
        after = session.get_tensor_data(remote_v)
    print(f"Listing 13.2: 2 replicas, {rg.num_groups} groups (group_size {rg.group_size}); remote_v read back "
          f"{list(after.shape)}")
    for g in range(num_groups):
        print(f"  group {g} (replica {rg.members(g)[0]}): before {before[g, :4].tolist()} ... "
              f"{before[g, -1]}, after v += 1: {after[g, :4].tolist()} ... {after[g, -1]}")
    assert np.array_equal(after, v_h + 1), "listing 13.2: remote_v is not v_h + 1 after one run"
    return after


def main():
    """Prints tables 13.1-13.3 and runs listings 13.1 and 13.2."""
    tables()
    print()
    listing_13_1()
    print()
    listing_13_2()
    return 0


if __name__ == "__main__":
    sys.exit(main())
