# SPDX-License-Identifier: BSD-3-Clause
# The async cases on each adapter (owned by the async-loops branch). Included by this directory's
# CMakeLists.txt after its rlk_async_cases() function and RLK_ASYNC_CASES list are defined:
#
#   rlk_async_cases(poll aloop_poll.c)
#   include(${CMAKE_CURRENT_SOURCE_DIR}/adapters.cmake)
#
# For each loop of the adapter headers (libevent, libuv, libev; c/cmake/rlk_loops.cmake found
# them) the same cases are linked with aloop_<loop>.c (aloop.h on that loop, the client attached
# through its adapter header) and the loop's library: rlk_async_cases(<loop> aloop_<loop>.c
# rlk::<loop>), tests async_<loop>_<case>. A loop that is missing gets a skipped test per case
# instead (exit 77, saying why), under the same names.
foreach(loop libevent libuv libev)
  string(TOUPPER ${loop} up)
  if(RLK_HAVE_${up} AND COMMAND rlk_async_cases)
    # On Valkey, the poll cases run in tools/test's default pass; these repeats through each
    # adapter are server-independent loop code and are valkey_long twins (tools/test
    # --server valkey runs them), to keep CI inside its time. The sanitizer pass runs the
    # engine's cases once, on poll, and the adapters' own tests (c/tests/adapters): the repeats
    # are labelled adapter-pass, which it leaves out.
    foreach(case IN LISTS RLK_ASYNC_CASES)
      rlk_valkey_long(async_${loop}_${case})
    endforeach()
    rlk_async_cases(${loop} ${CMAKE_CURRENT_LIST_DIR}/aloop_${loop}.c rlk::${loop})
    foreach(case IN LISTS RLK_ASYNC_CASES)
      set_property(TEST async_${loop}_${case} APPEND PROPERTY LABELS adapter-pass)
    endforeach()
  else()
    foreach(case IN LISTS RLK_ASYNC_CASES)
      rlk_loop_skipped_test(async_${loop}_${case} ${loop} "integration;async")
    endforeach()
  endif()
endforeach()
