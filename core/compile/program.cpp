#include "core/compile/program.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>

#include "core/ir/error.h"

namespace plexus::compile {

namespace {

using ir::ErrorCode;
using ir::Phase;
using ir::TensorId;

// Builds the actions of every stage; one object per compile.
class ActionBuilder {
 public:
  ActionBuilder(const ir::Graph& graph, const Placement& placement, const CompileOptions& options, Program& program)
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
    finish_stages();
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
      for (int input : op.schema->optimizer_state_inputs) {
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
    for (int input : op.schema->optimizer_state_inputs) {
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

  // Each stage's actions per phase, prologue, body and epilogue in turn, with each phase's
  // first timeline position, and the constants its ops read.
  void finish_stages() {
    for (size_t s = 0; s < p_.stages.size(); ++s) {
      StagePlan& plan = p_.stages[s];
      for (Phase x : {Phase::Forward, Phase::Backward, Phase::Update}) {
        const int i = phase_index(x);
        plan.first_position[i] = i == 0 ? 0 : plan.first_position[i - 1] + plan.actions[i - 1].size();
        for (const auto* part : {&prologue_[s][i], &body_[s][i], &epilogue_[s][i]}) {
          plan.actions[i].insert(plan.actions[i].end(), part->begin(), part->end());
        }
      }
      plan.constants = std::move(constants_[s]);
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

void build_actions(const ir::Graph& graph, const CompileOptions& options, Program& program) {
  ActionBuilder(graph, program.placement, options, program).run();
}

}  // namespace plexus::compile
