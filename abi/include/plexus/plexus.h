/*
 * Plexus runtime C API.
 *
 * Plexus runs replicated, sharded and pipelined training programs on ordinary CPUs with
 * the IPU programming model of PopXL / PopTorch (see the seeds and docs/design.md): build an
 * IR of tensors and ops, differentiate it, compile it into a session, and run it with
 * host arrays feeding host-to-device streams.
 *
 * ABI rules (docs/design.md, "The C ABI"):
 * - Every fallible function returns plx_status; PLX_OK is 0. On error, out-parameters are
 *   left untouched and plx_last_error() gives a message naming the argument at fault.
 * - Handles are opaque pointers made by plx_<object>_create and released by
 *   plx_<object>_destroy, which accepts NULL. Tensors and streams are 64-bit ids owned by
 *   their IR; an id from another IR is rejected.
 * - Structs that may grow begin with `size_t struct_size`: options structs (fill them with
 *   their _init function) and out-structs (set struct_size to sizeof the struct). Fields
 *   are only ever appended, each at or after the previous version's sizeof, so a
 *   struct_size from any older header names a whole prefix: Plexus reads an options
 *   struct's fields within struct_size and gives the rest their defaults, and writes an
 *   out-struct's fields within struct_size only. A struct_size larger than today's (a
 *   newer header) is accepted; one short of the struct's first version, or any other that
 *   is not a version's (it would end inside a field), is PLX_ERR_INVALID_ARGUMENT naming it.
 *   Each such struct lists its version history.
 *   Structs without struct_size (plx_attr, plx_replica_grouping, plx_stage,
 *   plx_host_array, plx_stream_callback: plain values and array elements) have a fixed
 *   layout and never grow; a need for more fields gets a new struct.
 * - Enum values are fixed-width integers with explicit values, never reused.
 * - Dims are int64_t, counts size_t, byte sizes size_t, strings UTF-8 and NUL-terminated.
 * - No C++ exception and no abort() crosses this boundary; bad input never crashes.
 *
 * Changelog (PLX_API_VERSION):
 *   1  IR, ops by name, autodiff, sessions, device iterations, IDX datasets.
 *   2  replication factor, replica groupings, variables with groupings and retrieval
 *      modes, collectives plugin session options, plx_session_get_variable_shape.
 *   3  remote buffers, remote and replica-sharded variables, in_sequence scopes,
 *      plx_session_get_variable_storage, remote_buffer_bytes in plx_memory_stats,
 *      shard_over in plx_variable_options.
 *   4  blocks, stages and devices per replica (pipelined and sharded execution through
 *      strategy plugins), gradient accumulation, output modes, optimizer state offload,
 *      profiling (plx_session_get_trace), offloaded_bytes in plx_memory_stats.
 *   5  the streaming layer: prefetch_depth and io_threads session options, stream
 *      callbacks, asynchronous runs (plx_session_run_async, plx_run_*), cancellation,
 *      the data loader (plx_loader_*).
 *   6  checkpoints (plx_session_save_checkpoint, _async, plx_session_load_checkpoint,
 *      plx_session_get_step).
 *   7  the data loader sharded by worker (num_shards, shard_index in plx_loader_options).
 *   8  workers: num_workers and worker_index in plx_session_options,
 *      plx_session_get_replicas, plx_workers_from_environment.
 *   9  the weight update on the host: weight_update_on_host in plx_session_options.
 *  10  <plexus/types.h>: PLX_API, plx_status, plx_dtype, plx_last_error, plx_status_name,
 *      plx_version and the version macros, which the plugin headers include instead of
 *      this header. struct_size: every growable struct accepts every older (and newer)
 *      struct_size; each lists its versions. Byte counts are size_t everywhere
 *      (device_memory_bytes, plx_memory_stats, plx_variable_storage, plx_stream_stats'
 *      h2d/d2h_bytes, staging_bytes were int64_t/uint64_t: same size and alignment on the
 *      64-bit targets Plexus supports). One completion callback, plx_run_complete_fn
 *      (plx_checkpoint_done is its deprecated alias). Regular plx_<object>_<verb> names,
 *      the old ones deprecated aliases until 1.0: plx_ir_begin_sequence /
 *      plx_ir_end_sequence (plx_ir_in_sequence_begin / _end), plx_runtime_get_info
 *      (plx_get_runtime_info), plx_workers_read_environment (plx_workers_from_environment),
 *      plx_loader_get_runs_per_epoch (plx_loader_runs_per_epoch),
 *      plx_session_get_num_devices (plx_session_num_devices),
 *      plx_replica_grouping_get_num_groups (plx_replica_grouping_num_groups).
 *  11  plx_runtime_get_ops: the op catalog as JSON (the Python package's plexus.ops);
 *      plx_workers_read_environment reads a cluster definition (PLEXUS_CLUSTER, TF_CONFIG).
 *  12  text corpora (plx_text_load, plx_text_get_split, plx_text_destroy,
 *      PLX_FORTUNES_DIR) and loaders over their windows (plx_loader_create_text).
 *  13  gradient buckets: gradient_bucket_bytes in plx_session_options.
 *  14  graphs: subgraphs with inputs and outputs (plx_ir_create_graph, plx_graph_*), graph
 *      scopes, calls with modified inputs (plx_ir_call, plx_call_site_get_parent), repeat
 *      (plx_ir_repeat), graph autodiff with expected connections (plx_graph_autodiff);
 *      the identity op.
 *  15  plx_call_site_set_input_modified: an input of a call marked modified after the
 *      call; plx_ir_get_tensor_name.
 *  16  plx_run_cancel: one run cancelled, the others left running or queued.
 *  17  PLX_ERR_STILL_RUNNING: plx_run_wait's limit passing, told apart from a collective's
 *      timeout (PLX_ERR_TIMEOUT), which plx_run_wait returned for both before.
 *  18  plx_session_get_memory_report: the planned memory of each device over its schedule,
 *      by kind, as JSON (docs/profiling.md).
 *  19  dtypes PLX_DTYPE_FLOAT16, PLX_DTYPE_INT8, PLX_DTYPE_UINT32 and PLX_DTYPE_BOOL
 *      (<plexus/types.h>): variables, constants, streams, checkpoints and casts of each;
 *      float16 matmul, conv2d and reductions computed in float32 (docs/ops.md); the op
 *      "equal" gives PLX_DTYPE_BOOL (it gave PLX_DTYPE_UINT8: the same bytes, 0 or 1).
 *  20  plx_call_options.reuse_code: a call site that runs the callee's kernels, bound once
 *      per device for all such call sites, instead of a copy of its ops (op "call").
 */
#ifndef PLEXUS_PLEXUS_H
#define PLEXUS_PLEXUS_H

#include <stddef.h>
#include <stdint.h>

#include "plexus/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Data types and attributes ------------------------------------------------------ */

/** Kind of an op attribute value. */
typedef int32_t plx_attr_kind;
enum { PLX_ATTR_INT = 1, PLX_ATTR_FLOAT = 2, PLX_ATTR_INTS = 3, PLX_ATTR_STRING = 4 };

/**
 * One op attribute: `name` and the field selected by `kind` (`i`, `f`, `ints`/`num_ints`
 * or `s`). All pointers are borrowed for the duration of the call. Build them with
 * plx_attr_int() and friends below.
 */
typedef struct plx_attr {
  const char* name;
  plx_attr_kind kind;
  int64_t i;
  double f;
  const int64_t* ints;
  size_t num_ints;
  const char* s;
} plx_attr;

/** An int attribute. */
static inline plx_attr plx_attr_int(const char* name, int64_t value) {
  plx_attr a = {name, PLX_ATTR_INT, value, 0.0, NULL, 0, NULL};
  return a;
}
/** A float attribute (stored as double, converted to the op's precision). */
static inline plx_attr plx_attr_float(const char* name, double value) {
  plx_attr a = {name, PLX_ATTR_FLOAT, 0, value, NULL, 0, NULL};
  return a;
}
/** An int-list attribute; `values` is borrowed. */
static inline plx_attr plx_attr_ints(const char* name, const int64_t* values, size_t count) {
  plx_attr a = {name, PLX_ATTR_INTS, 0, 0.0, values, count, NULL};
  return a;
}
/** A string attribute; `value` is borrowed. */
static inline plx_attr plx_attr_string(const char* name, const char* value) {
  plx_attr a = {name, PLX_ATTR_STRING, 0, 0.0, NULL, 0, value};
  return a;
}

/* ---- IR ----------------------------------------------------------------------------- */

/** A program under construction: tensors, ops, streams. */
typedef struct plx_ir plx_ir;
/** Id of a tensor in an IR (opaque; 0 is never a valid id). */
typedef uint64_t plx_tensor;
/** Id of a host/device stream in an IR (opaque; 0 is never a valid id). */
typedef uint64_t plx_stream;

/**
 * Creates an empty IR.
 *
 * @param out_ir Receives the IR; release it with plx_ir_destroy().
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (out_ir is NULL).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 1
 */
PLX_API plx_status plx_ir_create(plx_ir** out_ir);

/**
 * Releases an IR and its ids; NULL is ignored. Sessions created from it stay valid.
 * Thread safety: not concurrently with any other call on `ir`.
 * @since 1
 */
PLX_API void plx_ir_destroy(plx_ir* ir);

/**
 * Sets the replication factor R: the number of replicas of the program that run in
 * parallel, each on its own virtual device (seed 001, 13.1; PopXL ir.replication_factor).
 * Host arrays of streams then carry an R dim, and variables may be grouped.
 *
 * @param replication_factor >= 1 (default 1).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (ir NULL, R < 1, or the IR already has tensors:
 *         set R first).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 2
 */
PLX_API plx_status plx_ir_set_replication_factor(plx_ir* ir, int64_t replication_factor);

/**
 * The IR's replication factor. @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 2
 */
PLX_API plx_status plx_ir_get_replication_factor(const plx_ir* ir, int64_t* out_replication_factor);

/* ---- Replica groupings (seed 001, 13.2) ---------------------------------------------- */

/**
 * A replica grouping: (group_size g, stride s) over R replicas. Replica r belongs to group
 * (r / (s*g)) * s + r % s; groups are numbered by their lowest replica. A plain value:
 * make it with plx_replica_grouping_create(), which checks it.
 */
typedef struct plx_replica_grouping {
  int64_t replication_factor;
  int64_t group_size;
  int64_t stride;
} plx_replica_grouping;

/**
 * Makes a checked grouping. Valid when g >= 1, s >= 1 and R % (s*g) == 0 (PopXL's rule;
 * e.g. R=8, s=2, g=2 is valid).
 *
 * @param group_size  g; 0 means R / stride (PopXL's default).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (out NULL); PLX_ERR_INVALID_GROUPING (the
 *         message gives R, g and s). On error *out_grouping is untouched.
 * Thread safety: safe from any thread (reads only its arguments).
 * @since 2
 */
PLX_API plx_status plx_replica_grouping_create(int64_t replication_factor, int64_t group_size, int64_t stride,
                                               plx_replica_grouping* out_grouping);

