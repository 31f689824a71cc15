# SPDX-License-Identifier: BSD-3-Clause
# The server under test (RLK_TEST_SERVER=redis|valkey, read by fixture.c, tools/with-redis,
# tools/bench-run): every test that needs a real server is registered twice by
#
#   rlk_server_test(NAME <name> COMMAND <command> [args...] [WORKING_DIRECTORY <dir>])
#
# as <name> (RLK_TEST_SERVER=redis, label `redis`) and <name>_valkey (RLK_TEST_SERVER=valkey,
# label `valkey`, SKIP_RETURN_CODE 77: a missing valkey-server makes the fixture exit 77, and
# ctest reports the test skipped, never passed). At the end of the directory that registered it
# the twin gets the Redis test's properties (LABELS, TIMEOUT, ENVIRONMENT, ...) as the suite set
# them with set_tests_properties, plus its own server. Tests labelled `valkey_long` (see
# README.md, "Tests") are left out of tools/test's Valkey pass to keep CI inside its budget.
#
# rlk_valkey_long(<name>...) marks Valkey twins with that label.

find_program(RLK_VALKEY_SERVER_EXE valkey-server)
find_program(RLK_VALKEY_CLI_EXE valkey-cli)
if(NOT RLK_VALKEY_SERVER_EXE)
  message(STATUS "valkey-server not found: the Valkey pass (label valkey) will report its tests skipped")
endif()

function(rlk_server_test)
  cmake_parse_arguments(A "" "NAME;WORKING_DIRECTORY" "COMMAND" ${ARGN})
  if(NOT A_NAME OR NOT A_COMMAND)
    message(FATAL_ERROR "rlk_server_test: NAME and COMMAND are required")
  endif()
  set(wd)
  if(A_WORKING_DIRECTORY)
    set(wd WORKING_DIRECTORY "${A_WORKING_DIRECTORY}")
  endif()
  add_test(NAME ${A_NAME} COMMAND ${A_COMMAND} ${wd})
  add_test(NAME ${A_NAME}_valkey COMMAND ${A_COMMAND} ${wd})
  # Deferred to the end of this directory, after the suite's set_tests_properties.
  cmake_language(EVAL CODE "cmake_language(DEFER CALL _rlk_server_test_finish [[${A_NAME}]])")
endfunction()

function(_rlk_server_test_finish name)
  foreach(p TIMEOUT SKIP_RETURN_CODE RESOURCE_LOCK RUN_SERIAL PROCESSORS WILL_FAIL
            FAIL_REGULAR_EXPRESSION PASS_REGULAR_EXPRESSION)
    get_test_property(${name} ${p} v)
    if(NOT v STREQUAL "NOTFOUND")
      set_tests_properties(${name}_valkey PROPERTIES ${p} "${v}")
    endif()
  endforeach()
  get_test_property(${name} LABELS labels)
  get_test_property(${name} ENVIRONMENT env)
  if(labels STREQUAL "NOTFOUND")
    set(labels)
  endif()
  if(env STREQUAL "NOTFOUND")
    set(env)
  endif()
  set(redis_labels ${labels} redis)
  set(valkey_labels ${labels} valkey)
  set(redis_env ${env} RLK_TEST_SERVER=redis)
  set(valkey_env ${env} RLK_TEST_SERVER=valkey)
  get_property(long GLOBAL PROPERTY RLK_VALKEY_LONG)
  if(name IN_LIST long)
    list(APPEND valkey_labels valkey_long)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${redis_labels}" ENVIRONMENT "${redis_env}")
  set_tests_properties(${name}_valkey PROPERTIES LABELS "${valkey_labels}"
                       ENVIRONMENT "${valkey_env}" SKIP_RETURN_CODE 77)
endfunction()

# Call before (or in the same directory as) the rlk_server_test of each name.
function(rlk_valkey_long)
  set_property(GLOBAL APPEND PROPERTY RLK_VALKEY_LONG ${ARGN})
endfunction()

# The Valkey twins left out of tools/test's default run (README.md, "Tests"): the two slowest
# server-backed programs, 98 s of the whole Valkey pass's 486 s in one run on this machine.
# runtime_lost_reply injects DEBUG SLEEP / CLIENT PAUSE / CLIENT KILL around every call (its
# Redis run stays in CI); it_fixture tests the fixture itself, whose Valkey cluster and sentinel
# every cluster and sentinel suite starts anyway. `tools/test --server valkey` and
# `ctest -L valkey` run them.
rlk_valkey_long(runtime_lost_reply it_fixture)

