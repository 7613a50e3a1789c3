// The names of C API version 9 and earlier that broke plx_<object>_<verb>, kept exported as
// deprecated aliases until 1.0 (plexus.h, "Deprecated names"): each calls its replacement.
// Delete this file at 1.0.
#include <plexus/plexus.h>

extern "C" {

PLX_API plx_status plx_ir_in_sequence_begin(plx_ir* ir) { return plx_ir_begin_sequence(ir); }

PLX_API plx_status plx_ir_in_sequence_end(plx_ir* ir) { return plx_ir_end_sequence(ir); }

PLX_API plx_status plx_replica_grouping_num_groups(const plx_replica_grouping* grouping, int64_t* out_num_groups) {
  return plx_replica_grouping_get_num_groups(grouping, out_num_groups);
}

PLX_API plx_status plx_get_runtime_info(char* buffer, size_t capacity, size_t* out_size) {
  return plx_runtime_get_info(buffer, capacity, out_size);
}

PLX_API plx_status plx_workers_from_environment(int64_t* out_num_workers, int64_t* out_worker_index) {
  return plx_workers_read_environment(out_num_workers, out_worker_index);
}

PLX_API plx_status plx_loader_runs_per_epoch(const plx_loader* loader, int64_t* out_runs) {
  return plx_loader_get_runs_per_epoch(loader, out_runs);
}

PLX_API plx_status plx_session_num_devices(const plx_session* session, size_t* out_count) {
  return plx_session_get_num_devices(session, out_count);
}

}  // extern "C"