/**
 * Number of groups, R / g. Errors: PLX_ERR_INVALID_ARGUMENT (NULL), PLX_ERR_INVALID_GROUPING.
 * Thread safety: safe from any thread (reads only its arguments).
 * @since 10 (as plx_replica_grouping_num_groups() since 2)
 */
PLX_API plx_status plx_replica_grouping_get_num_groups(const plx_replica_grouping* grouping, int64_t* out_num_groups);

/**
 * Members of group `group`, increasing.
 * @param members  Receives up to `capacity` replica indices (may be NULL to ask the count).
 * @param out_count Receives g (may be NULL).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL grouping, group out of range);
 *         PLX_ERR_INVALID_GROUPING; PLX_ERR_BUFFER_TOO_SMALL (capacity < g; out_count set).
 * Thread safety: safe from any thread (reads only its arguments).
 * @since 2
 */
PLX_API plx_status plx_replica_grouping_get_members(const plx_replica_grouping* grouping, int64_t group,
                                                    int64_t* members, size_t capacity, size_t* out_count);

/**
 * Group of replica `replica` (0 <= replica < R). Errors as above.
 * Thread safety: safe from any thread (reads only its arguments).
 * @since 2
 */
PLX_API plx_status plx_replica_grouping_get_group(const plx_replica_grouping* grouping, int64_t replica,
                                                  int64_t* out_group);

/**
 * The transpose (orthogonal) grouping: the replicas holding the same position in each
 * group. Exists when s == 1 or s*g == R; otherwise PLX_ERR_INVALID_GROUPING.
 * Thread safety: safe from any thread (reads only its arguments).
 * @since 2
 */
PLX_API plx_status plx_replica_grouping_transpose(const plx_replica_grouping* grouping,
                                                  plx_replica_grouping* out_transpose);

/**
 * Adds a variable: a tensor resident on every device between runs, initialised from host
 * data (PopXL popxl.variable).
 *
 * @param ir         IR to add to. Borrowed.
 * @param name       UTF-8, unique among the IR's variables and streams. Copied.
 * @param dtype      PLX_DTYPE_*.
 * @param shape      Dims [d0, ..., d(rank-1)], row-major, each >= 1, product <= 2^60. Borrowed.
 * @param rank       0..PLX_MAX_RANK (0 = scalar; shape may then be NULL).
 * @param data       Initial values: product(shape) elements of dtype. Copied.
 * @param data_bytes Size of `data` in bytes; must equal product(shape) * dtype size.
 * @param out_tensor Receives the variable's id.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, bad dtype, rank or dim, duplicate
 *         name, data_bytes wrong). On error nothing is added.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 1
 */
PLX_API plx_status plx_ir_add_variable(plx_ir* ir, const char* name, plx_dtype dtype, const int64_t* shape,
                                       size_t rank, const void* data, size_t data_bytes, plx_tensor* out_tensor);

/** Which replicas' values reading a variable returns (seed 001, 13.4). */
typedef int32_t plx_retrieval_mode;
enum {
  PLX_RETRIEVAL_ONE_PER_GROUP = 0, /**< [num_groups] + shape (group dim left out for one group) */
  PLX_RETRIEVAL_ALL_REPLICAS = 1   /**< [R] + shape, row r from replica r */
};

/**
 * Options of a variable. Initialise with plx_variable_options_init().
 * Versions (struct_size): 2 struct_size, grouping, retrieval_mode (24 bytes on LP64);
 * 3 shard_over (32).
 */
typedef struct plx_variable_options {
  size_t struct_size;                   /**< sizeof(plx_variable_options), set by _init */
  const plx_replica_grouping* grouping; /**< replicas sharing a value; NULL = one group of all (default). Borrowed. */
  plx_retrieval_mode retrieval_mode;    /**< default PLX_RETRIEVAL_ONE_PER_GROUP */
  /* since PLX_API_VERSION 3 */
  int64_t shard_over; /**< replica-sharded variables: replicas a value is sharded over; 0 = the group size (default) */
} plx_variable_options;

/**
 * Fills `options` with defaults and sets struct_size. NULL is ignored.
 * Thread safety: safe from any thread (writes only `options`).
 * @since 2
 */
PLX_API void plx_variable_options_init(plx_variable_options* options);

/**
 * Adds a variable with a replica grouping and a retrieval mode (PopXL popxl.variable with
 * replica_grouping= and retrieval_mode=). `data` holds one value per group:
 * [num_groups] + shape (the group dim left out for one group); every replica of a group
 * starts from its group's value. Reading and writing the variable in a session use the
 * retrieval mode's shape (plx_session_get_variable_shape).
 *
 * @param options NULL for defaults (then the same as plx_ir_add_variable).
 * @return as plx_ir_add_variable(), plus PLX_ERR_INVALID_GROUPING (grouping invalid or for
 *         another replication factor) and PLX_ERR_INVALID_ARGUMENT (bad retrieval mode,
 *         struct_size too small, data_bytes not num_groups * numel * dtype size).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 2
 */
PLX_API plx_status plx_ir_add_variable_with_options(plx_ir* ir, const char* name, plx_dtype dtype,
                                                    const int64_t* shape, size_t rank, const void* data,
                                                    size_t data_bytes, const plx_variable_options* options,
                                                    plx_tensor* out_tensor);

/* ---- Remote buffers and replicated tensor sharding (seed 000 17.2; seed 001 13.3) ---- */

/** Id of a remote buffer in an IR (opaque; 0 is never a valid id). */
typedef uint64_t plx_remote_buffer;

/**
 * Adds a remote buffer: `entries` slots of `shape` and `dtype` in host memory, one set per
 * replica (PopXL popxl.remote_buffer). Ops reach the slots with "remote_load" and
 * "remote_store" (attribute "buffer" = this id, "index" = the slot, or an int32 tensor
 * input). Their bytes are reported apart from the device arena (plx_memory_stats).
 *
 * @param shape   Per-replica slot shape, without any group dim. Borrowed.
 * @param entries Slots per replica, >= 1.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, bad dtype/shape, entries < 1).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 3
 */
PLX_API plx_status plx_ir_add_remote_buffer(plx_ir* ir, plx_dtype dtype, const int64_t* shape, size_t rank,
                                            int64_t entries, plx_remote_buffer* out_buffer);

/**
 * Adds a variable that lives in slot `entry` of `buffer` (PopXL popxl.remote_variable):
 * `data` is [num_groups] + the slot shape, each replica's slot starts from its group's row
 * and reads back by the retrieval mode. Ops cannot use it directly: remote_load it.
 *
 * @param options grouping and retrieval mode; NULL for defaults (shard_over is ignored).
 * @return as plx_ir_add_variable_with_options(), plus PLX_ERR_NOT_FOUND (no such buffer),
 *         PLX_ERR_INVALID_ARGUMENT (entry out of range, a buffer of sharded variables),
 *         PLX_ERR_SHAPE_MISMATCH (dtype or shape differs from the buffer's slots).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 3
 */
PLX_API plx_status plx_ir_add_remote_variable(plx_ir* ir, const char* name, plx_dtype dtype, const int64_t* shape,
                                              size_t rank, const void* data, size_t data_bytes,
                                              plx_remote_buffer buffer, int64_t entry,
                                              const plx_variable_options* options, plx_tensor* out_tensor);

/**
 * Adds a replica-sharded variable (RTS; PopXL popxl.replica_sharded_variable): the full
 * tensor `data` ([num_groups] + shape) is flattened, zero-padded to a multiple of
 * shard_over and split contiguously; the member at position m of each shard domain (the
 * grouping (R, shard_over, stride)) keeps shard m, [ceil(numel / shard_over)], on its
 * device. Reading it returns full, unpadded tensors by the retrieval mode; writing takes
 * the same. A collective on the shard takes the shard domain; "replicated_all_gather" with
 * output_shape "auto" rebuilds the full tensor in its shape.
 *
 * @param shape        Full (unsharded) shape. Borrowed.
 * @param options      grouping, retrieval mode, shard_over (0 = the group size; it must
 *                     divide the group size). NULL for defaults.
 * @param out_variable Receives the variable (for reading and writing it).
 * @param out_shard    Receives this replica's shard (for ops). In Plexus the variable is
 *                     its shard on the device, so both ids name the same tensor.
 * @return as plx_ir_add_variable_with_options(), plus PLX_ERR_INVALID_GROUPING (shard_over
 *         does not divide the group size).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 3
 */
PLX_API plx_status plx_ir_add_replica_sharded_variable(plx_ir* ir, const char* name, plx_dtype dtype,
                                                       const int64_t* shape, size_t rank, const void* data,
                                                       size_t data_bytes, const plx_variable_options* options,
                                                       plx_tensor* out_variable, plx_tensor* out_shard);

/**
 * Adds a replica-sharded variable kept in slot `entry` of `buffer` (PopXL
 * popxl.remote_replica_sharded_variable); the buffer's slot shape must be the shard's,
 * [ceil(numel / shard_over)]. remote_load from the buffer then yields this replica's shard,
 * which "replicated_all_gather" turns back into the full tensor.
 * @return as plx_ir_add_replica_sharded_variable() and plx_ir_add_remote_variable().
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 3
 */
PLX_API plx_status plx_ir_add_remote_replica_sharded_variable(plx_ir* ir, const char* name, plx_dtype dtype,
                                                              const int64_t* shape, size_t rank, const void* data,
                                                              size_t data_bytes, plx_remote_buffer buffer,
                                                              int64_t entry, const plx_variable_options* options,
                                                              plx_tensor* out_tensor);

/**
 * Opens an in_sequence scope (PopXL popxl.in_sequence; seed 001 listing 13.2): ops added
 * in it run in the order they are added even without a data dependence between them, e.g.
 * an in-place add and a remote_store of the same tensor. Plexus runs every op in the order
 * it was added, so the scope guarantees what PopXL programs rely on; scopes nest.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (ir NULL).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 10 (as plx_ir_in_sequence_begin() since 3)
 */
PLX_API plx_status plx_ir_begin_sequence(plx_ir* ir);

/**
 * Closes the innermost in_sequence scope. PLX_ERR_INVALID_ARGUMENT when none is open.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 10 (as plx_ir_in_sequence_end() since 3)
 */
PLX_API plx_status plx_ir_end_sequence(plx_ir* ir);

/* ---- Blocks (pipelined and sharded execution) ---------------------------------------- */

/**
 * Opens a block scope (PopTorch poptorch.Block; seed 003, "Annotation for model
 * partitioning"): ops added until plx_ir_end_block() belong to block `name`. Blocks are
 * grouped into stages and stages placed on devices by plx_session_options.stages; when
 * every block names a device (`device` >= 0) and no stages are given, each block is its
 * own stage on that device (auto-staging). Ops added outside any block join the block of
 * their first input that has one (gradient ops join the block of the op they
 * differentiate), so backward and update ops follow their layers. Reopening a name adds
 * to that block.
 *
 * @param name   UTF-8, non-empty. Copied.
 * @param device device index within a replica, or -1 (placed by the session's stages).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL, empty name, device < -1, a reopened
 *         block given another device).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 4
 */
