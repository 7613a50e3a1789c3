# What the libFuzzer targets' CMake projects (tests/*/fuzz/CMakeLists.txt) share. Each is
# built with clang alone, apart from the main build, from the few core sources it fuzzes;
# everything is built at -O1 with AddressSanitizer and UndefinedBehaviorSanitizer, the
# code under test also instrumented for coverage. -DPLEXUS_ROOT=<tree> fuzzes the sources
# of another source tree (a patched copy, say). scripts/test.sh builds and runs them all.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "the fuzzer needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
endif()

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
get_filename_component(plexus_fuzz_default_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(PLEXUS_ROOT "${plexus_fuzz_default_root}" CACHE PATH "The Plexus source tree whose sources are fuzzed")

set(plexus_fuzz_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=undefined)
add_compile_options(-O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror)

# plexus_fuzz_under_test(<name> <sources...>): a static library of the sources under test
# (paths relative to PLEXUS_ROOT), instrumented for coverage; includes resolve from the root.
function(plexus_fuzz_under_test name)
  list(TRANSFORM ARGN PREPEND "${PLEXUS_ROOT}/" OUTPUT_VARIABLE sources)
  add_library(${name} STATIC ${sources})
  target_include_directories(${name} PUBLIC ${PLEXUS_ROOT})
  target_compile_options(${name} PUBLIC ${plexus_fuzz_sanitizers} -fsanitize=fuzzer-no-link)
  target_link_options(${name} PUBLIC ${plexus_fuzz_sanitizers})
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
