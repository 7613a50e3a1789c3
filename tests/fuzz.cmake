# What the libFuzzer targets' CMake projects (tests/*/fuzz/CMakeLists.txt) share. Each is
# built with clang alone, apart from the main build, over one instrumented copy of the core
# (plexus_fuzz_core below); tests/fuzz/CMakeLists.txt builds all of them in one tree, the
# core once. Everything is built at -O1 with AddressSanitizer and UndefinedBehaviorSanitizer,
# the core also instrumented for coverage. -DPLEXUS_ROOT=<tree> fuzzes the sources
# of another source tree (a patched copy, say). scripts/test.sh builds and runs them all.
include_guard(GLOBAL)
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "the fuzzer needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
endif()

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
get_filename_component(plexus_fuzz_default_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(PLEXUS_ROOT "${plexus_fuzz_default_root}" CACHE PATH "The Plexus source tree whose sources are fuzzed")

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()

set(plexus_fuzz_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=undefined)
# Line tables only: a crash report needs file:line (12 % less compile time than -g).
add_compile_options(-O1 -gline-tables-only -fno-omit-frame-pointer -Wall -Wextra -Werror)

# Imported targets (Blis::blis, ZLIB::ZLIB, ...) are global, so that the core built in one
# fuzzer's folder links from another's (tests/fuzz/CMakeLists.txt builds them all in one tree).
set(CMAKE_FIND_PACKAGE_TARGETS_GLOBAL ON)

# plexus_fuzz_core(): the instrumented core, once per build tree. plexus_fuzz_core is an
# object library of every source of libplexus.so (core/ and abi/src; the glob keeps up with
# new files), so that a fuzzer linking it gets every
# op's static registration; plexus_fuzz_core_archive is a static archive of the same
# objects, from which a fuzzer's link takes only the objects it reaches. Built once, however
# many fuzzers link it (it was built four times, once per fuzzer, when each listed its own).
function(plexus_fuzz_core)
  if(TARGET plexus_fuzz_core)
    return()
  endif()
  find_package(Threads REQUIRED)
  find_package(ZLIB REQUIRED)
  find_package(zstd REQUIRED)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(libdeflate REQUIRED IMPORTED_TARGET GLOBAL libdeflate)
  list(APPEND CMAKE_MODULE_PATH ${PLEXUS_ROOT}/cmake)
  find_package(Blis REQUIRED)
  find_package(nlohmann_json 3 REQUIRED)
  find_package(Boost 1.74 REQUIRED)
  file(GLOB sources CONFIGURE_DEPENDS ${PLEXUS_ROOT}/core/*/*.cpp ${PLEXUS_ROOT}/core/ops/*/*.cpp
    ${PLEXUS_ROOT}/abi/src/*.cpp)
  add_library(plexus_fuzz_core OBJECT ${sources})
  add_library(plexus_fuzz_core_archive STATIC $<TARGET_OBJECTS:plexus_fuzz_core>)
  foreach(lib plexus_fuzz_core plexus_fuzz_core_archive)
    target_include_directories(${lib} PUBLIC ${PLEXUS_ROOT} ${PLEXUS_ROOT}/abi/include)
    target_compile_options(${lib} PUBLIC ${plexus_fuzz_sanitizers})
    target_link_options(${lib} PUBLIC ${plexus_fuzz_sanitizers})
    target_link_libraries(${lib} PUBLIC Blis::blis ZLIB::ZLIB PkgConfig::libdeflate zstd::libzstd_shared
      Threads::Threads ${CMAKE_DL_LIBS} Boost::headers nlohmann_json::nlohmann_json)
  endforeach()
  target_compile_options(plexus_fuzz_core PRIVATE -fsanitize=fuzzer-no-link)
  # Clang 14's AddressSanitizer at -O1 takes 30-75 s for each AVX-512 direct-convolution
  # kernel (register tiles unrolled by templates), 6 s at -O0: the fuzzers reach these
  # kernels only with tiny shapes, so they are built at -O0 (still instrumented).
  set(slow_kernels ${sources})
  list(FILTER slow_kernels INCLUDE REGEX "/conv_direct_[a-z_]*_avx512\\.cpp$")
  set_source_files_properties(${slow_kernels} TARGET_DIRECTORY plexus_fuzz_core PROPERTIES COMPILE_OPTIONS -O0)
endfunction()

# plexus_fuzzer(<name> <source> <library under test>): the libFuzzer executable. Its source
# may include the shared helpers of tests/ (fuzz_temp_file.h) by their bare names.
function(plexus_fuzzer name source under_test)
  add_executable(${name} ${source})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${name} PRIVATE ${under_test})
endfunction()

# plexus_fuzz_seed_corpus(<name> <source> <library under test>): the program that writes a
# fuzzer's seed corpus at run time into the directory it is given.
function(plexus_fuzz_seed_corpus name source under_test)
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE ${under_test})
endfunction()
