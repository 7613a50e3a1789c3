// The memory plan of a program's actions (memory_planner.h).
#include "core/compile/memory_planner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <vector>

#include "core/ops/kernel_def.h"

namespace plexus::compile {

namespace {

using ir::Phase;
using ir::TensorId;

// Plans every stage's slot region and every device's arena; one object per compile.
class MemoryPlanner {
 public:
  MemoryPlanner(const ir::Graph& graph, const CompileOptions& options, Program& program)
      : g_(graph), pl_(program.placement), o_(options), p_(program) {
    p_.op_scratch.clear();
    for (const ir::Op& op : graph.ops()) p_.op_scratch.push_back(ops::scratch_bytes(graph, op));
  }

  void run() {
    for (int32_t s = 0; s < pl_.num_stages; ++s) plan_stage(s);
    for (ir::OpId o : p_.span_ops) p_.op_scratch[static_cast<size_t>(o)] = 0;  // their inputs are one span
    plan_devices();
  }

 private:
  TensorId root(TensorId t) const { return p_.root_of[static_cast<size_t>(t)]; }
  const ir::TensorInfo& info(TensorId t) const { return g_.tensor(t); }
  int32_t stage_of(ir::OpId o) const { return pl_.op_stage[static_cast<size_t>(o)]; }

  // The stage's actions in the order they run, [forward | backward | update].
  static std::vector<Action> stage_timeline(const StagePlan& plan) {
    std::vector<Action> timeline;
    for (const std::vector<Action>& phase : plan.actions) timeline.insert(timeline.end(), phase.begin(), phase.end());
    return timeline;
  }

  // Streams the timeline loads and then reads in place: root tensor -> stream.
  std::map<TensorId, int32_t> in_place_streams(const std::vector<Action>& timeline) const {
    std::map<TensorId, int32_t> in_place_stream;
    for (const Action& a : timeline) {
      if (a.kind == ActionKind::LoadStream && o_.in_place.count(root(g_.stream(a.index).tensor))) {
        in_place_stream.emplace(root(g_.stream(a.index).tensor), a.index);
      }
    }
    return in_place_stream;
  }

  // Calls touch(t, phase) for every tensor t that action `a` of step x reads or writes, with
  // the phase its buffer is planned in (an accumulation's is the backward pass); returns the
  // scratch bytes the action needs.
  template <class Touch>
  size_t touch_action(const Action& a, Phase x, Touch touch) const {
    switch (a.kind) {
      case ActionKind::LoadStream:
      case ActionKind::StoreStream:
        touch(g_.stream(a.index).tensor, x);
        return 0;
      case ActionKind::Receive:
      case ActionKind::Send:
        touch(p_.channels[static_cast<size_t>(a.index)].root, x);
        return 0;
      case ActionKind::Accumulate:
        touch(a.index, Phase::Backward);
        return 0;
      case ActionKind::LoadOffloaded:
      case ActionKind::StoreOffloaded:
        touch(a.index, x);
        return 0;
      case ActionKind::RunOp:
        for (const auto* list : {&g_.op(a.index).inputs, &g_.op(a.index).outputs}) {
          for (TensorId t : *list) touch(t, x);
        }
        return p_.op_scratch[static_cast<size_t>(a.index)];
    }
    return 0;
  }

  // The step (phase) of timeline position k.
  static Phase phase_at(const StagePlan& plan, size_t k) {
    return k >= plan.first_position[2] ? Phase::Update : k >= plan.first_position[1] ? Phase::Backward : Phase::Forward;
  }

  // The last timeline position that touches each root.
  std::map<TensorId, int64_t> last_touches(const std::vector<Action>& timeline, const StagePlan& plan) const {
    std::map<TensorId, int64_t> last;
    for (size_t k = 0; k < timeline.size(); ++k) {
      touch_action(timeline[k], phase_at(plan, k), [&](TensorId t, Phase) { last[root(t)] = static_cast<int64_t>(k); });
    }
    return last;
  }

