# Finds Debian's BLIS, pthread flavour, as a static archive.
#
# Debian 12 ships BLIS 0.9 without a pkg-config or CMake file, with headers and libraries
# in one folder per threading flavour (blis-serial, blis-pthread, blis-openmp). Plexus:
# - takes the pthread flavour on purpose: each virtual device is a thread of ours and asks
#   BLIS for a thread count per call (rntm_t); OpenMP would add a second, global thread
#   pool fighting ours, and the serial flavour could never use both cores for one device;
# - links the static archive: the shared libblis.so hides bli_gks_lookup_nat_cntx(), the
#   per-architecture context lookup Plexus needs to choose a kernel set per GEMM shape;
#   the archive is position-independent and its symbols are kept out of libplexus.so's
#   dynamic symbol table (--exclude-libs).
# Defines the imported target Blis::blis.

set(_blis_arch_dir ${CMAKE_LIBRARY_ARCHITECTURE})
if(NOT _blis_arch_dir)
  set(_blis_arch_dir x86_64-linux-gnu)
endif()
find_path(BLIS_INCLUDE_DIR blis.h
  PATHS /usr/include/${_blis_arch_dir}/blis-pthread NO_DEFAULT_PATH)
find_library(BLIS_LIBRARY NAMES libblis.a
  PATHS /usr/lib/${_blis_arch_dir}/blis-pthread NO_DEFAULT_PATH)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Blis
  REQUIRED_VARS BLIS_LIBRARY BLIS_INCLUDE_DIR
  FAIL_MESSAGE "BLIS (pthread flavour) not found: run scripts/install-deps.sh (package libblis-pthread-dev)")

if(Blis_FOUND AND NOT TARGET Blis::blis)
  add_library(Blis::blis STATIC IMPORTED)
  set_target_properties(Blis::blis PROPERTIES
    IMPORTED_LOCATION ${BLIS_LIBRARY}
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES ${BLIS_INCLUDE_DIR}
    INTERFACE_INCLUDE_DIRECTORIES ${BLIS_INCLUDE_DIR}
    INTERFACE_LINK_LIBRARIES "Threads::Threads;m")
endif()
