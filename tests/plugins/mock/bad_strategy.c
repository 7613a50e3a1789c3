/* A deliberately broken execution strategy for tests/plugins/strategy: it lists every
 * stage's BACKWARD (s, m) just before its FORWARD (s, m), on the stage's device, so every
 * step is covered and in micro-batch order but the schedule breaks rule 'backward'.
 * Plexus must refuse it when checking the schedule (core/compile/schedule.cpp).
 * Built with MOCK_WRONG_ABI, its table claims ABI version 99: the loader must refuse the
 * table itself (tests/tools/strategy_check_test.sh). */
#include <plexus/strategy_plugin.h>

static plx_status make_schedule(const plx_schedule_problem* problem, plx_schedule_step* const* device_steps,
                                size_t capacity, size_t* device_step_counts, char* message,
                                size_t message_capacity) {
  int64_t s, m, d;
  (void)capacity;
  (void)message;
  (void)message_capacity;
  for (d = 0; d < problem->num_devices; ++d) device_step_counts[d] = 0;
  for (m = 0; m < problem->num_micro_batches; ++m) {
    for (s = 0; s < problem->num_stages; ++s) {
      d = problem->stage_device[s];
      if (problem->training) {
        plx_schedule_step b = {s, m, PLX_STEP_BACKWARD};
        device_steps[d][device_step_counts[d]++] = b;
      }
      {
        plx_schedule_step f = {s, m, PLX_STEP_FORWARD};
        device_steps[d][device_step_counts[d]++] = f;
      }
    }
  }
  if (problem->training) {
    for (s = 0; s < problem->num_stages; ++s) {
      plx_schedule_step u = {s, -1, PLX_STEP_UPDATE};
      d = problem->stage_device[s];
      device_steps[d][device_step_counts[d]++] = u;
    }
  }
  return PLX_OK;
}

static const plx_strategy_plugin table = {
    sizeof(plx_strategy_plugin),
#ifdef MOCK_WRONG_ABI
    99,
#else
    PLX_STRATEGY_ABI_VERSION,
#endif
    "mock_bad",
    make_schedule,
};

__attribute__((visibility("default"))) const plx_strategy_plugin* plx_strategy_plugin_v1(void) { return &table; }
