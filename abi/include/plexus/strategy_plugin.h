/*
 * Plexus execution strategy plugin ABI.
 *
 * An execution strategy decides in which order each virtual device of a replica runs the
 * steps of a pipelined or sharded program (seed 003, "Execution strategies"; docs/design.md,
 * "Plugins" and "Pipelining"). It is a pure planner: it sees the stages, the device of each
 * stage, the number of micro-batches and whether the program trains, and returns for every
 * device an ordered list of steps. Plexus checks every schedule against the dependency
 * rules below before running it, so a faulty plugin is an error at session creation, never
 * a hang or a wrong result.
 *
 * A plugin is a shared library `libplexus-strategy-<name>.so` exporting ONE C symbol:
 *
 *     const plx_strategy_plugin* plx_strategy_plugin_v1(void);
 *
 * returning a table that lives as long as the library is loaded. Plexus finds it like a
 * collectives plugin ($PLEXUS_PLUGIN_PATH, <folder of libplexus.so>/plexus, next to libplexus.so) and picks
 * it by the session option `execution_strategy`. A plugin compiles against this header and
 * <plexus/types.h> only (for plx_status); it never links libplexus.
 *
 * Model
 * -----
 * A replica's program is split into S stages, numbered in pipeline order: the forward pass
 * runs stage 0, 1, ..., S-1, the backward pass S-1, ..., 0. Stage s runs on device
 * stage_device[s] of the replica's D devices (several stages may share a device). Each
 * step of the program processes M micro-batches (the gradient accumulation count when
 * training). The steps to schedule are:
 *   FORWARD (s, m)   stage s's forward ops on micro-batch m, for every s and m;
 *   BACKWARD (s, m)  stage s's backward ops on micro-batch m (training only);
 *   UPDATE (s)       stage s's weight update, once per step (training only; micro_batch -1).
 *
 * Rules a schedule must follow (Plexus checks each and names the one broken):
 *   coverage      every step above appears exactly once, in the list of the device that
 *                 owns its stage, and no other step appears;
 *   order         on each device, a stage's forward steps come in increasing micro-batch
 *                 order, and so do its backward steps (micro-batches flow through FIFOs);
 *   forward       FORWARD (s, m) waits for FORWARD (s-1, m);
 *   backward      BACKWARD (s, m) waits for FORWARD (s, m) and BACKWARD (s+1, m);
 *   update        UPDATE (s) waits for every BACKWARD (s, m);
 *   progress      running every device's list in order, each step starting once what it
 *                 waits for is done, all lists finish (no device waits forever).
 *
 * Thread safety: make_schedule may be called from any thread, concurrently; it must not
 * keep pointers into its arguments after returning.
 *
 * Versioning: the table only grows (struct_size tells Plexus what it may read); a change
 * that breaks old plugins bumps PLX_STRATEGY_ABI_VERSION and the symbol's _vN suffix.
 *   1  make_schedule.
 */
#ifndef PLEXUS_STRATEGY_PLUGIN_H
#define PLEXUS_STRATEGY_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "plexus/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** ABI version of this header; a plugin returns it in plx_strategy_plugin.abi_version. */
#define PLX_STRATEGY_ABI_VERSION 1

/** Name of the symbol a plugin exports. */
#define PLX_STRATEGY_PLUGIN_SYMBOL "plx_strategy_plugin_v1"

/** What a step does. */
typedef int32_t plx_step_kind;
enum { PLX_STEP_FORWARD = 0, PLX_STEP_BACKWARD = 1, PLX_STEP_UPDATE = 2 };

/** One step of a device's schedule. */
typedef struct plx_schedule_step {
  int64_t stage;        /**< 0 .. S-1 */
  int64_t micro_batch;  /**< 0 .. M-1; -1 for PLX_STEP_UPDATE */
  plx_step_kind kind;
} plx_schedule_step;

/** The problem a strategy solves. All pointers are borrowed for the call. Versions (plugin
 *  ABI): 1 every field. */
typedef struct plx_schedule_problem {
  size_t struct_size;          /**< sizeof(plx_schedule_problem) as the caller knows it */
  int64_t num_stages;          /**< S >= 1 */
  int64_t num_devices;         /**< D >= 1, devices of one replica */
  const int64_t* stage_device; /**< [S]: the device (0 .. D-1) of each stage */
  int64_t num_micro_batches;   /**< M >= 1 per step */
  int32_t training;            /**< 1: forward, backward and update steps; 0: forward only */
  const char* options;         /**< strategy options, e.g. "fill_drain"; "" for defaults; never NULL */
} plx_schedule_problem;

/**
 * Writes device d's ordered steps to device_steps[d][0 .. device_step_counts[d]) for every
 * device d. Each device_steps[d] holds `capacity` steps, enough for every step of every
 * stage (capacity >= S * (2M + 1)).
 *
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (a problem the strategy cannot serve, e.g.
 *         unknown options; M < S when the strategy needs M >= S), with a NUL-terminated
 *         UTF-8 message written to `message` (at most message_capacity bytes).
 */
typedef plx_status (*plx_make_schedule_fn)(const plx_schedule_problem* problem, plx_schedule_step* const* device_steps,
                                           size_t capacity, size_t* device_step_counts, char* message,
                                           size_t message_capacity);

/** The table a plugin returns. Versions (plugin ABI): 1 every field. */
typedef struct plx_strategy_plugin {
  size_t struct_size;    /**< sizeof(plx_strategy_plugin) as the plugin knows it */
  uint32_t abi_version;  /**< PLX_STRATEGY_ABI_VERSION */
  const char* name;      /**< short name, e.g. "pipelined"; static storage */
  plx_make_schedule_fn make_schedule;
} plx_strategy_plugin;

/** Type of the exported entry point. */
typedef const plx_strategy_plugin* (*plx_strategy_plugin_entry)(void);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_STRATEGY_PLUGIN_H */
