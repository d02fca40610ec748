# Helpers shared by every folder's CMakeLists.txt.
#
# Our own code is built with warnings as errors; generated code (Cap'n Proto) and
# third-party headers are not ours and are included as SYSTEM.

set(CAESIUM_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough
    -Werror)
# GCC 12's optimizer reports -Wmaybe-uninitialized, -Wrestrict and -Warray-bounds inside
# libstdc++'s std::string on correct code (GCC bugs 105562, 105329, 105651, 107138).  They
# stay visible as warnings; they cannot fail the build.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND CAESIUM_WARNINGS -Wno-error=maybe-uninitialized -Wno-error=restrict
       -Wno-error=array-bounds)
endif()

function(caesium_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${CAESIUM_WARNINGS}>)
endfunction()

# The headers most files include, precompiled once per library (CAESIUM_PCH).  They are
# third-party or standard headers only: a change to our own headers never rebuilds a PCH.
set(CAESIUM_PCH_HEADERS
  <algorithm> <array> <cassert> <chrono> <cstddef> <cstdint> <cstdio> <cstdlib> <cstring>
  <deque> <functional> <limits> <map> <memory> <optional> <set> <sstream> <string>
  <string_view> <unordered_map> <utility> <variant> <vector> <nlohmann/json.hpp>)

function(caesium_pch target)
  if(CAESIUM_PCH)
    target_precompile_headers(${target} PRIVATE ${CAESIUM_PCH_HEADERS})
  endif()
endfunction()

# caesium_library(name DIR dir [DEPS ...])
# One static library per folder; sources are globbed so that adding a file needs no
# edit here.  Tests of the folder's files live in tests/unit.
function(caesium_library name)
  cmake_parse_arguments(ARG "" "DIR" "DEPS;EXTRA" ${ARGN})
  file(GLOB _srcs CONFIGURE_DEPENDS ${ARG_DIR}/*.cpp)
  if(NOT _srcs)
    # A folder whose code is still all in headers.
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
    return()
  endif()
  add_library(${name} STATIC ${_srcs} ${ARG_EXTRA})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  caesium_warnings(${name})
  caesium_pch(${name})
endfunction()

# A binary's allocator: mimalloc when CAESIUM_MIMALLOC is on (node/cli/allocator.h names
# it; only the main files of the binaries include that header).
function(caesium_allocator target)
  if(CAESIUM_MIMALLOC)
    target_link_libraries(${target} PRIVATE mimalloc)
    target_compile_definitions(${target} PRIVATE CAESIUM_MIMALLOC=1)
  endif()
endfunction()
