# SPDX-License-Identifier: BSD-3-Clause
# The event-loop libraries of the adapter headers (c/include/rlk_async_{libevent,libuv,libev}.h).
# The library itself links none of them: a program that includes an adapter links its loop.
# Here they are found for the tests, the benchmark's async mode and the async demo only, and
# each is optional: a missing one is reported (message here, and its tests are registered as
# skipped, exit 77, by rlk_loop_skipped_test) instead of being dropped silently.
#
# Defines, visible to every directory after c/CMakeLists.txt includes this file:
#   RLK_HAVE_LIBEVENT, RLK_HAVE_LIBUV, RLK_HAVE_LIBEV   ON/OFF (cache, internal: seen by c/demo too)
#   RLK_HAVE_ASYNC_ENGINE                               ON when c/src/async has sources (the engine
#                                                       behind rlk_async.h): rlk-bench --api async
#                                                       and the async demo are built only then
#   rlk::libevent, rlk::libuv, rlk::libev               imported targets (when found)
#   rlk_loop_skipped_test(NAME LOOP LABELS)             a test that says why it cannot run
# tools/bootstrap installs libevent-dev, libuv1-dev and libev-dev.

pkg_check_modules(RLK_LIBEVENT QUIET IMPORTED_TARGET GLOBAL libevent)
pkg_check_modules(RLK_LIBUV QUIET IMPORTED_TARGET GLOBAL libuv)
set(RLK_HAVE_LIBEVENT ${RLK_LIBEVENT_FOUND})
set(RLK_HAVE_LIBUV ${RLK_LIBUV_FOUND})
if(RLK_HAVE_LIBEVENT)
  add_library(rlk::libevent ALIAS PkgConfig::RLK_LIBEVENT)
endif()
if(RLK_HAVE_LIBUV)
  add_library(rlk::libuv ALIAS PkgConfig::RLK_LIBUV)
endif()
# libev: Debian ships no libev.pc.
find_path(RLK_LIBEV_INCLUDE_DIR ev.h)
find_library(RLK_LIBEV_LIBRARY ev)
if(RLK_LIBEV_INCLUDE_DIR AND RLK_LIBEV_LIBRARY)
  set(RLK_HAVE_LIBEV ON)
  add_library(rlk_libev_imported UNKNOWN IMPORTED GLOBAL)
  set_target_properties(rlk_libev_imported PROPERTIES
    IMPORTED_LOCATION "${RLK_LIBEV_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${RLK_LIBEV_INCLUDE_DIR}")
  add_library(rlk::libev ALIAS rlk_libev_imported)
else()
  set(RLK_HAVE_LIBEV OFF)
endif()
file(GLOB RLK_ASYNC_ENGINE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/../src/async/*.c")
if(RLK_ASYNC_ENGINE_SOURCES)
  set(RLK_HAVE_ASYNC_ENGINE ON CACHE INTERNAL "")
else()
  set(RLK_HAVE_ASYNC_ENGINE OFF CACHE INTERNAL "")
  message(STATUS "rlk: no async engine (c/src/async/*.c) yet: rlk-bench --api async and the "
                 "async demo are not built")
endif()
foreach(loop libevent libuv libev)
  string(TOUPPER ${loop} up)
  set(RLK_HAVE_${up} ${RLK_HAVE_${up}} CACHE INTERNAL "")
  if(NOT RLK_HAVE_${up})
    message(STATUS "rlk: ${loop} not found: its adapter tests are registered as skipped "
                   "(tools/bootstrap installs libevent-dev libuv1-dev libev-dev)")
  endif()
endforeach()

# A test named NAME that exits 77 (skipped) saying LOOP is missing, in place of the real one.
function(rlk_loop_skipped_test name loop labels)
  add_test(NAME ${name}
           COMMAND sh -c "echo '${name}: skipped: ${loop} not found at configure time (tools/bootstrap installs it)'; exit 77")
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS "${labels}")
endfunction()