PLX_API plx_status plx_ir_begin_block(plx_ir* ir, const char* name, int64_t device);

/**
 * Closes the innermost block scope. PLX_ERR_INVALID_ARGUMENT when none is open.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 4
 */
PLX_API plx_status plx_ir_end_block(plx_ir* ir);

/**
 * Adds a constant tensor (read-only, resident on every device).
 * Parameters and errors as plx_ir_add_variable(), without a name.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 1
 */
PLX_API plx_status plx_ir_add_constant(plx_ir* ir, plx_dtype dtype, const int64_t* shape, size_t rank,
                                       const void* data, size_t data_bytes, plx_tensor* out_tensor);

/**
 * Adds a host-to-device stream and the tensor it fills at the start of every step
 * (PopXL h2d_stream + host_load).
 *
 * @param name       UTF-8, unique among variables and streams. Copied.
 * @param dtype      PLX_DTYPE_*.
 * @param shape      Per-step, per-replica shape S. Borrowed. rank 0..PLX_MAX_RANK.
 * @param out_stream Receives the stream id (used to pass host arrays to plx_session_run).
 * @param out_tensor Receives the tensor holding the current step's data.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, bad dtype/shape, duplicate name).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 1
 */
PLX_API plx_status plx_ir_add_h2d_stream(plx_ir* ir, const char* name, plx_dtype dtype, const int64_t* shape,
                                         size_t rank, plx_stream* out_stream, plx_tensor* out_tensor);

/**
 * Adds a device-to-host stream that copies `tensor` to the host each step, at this point
 * of the program (PopXL d2h_stream + host_store): ops added later do not affect the
 * value copied.
 *
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, duplicate name, id of another
 *         IR, a remote variable: stream what a remote_load of it returns);
 *         PLX_ERR_NOT_FOUND (no such tensor).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 1
 */
PLX_API plx_status plx_ir_add_d2h_stream(plx_ir* ir, const char* name, plx_tensor tensor, plx_stream* out_stream);

/**
 * Adds an op by registered name ("matmul", "add", "gelu", "softmax_cross_entropy", ...;
 * docs/ops.md lists every op, its inputs, attributes, shapes and gradient). Shapes and
 * dtypes are inferred and checked now.
 *
 * @param op           Op name. Borrowed.
 * @param inputs       Input ids, `num_inputs` of them. Borrowed.
 * @param attrs        Attributes, `num_attrs` of them (NULL when 0). Borrowed.
 * @param outputs      Receives up to `max_outputs` output ids (may be NULL when 0).
 * @param num_outputs  Receives the op's output count (may be NULL).
 * @return PLX_OK; PLX_ERR_UNKNOWN_OP; PLX_ERR_INVALID_ARGUMENT (NULL pointer, wrong input
 *         count, unknown or mistyped attribute, id of another IR, in-place op on a
 *         constant, max_outputs too small); PLX_ERR_NOT_FOUND (no such tensor);
 *         PLX_ERR_SHAPE_MISMATCH / PLX_ERR_DTYPE_MISMATCH (the message names the op, its
 *         input types and the rule broken). On error nothing is added and `outputs` is
 *         untouched; only when max_outputs is too small is `num_outputs` still set, to the
 *         op's output count.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 1
 */
PLX_API plx_status plx_ir_add_op(plx_ir* ir, const char* op, const plx_tensor* inputs, size_t num_inputs,
                                 const plx_attr* attrs, size_t num_attrs, plx_tensor* outputs, size_t max_outputs,
                                 size_t* num_outputs);

/**
 * Reverse-mode autodiff (PopXL autodiff): appends the ops computing the gradient of the
 * sum of `loss` with respect to each tensor in `wrt` and returns those gradients, each of
 * the same shape as its tensor. Never inserts a collective (docs/design.md, "Semantics").
 *
 * @param loss     float32 tensor (usually a scalar).
 * @param wrt      Tensors to differentiate with respect to, `num_wrt` >= 1. Borrowed.
 * @param out_grads Receives `num_wrt` gradient ids.
 * Several losses may each be differentiated, if every one is computed before the first
 * autodiff: ops added after it belong to the weight update, which runs after the gradients.
 *
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, non-float tensor, loss not
 *         depending on a wrt tensor, an op on the path without a gradient, a loss computed
 *         after an earlier autodiff: the message names it); PLX_ERR_NOT_FOUND.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 1
 */
PLX_API plx_status plx_ir_autodiff(plx_ir* ir, plx_tensor loss, const plx_tensor* wrt, size_t num_wrt,
                                   plx_tensor* out_grads);

/**
 * Type of a tensor.
 *
 * @param out_dtype May be NULL.
 * @param out_shape Receives up to `max_rank` dims (may be NULL when max_rank is 0).
 * @param out_rank  Receives the rank (may be NULL).
 * @return PLX_OK; PLX_ERR_NOT_FOUND; PLX_ERR_INVALID_ARGUMENT (ir NULL, id of another IR);
 *         PLX_ERR_BUFFER_TOO_SMALL (rank > max_rank; out_rank is still set).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 1
 */
PLX_API plx_status plx_ir_get_tensor_type(const plx_ir* ir, plx_tensor tensor, plx_dtype* out_dtype,
                                          int64_t* out_shape, size_t max_rank, size_t* out_rank);

/**
 * Name of a tensor: a variable's or stream's name as given, "<graph>/<name>" for a graph
 * input, the op's name and output index for an op's output ("" for an unnamed constant).
 * Buffer protocol as plx_session_get_report().
 *
 * @return PLX_OK; PLX_ERR_NOT_FOUND; PLX_ERR_INVALID_ARGUMENT (ir NULL, id of another IR,
 *         NULL buffer with capacity > 0); PLX_ERR_BUFFER_TOO_SMALL (out_size is still set).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 15
 */
PLX_API plx_status plx_ir_get_tensor_name(const plx_ir* ir, plx_tensor tensor, char* buffer, size_t capacity,
                                          size_t* out_size);

/* ---- Graphs (PopXL user guide, "Graphs" and "Autodiff") ----------------------------- */

/**
 * Id of a graph of an IR (PopXL popxl.Graph): the main graph (plx_ir_get_main_graph) or a
 * subgraph (plx_ir_create_graph). Opaque; 0 is never a valid id.
 */
typedef uint64_t plx_graph;
/** Id of one call of a subgraph (PopXL CallSiteInfo). Opaque; 0 is never a valid id. */
typedef uint64_t plx_call_site;

/**
 * The main graph of `ir`: where variables, streams and blocks live, and what a session runs.
 *
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_ir_get_main_graph(const plx_ir* ir, plx_graph* out_graph);

/**
 * Creates an empty subgraph (PopXL ir.create_empty_graph). Give it inputs with
 * plx_graph_add_input(), ops inside plx_ir_begin_graph() / plx_ir_end_graph(), outputs
 * with plx_graph_add_output(); call it with plx_ir_call(). Its tensors and ops belong to it
 * alone; variables, streams and blocks cannot be made inside it (pass variables as inputs).
 *
 * @param name Unique among the IR's graphs ("main" is the main graph's). Borrowed.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, empty or taken name).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_ir_create_graph(plx_ir* ir, const char* name, plx_graph* out_graph);

/**
 * Graph scopes (PopXL `with graph:`): until the matching plx_ir_end_graph(), plx_ir_add_op,
 * plx_ir_add_constant, plx_ir_call and in_sequence scopes apply to `graph`. Scopes nest.
 * An op may read only tensors of the graph it is added to.
 *
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL ir, bad id, end without a begin);
 *         PLX_ERR_NOT_FOUND (no such graph).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_ir_begin_graph(plx_ir* ir, plx_graph graph);
/**
 * Ends the innermost graph scope (see plx_ir_begin_graph). PLX_ERR_INVALID_ARGUMENT when
 * none is open.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_ir_end_graph(plx_ir* ir);

/**
 * Appends an input of `dtype` and `shape` to a subgraph (PopXL popxl.graph_input); each
 * call of the graph gives it a value.
 *
 * @param name Names the input in messages ("<graph>/<name>"). Borrowed.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, the main graph, empty name, bad
 *         dtype or shape); PLX_ERR_NOT_FOUND.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_graph_add_input(plx_ir* ir, plx_graph graph, const char* name, plx_dtype dtype,
                                       const int64_t* shape, size_t rank, plx_tensor* out_tensor);

/**
 * Appends `tensor`, a tensor of the subgraph, to its outputs (PopXL popxl.graph_output).
 *
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL ir, the main graph, a tensor of another
 *         graph); PLX_ERR_NOT_FOUND.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_graph_add_output(plx_ir* ir, plx_graph graph, plx_tensor tensor);

/**
 * A subgraph's inputs or outputs, in order (PopXL Graph.inputs / Graph.outputs).
 *
 * @param out_tensors Receives up to `max_tensors` ids (may be NULL when 0).
 * @param out_count   Receives how many there are (may be NULL).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL ir, the main graph);
 *         PLX_ERR_NOT_FOUND; PLX_ERR_BUFFER_TOO_SMALL (out_count is still set).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_graph_get_inputs(const plx_ir* ir, plx_graph graph, plx_tensor* out_tensors,
                                        size_t max_tensors, size_t* out_count);
/**
 * The outputs of a subgraph, as plx_graph_get_inputs().
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_graph_get_outputs(const plx_ir* ir, plx_graph graph, plx_tensor* out_tensors,
                                         size_t max_tensors, size_t* out_count);

/**
 * Options of plx_ir_call(). Versions (struct_size): 16 (API 14), 24 (API 20: reuse_code).
 */
typedef struct plx_call_options {
  size_t struct_size;
  /**
   * NULL, or one flag per input: nonzero marks the input modified (PopXL
   * CallSiteInfo.set_parent_input_modified): writes the graph makes to it in place
   * (scaled_add_, adamw_, ...) reach the caller's tensor, which is how a called optimizer
   * step updates a variable. Unmarked inputs are passed by value. Borrowed.
   */
  const uint8_t* modified;
  /* since PLX_API_VERSION 20 */
  /**
   * 0 (default): the callee's ops are added to the calling graph (inlined), so they are
   * planned, fused and differentiated with the caller's. Nonzero: the call reuses code
   * (PopXL's call as the IPU runs it): one op, op "call" (docs/ops.md), runs the callee's
   * kernels, bound once per device and shared by every such call site of the callee; its
   * buffers are the op's scratch, planned for the call's lifetime; main-graph autodiff
   * differentiates it by running the callee again, then its gradient graph (same bits);
   * plx_call_site_get_parent() maps only the callee's inputs and outputs. Every input is
   * passed by value: `modified` must mark none (PLX_ERR_INVALID_ARGUMENT).
   */
  int32_t reuse_code;
} plx_call_options;