  // The buffer requests of one stage's slot region, built touch by touch along its timeline.
  struct SlotRequests {
    StagePlan& plan;
    std::map<TensorId, int32_t> in_place_stream;  ///< streams read in place: root -> stream
    std::map<TensorId, int64_t> last;             ///< root -> the last position touching it
    std::vector<memory::BufferRequest> requests;
    std::map<TensorId, size_t> request_of;        ///< root -> its request
    std::map<TensorId, size_t> offset_in_request; ///< roots placed inside a joined request (a span)
    std::map<TensorId, int64_t> first_touch;      ///< root -> the first position touching it
  };

  // Whether root r, touched in step x, lives in the slot region: not a variable or constant,
  // a stream read in place, or an accumulator read by the update; offloaded tensors do.
  bool in_slot(const SlotRequests& sr, TensorId r, Phase x) const {
    return p_.offloaded.count(r) || (!is_persistent(info(r)) && !sr.in_place_stream.count(r) &&
                                     !(x == Phase::Update && sr.plan.accumulator.count(r)));
  }

  // Extends the request of t's root to `position` (a new request on its first touch).
  void touch(SlotRequests& sr, TensorId t, int64_t position, Phase x) const {
    const TensorId r = root(t);
    if (auto it = sr.in_place_stream.find(r); it != sr.in_place_stream.end()) {
      sr.plan.in_place_last_use[it->second] = static_cast<size_t>(position);
    }
    if (!in_slot(sr, r, x)) return;
    sr.first_touch.emplace(r, position);
    auto [it, fresh] = sr.request_of.emplace(r, sr.requests.size());
    if (fresh) sr.requests.push_back({info(r).bytes(), position, position, false});
    memory::BufferRequest& req = sr.requests[it->second];
    req.first = std::min(req.first, position);
    req.last = std::max(req.last, position);
  }

  // ONNX Runtime's MayInplace: output 0 of op `o`, run at `position` in step x, takes the
  // request of the input its kernel may overwrite (ops::KernelDef::may_inplace) when `o`
  // is that input's last toucher and both are slot tensors of the same size, neither
  // offloaded; the output must be fresh (its own root, no request yet).
  void share_dying_input(SlotRequests& sr, ir::OpId o, int64_t position, Phase x) const {
    const ir::Op& op = g_.op(o);
    const int may_inplace = ops::may_inplace(g_, op);
    if (may_inplace < 0) return;
    const TensorId in = root(op.inputs[static_cast<size_t>(may_inplace)]), out = op.outputs[0];
    const auto it = sr.request_of.find(in);
    if (it == sr.request_of.end() || sr.last.at(in) != position || root(out) != out || sr.request_of.count(out) ||
        !in_slot(sr, out, x) || p_.offloaded.count(in) || p_.offloaded.count(out) ||
        info(in).bytes() != info(out).bytes()) {
      return;
    }
    sr.request_of.emplace(out, it->second);
  }

  // Whether roots `roots` (distinct) each own a request of their own in the slot region, and
  // none is an accumulator or offloaded.
  bool own_requests(const SlotRequests& sr, const std::vector<TensorId>& roots) const {
    if (std::set<TensorId>(roots.begin(), roots.end()).size() != roots.size()) return false;
    return std::all_of(roots.begin(), roots.end(), [&](TensorId r) {
      const auto it = sr.request_of.find(r);
      return it != sr.request_of.end() && !sr.plan.accumulator.count(r) && !p_.offloaded.count(r) &&
             std::count_if(sr.request_of.begin(), sr.request_of.end(),
                           [&](const auto& other) { return other.second == it->second; }) == 1;
    });
  }

