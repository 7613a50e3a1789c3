# Compiles every public header abi/include/plexus/*.h as strict C99, alone and included
# twice (include guard), in a tiny translation unit of its own:
#   cmake -DCC=<gcc> -DINCLUDE_DIR=<abi/include> -DWORK_DIR=<scratch dir> -P headers_c99_test.cmake
# Fails, printing the compiler's diagnostics, when any header is not valid C99.
cmake_minimum_required(VERSION 3.25)
foreach(var CC INCLUDE_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "headers_c99_test: -D${var}=... is required")
  endif()
endforeach()

file(GLOB headers RELATIVE ${INCLUDE_DIR} ${INCLUDE_DIR}/plexus/*.h)
list(SORT headers)
if(NOT "plexus/plexus.h" IN_LIST headers)
  message(FATAL_ERROR "headers_c99_test: no plexus/plexus.h under ${INCLUDE_DIR} (found: ${headers})")
endif()

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

if(failed)
  message(FATAL_ERROR "headers that are not valid C99 (-std=c99 -Wall -Wextra -pedantic -Werror): ${failed}")
endif()
list(LENGTH headers count)
message(STATUS "${count} public header(s) compile as C99")
