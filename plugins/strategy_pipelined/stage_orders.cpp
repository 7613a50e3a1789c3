#include "stage_orders.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace plexus::strategy_pipelined {

using strategy_common::Outcome;
using strategy_common::Problem;

namespace {

plx_schedule_step forward(int64_t s, int64_t m) { return {s, m, PLX_STEP_FORWARD}; }
plx_schedule_step backward(int64_t s, int64_t m) { return {s, m, PLX_STEP_BACKWARD}; }
plx_schedule_step update(int64_t s) { return {s, -1, PLX_STEP_UPDATE}; }

std::vector<plx_schedule_step> one_f_one_b(int64_t s, int64_t S, int64_t M) {
  std::vector<plx_schedule_step> steps;
  const int64_t warm_up = std::min(S - s, M);
  for (int64_t m = 0; m < warm_up; ++m) steps.push_back(forward(s, m));
  for (int64_t m = 0; m < M; ++m) {
    steps.push_back(backward(s, m));
    if (warm_up + m < M) steps.push_back(forward(s, warm_up + m));
  }
  steps.push_back(update(s));
  return steps;
}

std::vector<plx_schedule_step> fill_drain(int64_t s, int64_t M) {
  std::vector<plx_schedule_step> steps;
  for (int64_t m = 0; m < M; ++m) steps.push_back(forward(s, m));
  for (int64_t m = 0; m < M; ++m) steps.push_back(backward(s, m));
  steps.push_back(update(s));
  return steps;
}

std::vector<plx_schedule_step> inference(int64_t s, int64_t M) {
  std::vector<plx_schedule_step> steps;
  for (int64_t m = 0; m < M; ++m) steps.push_back(forward(s, m));
  return steps;
}

}  // namespace

Outcome check_micro_batches(const Problem& p) {
  if (p.num_micro_batches < p.num_stages) {
    return Outcome::invalid(
        "pipelined execution needs at least as many micro-batches (gradient accumulation when training) as stages: "
        "got " +
        std::to_string(p.num_micro_batches) + " micro-batches for " + std::to_string(p.num_stages) + " stages");
  }
  return Outcome::ok();
}

StageOrders stage_orders(const Problem& p, Flavour flavour) {
  StageOrders orders;
  for (int64_t s = 0; s < p.num_stages; ++s) {
    if (!p.training) {
      orders.push_back(inference(s, p.num_micro_batches));
    } else if (flavour == Flavour::fill_drain) {
      orders.push_back(fill_drain(s, p.num_micro_batches));
    } else {
      orders.push_back(one_f_one_b(s, p.num_stages, p.num_micro_batches));
    }
  }
  return orders;
}

}  // namespace plexus::strategy_pipelined
