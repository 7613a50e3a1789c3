#include "core/compile/gradient_buckets.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

namespace plexus::compile {

namespace {

using ir::OpId;
using ir::Phase;
using ir::TensorId;

// What members of one bucket share: stage, dtype, reduction, group_size, stride, the op.
using BucketKey = std::tuple<int32_t, ir::DType, std::string, int64_t, int64_t, std::string>;

bool is_all_reduce(const ir::Op& op) {
  return op.schema->name == "replicated_all_reduce" || op.schema->name == "replicated_all_reduce_";
}

// The first update op that reads or writes each storage root (-1: none).
std::vector<int64_t> first_update_use(const ir::Graph& graph) {
  std::vector<int64_t> first(graph.num_tensors(), -1);
  for (size_t o = graph.num_ops(); o-- > 0;) {
    const ir::Op& op = graph.op(static_cast<OpId>(o));
    if (op.phase != Phase::Update) continue;
    for (const auto* list : {&op.inputs, &op.outputs}) {
      for (TensorId t : *list) first[static_cast<size_t>(graph.storage_root(t))] = static_cast<int64_t>(o);
    }
  }
  return first;
}

// A gradient all-reduce (gradient_buckets.h): the update step's all-reduce of what a
// backward op computed, not replica-sharded, and the first update op to use that storage
// (so that running it earlier, at its bucket's place, changes what no other op reads).
// Returns the backward op computing its input, or -1.
int64_t gradient_producer(const ir::Graph& graph, OpId id, const std::vector<int64_t>& first_use) {
  const ir::Op& op = graph.op(id);
  if (op.phase != Phase::Update || !is_all_reduce(op)) return -1;
  const ir::TensorInfo& x = graph.tensor(op.inputs[0]);
  if (x.kind != ir::TensorKind::OpOutput || graph.op(x.producer).phase != Phase::Backward || x.sharding) return -1;
  if (first_use[static_cast<size_t>(graph.storage_root(op.inputs[0]))] != static_cast<int64_t>(id)) return -1;
  return static_cast<int64_t>(x.producer);
}

}  // namespace

std::vector<GradientBucket> plan_gradient_buckets(const ir::Graph& graph, const std::vector<int32_t>& op_stage,
                                                  size_t bucket_bytes) {
  if (bucket_bytes == 0) return {};
  const std::vector<int64_t> first_use = first_update_use(graph);
  std::vector<std::pair<int64_t, OpId>> ready;  // (producing backward op, all-reduce)
  for (size_t o = 0; o < graph.num_ops(); ++o) {
    const int64_t p = gradient_producer(graph, static_cast<OpId>(o), first_use);
    if (p >= 0) ready.emplace_back(p, static_cast<OpId>(o));
  }
  std::stable_sort(ready.begin(), ready.end());
  std::vector<GradientBucket> buckets;
  std::map<BucketKey, size_t> open;  // key -> index of its bucket still taking members
  for (const auto& [unused, id] : ready) {
    const ir::Op& op = graph.op(id);
    const ir::TensorInfo& x = graph.tensor(op.inputs[0]);
    const BucketKey key{op_stage[static_cast<size_t>(id)], x.dtype, op.attrs.get_string("op"),
                        op.attrs.get_int("group_size"), op.attrs.get_int("stride"), op.schema->name};
    auto [it, fresh] = open.emplace(key, buckets.size());
    if (fresh) buckets.emplace_back();
    GradientBucket& b = buckets[it->second];
    b.ops.push_back(id);
    b.bytes += x.bytes();
    if (b.bytes >= bucket_bytes) open.erase(it);
  }
  std::erase_if(buckets, [](const GradientBucket& b) { return b.ops.size() < 2; });
  return buckets;
}

namespace {

/// Rewrites bucket b into one op; returns the ops removed, ascending.
std::vector<OpId> fuse_bucket(ir::Graph& graph, const GradientBucket& b) {
  std::vector<TensorId> inputs, outputs;
  for (OpId o : b.ops) {
    inputs.push_back(graph.op(o).inputs[0]);
    outputs.push_back(graph.op(o).outputs[0]);
  }
  const ir::Op& first = graph.op(b.ops.front());
  const bool in_place = first.schema->name.ends_with('_');
  std::vector<OpId> ops = b.ops;
  std::sort(ops.begin(), ops.end());
  graph.fuse_ops(ops, in_place ? "replicated_all_reduce_bucket_" : "replicated_all_reduce_bucket", inputs,
                 first.attrs, outputs);
  return {ops.begin() + 1, ops.end()};
}

}  // namespace

size_t fuse_gradient_buckets(ir::Graph& graph, std::vector<int32_t>& op_stage, size_t bucket_bytes) {
  std::vector<GradientBucket> buckets = plan_gradient_buckets(graph, op_stage, bucket_bytes);
  for (size_t b = 0; b < buckets.size(); ++b) {
    const std::vector<OpId> removed = fuse_bucket(graph, buckets[b]);
    for (auto it = removed.rbegin(); it != removed.rend(); ++it) op_stage.erase(op_stage.begin() + *it);
    for (size_t later = b + 1; later < buckets.size(); ++later) {  // ids after a removed op shift down
      for (OpId& o : buckets[later].ops) o -= static_cast<OpId>(std::lower_bound(removed.begin(), removed.end(), o) - removed.begin());
    }
  }
  return buckets.size();
}

}  // namespace plexus::compile
