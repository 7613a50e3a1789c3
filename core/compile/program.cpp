#include "core/compile/program.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>

#include "core/ir/error.h"

namespace plexus::runtime {

namespace {

using ir::ErrorCode;
using ir::Phase;
using ir::TensorId;

constexpr int phase_index(Phase p) { return static_cast<int>(p); }

bool is_persistent(const ir::TensorInfo& t) {
  return t.kind == ir::TensorKind::Variable || t.kind == ir::TensorKind::Constant ||
         t.kind == ir::TensorKind::RemoteVariable;
}

// Builds the actions of every stage; one object per compile.
class Builder {
 public:
  Builder(const ir::Graph& graph, const Placement& placement, const CompileOptions& options, Program& program)
      : g_(graph), pl_(placement), o_(options), p_(program) {}

  void run() {
    p_.root_of.resize(g_.num_tensors());
    for (size_t t = 0; t < g_.num_tensors(); ++t) p_.root_of[t] = g_.storage_root(static_cast<TensorId>(t));
    p_.stages.resize(static_cast<size_t>(pl_.num_stages));
    for (size_t s = 0; s < p_.stages.size(); ++s) {
      p_.stages[s].slots = o_.slots.empty() ? 1 : o_.slots[s];
      p_.stages[s].device = pl_.stage_device[s];
    }
    assign_homes();
    find_loaders();
    find_offloaded();
    find_accumulated();
    for (int32_t s = 0; s < pl_.num_stages; ++s) build_stage(s);
    place_update_sends();
    load_unread_streams();
    place_remaining_streams();
    for (int32_t s = 0; s < pl_.num_stages; ++s) plan_stage(s);
    plan_devices();
  }

 private:
  TensorId root(TensorId t) const { return p_.root_of[static_cast<size_t>(t)]; }
  const ir::TensorInfo& info(TensorId t) const { return g_.tensor(t); }
  int32_t stage_of(ir::OpId o) const { return pl_.op_stage[static_cast<size_t>(o)]; }
  Phase phase_of(ir::OpId o) const { return g_.op(o).phase; }

  // Variables belong to the one stage whose ops use them; constants go wherever used.
  void assign_homes() {
    constants_.resize(p_.stages.size());
    for (size_t o = 0; o < g_.num_ops(); ++o) {
      const ir::Op& op = g_.op(static_cast<ir::OpId>(o));
      const int32_t s = stage_of(static_cast<ir::OpId>(o));
      auto visit = [&](TensorId t) {
        const TensorId r = root(t);
        if (info(r).kind == ir::TensorKind::Constant) constants_[static_cast<size_t>(s)].insert(r);
        if (info(r).kind != ir::TensorKind::Variable) return;
        auto [it, fresh] = p_.home_stage.emplace(r, s);
        if (!fresh && it->second != s) {
          ir::fail(ErrorCode::InvalidArgument, "variable '" + info(r).name + "' is used by stage " +
                                                   std::to_string(it->second) + " (" + pl_.stage_names[static_cast<size_t>(it->second)] +
                                                   ") and by op '" + op.name + "' in stage " + std::to_string(s) + " (" +
                                                   pl_.stage_names[static_cast<size_t>(s)] + "): a variable lives on one stage");
        }
      };
      for (TensorId t : op.inputs) visit(t);
      for (TensorId t : op.outputs) visit(t);
    }
    for (size_t t = 0; t < g_.num_tensors(); ++t) {  // unused variables: stage 0
      if (info(static_cast<TensorId>(t)).kind == ir::TensorKind::Variable) p_.home_stage.emplace(static_cast<TensorId>(t), 0);
    }
    for (size_t i = 0; i < g_.num_streams(); ++i) {  // constants streamed out are stored by stage 0 (owner())
      const ir::Stream& st = g_.stream(static_cast<ir::StreamId>(i));
      const TensorId r = root(st.tensor);
      if (st.direction == ir::StreamDirection::DeviceToHost && info(r).kind == ir::TensorKind::Constant) constants_[0].insert(r);
    }
  }

