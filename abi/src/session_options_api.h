// Reading a caller's plx_session_options into session::SessionOptions
// (abi/src/session_options_api.cpp).
#pragma once

#include <plexus/plexus.h>

#include "core/session/session_options.h"

namespace plexus::abi {

/// The caller's options over the defaults: fields past its struct_size keep their defaults,
/// and NULL is all defaults. Throws InvalidArgument naming the field for a struct_size
/// short of version 1, a NULL stages array or block name, or a stage device below -1.
/// The values are not checked: session::check_session_options does that.
session::SessionOptions to_session_options(const plx_session_options* options);

}  // namespace plexus::abi
