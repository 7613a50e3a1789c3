#include "core/ir/error.h"

namespace plexus::ir {

void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

}  // namespace plexus::ir