  void find_offloaded() {
    if (!o_.offload_optimizer_state) return;
    for (const ir::Op& op : g_.ops()) {
      for (int input : op.def->optimizer_state_inputs) {
        const TensorId r = root(op.inputs[static_cast<size_t>(input)]);
        if (info(r).kind != ir::TensorKind::Variable) continue;  // state computed on the fly stays on the device
        if (p_.offloaded.emplace(r, p_.offloaded_bytes).second) p_.offloaded_bytes += memory::align_up(info(r).bytes());
      }
    }
  }

  // Roots produced per micro-batch: stream inputs and outputs of forward / backward ops.
  bool per_micro_batch(TensorId r) const {
    const ir::TensorInfo& t = info(r);
    if (t.kind == ir::TensorKind::StreamInput) return true;
    return t.kind == ir::TensorKind::OpOutput && phase_of(t.producer) != Phase::Update;
  }

  // With several micro-batches, the update step reads per-micro-batch tensors through
  // accumulators holding their sum, scaled to the mean when the update starts.
  void find_accumulated() {
    accumulate_ = p_.training && o_.micro_batches > 1;
    if (!accumulate_) return;
    for (size_t o = 0; o < g_.num_ops(); ++o) {
      const ir::Op& op = g_.op(static_cast<ir::OpId>(o));
      if (op.phase != Phase::Update) continue;
      for (TensorId t : op.inputs) {
        const TensorId r = root(t);
        if (!per_micro_batch(r)) continue;
        const int32_t s = stage_of(static_cast<ir::OpId>(o));
        if (info(r).kind != ir::TensorKind::OpOutput || stage_of(info(r).producer) != s || info(r).dtype != ir::DType::Float32) {
          ir::fail(ErrorCode::InvalidArgument,
                   "update op '" + op.name + "' reads '" + info(r).name +
                       "', a per-micro-batch tensor that cannot be accumulated over micro-batches (it must be a "
                       "float32 tensor computed in the same stage)");
        }
        p_.stages[static_cast<size_t>(s)].accumulator.emplace(r, 0);
      }
    }
  }

  // The stage that keeps a stream's tensor, and the step where it is there.
  std::pair<int32_t, Phase> owner(TensorId r) const {
    const ir::TensorInfo& t = info(r);
    if (t.kind == ir::TensorKind::OpOutput) return {stage_of(t.producer), phase_of(t.producer)};
    if (t.kind == ir::TensorKind::Variable) return {p_.home_stage.at(r), Phase::Forward};
    auto it = loader_.find(r);
    return it == loader_.end() ? std::pair{0, Phase::Forward} : it->second;
  }

  // A stream is loaded once per micro-batch, by the first stage that reads it, in the first
  // phase it does; other stages receive it from there.
  void find_loaders() {
    for (size_t o = 0; o < g_.num_ops(); ++o) {
      const ir::Op& op = g_.op(static_cast<ir::OpId>(o));
      const int32_t s = stage_of(static_cast<ir::OpId>(o));
      for (TensorId t : op.inputs) {
        const TensorId r = root(t);
        if (info(r).kind != ir::TensorKind::StreamInput) continue;
        auto [it, fresh] = loader_.emplace(r, std::pair{s, op.phase});
        if (!fresh && std::pair{s, op.phase} < it->second) it->second = {s, op.phase};
      }
    }
  }

