// C API: block scopes (pipelined and sharded execution; seed 003).
#include "abi/src/handles.h"

using namespace plexus;
using abi::guarded;
using abi::require;

extern "C" {

PLX_API plx_status plx_ir_begin_block(plx_ir* ir, const char* name, int64_t device) {
  return guarded([&] {
    require(ir, "plx_ir_begin_block", "ir");
    require(name, "plx_ir_begin_block", "name");
    ir->graph.begin_block(name, device);
  });
}

PLX_API plx_status plx_ir_end_block(plx_ir* ir) {
  return guarded([&] {
    require(ir, "plx_ir_end_block", "ir");
    ir->graph.end_block();
  });
}

}  // extern "C"