/**
 * Fills `options` with the defaults (every input by value, inlined); NULL is ignored.
 * Thread safety: safe (touches only `options`).
 * @since 14
 */
PLX_API void plx_call_options_init(plx_call_options* options);

/**
 * Calls a subgraph from the current graph (PopXL ops.call / ops.call_with_info): the
 * callee's ops run here, reading `inputs` where it reads its inputs (inlined, or through
 * one op that reuses the callee's code: plx_call_options.reuse_code). A call inside a block
 * runs on that block's device. Main-graph autodiff differentiates through calls.
 *
 * @param inputs      One tensor of the current graph per callee input, of its dtype and shape. Borrowed.
 * @param options     NULL for the defaults.
 * @param outputs     Receives up to `max_outputs` ids, one per callee output (may be NULL when 0).
 * @param num_outputs Receives the callee's output count (may be NULL).
 * @param out_site    Receives the call site (may be NULL): plx_call_site_get_parent().
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, the main graph as callee, wrong
 *         number of inputs, an input of another graph, a callee that calls the current
 *         graph directly or through others, max_outputs too small, a modified input
 *         with reuse_code);
 *         PLX_ERR_SHAPE_MISMATCH / PLX_ERR_DTYPE_MISMATCH (an input's type: the message
 *         names the graph and the input); PLX_ERR_NOT_FOUND. On error nothing is added.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_ir_call(plx_ir* ir, plx_graph callee, const plx_tensor* inputs, size_t num_inputs,
                               const plx_call_options* options, plx_tensor* outputs, size_t max_outputs,
                               size_t* num_outputs, plx_call_site* out_site);

/**
 * Repeats a subgraph `count` times from the current graph (PopXL ops.repeat): its first k
 * inputs are loop-carried, k being its number of outputs (output j of one iteration is
 * input j of the next, of the same type); the other inputs are the same every iteration.
 * Returns the last iteration's outputs (with count 0, the carried inputs). Not unrolled:
 * compile time and planned memory do not depend on `count`. Inputs are passed by value.
 * Autodiff (main-graph and graph autodiff) goes through a repeat: the gradient runs the
 * body again, keeping each iteration's carried inputs (memory grows with `count`, as a
 * loop's activations do), and equals the unrolled loop's gradient bit for bit.
 * Also reachable as plx_ir_add_op("repeat") with attributes graph (a plx_graph) and count,
 * which also takes `sliced` (input indices, none carried: the argument is [count] + the
 * input's shape and iteration n reads slice n) and `stacked` (the last `stacked` outputs of
 * the graph are not carried but stacked into [count] + their shape): a scan (docs/ops.md).
 *
 * @param inputs      One tensor of the current graph per input of `graph`. Borrowed.
 * @param outputs     Receives up to `max_outputs` ids (may be NULL when 0).
 * @param num_outputs Receives the output count (may be NULL).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, count < 0, wrong number of
 *         inputs, more outputs than inputs, a graph that would run itself, max_outputs too
 *         small); PLX_ERR_SHAPE_MISMATCH (an input's type, or an output's against the input
 *         it feeds: the message names the graph); PLX_ERR_NOT_FOUND. On error nothing is added.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_ir_repeat(plx_ir* ir, plx_graph graph, int64_t count, const plx_tensor* inputs,
                                 size_t num_inputs, plx_tensor* outputs, size_t max_outputs, size_t* num_outputs);

/**
 * The caller's tensor that holds, at one call, the value of `graph_tensor`, any tensor of
 * the called graph (PopXL CallSiteInfo.graph_to_parent; an input: the argument, an output:
 * the call's output, an intermediate: the tensor the call made for it, which a gradient
 * graph's Fwd connections read).
 *
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, bad id, a tensor of another
 *         graph than the callee's); PLX_ERR_NOT_FOUND.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_call_site_get_parent(const plx_ir* ir, plx_call_site site, plx_tensor graph_tensor,
                                            plx_tensor* out_parent);

/**
 * Marks input `input` of call `site` modified after the call was added (PopXL
 * CallSiteInfo.set_parent_input_modified): from then on the call behaves as if
 * plx_ir_call had been given the flag, so the writes the called graph makes to that input
 * in place reach the caller's tensor. Mark it before the calling graph is itself called
 * (a call copies its callee's ops as they are). Marking an input twice is harmless.
 *
 * @param input Index of the called graph's input (0-based).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL ir, bad id, no such input: the message
 *         names the graph); PLX_ERR_NOT_FOUND (no such call site).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 15
 */
PLX_API plx_status plx_call_site_set_input_modified(plx_ir* ir, plx_call_site site, size_t input);

/**
 * Options of plx_graph_autodiff() (PopXL transforms.autodiff). Versions (struct_size): 40
 * (API 14).
 */
typedef struct plx_autodiff_options {
  size_t struct_size;
  /** Outputs of the graph whose gradients a call provides; NULL: every float32 output. Borrowed. */
  const plx_tensor* grads_provided;
  size_t num_grads_provided;
  /**
   * Inputs of the graph whose gradients the gradient graph returns; NULL: every float32
   * input that some provided output depends on. Borrowed.
   */
  const plx_tensor* grads_required;
  size_t num_grads_required;
} plx_autodiff_options;

/**
 * Fills `options` with the defaults; NULL is ignored.
 * Thread safety: safe (touches only `options`).
 * @since 14
 */
PLX_API void plx_autodiff_options_init(plx_autodiff_options* options);

/** How a gradient graph's input or output relates to its forward graph (PopXL ExpectedConnectionType). */
typedef int32_t plx_connection_type;
enum {
  PLX_CONNECTION_FWD = 0,      /**< the forward tensor itself (an input, output or activation) */
  PLX_CONNECTION_FWD_GRAD = 1  /**< the gradient of the forward tensor */
};

/** One expected connection of a gradient graph (PopXL ExpectedConnection). Fixed layout. */
typedef struct plx_expected_connection {
  plx_tensor fwd_tensor;     /**< a tensor of the forward graph */
  plx_connection_type type;  /**< PLX_CONNECTION_* */
} plx_expected_connection;

/**
 * Graph autodiff (PopXL transforms.autodiff): makes the gradient graph of subgraph
 * `graph`, named "<graph>_grad". Its inputs are, in order, the gradients of the provided
 * outputs, then the forward tensors its ops read (inputs, outputs, activations); its
 * outputs the gradients of the required inputs. plx_graph_get_expected_connections()
 * lists them; a call of it takes the forward tensors' parents at the forward call
 * (plx_call_site_get_parent). Gradients through calls inside `graph` follow from their
 * ops. Never inserts a collective.
 *
 * @param options NULL for the defaults.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, the main graph, a provided
 *         tensor that is not an output or a required one that is not an input, a
 *         non-float32 one, a required input no provided output depends on, an op on the
 *         path without a gradient: the message names the graph and tensor or op);
 *         PLX_ERR_NOT_FOUND. On error nothing is added.
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_graph_autodiff(plx_ir* ir, plx_graph graph, const plx_autodiff_options* options,
                                      plx_graph* out_grad_graph);

/**
 * The expected connections of a gradient graph (PopXL GradGraphInfo.expected_inputs and
 * expected_outputs): one per input, or one per output, in order.
 *
 * @param outputs  0: the inputs' connections; nonzero: the outputs'.
 * @param out      Receives up to `max_connections` (may be NULL when 0).
 * @param out_count Receives how many there are (may be NULL).
 * @param out_forward Receives the forward graph (may be NULL).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL ir, a graph graph autodiff did not make);
 *         PLX_ERR_NOT_FOUND; PLX_ERR_BUFFER_TOO_SMALL (out_count is still set).
 * Thread safety: not safe on the same `ir` from several threads at once.
 * @since 14
 */
PLX_API plx_status plx_graph_get_expected_connections(const plx_ir* ir, plx_graph grad_graph, int32_t outputs,
                                                      plx_expected_connection* out, size_t max_connections,
                                                      size_t* out_count, plx_graph* out_forward);

/* ---- Sessions ------------------------------------------------------------------------- */

/** A compiled IR bound to virtual devices, with variables resident between runs. */
typedef struct plx_session plx_session;

/**
 * A stage (PopTorch poptorch.Stage): blocks run together on one device of each replica.
 * Stages are numbered in pipeline order (the forward pass runs stage 0 first).
 */
typedef struct plx_stage {
  const char* const* blocks; /**< [num_blocks] block names; borrowed for plx_session_create */
  size_t num_blocks;
  int64_t device;            /**< device within a replica; -1 = the stage's index (short form) */
} plx_stage;

/** What device-to-host streams return (PopTorch output modes; docs/design.md "Semantics"). */
typedef int32_t plx_output_mode;
enum {
  PLX_OUTPUT_ALL = 0,     /**< every micro-batch: [device_iterations, gradient_accumulation, R] + S */
  PLX_OUTPUT_FINAL = 1,   /**< the last micro-batch of the run: [R] + S */
  PLX_OUTPUT_EVERY_N = 2, /**< every N-th iteration: [device_iterations / N, gradient_accumulation, R] + S */
  PLX_OUTPUT_SUM = 3      /**< the sum over the run: [R] + S */
};

/**
 * Session options. Initialise with plx_session_options_init(), then change fields.
 * Versions (struct_size on LP64): 1 device_iterations, device_memory_bytes,
 * threads_per_device (32); 2 collectives_plugin, collective_timeout_ms (48);
 * 4 gradient_accumulation .. profile (112); 5 prefetch_depth, io_threads (128);
 * 8 num_workers, worker_index (144); 9 weight_update_on_host (152); 10 device_memory_bytes
 * becomes size_t (was int64_t; same size and alignment); 13 gradient_bucket_bytes (160).
 */