  // Makes `t` (an input of an op of stage s in phase x) available: a stream load or a
  // receive in the phase's prologue, the matching send in the producer's epilogue.
  void provide(int32_t s, Phase x, TensorId t, const ir::Op& user) {
    const TensorId r = root(t);
    if (x == Phase::Update && computed_by_update_elsewhere(s, r)) {
      receive_update_result(s, r, user);
      return;
    }
    if (!per_micro_batch(r) || (x == Phase::Update && accumulate_)) return;
    auto& have = available_[static_cast<size_t>(s)];
    if (have.count(r)) return;
    have.insert(r);
    const ir::TensorInfo& ti = info(r);
    const auto [from, from_phase] = owner(r);
    if (ti.kind == ir::TensorKind::StreamInput && from == s) {
      prologue_[static_cast<size_t>(s)][phase_index(x)].push_back({ActionKind::LoadStream, stream_of_.at(r)});
      return;
    }
    if (from == s) return;  // computed here
    if (x == Phase::Update) {
      ir::fail(ErrorCode::InvalidArgument, "update op '" + user.name + "' in stage " + std::to_string(s) +
                                               " reads '" + ti.name + "' from stage " + std::to_string(from));
    }
    const bool backward_flow = from_phase == Phase::Backward;
    if (backward_flow && (x == Phase::Forward || from < s)) {
      ir::fail(ErrorCode::InvalidArgument, "op '" + user.name + "' in stage " + std::to_string(s) + " reads the gradient '" +
                                               ti.name + "' of stage " + std::to_string(from) +
                                               ", against the direction of the backward pass");
    }
    const auto channel = static_cast<int32_t>(p_.channels.size());
    p_.channels.push_back(ChannelPlan{r, from, s, from_phase, x, ti.bytes()});
    prologue_[static_cast<size_t>(s)][phase_index(x)].push_back({ActionKind::Receive, channel});
    epilogue_[static_cast<size_t>(from)][phase_index(from_phase)].push_back({ActionKind::Send, channel});
  }

  // True when `r` is computed by an update op of a stage other than s.
  bool computed_by_update_elsewhere(int32_t s, TensorId r) const {
    const ir::TensorInfo& t = info(r);
    return t.kind == ir::TensorKind::OpOutput && phase_of(t.producer) == Phase::Update && stage_of(t.producer) != s;
  }

  // An update op of stage s reads `r`, computed by the update step of another stage (a
  // partial gradient norm, a total sent back): received right before the op, sent right
  // after its producer (place_update_sends), so that stages may exchange tensors both ways
  // within one update step. The stages' devices run their updates concurrently; two stages
  // of one device run them one after the other, and could wait for each other forever.
  void receive_update_result(int32_t s, TensorId r, const ir::Op& user) {
    if (!available_[static_cast<size_t>(s)].insert(r).second) return;
    const int32_t from = stage_of(info(r).producer);
    if (pl_.stage_device[static_cast<size_t>(from)] == pl_.stage_device[static_cast<size_t>(s)]) {
      ir::fail(ErrorCode::InvalidArgument, "update op '" + user.name + "' in stage " + std::to_string(s) + " reads '" +
                                               info(r).name + "' from the update of stage " + std::to_string(from) +
                                               ", which runs on the same device: place the stages on different devices");
    }
    const auto channel = static_cast<int32_t>(p_.channels.size());
    p_.channels.push_back(ChannelPlan{r, from, s, Phase::Update, Phase::Update, info(r).bytes()});
    body_[static_cast<size_t>(s)][phase_index(Phase::Update)].push_back({ActionKind::Receive, channel});
  }

  // The sends of update-step channels, right after the op computing their tensor.
  void place_update_sends() {
    for (size_t c = 0; c < p_.channels.size(); ++c) {
      const ChannelPlan& cp = p_.channels[c];
      if (cp.from_phase != Phase::Update) continue;
      auto& body = body_[static_cast<size_t>(cp.from_stage)][phase_index(Phase::Update)];
      const ir::OpId producer = info(cp.root).producer;
      auto it = std::find_if(body.begin(), body.end(),
                             [&](const Action& a) { return a.kind == ActionKind::RunOp && a.index == producer; });
      body.insert(it + 1, {ActionKind::Send, static_cast<int32_t>(c)});
    }
  }

