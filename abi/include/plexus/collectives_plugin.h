/*
 * Plexus collectives plugin ABI.
 *
 * A collectives plugin moves data between the replicas of a replicated program
 * (docs/design.md, "Plugins"; seed 001 "Replication"; seed 002 for several processes). It is a
 * shared library named `libplexus-collectives-<name>.so` that exports ONE C symbol:
 *
 *     const plx_collectives_plugin* plx_collectives_plugin_v1(void);
 *
 * returning a table that lives as long as the library is loaded. Plexus finds the library
 * in $PLEXUS_PLUGIN_PATH (colon-separated folders), then in <folder of libplexus.so>/plexus
 * (an install, under any prefix), then next to libplexus.so (a build tree), and picks it by the session option `collectives_plugin` or
 * the environment variable PLEXUS_COLLECTIVES (default "local"). A plugin compiles against
 * this header and <plexus/types.h> only (for plx_status and plx_dtype); it never links
 * libplexus.
 *
 * Model
 * -----
 * A communicator (plx_comm) serves `replication_factor` global replicas, of which this
 * process hosts `local_replicas` consecutive ones starting at `first_local_replica`. Each
 * hosted replica runs on its own thread and calls the collective functions for itself
 * ("per-replica calls"). A call names a group: the sorted global indices of the replicas
 * that take part (a group of a replica grouping, seed 001 13.2). Every member of a group
 * makes the same sequence of calls on that group, in the same order; the k-th call of one
 * member meets the k-th call of every other member. Calls on disjoint groups proceed
 * independently. A call returns when the calling replica's part is complete and its
 * buffers may be reused.
 *
 * Element layout (count = plx_coll_args.count, g = group size, p = the caller's position
 * in the sorted member list):
 *   all_reduce      send: count elements, recv: count elements = op over members of send.
 *   all_gather      send: count elements, recv: g * count elements, member i's send at i*count.
 *   reduce_scatter  send: g * count elements, recv: count elements = op over members of
 *                   their send[p*count, (p+1)*count).
 *   broadcast       recv: count elements; on the member whose global index is `root`, send
 *                   holds the data (send may equal recv); every member's recv gets it.
 *                   Members other than the root may pass send = NULL.
 *   barrier         no data (send and recv NULL, count 0).
 * send may equal recv (in place) for all_reduce and broadcast; for all_gather and
 * reduce_scatter the buffers must not overlap. Reductions: PLX_REDUCE_SUM, _MEAN (sum
 * divided by g; for int32 the exact sum divided by g, truncating toward zero), _MAX, _MIN.
 * int32 sums wrap modulo 2^32. Every member must receive bit-identical results, and results
 * must not depend on timing: reduce in member order (float32 sums accumulate in float32
 * from the lowest member up). NaN inputs to _MAX / _MIN give an unspecified one of the
 * values but still the same result on every member.
 *
 * Errors
 * ------
 * Every call checks that all members agree on the collective, count, dtype and buffer
 * kind, plus op for all_reduce / reduce_scatter and root for broadcast; a disagreement
 * fails the call on every member with PLX_ERR_INVALID_ARGUMENT (never a hang, never a
 * wrong result), and the message names the group and the values that differ. Arguments
 * that are wrong on their own (NULL buffers with count > 0, the caller not a member,
 * members not increasing or outside [0, R), a replica this process does not host, a bad
 * dtype or op, struct_size too small) fail at once, on the caller only, with
 * PLX_ERR_INVALID_ARGUMENT; the other members then wait for the timeout or an abort. A
 * member that does not arrive within `timeout_ms` of the first arrival fails the call on
 * every waiting member with PLX_ERR_TIMEOUT, and the message names the group and the
 * missing replica(s); the group stays failed (every later call on it, the late member's
 * included, returns PLX_ERR_TIMEOUT). abort() fails every waiting and every later call on
 * the communicator with PLX_ERR_CANCELLED; a call whose members have all arrived finishes
 * its data movement first (the others are reading its buffers). On error, a call writes a
 * NUL-terminated UTF-8 message into args->message (at most message_capacity bytes,
 * truncated if needed; nothing when struct_size itself is too small) and leaves recv
 * unspecified. Conventions for messages: groups as "{0,1,2}", missing replicas as
 * "replica 2" or "replicas 1,3".
 *
 * Thread safety: comm_create/comm_destroy are called once, from one thread, with no call in
 * flight. The collective functions are called concurrently from the hosted replicas'
 * threads (one call at a time per replica). abort() may be called from any thread at any
 * time, including concurrently with calls.
 *
 * A plugin that serves only some jobs (e.g. the local plugin serves one process, so it
 * needs local_replicas == replication_factor) refuses others in comm_create with
 * PLX_ERR_UNSUPPORTED and a message saying why.
 *
 * Versioning: the table only grows; a field is added at the end with a new minor
 * version and Plexus checks struct_size before reading it. A change that breaks old
 * plugins bumps PLX_COLLECTIVES_ABI_VERSION and the exported symbol's _vN suffix.
 *   1    communicators, all_reduce, all_gather, reduce_scatter, broadcast, barrier, abort.
 *   1.1  plx_comm_config carries the cluster definition (worker_addresses .. cluster_source),
 *        so that a plugin whose workers find each other by address never reads the
 *        environment itself. A plugin reads those fields only when config->struct_size covers
 *        them, and accepts every struct_size from version 1's on.
 */
#ifndef PLEXUS_COLLECTIVES_PLUGIN_H
#define PLEXUS_COLLECTIVES_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "plexus/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** ABI version of this header; a plugin returns it in plx_collectives_plugin.abi_version. */
#define PLX_COLLECTIVES_ABI_VERSION 1

