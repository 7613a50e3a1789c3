"""Replica groupings and retrieval modes (seed 001, 13.2-13.4): tables 13.1-13.3 through
ir.replica_grouping(), the validity rules, and the host shapes and per-replica values of
listing 13.1's variables in a session."""
import numpy as np
import pytest

import plexus
from plexus import ops

R16 = 16


def _table(grouping):
    return [grouping.members(g) for g in range(grouping.num_groups)]


def test_table_13_1_group_size_4_stride_1():
    g = plexus.Ir(replication=R16).replica_grouping(group_size=4)
    assert (g.replication_factor, g.group_size, g.stride, g.num_groups) == (16, 4, 1, 4)
    assert _table(g) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    assert g.assignment() == [r // 4 for r in range(16)]


def test_table_13_2_group_size_4_stride_4():
    g = plexus.Ir(replication=R16).replica_grouping(group_size=4, stride=4)
    assert (g.group_size, g.stride, g.num_groups) == (4, 4, 4)
    assert _table(g) == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]
    assert g.assignment() == [r % 4 for r in range(16)]


def test_table_13_3_group_size_1():
    g = plexus.Ir(replication=R16).replica_grouping(group_size=1)
    assert (g.group_size, g.num_groups) == (1, 16)
    assert _table(g) == [[r] for r in range(16)]
    assert [g.group(r) for r in range(16)] == list(range(16))