  // Replaces the requests of `roots` with one request holding them one after the other,
  // each at an aligned offset, live from the first one's first touch to the last one's last.
  static void join_requests(SlotRequests& sr, const std::vector<TensorId>& roots) {
    memory::BufferRequest joined{0, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), false};
    for (TensorId r : roots) {
      memory::BufferRequest& own = sr.requests[sr.request_of.at(r)];
      joined.first = std::min(joined.first, own.first);
      joined.last = std::max(joined.last, own.last);
      sr.offset_in_request[r] = joined.bytes;
      joined.bytes += memory::align_up(own.bytes);
      own.bytes = 0;  // nothing left to place
    }
    for (TensorId r : roots) sr.request_of[r] = sr.requests.size();
    sr.requests.push_back(joined);
  }

  // The inputs and outputs of stage s's ops with ops::KernelDef::span_inputs (PyTorch DDP's
  // gradient_as_bucket_view) laid out as spans, recorded in Program::span_ops: taken when
  // they own their requests, each is its root's whole buffer, and each output is its input's
  // storage or none is.
  void lay_out_spans(SlotRequests& sr, int32_t s) {
    for (size_t o = 0; o < g_.num_ops(); ++o) {
      const ir::Op& op = g_.op(static_cast<ir::OpId>(o));
      if (!ops::kernel_def(op).span_inputs || stage_of(static_cast<ir::OpId>(o)) != s) continue;
      std::vector<TensorId> inputs, outputs;
      bool whole = true;  // every tensor is its root's whole buffer (views alias all of it)
      for (size_t k = 0; k < op.inputs.size(); ++k) {
        const TensorId x = op.inputs[k], y = op.outputs[k];
        inputs.push_back(root(x));
        outputs.push_back(root(y));
        whole = whole && info(x).bytes() == info(root(x)).bytes() && info(y).bytes() == info(root(y)).bytes();
      }
      const bool in_place = inputs == outputs;
      std::vector<TensorId> all = inputs;
      if (!in_place) all.insert(all.end(), outputs.begin(), outputs.end());
      if (!whole || !own_requests(sr, all)) continue;
      join_requests(sr, inputs);
      if (!in_place) join_requests(sr, outputs);
      p_.span_ops.insert(static_cast<ir::OpId>(o));
    }
  }

  // Memory plan of the stage's slot region over its timeline [forward | backward | update];
  // an op whose inputs were laid out as a span needs no scratch.
  void plan_stage(int32_t s) {
    StagePlan& plan = p_.stages[static_cast<size_t>(s)];
    const std::vector<Action> timeline = stage_timeline(plan);
    SlotRequests sr{plan, in_place_streams(timeline), last_touches(timeline, plan), {}, {}, {}, {}};
    std::vector<size_t> scratch(timeline.size());
    for (size_t k = 0; k < timeline.size(); ++k) {
      const auto pos = static_cast<int64_t>(k);
      const Phase x = phase_at(plan, k);
      if (timeline[k].kind == ActionKind::RunOp) share_dying_input(sr, timeline[k].index, pos, x);
      scratch[k] = touch_action(timeline[k], x, [&](TensorId t, Phase phase) { touch(sr, t, pos, phase); });
    }
    lay_out_spans(sr, s);
    size_t& device_scratch = scratch_[static_cast<size_t>(plan.device)];
    for (size_t k = 0; k < timeline.size(); ++k) {
      const Action& a = timeline[k];
      const bool view = a.kind == ActionKind::RunOp && p_.span_ops.count(a.index) != 0;
      device_scratch = std::max(device_scratch, view ? 0 : scratch[k]);
    }
    plan.slot_plan = memory::plan_memory(sr.requests, static_cast<int64_t>(std::max<size_t>(timeline.size(), 1)));
    for (const auto& [r, req] : sr.request_of) {
      const auto inside = sr.offset_in_request.find(r);
      plan.slot_offset[r] = plan.slot_plan.offsets[req] + (inside == sr.offset_in_request.end() ? 0 : inside->second);
      plan.slot_live[r] = {sr.requests[req].first, sr.requests[req].last};
    }
    plan.slot_pieces = slot_pieces(sr);
  }