typedef struct plx_session_options {
  size_t struct_size;            /**< sizeof(plx_session_options), set by _init */
  int64_t device_iterations;     /**< steps per plx_session_run call, >= 1 (default 1) */
  size_t device_memory_bytes;    /**< arena capacity per device in bytes; 0 = no limit (default).
                                       int64_t before version 10 (same size and alignment) */
  int32_t threads_per_device;    /**< compute threads per device (a GEMM runs as that many panels); 0 = cores / devices (default); more than the cores hold is allowed, with a warning */
  /* since PLX_API_VERSION 2 */
  const char* collectives_plugin; /**< collectives plugin name; NULL = $PLEXUS_COLLECTIVES, else "local". Copied. */
  int64_t collective_timeout_ms;  /**< how long a collective waits for a missing replica (default 60000) */
  /* since PLX_API_VERSION 4 */
  int64_t gradient_accumulation;  /**< micro-batches per weight update, >= 1 (default 1); gradients are
                                       summed over them and scaled once to their mean */
  const plx_stage* stages;        /**< [num_stages]; NULL/0 = auto-staging, or one stage without blocks */
  size_t num_stages;
  const char* execution_strategy; /**< strategy plugin, "pipelined" or "sharded"; NULL = the trivial
                                       schedule for one device per replica, else "pipelined". Copied. */
  const char* strategy_options;   /**< passed to the strategy, e.g. "fill_drain"; NULL = "". Copied. */
  plx_output_mode output_mode;    /**< default PLX_OUTPUT_ALL */
  int64_t output_return_period;   /**< N of PLX_OUTPUT_EVERY_N; must divide device_iterations (default 1) */
  int32_t offload_optimizer_state; /**< 1: optimizer state (AdamW moments, step) lives in host memory and is
                                        loaded only around the update (seed 003); default 0 */
  int32_t profile;                /**< 1: record a trace of every run (plx_session_get_trace); default 0 */
  /* since PLX_API_VERSION 5 */
  int64_t prefetch_depth;         /**< device-side buffers per stream and replica filled ahead of compute
                                       on the io threads (default 2); 0 = devices copy from host memory
                                       themselves, synchronously */
  int32_t io_threads;             /**< threads of the session's io_context (default 1) */
  /* since PLX_API_VERSION 8 */
  int64_t num_workers;            /**< processes the job's replicas are split over (seed 002 workers;
                                       default 1). Worker w hosts global replicas [w R/W, (w+1) R/W);
                                       R must be a multiple of it and the collectives plugin must
                                       serve several processes ("mpi"). Streams then carry the hosted
                                       replicas only. 0: num_workers and worker_index from the
                                       launcher (plx_workers_read_environment). */
  int64_t worker_index;           /**< this process's worker, in [0, num_workers) (default 0) */
  /* since PLX_API_VERSION 9 */
  int32_t weight_update_on_host;  /**< 1: the weight update runs on the host (seed 002's host_call with
                                       variables_on_host): the gradient of every weight-update op
                                       (adamw_, scaled_add_ in the update phase) goes to host memory as
                                       the backward pass finishes it, is mean-reduced over all R
                                       replicas of all workers there, and the op runs on the host with
                                       its optimizer state only in host memory; the devices take the
                                       new weights before the next forward pass, and the first run
                                       broadcasts the weights from replica 0. The graph should not
                                       all-reduce those gradients itself. Weights and optimizer state
                                       must be one value on all replicas (else PLX_ERR_UNSUPPORTED at
                                       plx_session_create). Default 0. */
  /* since PLX_API_VERSION 13 */
  size_t gradient_bucket_bytes;   /**< gradient buckets (PyTorch DDP's bucket_cap_mb, in bytes): the update
                                       step's replicated_all_reduce(_) of gradients a backward op computed
                                       are fused into calls of about this many bytes each (one dtype,
                                       reduction and replica grouping per call; a gradient larger than
                                       the cap is a call of its own), launched where the first of them
                                       ran; every element is reduced as alone, so the weights are the
                                       same bits. 0 = one call per all-reduce. Default 25 MiB. */
} plx_session_options;

/**
 * Fills `options` with defaults and sets struct_size. NULL is ignored.
 * Thread safety: safe from any thread (writes only `options`).
 * @since 1
 */
PLX_API void plx_session_options_init(plx_session_options* options);

/**
 * Compiles `ir` into a session: schedules the ops, plans each device's memory (liveness-
 * based reuse), chooses BLIS kernels per GEMM shape, allocates the devices and loads the
 * variables. The session copies what it needs: `ir` may be changed or destroyed after.
 *
 * @param options NULL for defaults.
 * @param out_session Receives the session; release with plx_session_destroy().
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, bad option, struct_size too
 *         small); PLX_ERR_OUT_OF_DEVICE_MEMORY (names the device, the bytes needed,
 *         the capacity and the five largest tensors live at the planned peak, without
 *         running anything); PLX_ERR_UNSUPPORTED (BLIS_ARCH_TYPE invalid for this CPU).
 * Thread safety: safe from any thread; no other thread may change `ir` during the call.
 * @since 1
 */
PLX_API plx_status plx_session_create(const plx_ir* ir, const plx_session_options* options,
                                      plx_session** out_session);

/** Where a session's replicas are in a job of several workers (seed 002). Versions
 *  (struct_size on LP64): 8 every field (48). */
typedef struct plx_replica_info {
  size_t struct_size;           /**< sizeof(plx_replica_info) as the caller knows it */
  int64_t replication_factor;   /**< global replicas R of the job */
  int64_t num_workers;          /**< processes the replicas are split over */
  int64_t worker_index;         /**< this process's worker */
  int64_t first_local_replica;  /**< global index of this worker's first replica */
  int64_t local_replicas;       /**< replicas this worker hosts; the host arrays' replica dim.
                                     Local replica l is global replica first_local_replica + l. */
} plx_replica_info;

/**
 * Fills `out` (struct_size set by the caller; fields past it are not written) with the
 * session's replicas: R, the workers, and which replicas this worker hosts.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL, struct_size too small).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 8
 */
PLX_API plx_status plx_session_get_replicas(const plx_session* session, plx_replica_info* out);

/**
 * This process's worker as its launcher tells it: a cluster definition for workers started
 * by hand (seed 002's TF_CONFIG way), PLEXUS_CLUSTER='{"workers": ["host:port", ...],
 * "index": i}', else TF_CONFIG='{"cluster": {"worker": [...]}, "task": {"type": "worker",
 * "index": i}}' (since 11); else Open MPI's OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_RANK, else
 * PMI_SIZE / PMI_RANK; 1 and 0 without a launcher. For the data loader's shards
 * (plx_loader_options.num_shards, shard_index) and the session options.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL, or a variable that is malformed or out of
 *         range, named in the message with the field).
 * Thread safety: safe from any thread while no thread changes the environment (setenv).
 * @since 10 (as plx_workers_from_environment() since 8)
 */
PLX_API plx_status plx_workers_read_environment(int64_t* out_num_workers, int64_t* out_worker_index);

/**
 * Destroys a session: cancels its running and queued runs (they end with
 *  PLX_ERR_CANCELLED), waits for them, then frees it; NULL is ignored.
 * Thread safety: not concurrently with any other call on `session`, nor from one of its
 *   callbacks.
 * @since 1
 */
PLX_API void plx_session_destroy(plx_session* session);

/**
 * A caller's array for one stream. Host arrays have shape [device_iterations, R] + S for
 * a stream of shape S, each of the two leading dims left out when it is 1 (seed 000,
 * "Data input shape"); plx_session_get_host_shape() tells the exact shape. Element
 * [i, r] is replica r's data of step i.
 */
typedef struct plx_host_array {
  plx_stream stream;
  plx_dtype dtype;
  void* data;            /**< inputs are read, outputs written; borrowed for the call */
  const int64_t* shape;  /**< borrowed */
  size_t rank;
} plx_host_array;

/**
 * Runs device_iterations iterations (each of gradient_accumulation micro-batches when
 * training, then one weight update). Blocks until done.
 *
 * @param inputs  One array per host-to-device stream (all are required).
 * @param outputs Arrays for device-to-host streams (any subset; others are discarded).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL pointer, missing or duplicate stream,
 *         wrong direction, id of another IR); PLX_ERR_NOT_FOUND (no such stream);
 *         PLX_ERR_SHAPE_MISMATCH / PLX_ERR_DTYPE_MISMATCH (names the stream, the expected
 *         and the given shape); PLX_ERR_RUNTIME (a kernel failed; the message names the
 *         op). After a run error variables may hold a partly updated step.
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 1
 */
PLX_API plx_status plx_session_run(plx_session* session, const plx_host_array* inputs, size_t num_inputs,
                                   const plx_host_array* outputs, size_t num_outputs);

/* ---- Streaming: callbacks and asynchronous runs (docs/design.md "Streaming layer") ------ */

/**
 * Fills one micro-batch of a host-to-device stream (a pull callback).
 *
 * Called on one of the session's io threads, ahead of compute (up to prefetch_depth
 * micro-batches early), once per (step, replica) of the run, in step order for each
 * replica; calls for different streams or replicas may run concurrently when io_threads >
 * 1. `buffer` holds `bytes` bytes (the stream's shape and dtype) and is valid only during
 * the call: write the data there. The callback may block (back-pressure on the device),
 * but must not call into the same session.
 *
 * @param step    0 .. device_iterations * gradient_accumulation - 1: the row of the host
 *                array this micro-batch would have been.
 * @param replica 0 .. R - 1.
 * @return PLX_OK, or any other status to fail the run: the run ends with that status and a
 *         message naming the stream.
 */
typedef plx_status (*plx_fill_fn)(void* user_data, plx_stream stream, int64_t step, int64_t replica, void* buffer,
                                  size_t bytes);

/**
 * Receives one result of a device-to-host stream as soon as it is computed (a push
 * callback), on an io thread, in order for each replica. `data` (`bytes` bytes) is valid
 * only during the call. `row` is the row of the output mode's host array that the value
 * would have gone to (plx_session_get_host_shape); values the output mode does not return
 * are not delivered. Same threading and error rules as plx_fill_fn.
 */
typedef plx_status (*plx_deliver_fn)(void* user_data, plx_stream stream, int64_t row, int64_t replica,
                                     const void* data, size_t bytes);

/** A callback for one stream: `fill` for host-to-device streams, `deliver` for device-to-host. */
typedef struct plx_stream_callback {
  plx_stream stream;
  plx_fill_fn fill;       /**< host-to-device streams; NULL otherwise */
  plx_deliver_fn deliver; /**< device-to-host streams; NULL otherwise */
  void* user_data;        /**< passed back; borrowed until the run completes */
} plx_stream_callback;

/**
 * The one completion callback of the API: called once when an asynchronous operation ends
 * (a run: plx_run_options.on_complete; a checkpoint save: plx_checkpoint_options.on_complete),
 * on one of the session's threads, before plx_run_wait() on its plx_run returns: `status`
 * PLX_OK or the operation's error, `message` its UTF-8 text ("" on success; valid during
 * the call only), `user_data` as given. Must not destroy the session nor wait for the run.
 * @since 5 (checkpoint saves: 6, as plx_checkpoint_done, now a deprecated alias)
 */
typedef void (*plx_run_complete_fn)(void* user_data, plx_status status, const char* message);

/** What a run reads and writes. Every host-to-device stream needs an input array or a fill
 *  callback (not both); device-to-host streams may have an output array or a deliver
 *  callback (or neither: discarded). */
typedef struct plx_run_options {
  size_t struct_size;                  /**< sizeof(plx_run_options), set by _init. Versions: 5 every field (72) */
  const plx_host_array* inputs;        /**< borrowed until the run completes */
  size_t num_inputs;
  const plx_host_array* outputs;       /**< borrowed until the run completes */
  size_t num_outputs;
  const plx_stream_callback* callbacks; /**< copied */
  size_t num_callbacks;
  plx_run_complete_fn on_complete;     /**< may be NULL */
  void* user_data;                     /**< for on_complete */
} plx_run_options;

/**
 * Fills `options` with an empty run (no arrays, no callbacks) and sets struct_size.
 * Thread safety: safe from any thread (writes only `options`).
 * @since 5
 */
PLX_API void plx_run_options_init(plx_run_options* options);

