// The C face of a cross-worker collectives plugin, written once: the opaque plx_comm of the
// ABI holds the plugin's communicator, and worker_plugin_table<Name, Open>() is the table a
// plugin returns from its one exported symbol. Every entry is noexcept
// (collectives_common/c_entry.h). A plugin supplies its name and how it opens a
// communicator:
//
//   constexpr char kName[] = "gloo";
//   Outcome open(const plx_comm_config& config, std::unique_ptr<workers::Communicator>* out);
//   extern "C" PLX_EXPORT const plx_collectives_plugin* plx_collectives_plugin_v1(void) {
//     return worker_plugin_table<kName, open>();
//   }
#ifndef PLEXUS_COLLECTIVES_WORKERS_PLUGIN_TABLE_H
#define PLEXUS_COLLECTIVES_WORKERS_PLUGIN_TABLE_H

#include <memory>

#include "collectives_common/c_entry.h"
#include "collectives_common/validation.h"
#include "collectives_workers/collective_call.h"
#include "collectives_workers/communicator.h"
#include "plexus/collectives_plugin.h"

/** The ABI's opaque communicator: the plugin's, behind the cross-worker base. */
struct plx_comm {
  std::unique_ptr<plexus::collectives::workers::Communicator> impl;
  void abort(const char* reason) { impl->abort(reason); }
};

namespace plexus::collectives::workers {

/** Opens a communicator for a valid `config` (validate_config passed) into *out. */
using OpenCommunicator = Outcome (*)(const plx_comm_config& config, std::unique_ptr<Communicator>* out);

namespace table_entries {

template <const char* Name, OpenCommunicator Open>
plx_status comm_create(const plx_comm_config* config, plx_comm** out_comm, char* message,
                       size_t message_capacity) noexcept {
  return guarded(Name, message, message_capacity, [&] {
    Outcome valid = validate_config(config, out_comm);
    std::unique_ptr<Communicator> comm;
    if (valid.is_ok()) valid = Open(*config, &comm);
    if (valid.is_ok()) *out_comm = new plx_comm{std::move(comm)};
    return valid;
  });
}

inline void comm_destroy(plx_comm* comm) noexcept { delete comm; }

template <const char* Name, Collective kind>
plx_status collective(plx_comm* comm, const plx_coll_args* args) noexcept {
  return guarded_collective(Name, kind, comm, args,
                            [](plx_comm& c, const plx_coll_args& a) { return run_collective(*c.impl, a, kind); });
}

inline void abort_comm(plx_comm* comm, const char* reason) noexcept { guarded_abort(comm, reason); }

}  // namespace table_entries

/** The plugin table of the cross-worker plugin `Name` (static storage, never freed). */
template <const char* Name, OpenCommunicator Open>
const plx_collectives_plugin* worker_plugin_table() {
  using namespace table_entries;
  static const plx_collectives_plugin table = {
      sizeof(plx_collectives_plugin),
      PLX_COLLECTIVES_ABI_VERSION,
      Name,
      comm_create<Name, Open>,
      comm_destroy,
      collective<Name, Collective::all_reduce>,
      collective<Name, Collective::all_gather>,
      collective<Name, Collective::reduce_scatter>,
      collective<Name, Collective::broadcast>,
      collective<Name, Collective::barrier>,
      abort_comm,
  };
  return &table;
}

}  // namespace plexus::collectives::workers

#endif  // PLEXUS_COLLECTIVES_WORKERS_PLUGIN_TABLE_H