  void build_stage(int32_t s) {
    if (prologue_.empty()) {
      prologue_.resize(p_.stages.size());
      epilogue_.resize(p_.stages.size());
      body_.resize(p_.stages.size());
      available_.resize(p_.stages.size());
      for (size_t i = 0; i < g_.num_streams(); ++i) {
        const ir::Stream& st = g_.stream(static_cast<ir::StreamId>(i));
        if (st.direction == ir::StreamDirection::HostToDevice) stream_of_[st.tensor] = static_cast<int32_t>(i);
      }
    }
    StagePlan& plan = p_.stages[static_cast<size_t>(s)];
    for (Phase x : {Phase::Forward, Phase::Backward, Phase::Update}) {
      auto& body = body_[static_cast<size_t>(s)][phase_index(x)];
      for (size_t o = 0; o < g_.num_ops(); ++o) {
        const auto id = static_cast<ir::OpId>(o);
        if (stage_of(id) != s || phase_of(id) != x) continue;
        const ir::Op& op = g_.op(id);
        for (TensorId t : op.inputs) provide(s, x, t, op);
        const std::vector<TensorId> stored = stage_offloaded(op, body);
        body.push_back({ActionKind::RunOp, id});
        for (TensorId r : stored) body.push_back({ActionKind::StoreOffloaded, r});
        for (TensorId t : op.outputs) available_[static_cast<size_t>(s)].insert(root(t));
        store_streams_after(s, id, body);
      }
      for (const auto& [r, unused] : plan.accumulator) {
        if (owner(r) == std::pair{s, x}) epilogue_[static_cast<size_t>(s)][phase_index(x)].push_back({ActionKind::Accumulate, r});
      }
    }
  }

  // Loads every offloaded tensor `op` reads from host memory into its slot, before the op
  // (an optimizer's state, and any other op reading it: an lr_schedule of its step count);
  // returns those the op updates (its optimizer state inputs), to store back after it.
  std::vector<TensorId> stage_offloaded(const ir::Op& op, std::vector<Action>& body) const {
    std::set<TensorId> loaded;
    for (TensorId t : op.inputs) {
      const TensorId r = root(t);
      if (p_.offloaded.count(r) && loaded.insert(r).second) body.push_back({ActionKind::LoadOffloaded, r});
    }
    std::vector<TensorId> stored;
    for (int input : op.def->optimizer_state_inputs) {
      const TensorId r = root(op.inputs[static_cast<size_t>(input)]);
      if (p_.offloaded.count(r)) stored.push_back(r);
    }
    return stored;
  }

  // Device-to-host copies anchored right after op `op` (the order the program was built in)
  // whose tensor this stage keeps.
  void store_streams_after(int32_t s, ir::OpId op, std::vector<Action>& body) {
    for (size_t i = 0; i < g_.num_streams(); ++i) {
      const ir::Stream& st = g_.stream(static_cast<ir::StreamId>(i));
      if (st.direction != ir::StreamDirection::DeviceToHost || st.after_ops != static_cast<size_t>(op) + 1) continue;
      const TensorId r = root(st.tensor);
      const auto [owner_stage, owner_phase] = owner(r);
      if (owner_stage != s || placed_streams_.count(i)) continue;
      // A per-micro-batch tensor added after an update op is still copied per micro-batch
      // (in its own phase, by place_remaining_streams); only variables are copied by the
      // update step, once per iteration.
      if (phase_of(op) == Phase::Update && owner_phase != Phase::Update && !is_persistent(info(r))) continue;
      body.push_back({ActionKind::StoreStream, static_cast<int32_t>(i)});
      placed_streams_.insert(i);
    }
  }

  // Host-to-device streams no op reads are still loaded, by their owner (stage 0, forward):
  // the pump fills every stream's queue for every micro-batch, and a queue nobody takes from
  // would block it once full (a run of more micro-batches than prefetch_depth never ended);
  // a device-to-host stream of such a tensor copies what was loaded.
  void load_unread_streams() {
    if (prologue_.empty()) return;  // no stage was built
    for (size_t i = 0; i < g_.num_streams(); ++i) {
      const ir::Stream& st = g_.stream(static_cast<ir::StreamId>(i));
      const TensorId r = root(st.tensor);
      if (st.direction != ir::StreamDirection::HostToDevice || loader_.count(r)) continue;
      const auto [s, x] = owner(r);
      if (!available_[static_cast<size_t>(s)].insert(r).second) continue;
      prologue_[static_cast<size_t>(s)][phase_index(x)].push_back({ActionKind::LoadStream, static_cast<int32_t>(i)});
    }
  }