/** Name of the symbol a plugin exports. */
#define PLX_COLLECTIVES_PLUGIN_SYMBOL "plx_collectives_plugin_v1"

/** Reduction applied by all_reduce and reduce_scatter. */
typedef int32_t plx_reduce_op;
enum { PLX_REDUCE_SUM = 0, PLX_REDUCE_MEAN = 1, PLX_REDUCE_MAX = 2, PLX_REDUCE_MIN = 3 };

/** Where a buffer lives. On CPU devices both are host memory; a plugin for real devices
 *  may need to stage device buffers. Host buffers serve weights-to-host across processes. */
typedef int32_t plx_buffer_kind;
enum { PLX_BUFFER_DEVICE = 0, PLX_BUFFER_HOST = 1 };

/** A communicator, owned by the plugin. */
typedef struct plx_comm plx_comm;

/**
 * What a communicator serves. Versions (plugin ABI, struct_size): 1 struct_size ..
 * timeout_ms (40 bytes on LP64); 1.1 worker_addresses .. cluster_source (80).
 *
 * The cluster definition (1.1) is the one Plexus read from the environment for workers
 * started by hand (PLEXUS_CLUSTER='{"workers": ["host:port", ...], "index": i}', optional
 * "rendezvous", else TF_CONFIG; plexus.h, plx_workers_read_environment): the address of
 * every worker in worker order, this process's worker, and where the workers may meet.
 * Without one (a single process, or workers under mpirun) worker_addresses, rendezvous and
 * cluster_source are NULL and num_worker_addresses and worker_index 0. Every pointer is
 * borrowed for the comm_create call only: a plugin copies what it keeps.
 */
typedef struct plx_comm_config {
  size_t struct_size;            /**< sizeof(plx_comm_config) as the caller knows it */
  int64_t replication_factor;    /**< global replicas R >= 1 */
  int64_t first_local_replica;   /**< global index of this process's first replica */
  int64_t local_replicas;        /**< replicas hosted by this process, >= 1 */
  int64_t timeout_ms;            /**< how long a call waits for missing members, > 0 */
  /* since plugin ABI 1.1 */
  const char* const* worker_addresses; /**< "host:port" per worker, in worker order, or NULL */
  int64_t num_worker_addresses;        /**< workers W of the definition, >= 1; 0 without one */
  int64_t worker_index;                /**< this process's worker, in [0, W); 0 without one */
  const char* rendezvous;              /**< PLEXUS_CLUSTER's "rendezvous" folder, or NULL */
  const char* cluster_source;          /**< "PLEXUS_CLUSTER" or "TF_CONFIG", or NULL */
} plx_comm_config;

/** A group of replicas taking part in one call. */
typedef struct plx_coll_group {
  const int64_t* members;  /**< global replica indices, strictly increasing; borrowed for the call */
  size_t size;             /**< number of members, >= 1 */
} plx_coll_group;

/** Arguments of one collective call (see "Element layout" above for each collective).
 *  Versions (plugin ABI): 1 every field. */
typedef struct plx_coll_args {
  size_t struct_size;           /**< sizeof(plx_coll_args) as the caller knows it */
  plx_coll_group group;         /**< members; the caller is one of them */
  int64_t replica;              /**< global index of the calling replica */
  const void* send;             /**< input buffer (NULL for barrier); borrowed for the call */
  void* recv;                   /**< output buffer (NULL for barrier); borrowed for the call */
  size_t count;                 /**< elements, as defined per collective */
  plx_dtype dtype;              /**< PLX_DTYPE_FLOAT32 or PLX_DTYPE_INT32 */
  plx_reduce_op op;             /**< all_reduce and reduce_scatter */
  int64_t root;                 /**< broadcast: global index of the source replica */
  plx_buffer_kind buffer_kind;  /**< PLX_BUFFER_DEVICE or PLX_BUFFER_HOST */
  char* message;                /**< receives an error message; never NULL */
  size_t message_capacity;      /**< bytes available at `message`, >= 1 */
} plx_coll_args;

/** One collective call; returns PLX_OK or an error as described under "Errors". */
typedef plx_status (*plx_coll_fn)(plx_comm* comm, const plx_coll_args* args);

/** The table a plugin returns. Versions (plugin ABI): 1 every field. */
typedef struct plx_collectives_plugin {
  size_t struct_size;     /**< sizeof(plx_collectives_plugin) as the plugin knows it */
  uint32_t abi_version;   /**< PLX_COLLECTIVES_ABI_VERSION */
  const char* name;       /**< short name, e.g. "local"; static storage */

  /**
   * Creates a communicator. On error returns non-PLX_OK, leaves *out_comm untouched and
   * writes a message into `message` (capacity `message_capacity`).
   */
  plx_status (*comm_create)(const plx_comm_config* config, plx_comm** out_comm, char* message,
                            size_t message_capacity);
  /** Destroys a communicator; NULL is ignored. No call may be in flight. */
  void (*comm_destroy)(plx_comm* comm);

  plx_coll_fn all_reduce;
  plx_coll_fn all_gather;
  plx_coll_fn reduce_scatter;
  plx_coll_fn broadcast;
  plx_coll_fn barrier;

  /**
   * Fails every waiting and every later call on `comm` with PLX_ERR_CANCELLED and a
   * message containing `reason` (borrowed for the call). Used when one replica fails, so
   * that the others never wait for it.
   */
  void (*abort)(plx_comm* comm, const char* reason);
} plx_collectives_plugin;

/** Type of the exported entry point. */
typedef const plx_collectives_plugin* (*plx_collectives_plugin_entry)(void);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_COLLECTIVES_PLUGIN_H */