/** An asynchronous run in flight or finished. */
typedef struct plx_run plx_run;

/**
 * Starts a run and returns at once (PopTorch's asynchronous host loop; seed 003). Runs of
 * one session execute one after the other, in the order they were started.
 *
 * @param out_run Receives the run; release it with plx_run_destroy().
 * @return PLX_OK; the errors of plx_session_run() for bad arrays or callbacks (checked
 *         before anything starts; no run is created then).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 5
 */
PLX_API plx_status plx_session_run_async(plx_session* session, const plx_run_options* options, plx_run** out_run);

/**
 * Waits for `run` to end, at most `timeout_ms` milliseconds (< 0: no limit).
 * @return the run's status (PLX_OK, or its error with plx_last_error() set to its
 *         message; PLX_ERR_TIMEOUT when a collective of the run timed out);
 *         PLX_ERR_STILL_RUNNING when the run has not ended within `timeout_ms` (it goes
 *         on: wait again; since 17, PLX_ERR_TIMEOUT before); PLX_ERR_INVALID_ARGUMENT (NULL).
 * Thread safety: safe from any thread; plx_run_destroy() must not overlap another call on
 *   the same `run`.
 * @since 5
 */
PLX_API plx_status plx_run_wait(plx_run* run, int64_t timeout_ms);

/**
 * Cancels this run only: a queued run ends at once, the running one as soon as its devices
 * wake (a stream callback in progress returns first); both with PLX_ERR_CANCELLED, which
 * plx_run_wait() then returns. The session's other runs go on, and the session stays
 * usable. A run that has ended keeps its status (PLX_OK is returned), and so does a
 * checkpoint save's plx_run (plx_session_save_checkpoint_async), which is not cancelled.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL run).
 * Thread safety: safe from any thread, but not concurrently with plx_session_destroy() of
 *   the run's session, nor with plx_run_destroy() of `run`.
 * @since 16
 */
PLX_API plx_status plx_run_cancel(plx_run* run);

/**
 * Waits for `run` to end (without a limit) and releases it; NULL is ignored.
 * Thread safety: safe from any thread; plx_run_destroy() must not overlap another call on
 *   the same `run`.
 * @since 5
 */
PLX_API void plx_run_destroy(plx_run* run);

/**
 * Runs like plx_session_run() with callbacks: plx_session_run_async() then plx_run_wait().
 * on_complete, when set, is called before this returns.
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 5
 */
PLX_API plx_status plx_session_run_with(plx_session* session, const plx_run_options* options);

/**
 * Cancels the session's running and queued runs: each ends with PLX_ERR_CANCELLED and a
 * message saying it was cancelled. The session stays usable.
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 5
 */
PLX_API plx_status plx_session_cancel(plx_session* session);

/** Streaming figures of the session's last finished run (docs/design.md "Streaming layer"). Times
 *  in nanoseconds. Versions (struct_size on LP64): 5 every field (72); 10 h2d_bytes and
 *  d2h_bytes become size_t (were int64_t). */
typedef struct plx_stream_stats {
  size_t struct_size;        /**< set by the caller to sizeof(plx_stream_stats) */
  int64_t run_ns;            /**< wall time of the run */
  size_t h2d_bytes;          /**< bytes moved host -> device (all streams and replicas) */
  size_t d2h_bytes;          /**< bytes moved device -> host */
  int64_t transfer_ns;       /**< io-thread time spent moving them (copies and callbacks), summed over threads;
                                  0 with prefetch_depth 0 (the devices copy) */
  int64_t exposed_wait_ns;   /**< device time spent waiting for a host-to-device buffer that was not ready,
                                  summed over devices: the part of transfer_ns not hidden behind compute */
  int64_t micro_batches;     /**< host-to-device buffers the devices took */
  double mean_occupancy;     /**< buffers ready in a queue when a device took one, on average (of prefetch_depth) */
  int64_t prefetch_depth;
} plx_stream_stats;

/**
 * Fills `out_stats` (set its struct_size first).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL, struct_size too small).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 5
 */
PLX_API plx_status plx_session_get_stream_stats(const plx_session* session, plx_stream_stats* out_stats);

/**
 * Shape of the host array a stream expects or fills in plx_session_run().
 * @return PLX_OK; PLX_ERR_NOT_FOUND; PLX_ERR_INVALID_ARGUMENT; PLX_ERR_BUFFER_TOO_SMALL
 *         (out_rank is still set).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 1
 */
PLX_API plx_status plx_session_get_host_shape(const plx_session* session, plx_stream stream, int64_t* out_shape,
                                              size_t max_rank, size_t* out_rank);

/**
 * Shape of a variable's host data when read or written: the variable's shape, with
 * [num_groups] in front for PLX_RETRIEVAL_ONE_PER_GROUP and several groups, or [R] in
 * front for PLX_RETRIEVAL_ALL_REPLICAS.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL, not a variable, id of another IR);
 *         PLX_ERR_NOT_FOUND; PLX_ERR_BUFFER_TOO_SMALL (out_rank is still set).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 2
 */
PLX_API plx_status plx_session_get_variable_shape(const plx_session* session, plx_tensor tensor,
                                                  int64_t* out_shape, size_t max_rank, size_t* out_rank);

/**
 * Copies a variable's current value from the devices to `data` (PopXL weights_to_host),
 * one row per group or per replica as its retrieval mode says. With several workers
 * (num_workers > 1) every worker reads every row: from a replica it hosts when every
 * worker hosts a replica of each row (a variable shared by all replicas); otherwise
 * (grouped variables, PLX_RETRIEVAL_ALL_REPLICAS) the read is a collective that
 * all-gathers the replicas over the collectives plugin's host buffers, and every worker
 * must read the variable, in the same order.
 *
 * @param tensor     A variable of the IR the session was made from.
 * @param data_bytes Must equal the size of plx_session_get_variable_shape() in bytes.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL, not a variable, wrong size, id of
 *         another IR); PLX_ERR_NOT_FOUND; for a collective read, what the plugin returns
 *         (PLX_ERR_TIMEOUT naming the missing replicas when a worker does not read).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 1
 */
PLX_API plx_status plx_session_read_variable(const plx_session* session, plx_tensor tensor, void* data,
                                             size_t data_bytes);

/**
 * Writes a variable's value on every device (weights_from_host), in the shape reading
 * returns: with one row per group, every replica of a group gets the group's row; with
 * one per replica, each replica its own. A replica-sharded variable keeps only its shard
 * of its row, so with PLX_RETRIEVAL_ALL_REPLICAS the rows of one shard domain should agree.
 * With several workers only the replicas this worker hosts are written (each worker writes
 * the same full data). Errors as reading (never a collective, so never PLX_ERR_TIMEOUT).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 1
 */
PLX_API plx_status plx_session_write_variable(plx_session* session, plx_tensor tensor, const void* data,
                                              size_t data_bytes);

/**
 * Number of virtual devices of a session (hosted replicas x devices per replica).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 10 (as plx_session_num_devices() since 1)
 */
PLX_API plx_status plx_session_get_num_devices(const plx_session* session, size_t* out_count);

/** Memory of one virtual device, in bytes. Versions (struct_size on LP64): 1 arena_bytes ..
 *  planned_peak_bytes (48); 3 remote_buffer_bytes (56); 4 offloaded_bytes (64); 10 the
 *  fields become size_t (were int64_t; same size and alignment). */
typedef struct plx_memory_stats {
  size_t struct_size;          /**< set by the caller to sizeof(plx_memory_stats) */
  size_t arena_bytes;          /**< device arena size: what the memory plan needs */
  size_t variable_bytes;       /**< variables and constants, resident between runs */
  size_t current_bytes;        /**< bytes live now (variable_bytes between runs) */
  size_t peak_bytes;           /**< most bytes live at once since the session was created */
  size_t planned_peak_bytes;   /**< most bytes live at once in one step, per the plan */
  /* since PLX_API_VERSION 3 */
  size_t remote_buffer_bytes;  /**< this replica's remote buffers (host memory, not the arena) */
  /* since PLX_API_VERSION 4 */
  size_t offloaded_bytes;      /**< optimizer state of this device's stages kept in host memory */
} plx_memory_stats;

/** Where one replica keeps a variable, in bytes per replica. Versions (struct_size on
 *  LP64): 3 every field (32); 10 device_bytes and remote_bytes become size_t (were int64_t). */
typedef struct plx_variable_storage {
  size_t struct_size;    /**< set by the caller to sizeof(plx_variable_storage) */
  size_t device_bytes;   /**< in the device arena (a replica-sharded variable: its shard) */
  size_t remote_bytes;   /**< in a remote buffer slot */
  int64_t shard_over;    /**< replicas holding shards of one value; 1 when not sharded */
} plx_variable_storage;

/**
 * Fills `out_storage` (set its struct_size first) for variable `tensor`.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL, not a variable, struct_size too small,
 *         id of another IR); PLX_ERR_NOT_FOUND.
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 3
 */
PLX_API plx_status plx_session_get_variable_storage(const plx_session* session, plx_tensor tensor,
                                                    plx_variable_storage* out_storage);

/**
 * Fills `out_stats` (set its struct_size first) for device `device`. Fields after
 * struct_size's end are not written.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL, struct_size too small);
 *         PLX_ERR_NOT_FOUND (no such device).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 1
 */
PLX_API plx_status plx_session_get_memory_stats(const plx_session* session, size_t device,
                                                plx_memory_stats* out_stats);

/**
 * A JSON report of the compiled session: devices, memory plan, each GEMM's chosen BLIS
 * kernel set and thread count ("kernels"), and "warnings": what the session warned about
 * when it was created (compute threads outnumbering the cores; the first such warning of a
 * process is also written to stderr).
 *
 * @param buffer   Receives the NUL-terminated text (may be NULL when capacity is 0).
 * @param capacity Bytes available in `buffer`.
 * @param out_size Receives the bytes needed including the NUL (may be NULL).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT; PLX_ERR_BUFFER_TOO_SMALL (out_size tells).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 1
 */
PLX_API plx_status plx_session_get_report(const plx_session* session, char* buffer, size_t capacity,
                                          size_t* out_size);

/**
 * The memory report of the compiled session as JSON (schema "plexus.memory_report",
 * version 1; docs/profiling.md gives every key; all sizes in bytes): for each device of
 * one replica, the planned bytes live at every action of its schedule split by kind
 * (variables, activations, gradients, optimizer_state, stream_slots, scratch), the
 * tensors live at its planned peak with their sizes and kinds, its remote-buffer and
 * host-offloaded bytes, and each of its variables' per-replica storage (device_bytes,
 * remote_bytes, shard_over as plx_session_get_variable_storage). Each device's sums equal
 * plx_session_get_memory_stats of that device (arena, variable, remote-buffer and
 * offloaded bytes; the largest step is planned_peak_bytes). Made from the compiled plan
 * alone: no run is needed. Buffer protocol as plx_session_get_report().
 *
 * @param session  Borrowed.
 * @param buffer   Receives the NUL-terminated UTF-8 text (may be NULL when capacity is 0).
 * @param capacity Bytes available in `buffer`.
 * @param out_size Receives the bytes needed including the NUL (may be NULL).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (session NULL, buffer NULL with capacity > 0);
 *         PLX_ERR_BUFFER_TOO_SMALL (out_size tells; the buffer is untouched).
 * Thread safety: safe from any thread, also while a run goes on.
 * @since 18
 */
