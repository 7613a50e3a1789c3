#include "core/ops/op_def.h"

namespace plexus::ops {

OpRegistration::OpRegistration(const OpDef& def) {
  ir::OpSchemaRegistry::instance().add(static_cast<const ir::OpSchema&>(def));
  KernelRegistry::instance().add(def.name, static_cast<const KernelDef&>(def));
}

}  // namespace plexus::ops