  // Streams not anchored next to an op of their owner stage: at the end of the owner's step
  // (or its very start when added before any op).
  void place_remaining_streams() {
    for (size_t i = 0; i < g_.num_streams(); ++i) {
      const ir::Stream& st = g_.stream(static_cast<ir::StreamId>(i));
      if (st.direction != ir::StreamDirection::DeviceToHost || placed_streams_.count(i)) continue;
      const auto [s, x] = owner(root(st.tensor));
      const Action store{ActionKind::StoreStream, static_cast<int32_t>(i)};
      if (st.after_ops == 0) {
        prologue_[static_cast<size_t>(s)][phase_index(x)].push_back(store);
      } else {
        epilogue_[static_cast<size_t>(s)][phase_index(x)].insert(epilogue_[static_cast<size_t>(s)][phase_index(x)].begin(), store);
      }
    }
  }

  // The stage's actions in the order they run, [forward | backward | update]; records each
  // phase's actions and first position in `plan`.
  std::vector<Action> stage_timeline(int32_t s, StagePlan& plan) const {
    std::vector<Action> timeline;
    for (Phase x : {Phase::Forward, Phase::Backward, Phase::Update}) {
      const int i = phase_index(x);
      plan.first_position[i] = timeline.size();
      for (const auto* part : {&prologue_[static_cast<size_t>(s)][i], &body_[static_cast<size_t>(s)][i],
                               &epilogue_[static_cast<size_t>(s)][i]}) {
        plan.actions[i].insert(plan.actions[i].end(), part->begin(), part->end());
        timeline.insert(timeline.end(), part->begin(), part->end());
      }
    }
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
        return g_.op(a.index).scratch_bytes;
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
  // request of the input its kernel may overwrite (ir::InferResult::may_inplace) when `o`
  // is that input's last toucher and both are slot tensors of the same size, neither
  // offloaded; the output must be fresh (its own root, no request yet).
  void share_dying_input(SlotRequests& sr, ir::OpId o, int64_t position, Phase x) const {
    const ir::Op& op = g_.op(o);
    if (op.may_inplace < 0) return;
    const TensorId in = root(op.inputs[static_cast<size_t>(op.may_inplace)]), out = op.outputs[0];
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

  // The inputs and outputs of stage s's ops with OpDef::span_inputs (PyTorch DDP's
  // gradient_as_bucket_view) laid out as spans, recorded in Program::span_ops: taken when
  // they own their requests, each is its root's whole buffer, and each output is its input's
  // storage or none is.
  void lay_out_spans(SlotRequests& sr, int32_t s) {
    for (size_t o = 0; o < g_.num_ops(); ++o) {
      const ir::Op& op = g_.op(static_cast<ir::OpId>(o));
      if (!op.def->span_inputs || stage_of(static_cast<ir::OpId>(o)) != s) continue;
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
    const std::vector<Action> timeline = stage_timeline(s, plan);
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
      for (TensorId c : constants_[s]) add_persistent(d, c, info(c).bytes());
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
  bool accumulate_ = false;
  std::vector<std::set<TensorId>> constants_;
  std::vector<std::set<TensorId>> available_;
  std::vector<std::array<std::vector<Action>, 3>> prologue_, epilogue_, body_;
  std::map<TensorId, int32_t> stream_of_;
  std::map<TensorId, std::pair<int32_t, Phase>> loader_;  ///< stream tensors: the stage and step that load them
  std::set<size_t> placed_streams_;
  std::vector<size_t> scratch_ = std::vector<size_t>(static_cast<size_t>(pl_.num_devices), 0);  ///< per device
};

}  // namespace

bool is_training(const ir::Graph& graph) {
  return graph.phase() != Phase::Forward;
}

bool stored_by_update(const Program& program, ir::StreamId stream) {
  const Action store{ActionKind::StoreStream, static_cast<int32_t>(stream)};
  return std::any_of(program.stages.begin(), program.stages.end(), [&](const StagePlan& sp) {
    const std::vector<Action>& update = sp.actions[phase_index(Phase::Update)];
    return std::any_of(update.begin(), update.end(),
                       [&](const Action& a) { return a.kind == store.kind && a.index == store.index; });
  });
}

void build_program(const ir::Graph& graph, const CompileOptions& options, Program& program) {
  Builder(graph, program.placement, options, program).run();
}

}  // namespace plexus::runtime