PLX_API plx_status plx_session_get_memory_report(const plx_session* session, char* buffer, size_t capacity,
                                                 size_t* out_size);

/**
 * The last run's trace as Chrome Trace Event JSON (loads in Perfetto's UI and
 * chrome://tracing): one process per replica, one thread per device; "X" events for
 * forward, backward and update steps (with stage and micro-batch), transfers and
 * collectives; "otherData" holds run_seconds, each device's busy_fraction and the
 * bubble_fraction (1 - mean busy fraction). Buffer protocol as plx_session_get_report().
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL; the session was created without
 *         `profile`); PLX_ERR_BUFFER_TOO_SMALL.
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 4
 */
PLX_API plx_status plx_session_get_trace(const plx_session* session, char* buffer, size_t capacity,
                                         size_t* out_size);

/* ---- Runtime information ------------------------------------------------------------ */

/**
 * One line describing the runtime on this machine: version, BLIS version and flavour,
 * CPU features, the BLIS kernel sets Plexus chooses from and how it chooses
 * ("chosen per GEMM shape", or "BLIS_ARCH_TYPE=6 (zen3)" when the user forced one).
 * Buffer protocol as plx_session_get_report().
 * Thread safety: safe from any thread.
 * @since 10 (as plx_get_runtime_info() since 1)
 */
PLX_API plx_status plx_runtime_get_info(char* buffer, size_t capacity, size_t* out_size);

/**
 * The catalog of registered ops as JSON, for bindings that offer every op by name
 * (docs/ops.md gives each op's semantics): {"ops": [{"name", "min_inputs", "max_inputs",
 * "attrs": [{"name", "kind" ("int", "float", "ints" or "string"), "required", "default"
 * (absent when required)}], "inplace", "differentiable", "communicates"}]}, ops sorted by
 * name. The catalog is fixed once the library is loaded. Buffer protocol as
 * plx_session_get_report().
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL buffer with capacity > 0);
 *         PLX_ERR_BUFFER_TOO_SMALL (out_size tells).
 * Thread safety: safe from any thread.
 * @since 11
 */
PLX_API plx_status plx_runtime_get_ops(char* buffer, size_t capacity, size_t* out_size);

/* ---- Datasets (IDX files: MNIST, Fashion-MNIST) ------------------------------------- */

/** Images and labels read from a pair of IDX files, in host memory. */
typedef struct plx_dataset plx_dataset;

/**
 * Reads an IDX images file and its labels file, raw or gzip-compressed.
 *
 * @param images_path, labels_path UTF-8 paths. Borrowed.
 * @param out_dataset Receives the dataset; release with plx_dataset_destroy().
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL); PLX_ERR_IO (cannot open or read: the
 *         message names the file); PLX_ERR_BAD_FORMAT (wrong magic number, unsupported
 *         element type, truncated data, trailing bytes, or image and label counts that
 *         disagree: the message names the file(s) and what is wrong).
 * Thread safety: safe from any thread.
 * @since 1
 */
PLX_API plx_status plx_dataset_load_idx(const char* images_path, const char* labels_path,
                                        plx_dataset** out_dataset);

/**
 * Releases a dataset; NULL is ignored.
 * Thread safety: not concurrently with any other use of `dataset` (a loader over it
 *   included).
 * @since 1
 */
PLX_API void plx_dataset_destroy(plx_dataset* dataset);

/**
 * Describes a dataset.
 *
 * @param out_num_samples Number of images (= labels). May be NULL.
 * @param out_image_dtype Element type of the images file (MNIST: PLX_DTYPE_UINT8). May be NULL.
 * @param out_image_shape Receives up to `max_rank` dims of ONE image (MNIST: [28, 28]).
 * @param out_image_rank  Receives that rank. May be NULL.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT; PLX_ERR_BUFFER_TOO_SMALL.
 * Thread safety: safe from any thread (a dataset is read-only).
 * @since 1
 */
PLX_API plx_status plx_dataset_get_info(const plx_dataset* dataset, int64_t* out_num_samples,
                                        plx_dtype* out_image_dtype, int64_t* out_image_shape, size_t max_rank,
                                        size_t* out_image_rank);

/**
 * Pointers to the dataset's elements, valid until plx_dataset_destroy(): images
 * [num_samples] + image shape of the image dtype, labels [num_samples] of the label dtype
 * (MNIST: uint8), row-major, host byte order.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (dataset NULL).
 * Thread safety: safe from any thread (a dataset is read-only).
 * @since 1
 */
PLX_API plx_status plx_dataset_get_data(const plx_dataset* dataset, const void** out_images,
                                        const void** out_labels, plx_dtype* out_label_dtype);

/* ---- Text corpora (a byte-level language model's data; issue 20) ------------------- */

/** Where the Debian package `fortunes` installs its corpus (plain English text). */
#define PLX_FORTUNES_DIR "/usr/share/games/fortunes"

/**
 * A text corpus in host memory, split into a training and a validation text. Bytes, not
 * characters: a model of it predicts one of 256 byte values.
 */
typedef struct plx_text plx_text;

/** Which part of a plx_text. */
typedef enum plx_text_split {
  PLX_TEXT_TRAIN = 0,      /**< the training text */
  PLX_TEXT_VALIDATION = 1  /**< the validation text */
} plx_text_split;

/**
 * Reads the corpus at `path`: a file, or a directory's regular files (symlinks and
 * strfile's `*.dat` indexes skipped) in the byte order of their names. Documents are the
 * text between lines holding only "%" (strfile's format, the `fortunes` package's; a file
 * without such lines is one document). Document k, counted from 0 over all files, goes to
 * the validation text when k % validation_every == validation_every - 1, else to the
 * training text (every 10th with 10): the same split on every machine.
 * @return PLX_OK; PLX_ERR_NOT_FOUND (`path` does not exist; for PLX_FORTUNES_DIR the
 *         message names the package to install); PLX_ERR_IO (a file cannot be read);
 *         PLX_ERR_INVALID_ARGUMENT (NULL, validation_every < 2, too few documents for two
 *         non-empty texts).
 * Thread safety: safe from any thread.
 * @since 12
 */
PLX_API plx_status plx_text_load(const char* path, int64_t validation_every, plx_text** out_text);

/**
 * Frees the text; NULL is ignored. No loader over it may still exist.
 * Thread safety: not concurrently with any other call on `text`.
 * @since 12
 */
PLX_API void plx_text_destroy(plx_text* text);

/**
 * The bytes of one split (`split` a plx_text_split, passed as int32_t like every enum of
 * this API, so that any value a caller passes is defined and checked), valid until
 * plx_text_destroy(), and the corpus's document count.
 * @param out_bytes May be NULL. @param out_size Bytes of the split; may be NULL.
 * @param out_documents Documents in both splits; may be NULL.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (text NULL, split not a plx_text_split).
 * Thread safety: safe from any thread (a text is read-only).
 * @since 12
 */
PLX_API plx_status plx_text_get_split(const plx_text* text, int32_t split, const char** out_bytes,
                                      size_t* out_size, int64_t* out_documents);

/* ---- Data loader (seed 003's poptorch.DataLoader in async mode) ------------------- */

/**
 * Feeds a session's image and label streams from a dataset through fill callbacks
 * (plx_stream_callback): shuffled by seed each epoch, split into micro-batches per
 * replica, images normalised to float32 ((x / 255 - mean) / std, torchvision's
 * Normalize), labels widened to int32. Worker threads prepare each run's data ahead while
 * the previous run computes.
 *
 * Sample order: epoch e is a permutation of [0, N) drawn by std::shuffle with an
 * mt19937_64 seeded with seed + e (the identity when shuffle is 0). Run n of an epoch
 * takes positions [n * P, (n + 1) * P) of it, P = steps_per_run * replicas * batch_size;
 * in a run, step k of replica r takes the batch_size positions starting at
 * (k * replicas + r) * batch_size (the host array order [steps, R, batch]). Each image
 * element is float32 x * (1 / (255 * std)) + (-mean / std).
 *
 * Thread-safety: the callbacks may be called from several io threads at once; the other
 * functions from one thread at a time.
 */
typedef struct plx_loader plx_loader;

/** Options of a loader. Initialise with plx_loader_options_init(). Versions (struct_size on
 *  LP64): 5 batch_size .. workers (64); 7 num_shards, shard_index (80). */
typedef struct plx_loader_options {
  size_t struct_size;     /**< sizeof(plx_loader_options), set by _init */
  int64_t batch_size;     /**< samples per micro-batch per replica, >= 1 (default 1) */
  int64_t replicas;       /**< R of the session, >= 1 (default 1) */
  int64_t steps_per_run;  /**< micro-batches per replica per run: device_iterations x gradient_accumulation
                               (default 1) */
  int32_t shuffle;        /**< 1: a new order each epoch (default 1); 0: the dataset's order */
  uint64_t seed;          /**< shuffle seed (default 0) */
  float mean;             /**< normalisation mean, finite (default 0.1307, MNIST) */
  float std;              /**< normalisation standard deviation, finite and > 0 (default 0.3081) */
  int32_t drop_last;      /**< 1: an epoch has floor(N / P) runs (default); 0: ceil(N / P), the last run
                               completed from the start of the epoch's order (position q is q mod N) */
  int32_t workers;        /**< threads preparing runs ahead, 1 .. 256 (default 2) */
  /* since PLX_API_VERSION 7 */
  int64_t num_shards;  /**< worker processes sharing each run (seed 002's Dataset.shard(num_workers, index)),
                            >= 1 (default 1): a run is cut for replicas x num_shards global replicas */
  int64_t shard_index; /**< this worker, in [0, num_shards) (default 0): it serves global replicas
                            [shard_index x replicas, (shard_index + 1) x replicas) as its replicas 0 .. replicas-1,
                            so W workers of R replicas see what one process of W x R replicas does */
} plx_loader_options;

/**
 * Fills `options` with defaults and sets struct_size. NULL is ignored.
 * Thread safety: safe from any thread (writes only `options`).
 * @since 5
 */
PLX_API void plx_loader_options_init(plx_loader_options* options);

/**
 * Creates a loader over `dataset` (uint8 images and labels, e.g. MNIST), which must
 * outlive it.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL, an option out of range naming it, a
 *         dataset of another element type, fewer samples than one run with drop_last).
 * Thread safety: safe from any thread; `dataset` must outlive the loader.
 * @since 5
 */
PLX_API plx_status plx_loader_create(const plx_dataset* dataset, const plx_loader_options* options,
                                     plx_loader** out_loader);