  // The pieces of every request (SlotPiece): a joined request's members side by side, each
  // of its aligned size, over the whole request; the roots sharing a request one after the
  // other, each from its first touch to the next one's.
  std::vector<SlotPiece> slot_pieces(const SlotRequests& sr) const {
    std::vector<std::vector<TensorId>> roots(sr.requests.size());
    for (const auto& [r, req] : sr.request_of) roots[req].push_back(r);
    std::vector<SlotPiece> pieces;
    for (size_t q = 0; q < sr.requests.size(); ++q) {
      const memory::BufferRequest& req = sr.requests[q];
      std::vector<TensorId>& members = roots[q];
      if (req.bytes == 0 || members.empty()) continue;
      if (sr.offset_in_request.count(members.front())) {
        for (TensorId r : members) pieces.push_back({r, memory::align_up(info(r).bytes()), req.first, req.last});
        continue;
      }
      std::stable_sort(members.begin(), members.end(),
                       [&](TensorId a, TensorId b) { return sr.first_touch.at(a) < sr.first_touch.at(b); });
      for (size_t i = 0; i < members.size(); ++i) {
        const int64_t first = i == 0 ? req.first : sr.first_touch.at(members[i]);
        const int64_t last = i + 1 == members.size() ? req.last : sr.first_touch.at(members[i + 1]) - 1;
        if (first <= last) pieces.push_back({members[i], req.bytes, first, last});
      }
    }
    return pieces;
  }

  void plan_devices() {
    p_.devices.resize(static_cast<size_t>(pl_.num_devices));
    auto add_persistent = [](DevicePlan& d, TensorId r, size_t bytes) {
      if (!d.persistent_offset.emplace(r, d.persistent_size).second) return;
      d.persistent_size += memory::align_up(bytes);
      d.persistent_bytes += bytes;
    };
    for (const auto& [r, s] : p_.home_stage) {
      if (!p_.offloaded.count(r)) add_persistent(p_.devices[static_cast<size_t>(pl_.stage_device[static_cast<size_t>(s)])], r, info(r).bytes());
    }
    for (size_t s = 0; s < p_.stages.size(); ++s) {
      DevicePlan& d = p_.devices[static_cast<size_t>(p_.stages[s].device)];
      for (TensorId c : p_.stages[s].constants) add_persistent(d, c, info(c).bytes());
      for (auto& [r, offset] : p_.stages[s].accumulator) {
        offset = d.persistent_size;  // accumulators are per stage even when a tensor would repeat
        d.persistent_size += memory::align_up(info(r).bytes());
        d.persistent_bytes += info(r).bytes();
      }
    }
    for (size_t i = 0; i < p_.devices.size(); ++i) {
      DevicePlan& d = p_.devices[i];
      d.scratch_offset = d.persistent_size;
      d.scratch_bytes = scratch_[i];
      d.arena_bytes = d.persistent_size + memory::align_up(d.scratch_bytes);
      d.planned_peak_bytes = d.persistent_bytes + d.scratch_bytes;
    }
    for (size_t s = 0; s < p_.stages.size(); ++s) {
      const StagePlan& sp = p_.stages[s];
      DevicePlan& d = p_.devices[static_cast<size_t>(sp.device)];
      d.slot_base[static_cast<int32_t>(s)] = d.arena_bytes;
      d.arena_bytes += static_cast<size_t>(sp.slots) * memory::align_up(sp.slot_plan.arena_bytes);
      d.planned_peak_bytes += static_cast<size_t>(sp.slots) * sp.slot_plan.peak_live_bytes;
    }
  }

  const ir::Graph& g_;
  const Placement& pl_;
  const CompileOptions& o_;
  Program& p_;
  std::vector<size_t> scratch_ = std::vector<size_t>(static_cast<size_t>(pl_.num_devices), 0);  ///< per device
};

}  // namespace

void plan_program_memory(const ir::Graph& graph, const CompileOptions& options, Program& program) {
  MemoryPlanner(graph, options, program).run();
}

}  // namespace plexus::compile
