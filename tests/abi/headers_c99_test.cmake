# Compiles every public header abi/include/plexus/*.h as strict C99, alone and included
# twice (include guard), in a tiny translation unit of its own; and checks that the plugin
# headers (collectives_plugin.h, strategy_plugin.h) reach no Plexus header but
# plexus/types.h (the compiler's -M dependency list), so plugins never see the runtime API:
#   cmake -DCC=<gcc> -DINCLUDE_DIR=<abi/include> -DWORK_DIR=<scratch dir> -P headers_c99_test.cmake
# Fails, printing the compiler's diagnostics or the headers reached, when a header is not
# valid C99 or a plugin header reaches more than it may.
cmake_minimum_required(VERSION 3.25)
foreach(var CC INCLUDE_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "headers_c99_test: -D${var}=... is required")
  endif()
endforeach()

file(GLOB headers RELATIVE ${INCLUDE_DIR} ${INCLUDE_DIR}/plexus/*.h)
list(SORT headers)
set(plugin_headers plexus/collectives_plugin.h plexus/strategy_plugin.h)
foreach(required plexus/plexus.h plexus/types.h ${plugin_headers})
  if(NOT required IN_LIST headers)
    message(FATAL_ERROR "headers_c99_test: no ${required} under ${INCLUDE_DIR} (found: ${headers})")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(failed "")
foreach(header IN LISTS headers)
  string(MAKE_C_IDENTIFIER ${header} id)
  set(source ${WORK_DIR}/${id}.c)
  file(WRITE ${source} "#include <${header}>\n#include <${header}>\nint plexus_header_check_${id}(void);\nint plexus_header_check_${id}(void) { return 0; }\n")
  execute_process(
    COMMAND ${CC} -std=c99 -Wall -Wextra -pedantic -Werror -fsyntax-only -I${INCLUDE_DIR} ${source}
    RESULT_VARIABLE result
    OUTPUT_VARIABLE output
    ERROR_VARIABLE output)
  if(result EQUAL 0)
    message(STATUS "C99 ok: ${header}")
  else()
    message("C99 FAILED: ${header}\n${output}")
    list(APPEND failed ${header})
  endif()
endforeach()

# plugin_reach(<header> <out var>): the Plexus headers (under INCLUDE_DIR/plexus) a C99
# translation unit including only <header> reads, per the compiler's -M output.
function(plugin_reach header out)
  string(MAKE_C_IDENTIFIER ${header} id)
  execute_process(
    COMMAND ${CC} -std=c99 -M -I${INCLUDE_DIR} ${WORK_DIR}/${id}.c
    RESULT_VARIABLE result
    OUTPUT_VARIABLE deps
    ERROR_VARIABLE deps)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "headers_c99_test: ${CC} -M failed on ${header}:\n${deps}")
  endif()
  string(REGEX MATCHALL "plexus/[A-Za-z0-9_]+\\.h" reached "${deps}")
  list(REMOVE_DUPLICATES reached)
  list(SORT reached)
  set(${out} "${reached}" PARENT_SCOPE)
endfunction()

foreach(header IN LISTS plugin_headers)
  plugin_reach(${header} reached)
  set(allowed ${header} plexus/types.h)
  list(SORT allowed)
  if(NOT reached STREQUAL allowed)
    message("PLUGIN HEADER REACHES TOO MUCH: ${header} reads ${reached}; only ${allowed} allowed")
    list(APPEND failed ${header})
  else()
    message(STATUS "self-contained: ${header} reads ${reached}")
  endif()
endforeach()

if(failed)
  message(FATAL_ERROR "headers that are not valid C99 (-std=c99 -Wall -Wextra -pedantic -Werror): ${failed}")
endif()
list(LENGTH headers count)
message(STATUS "${count} public header(s) compile as C99")
