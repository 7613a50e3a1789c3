#include "core/runtime/program.h"

#include <algorithm>
#include <numeric>

namespace plexus::runtime {

size_t d2h_position(const ir::Stream& stream) { return stream.after_ops; }

Program compile(const ir::Graph& graph) {
  Program program;
  program.schedule.resize(graph.num_ops());
  std::iota(program.schedule.begin(), program.schedule.end(), 0);

  // One buffer per storage root; its lifetime spans every alias's definition and uses.
  const size_t n = graph.num_tensors();
  std::vector<memory::BufferRequest> requests;
  std::vector<size_t> request_of_root(n, SIZE_MAX);
  std::vector<size_t> root_of(n);
  for (size_t t = 0; t < n; ++t) {
    const auto root = static_cast<size_t>(graph.storage_root(static_cast<ir::TensorId>(t)));
    root_of[t] = root;
    if (request_of_root[root] != SIZE_MAX) continue;
    const ir::TensorInfo& info = graph.tensor(static_cast<ir::TensorId>(root));
    if (info.kind == ir::TensorKind::RemoteVariable) continue;  // lives in a remote buffer, not the arena
    memory::BufferRequest req;
    req.bytes = info.bytes();
    req.persistent = info.kind == ir::TensorKind::Variable || info.kind == ir::TensorKind::Constant;
    req.first = info.kind == ir::TensorKind::OpOutput ? info.producer + 1 : 0;
    req.last = req.first;
    request_of_root[root] = requests.size();
    requests.push_back(req);
  }
  auto touch = [&](size_t tensor, int64_t position) {
    memory::BufferRequest& r = requests[request_of_root[root_of[tensor]]];
    r.first = std::min(r.first, position);
    r.last = std::max(r.last, position);
  };
  for (size_t k = 0; k < program.schedule.size(); ++k) {
    const ir::Op& op = graph.op(program.schedule[k]);
    for (ir::TensorId in : op.inputs) touch(static_cast<size_t>(in), static_cast<int64_t>(k) + 1);
    for (ir::TensorId out : op.outputs) touch(static_cast<size_t>(out), static_cast<int64_t>(k) + 1);
  }
  for (const ir::Stream& s : graph.streams()) {
    if (s.direction == ir::StreamDirection::DeviceToHost) {
      touch(static_cast<size_t>(s.tensor), static_cast<int64_t>(d2h_position(s)));
    }
  }
  std::vector<size_t> scratch_request(graph.num_ops(), SIZE_MAX);
  for (size_t k = 0; k < program.schedule.size(); ++k) {
    const ir::Op& op = graph.op(program.schedule[k]);
    if (op.scratch_bytes == 0) continue;
    scratch_request[program.schedule[k]] = requests.size();
    requests.push_back({op.scratch_bytes, static_cast<int64_t>(k) + 1, static_cast<int64_t>(k) + 1, false});
  }

  program.plan = memory::plan_memory(requests, static_cast<int64_t>(program.num_positions()));
  program.tensor_offset.resize(n);
  for (size_t t = 0; t < n; ++t) {
    const size_t request = request_of_root[root_of[t]];
    program.tensor_offset[t] = request == SIZE_MAX ? SIZE_MAX : program.plan.offsets[request];
  }
  program.scratch_offset.assign(graph.num_ops(), 0);
  for (size_t o = 0; o < graph.num_ops(); ++o) {
    if (scratch_request[o] != SIZE_MAX) program.scratch_offset[o] = program.plan.offsets[scratch_request[o]];
  }
  return program;
}

}  // namespace plexus::runtime
