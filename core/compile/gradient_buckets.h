// Gradient buckets (PyTorch DDP's gradient bucketing, Li et al., "PyTorch Distributed:
// Experiences on Accelerating Data Parallel Training", VLDB 2020, section 3.2.3; issue 19):
// the data-parallel gradient all-reduces of a training step fused into few calls of about
// `bucket_bytes` each, so that a step pays the collective's fixed cost (the rendezvous of
// the replicas, the plugin's call agreement) once per bucket rather than once per gradient.
//
// A gradient all-reduce is a replicated_all_reduce(_) of the update step whose input a
// backward op computed (the graph's own `all_reduce_(grad, "mean")` after autodiff, seed 000
// 17.2) and which is the first update op to use that tensor's storage: every member's input
// is ready when the update step starts, so the bucket runs at the position of its first
// member, and no op in between reads or writes a member's tensor.
// Members of one bucket share the stage, the dtype, the reduction, the replica grouping and
// whether they reduce in place, and are not replica-sharded. The rewrite makes each bucket
// one op, replicated_all_reduce_bucket(_) (core/ops/collective/collectives.cpp), at its first
// member's place, the other members removed; its kernel packs the inputs into one buffer,
// all-reduces it and unpacks the results, or, where the memory plan laid them out as one span
// (ops::KernelDef::span_inputs), all-reduces that span where it is: every element is reduced over the
// same replicas in the same order as alone, so the weights are the same bits as the
// unbucketed program's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace plexus::compile {

/// One fused all-reduce: its member ops, in the order their gradients are computed (the
/// order of the backward ops producing them), and the bytes of their inputs together.
struct GradientBucket {
  std::vector<ir::OpId> ops;
  size_t bytes = 0;
};

/// The buckets of `graph`'s gradient all-reduces (above), per stage as `op_stage` places the
/// ops: members are taken in the order their gradients are computed and a bucket is closed
/// once it holds `bucket_bytes` or more (DDP's rule: a gradient larger than the cap is a
/// bucket of its own). Buckets of one member are left out: that op runs as it is.
/// `bucket_bytes` 0: no buckets. Pure function of its arguments; never throws for a graph
/// that compiled.
std::vector<GradientBucket> plan_gradient_buckets(const ir::Graph& graph, const std::vector<int32_t>& op_stage,
                                                  size_t bucket_bytes);

/// The rewrite: each bucket plan_gradient_buckets finds becomes one
/// replicated_all_reduce_bucket(_) op reading the members' inputs and writing their outputs,
/// in the bucket's order, at its first member's place; `op_stage` loses the entries of the
/// ops removed. Returns the buckets made. Idempotent: a bucket op is no member.
size_t fuse_gradient_buckets(ir::Graph& graph, std::vector<int32_t>& op_stage, size_t bucket_bytes);

}  // namespace plexus::compile