/**
 * Creates a loader over windows of one split of `text` (`split` a plx_text_split), which
 * must outlive it (a character model's data, nanoGPT's get_batch without its random
 * offsets). Sample i is the
 * context + 1 bytes from i * context: its tokens, int32 [context], the first context
 * bytes (0..255), served to the `images` stream of plx_loader_get_callbacks; its targets,
 * int32 [context], the last context bytes (the next token of each), served to `labels`.
 * A split of n bytes has (n - 1) / context samples; order, runs and shards as for
 * plx_loader_create; mean and std are not used.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL, split not a plx_text_split, context < 1,
 *         a split shorter than context + 1 bytes, an option out of range naming it, fewer
 *         windows than one run with drop_last).
 * Thread safety: safe from any thread; `text` must outlive the loader.
 * @since 12
 */
PLX_API plx_status plx_loader_create_text(const plx_text* text, int32_t split, int64_t context,
                                          const plx_loader_options* options, plx_loader** out_loader);

/**
 * Stops the workers and frees the loader; NULL is ignored. No run may still call it.
 * Thread safety: not concurrently with any other call on `loader`, nor while a run calls
 *   its callbacks.
 * @since 5
 */
PLX_API void plx_loader_destroy(plx_loader* loader);

/**
 * Runs per epoch (see drop_last). @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL).
 * Thread safety: one thread at a time per loader (its fill callbacks may run on several io
 *   threads at once).
 * @since 10 (as plx_loader_runs_per_epoch() since 5)
 */
PLX_API plx_status plx_loader_get_runs_per_epoch(const plx_loader* loader, int64_t* out_runs);

/**
 * Makes the callbacks serve run `run` of epoch `epoch` and starts preparing it (and the
 * next run: run + 1, or run 0 of epoch + 1) on the workers; other runs prepared ahead are
 * discarded. Call it before each session run, and for the next run only once the
 * previous run has taken its data (e.g. after plx_run_wait): the callbacks serve one run
 * at a time, and a callback still waiting for the previous run then fails with
 * PLX_ERR_RUNTIME. The callbacks wait until the run's data is ready.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL, epoch < 0, run outside [0, runs)).
 * Thread safety: one thread at a time per loader (its fill callbacks may run on several io
 *   threads at once).
 * @since 5
 */
PLX_API plx_status plx_loader_begin_run(plx_loader* loader, int64_t epoch, int64_t run);

/**
 * Writes the two callbacks that feed `images` (float32, batch_size x image size elements
 * per call, any shape) and `labels` (int32 [batch_size]) to out_callbacks[0] and [1], for
 * plx_run_options.callbacks. A callback given a buffer of the wrong size fails the run
 * with PLX_ERR_SHAPE_MISMATCH naming the stream and both sizes; one called before any
 * plx_loader_begin_run with PLX_ERR_RUNTIME. A failing callback also sets
 * plx_last_error() of its thread.
 * The callbacks stay valid until the loader is destroyed.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL).
 * Thread safety: one thread at a time per loader (its fill callbacks may run on several io
 *   threads at once).
 * @since 5
 */
PLX_API plx_status plx_loader_get_callbacks(plx_loader* loader, plx_stream images, plx_stream labels,
                                            plx_stream_callback* out_callbacks);

/* ---- Checkpoints (docs/design.md "Checkpoints"; docs/checkpoint-format.md) ------------------ */

/** The byte-shuffle filter applied before zstd (byte k of every element stored together). */
typedef enum plx_shuffle {
  PLX_SHUFFLE_AUTO = 0, /**< float32 tensors shuffled, the others not (default) */
  PLX_SHUFFLE_OFF = 1,
  PLX_SHUFFLE_ON = 2
} plx_shuffle;

/** Options of saving and loading checkpoints. Initialise with plx_checkpoint_options_init().
 *  Versions (struct_size on LP64): 6 every field (72); 10 on_complete is a
 *  plx_run_complete_fn (the same signature as plx_checkpoint_done), staging_bytes a size_t
 *  (was uint64_t). */
typedef struct plx_checkpoint_options {
  size_t struct_size;  /**< sizeof(plx_checkpoint_options), set by _init */
  int32_t level;       /**< saving: zstd level, 1 .. 19 (default 3) */
  int32_t threads;     /**< saving: tensors compressed at once, >= 1 (default 1) */
  int32_t shuffle;     /**< saving: a plx_shuffle (default PLX_SHUFFLE_AUTO) */
  int32_t strict;      /**< loading: 1 (default) the checkpoint must hold exactly the session's
                            tensors; 0 loads the tensors found in both, by name */
  size_t num_counters; /**< the caller's counters (epoch, data loader position, ...) */
  const char* const* counter_names; /**< num_counters names; borrowed during the call */
  int64_t* counter_values; /**< saving: the values stored; loading: receives the stored values */
  plx_run_complete_fn on_complete; /**< asynchronous saves: optional completion callback, called on a
                                        checkpoint thread */
  void* user_data;                 /**< passed to on_complete */
  size_t staging_bytes;   /**< asynchronous saves: snapshot bytes held at once before a save
                               waits for earlier ones (default 1 GiB); fixed by the session's
                               first asynchronous save, as is `threads` for its checkpoint
                               threads */
} plx_checkpoint_options;

/**
 * Fills `options` with the defaults and sets struct_size.
 * Thread safety: safe from any thread (writes only `options`).
 * @since 6
 */
PLX_API void plx_checkpoint_options_init(plx_checkpoint_options* options);

/**
 * Saves the session's state between runs (a run in progress finishes first; runs started
 * meanwhile wait): every variable (replicated, grouped, replica-sharded, remote, optimizer
 * state on the device or offloaded) as one full unpadded row per replica group, remote
 * buffer slots holding no variable as one row per replica, the step counter, and the
 * caller's counters. Written to a temporary file in the target's directory, fsynced,
 * renamed over `path`, directory fsynced: a crash leaves the previous file intact.
 * @param options NULL for defaults.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL, struct_size too small, level, threads,
 *         shuffle, counters); PLX_ERR_IO (naming the file and the system's reason).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 6
 */
PLX_API plx_status plx_session_save_checkpoint(plx_session* session, const char* path,
                                               const plx_checkpoint_options* options);

/**
 * Like plx_session_save_checkpoint(), but returns once the state is copied to host memory;
 * the session's checkpoint threads ("plx-ckpt<k>") compress and write it while runs go on.
 * They run under Linux's SCHED_IDLE, on cores the devices leave idle, so a save slows
 * training little but takes longer on a machine kept busy. Wait with plx_run_wait() (its status
 * is the save's) and free with plx_run_destroy(). Destroying the session waits for
 * pending saves.
 * @return PLX_OK; the argument errors of plx_session_save_checkpoint() (nothing pending).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 6
 */
PLX_API plx_status plx_session_save_checkpoint_async(plx_session* session, const char* path,
                                                     const plx_checkpoint_options* options, plx_run** out_save);

/**
 * Loads a checkpoint into the session, in the session's layout: a tensor saved with one
 * row (or equal rows) goes to every replica group, with as many rows as the session's
 * groups row by row; RTS shards are cut from the full rows. The file is read and checked
 * in full first, so on any error the session is unchanged. Sets the step counter and,
 * for each of options->counter_names, counter_values.
 * @return PLX_OK; PLX_ERR_IO; PLX_ERR_BAD_FORMAT (saying what is damaged: magic, version,
 *         sizes, checksums, manifest, a tensor's frame); PLX_ERR_INVALID_ARGUMENT (listing
 *         tensors missing, extra (strict) or mismatched in dtype, shape or groups);
 *         PLX_ERR_NOT_FOUND (a counter the checkpoint does not hold).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 6
 */
PLX_API plx_status plx_session_load_checkpoint(plx_session* session, const char* path,
                                               const plx_checkpoint_options* options);

/**
 * Steps the session has completed: device_iterations per successful run (weight updates
 *  when training); restored by loading a checkpoint.
 *  @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (NULL).
 * Thread safety: safe from any thread; runs of one session execute one at a time, in the
 *   order they were started.
 * @since 6
 */
PLX_API plx_status plx_session_get_step(const plx_session* session, int64_t* out_step);

/* ---- Deprecated names (removed at 1.0) ---------------------------------------------- */

/* Names that broke plx_<object>_<verb>, renamed in version 10. Each old symbol is still
 * exported and calls the new function (same arguments, same result; its error messages
 * name the new function). Using one warns unless PLX_NO_DEPRECATION_WARNINGS is defined. */

/**
 * Deprecated since 10: use plx_ir_begin_sequence().
 * Thread safety: as plx_ir_begin_sequence().
 * @since 3; deprecated since 10
 */
PLX_API plx_status plx_ir_in_sequence_begin(plx_ir* ir) PLX_DEPRECATED("plx_ir_begin_sequence");
/**
 * Deprecated since 10: use plx_ir_end_sequence().
 * Thread safety: as plx_ir_end_sequence().
 * @since 3; deprecated since 10
 */
PLX_API plx_status plx_ir_in_sequence_end(plx_ir* ir) PLX_DEPRECATED("plx_ir_end_sequence");
/**
 * Deprecated since 10: use plx_replica_grouping_get_num_groups().
 * Thread safety: as plx_replica_grouping_get_num_groups().
 * @since 2; deprecated since 10
 */
PLX_API plx_status plx_replica_grouping_num_groups(const plx_replica_grouping* grouping, int64_t* out_num_groups)
    PLX_DEPRECATED("plx_replica_grouping_get_num_groups");
/**
 * Deprecated since 10: use plx_runtime_get_info().
 * Thread safety: as plx_runtime_get_info().
 * @since 1; deprecated since 10
 */
PLX_API plx_status plx_get_runtime_info(char* buffer, size_t capacity, size_t* out_size)
    PLX_DEPRECATED("plx_runtime_get_info");
/**
 * Deprecated since 10: use plx_workers_read_environment().
 * Thread safety: as plx_workers_read_environment().
 * @since 8; deprecated since 10
 */
PLX_API plx_status plx_workers_from_environment(int64_t* out_num_workers, int64_t* out_worker_index)
    PLX_DEPRECATED("plx_workers_read_environment");
/**
 * Deprecated since 10: use plx_loader_get_runs_per_epoch().
 * Thread safety: as plx_loader_get_runs_per_epoch().
 * @since 5; deprecated since 10
 */
PLX_API plx_status plx_loader_runs_per_epoch(const plx_loader* loader, int64_t* out_runs)
    PLX_DEPRECATED("plx_loader_get_runs_per_epoch");
/**
 * Deprecated since 10: use plx_session_get_num_devices().
 * Thread safety: as plx_session_get_num_devices().
 * @since 1; deprecated since 10
 */
PLX_API plx_status plx_session_num_devices(const plx_session* session, size_t* out_count)
    PLX_DEPRECATED("plx_session_get_num_devices");
/** Deprecated since 10: the completion callback of checkpoint saves is plx_run_complete_fn. */
typedef plx_run_complete_fn plx_checkpoint_done;

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_PLEXUS_H */