def test_members_and_group_agree_for_every_valid_grouping_of_16():
    ir = plexus.Ir(replication=R16)
    for stride in (1, 2, 4, 8, 16):
        for group_size in (1, 2, 4, 8, 16):
            if R16 % (stride * group_size):
                continue
            g = ir.replica_grouping(group_size=group_size, stride=stride)
            table = _table(g)
            assert sorted(r for row in table for r in row) == list(range(16))
            for index, row in enumerate(table):
                assert row == sorted(row) and len(row) == group_size
                assert all(b - a == stride for a, b in zip(row, row[1:]))
                assert all(g.group(r) == index for r in row)
                # The rule the C header states: group = (r // (s*g)) * s + r % s.
                assert all(index == (r // (stride * group_size)) * stride + r % stride for r in row)


def test_transpose_swaps_tables_13_1_and_13_2():
    ir = plexus.Ir(replication=R16)
    t = ir.replica_grouping(group_size=4).transpose()
    assert (t.group_size, t.stride) == (4, 4)
    assert _table(t) == _table(ir.replica_grouping(group_size=4, stride=4))
    back = t.transpose()
    assert _table(back) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    # Table 13.3's transpose is one group of all replicas, and the other way round.
    one = ir.replica_grouping(group_size=1).transpose()
    assert (one.num_groups, one.members(0)) == (1, list(range(16)))
    all_ = ir.replica_grouping().transpose()
    assert (all_.num_groups, _table(all_)) == (16, [[r] for r in range(16)])
    # Each transposed group takes one member of every original group.
    g = ir.replica_grouping(group_size=8)
    for row in _table(g.transpose()):
        assert sorted(g.group(r) for r in row) == list(range(g.num_groups))


def test_group_size_defaults_to_r_over_stride():
    ir = plexus.Ir(replication=8)
    assert (ir.replica_grouping().group_size, ir.replica_grouping().num_groups) == (8, 1)
    g = ir.replica_grouping(stride=4)
    assert (g.group_size, g.num_groups, _table(g)) == (2, 4, [[0, 4], [1, 5], [2, 6], [3, 7]])
    assert repr(g) == "ReplicaGrouping(num_replicas=8, stride=4, group_size=2)"


def test_positional_arguments_are_popxls_stride_then_group_size():
    # PopXL: Ir.replica_grouping(stride=1, group_size=None). The other order once built
    # other groups silently: (1, 2) is stride 1, groups of 2 (pairs of neighbours).
    ir = plexus.Ir(replication=8)
    assert _table(ir.replica_grouping(1, 2)) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert _table(ir.replica_grouping(2, 4)) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert _table(ir.replica_grouping(4)) == [[0, 4], [1, 5], [2, 6], [3, 7]]


@pytest.mark.parametrize("group_size,stride", [(3, 1), (5, 1), (32, 1), (4, 3), (-1, 1), (1, 0), (2, -2), (0, 3)])
def test_invalid_groupings_raise_invalid_grouping(group_size, stride):
    with pytest.raises(plexus.InvalidGrouping, match="replication factor 16") as info:
        plexus.Ir(replication=R16).replica_grouping(group_size=group_size, stride=stride)
    assert info.value.status == 7


def test_a_transpose_that_does_not_exist_and_out_of_range_queries():
    ir = plexus.Ir(replication=R16)
    with pytest.raises(plexus.InvalidGrouping, match="transpose"):
        ir.replica_grouping(group_size=2, stride=2).transpose()
    g = ir.replica_grouping(group_size=4)
    for bad in (4, -1):
        with pytest.raises(plexus.InvalidArgument, match=f"group {bad} is outside"):
            g.members(bad)
    for bad in (16, -1):
        with pytest.raises(plexus.InvalidArgument, match=f"replica {bad} is outside"):
            g.group(bad)


def test_a_grouping_of_another_replication_factor_is_refused():
    ir = plexus.Ir(replication=2)
    other = plexus.Ir(replication=8).replica_grouping(group_size=1)
    with ir.main_graph, pytest.raises(plexus.InvalidArgument, match="8 replicas.*replication factor 2"):
        plexus.variable(np.zeros((8, 3), np.float32), replica_grouping=other)


BASE = [3, 3]
R8 = 8

# Listing 13.1's variables: (name, grouping keywords, retrieval mode, read shape).
LISTING_13_1 = [
    ("tensor_1", None, "one_per_group", [3, 3]),
    ("tensor_2", dict(group_size=1), "one_per_group", [8, 3, 3]),
    ("tensor_3", dict(group_size=2), "one_per_group", [4, 3, 3]),
    ("tensor_3b", dict(stride=4), "one_per_group", [4, 3, 3]),
    ("tensor_4", dict(group_size=2), "all_replicas", [8, 3, 3]),
    ("tensor_5", dict(group_size=2, stride=2), "all_replicas", [8, 3, 3]),
    ("tensor_6", None, "all_replicas", [8, 3, 3]),
]


def _listing_13_1():
    """The IR of listing 13.1 (R=8, base shape [3, 3]), each variable's groups holding
    distinct values (100 * variable + 10 * group + position), and a d2h stream of each so a
    run shows every replica's value."""
    ir = plexus.Ir(replication=R8)
    made = {}
    with ir.main_graph:
        for k, (name, grouping, mode, _) in enumerate(LISTING_13_1):
            rg = ir.replica_grouping(**grouping) if grouping is not None else None
            groups = rg.num_groups if rg is not None else 1
            data = (100 * k + 10 * np.arange(groups)[:, None, None] + np.arange(9).reshape(BASE)).astype(np.float32)
            if groups == 1:
                data = data[0]
            t = plexus.variable(data, name=name, replica_grouping=rg, retrieval_mode=mode)
            made[name] = (t, rg, data, plexus.d2h_stream(ops.add(t, 0.0), name=f"{name}_out"))
    return ir, made


def _per_group(rg, data):
    """[num_groups] + BASE for data given with or without its group dim."""
    return data if rg is not None and rg.num_groups > 1 else data[None]


def test_listing_13_1_retrieval_shapes_and_values():
    ir, made = _listing_13_1()
    with plexus.Session(ir) as session:
        outputs = session.run()
        for name, _, mode, shape in LISTING_13_1:
            t, rg, data, stream = made[name]
            value = session.get_tensor_data(t)
            assert list(value.shape) == shape, name
            group_of = rg.group if rg is not None else (lambda r: 0)
            groups = _per_group(rg, data)
            if mode == "one_per_group":
                np.testing.assert_array_equal(value, data)
            else:
                np.testing.assert_array_equal(value, np.stack([groups[group_of(r)] for r in range(R8)]))
            # On the devices, replica r holds its group's value.
            out = outputs[stream]
            assert out.shape == (R8, 3, 3)
            for r in range(R8):
                np.testing.assert_array_equal(out[r], groups[group_of(r)], err_msg=f"{name} replica {r}")


def test_values_written_per_group_read_back_per_replica():
    ir, made = _listing_13_1()
    with plexus.Session(ir) as session:
        t3, rg3, _, out3 = made["tensor_3"]            # group_size 2: groups {0,1} {2,3} {4,5} {6,7}
        t3b, rg3b, _, out3b = made["tensor_3b"]        # stride 4: groups {0,4} {1,5} {2,6} {3,7}
        t4, _, _, out4 = made["tensor_4"]              # group_size 2, all_replicas
        new3 = np.arange(4 * 9, dtype=np.float32).reshape(4, 3, 3) * -1
        new3b = np.arange(4 * 9, dtype=np.float32).reshape(4, 3, 3) + 0.5
        session.write_variable_data(t3, new3)
        session.write_variable_data(t3b, new3b)
        np.testing.assert_array_equal(session.get_tensor_data(t3), new3)
        np.testing.assert_array_equal(session.get_tensor_data(t3b), new3b)
        # all_replicas: written per replica, each replica keeps its own row.
        per_replica = np.arange(R8 * 9, dtype=np.float32).reshape(R8, 3, 3)
        session.write_variable_data(t4, per_replica)
        np.testing.assert_array_equal(session.get_tensor_data(t4), per_replica)
        out = session.run()
        for r in range(R8):
            np.testing.assert_array_equal(out[out3][r], new3[r // 2])
            np.testing.assert_array_equal(out[out3b][r], new3b[r % 4])
            np.testing.assert_array_equal(out[out4][r], per_replica[r])
        with pytest.raises(plexus.ShapeMismatch, match="tensor_3.*\\[4, 3, 3\\].*\\[8, 3, 3\\]"):
            session.write_variable_data(t3, per_replica)


def test_a_grouped_variable_needs_its_group_dim():
    ir = plexus.Ir(replication=R8)
    with ir.main_graph, pytest.raises(plexus.ShapeMismatch, match="4 groups.*\\[4\\] \\+ shape.*\\[3, 3\\]"):
        plexus.variable(np.zeros(BASE, np.float32), replica_grouping=ir.replica_grouping(group_size=2))


def test_listing_13_2_remote_variable_with_a_grouping():
    """Seed 001 listing 13.2: two replicas, each its own group; v = remote_load; v += 1;
    remote_store, in sequence."""
    ir = plexus.Ir(replication=2)
    num_groups = 2
    v_h = np.arange(0, num_groups * 32).reshape((num_groups, 32))
    rg = ir.replica_grouping(group_size=ir.replication_factor // num_groups)
    with ir.main_graph, plexus.in_sequence():
        remote_buffer = plexus.remote_buffer((32,), plexus.int32)
        remote_v = plexus.remote_variable(v_h, remote_buffer, replica_grouping=rg)
        v = ops.remote_load(remote_buffer, 0)
        v += 1
        ops.remote_store(remote_buffer, 0, v)
    assert (remote_v.dtype, remote_v.shape) == (plexus.int32, (32,))
    with plexus.Session(ir) as session:
        np.testing.assert_array_equal(session.get_tensor_data(remote_v), v_h)
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(remote_v), v_h + 1)
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(remote_v), v_h + 2)
        storage = session.variable_storage(remote_v)
        assert (storage["remote_bytes"], storage["device_bytes"]) == (32 * 4, 0)
