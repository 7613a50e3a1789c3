// The collectives plugin this run of the conformance suite checks: a shared library
// loaded with dlopen from the path given on the command line (--plugin=PATH) or in
// $PLEXUS_CONFORMANCE_PLUGIN, and its table, fetched through the exported symbol.
#ifndef PLEXUS_TESTS_PLUGINS_CONFORMANCE_PLUGIN_UNDER_TEST_H
#define PLEXUS_TESTS_PLUGINS_CONFORMANCE_PLUGIN_UNDER_TEST_H

#include <string>

#include "plexus/collectives_plugin.h"

namespace conformance {

/**
 * Loads the plugin at `path` and checks its table (abi_version, struct_size, entries).
 * Returns "" on success, else what went wrong. Call once, before the tests run.
 */
std::string load_plugin(const std::string& path);

/** The loaded plugin's table (load_plugin must have succeeded). */
const plx_collectives_plugin& plugin();

/** The path load_plugin() was given. */
const std::string& plugin_path();

/** The entry point, looked up again with dlsym (for the table tests). */
plx_collectives_plugin_entry plugin_entry();

}  // namespace conformance

#endif  // PLEXUS_TESTS_PLUGINS_CONFORMANCE_PLUGIN_UNDER_TEST_H
