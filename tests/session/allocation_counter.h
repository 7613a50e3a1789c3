// Counts every operator new in the session test binary (allocation_counter.cpp replaces
// the global operator new), to check that running allocates nothing per op or per step.
#pragma once

namespace plexus::session::testing {
long allocation_count();
}
