/* Deliberately broken collectives plugins for the loader tests. One source, one flavour
 * per compile definition:
 *   MOCK_WRONG_ABI       reports ABI version 99
 *   MOCK_NO_SYMBOL       exports no entry point at all
 *   MOCK_FAILING_INIT    comm_create fails with a message
 *   MOCK_NULL_ENTRY      the table's all_gather is NULL
 *   MOCK_SMALL_TABLE     struct_size smaller than version 1's table
 *   MOCK_NULL_TABLE      the entry point returns NULL
 *   MOCK_TIMING_OUT      every collective times out at once, as a member that never arrives
 *                        makes one (a fault injected at a known point: c_api_run_test.cpp)
 *   MOCK_ECHO_CONFIG     comm_create fails with a message spelling out the config's cluster
 *                        definition (what the core passed: collectives_test.cpp)
 */
#include <plexus/collectives_plugin.h>
#include <stdio.h>
#include <stdlib.h>

struct plx_comm {
  int unused;
};

#ifdef MOCK_ECHO_CONFIG
/* "struct_size 80, workers 2 [a:1 b:1], index 1, rendezvous /r, source PLEXUS_CLUSTER". */
static void echo_config(const plx_comm_config* config, char* message, size_t capacity) {
  int64_t i;
  size_t used = (size_t)snprintf(message, capacity, "struct_size %zu, workers %lld [", config->struct_size,
                                 (long long)config->num_worker_addresses);
  for (i = 0; i < config->num_worker_addresses && used < capacity; ++i) {
    used += (size_t)snprintf(message + used, capacity - used, "%s%s", i > 0 ? " " : "", config->worker_addresses[i]);
  }
  if (used < capacity) {
    snprintf(message + used, capacity - used, "], index %lld, rendezvous %s, source %s", (long long)config->worker_index,
             config->rendezvous != NULL ? config->rendezvous : "NULL",
             config->cluster_source != NULL ? config->cluster_source : "NULL");
  }
}
#endif

static plx_status create(const plx_comm_config* config, plx_comm** out, char* message, size_t capacity) {
  (void)config;
#ifdef MOCK_ECHO_CONFIG
  (void)out;
  echo_config(config, message, capacity);
  return PLX_ERR_PLUGIN;
#elif defined(MOCK_FAILING_INIT)
  (void)out;
  snprintf(message, capacity, "mock: no network today");
  return PLX_ERR_PLUGIN;
#else
  (void)message;
  (void)capacity;
  *out = (plx_comm*)calloc(1, sizeof(plx_comm));
  return PLX_OK;
#endif
}

static void destroy(plx_comm* comm) { free(comm); }

static plx_status unsupported(plx_comm* comm, const plx_coll_args* args) {
  (void)comm;
#ifdef MOCK_TIMING_OUT
  snprintf(args->message, args->message_capacity, "mock: replica %lld waited for a member that never arrived",
           (long long)args->replica);
  return PLX_ERR_TIMEOUT;
#else
  snprintf(args->message, args->message_capacity, "mock: collectives are not implemented");
  return PLX_ERR_UNSUPPORTED;
#endif
}

static void abort_comm(plx_comm* comm, const char* reason) {
  (void)comm;
  (void)reason;
}

static const plx_collectives_plugin table = {
#ifdef MOCK_SMALL_TABLE
    sizeof(size_t) + sizeof(uint32_t),
#else
    sizeof(plx_collectives_plugin),
#endif
#ifdef MOCK_WRONG_ABI
    99,
#else
    PLX_COLLECTIVES_ABI_VERSION,
#endif
    "mock",
    create,
    destroy,
    unsupported,
#ifdef MOCK_NULL_ENTRY
    NULL,
#else
    unsupported,
#endif
    unsupported,
    unsupported,
    unsupported,
    abort_comm};

#ifndef MOCK_NO_SYMBOL
__attribute__((visibility("default"))) const plx_collectives_plugin* plx_collectives_plugin_v1(void) {
#ifdef MOCK_NULL_TABLE
  return table.struct_size == 0 ? &table : NULL; /* always NULL; keeps `table` used */
#else
  return &table;
#endif
}
#else
__attribute__((visibility("default"))) const plx_collectives_plugin* plx_collectives_plugin_v0(void) { return &table; }
#endif
