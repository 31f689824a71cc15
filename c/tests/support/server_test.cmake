# SPDX-License-Identifier: BSD-3-Clause
# The server under test (RLK_TEST_SERVER=redis|valkey|redis8|valkey9, read by fixture.c,
# tools/with-redis, tools/bench-run; docs/servers.md): every test that needs a real server is
# registered by
#
#   rlk_server_test(NAME <name> COMMAND <command> [args...] [WORKING_DIRECTORY <dir>])
#
# as <name> (RLK_TEST_SERVER=redis: Debian 12's Redis 7.0, label `redis`) and <name>_valkey
# (RLK_TEST_SERVER=valkey: Valkey 8.0, label `valkey`), and, when the name is in the new
# servers' set (rlk_new_servers below), also as <name>_redis8 (Redis 8.0, label `redis8`) and
# <name>_valkey9 (Valkey 9.1, label `valkey9`), both labelled `new-servers` too. Every twin has
# SKIP_RETURN_CODE 77: a missing server makes the fixture (or tools/with-redis) exit 77, and
# ctest reports the test skipped, never passed. At the end of the directory that registered it
# each twin gets the Redis test's properties (LABELS, TIMEOUT, ENVIRONMENT, ...) as the suite set
# them with set_tests_properties, plus its own server. Tests labelled `valkey_long` (see
# docs/testing.md, "The servers") are left out of tools/test's Valkey pass to keep CI inside its
# budget.
#
# rlk_valkey_long(<name>...) marks Valkey twins with that label.

find_program(RLK_VALKEY_SERVER_EXE valkey-server)
find_program(RLK_VALKEY_CLI_EXE valkey-cli)
if(NOT RLK_VALKEY_SERVER_EXE)
  message(STATUS "valkey-server not found: the Valkey pass (label valkey) will report its tests skipped")
endif()
# Where tools/bootstrap builds Redis 8 and Valkey 9 (DIR/redis8/bin, DIR/valkey9/bin); the tests
# look there at run time ($RLK_SERVERS_DIR overrides), so a build made after configuring is used.
set(RLK_SERVERS_DIR "/var/cache/rlk-servers" CACHE PATH "Where tools/bootstrap builds the servers of the test matrix")
foreach(s redis8/bin/redis-server valkey9/bin/valkey-server)
  if(NOT EXISTS "${RLK_SERVERS_DIR}/${s}")
    message(STATUS "${RLK_SERVERS_DIR}/${s} not built (tools/bootstrap): its tests will report skipped")
  endif()
endforeach()

# The servers besides Redis 7 and Valkey 8 (a global property: the functions below run in the
# scopes of other directories).
set_property(GLOBAL PROPERTY RLK_NEW_SERVERS redis8 valkey9)

# Redis 8 and Valkey 9 are built from Debian's source packages by tools/bootstrap (minutes on a
# new machine, nothing once built). The build is a test of its own, the setup of the fixture
# rlk_new_servers that every Redis 8 and Valkey 9 twin requires: ctest runs it beside the tests
# that need neither server, and starts the twins once it has ended. A server that cannot be built
# leaves its twins to exit 77 (skipped), as before; the build test itself fails only when
# tools/bootstrap does (a usage error, a package that cannot be installed).
add_test(NAME new_servers_build COMMAND bash ${PROJECT_SOURCE_DIR}/tools/bootstrap redis8 valkey9)
set_tests_properties(new_servers_build PROPERTIES FIXTURES_SETUP rlk_new_servers
                     LABELS "new-servers;setup" TIMEOUT 3000)

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
  set_property(GLOBAL PROPERTY RLK_TEST_COMMAND_${A_NAME} "${A_COMMAND}")
  set_property(GLOBAL PROPERTY RLK_TEST_WD_${A_NAME} "${A_WORKING_DIRECTORY}")
  add_test(NAME ${A_NAME}_valkey COMMAND ${A_COMMAND} ${wd})
  get_property(newset GLOBAL PROPERTY RLK_NEW_SERVER_TESTS)
  get_property(new_servers GLOBAL PROPERTY RLK_NEW_SERVERS)
  if(A_NAME IN_LIST newset)
    foreach(s ${new_servers})
      add_test(NAME ${A_NAME}_${s} COMMAND ${A_COMMAND} ${wd})
    endforeach()
  endif()
  # Deferred to the end of this directory, after the suite's set_tests_properties.
  cmake_language(EVAL CODE "cmake_language(DEFER CALL _rlk_server_test_finish [[${A_NAME}]])")
endfunction()

function(_rlk_server_test_finish name)
  get_property(newset GLOBAL PROPERTY RLK_NEW_SERVER_TESTS)
  get_property(new_servers GLOBAL PROPERTY RLK_NEW_SERVERS)
  set(twins valkey)
  if(name IN_LIST newset)
    list(APPEND twins ${new_servers})
  endif()
  get_test_property(${name} LABELS labels)
  get_test_property(${name} ENVIRONMENT env)
  if(labels STREQUAL "NOTFOUND")
    set(labels)
  endif()
  if(env STREQUAL "NOTFOUND")
    set(env)
  endif()
  get_property(long GLOBAL PROPERTY RLK_VALKEY_LONG)
  foreach(s ${twins})
    foreach(p TIMEOUT SKIP_RETURN_CODE RESOURCE_LOCK RUN_SERIAL PROCESSORS WILL_FAIL
              FAIL_REGULAR_EXPRESSION PASS_REGULAR_EXPRESSION)
      get_test_property(${name} ${p} v)
      if(NOT v STREQUAL "NOTFOUND")
        set_tests_properties(${name}_${s} PROPERTIES ${p} "${v}")
      endif()
    endforeach()
    set(twin_labels ${labels} ${s})
    if(s STREQUAL "valkey" AND name IN_LIST long)
      list(APPEND twin_labels valkey_long)
    endif()
    if(NOT s STREQUAL "valkey")
      list(APPEND twin_labels new-servers)
    endif()
    set(twin_env ${env} RLK_TEST_SERVER=${s})
    set_tests_properties(${name}_${s} PROPERTIES LABELS "${twin_labels}"
                         ENVIRONMENT "${twin_env}" SKIP_RETURN_CODE 77)
    # The twin needs what its test needs (the TLS certificates: a twin started while tls_certs
    # writes them finds a CA that is not its servers'), and a newer server's twin that server.
    get_test_property(${name} FIXTURES_REQUIRED fixtures)
    if(fixtures STREQUAL "NOTFOUND")
      set(fixtures)
    endif()
    if(NOT s STREQUAL "valkey")
      list(APPEND fixtures rlk_new_servers)
    endif()
    if(fixtures)
      set_tests_properties(${name}_${s} PROPERTIES FIXTURES_REQUIRED "${fixtures}")
    endif()
  endforeach()
  set(redis_labels ${labels} redis)
  set(redis_env ${env} RLK_TEST_SERVER=redis)
  set_tests_properties(${name} PROPERTIES LABELS "${redis_labels}" ENVIRONMENT "${redis_env}")
endfunction()

# rlk_alone(<name> REASON <text> CASES <test_fn>...): the cases of <name>'s program that check
# a bound a busy CPU breaks run alone, as <name>_alone (RUN_SERIAL, RLK_TEST_ONLY, with every
# twin), and the program's other cases beside other tests (RLK_TEST_SKIP on <name> and its
# twins): the program's own check.h fails a run whose list names a case it does not have. Call it
# after the suite's set_tests_properties of <name>, in the same directory; <name>_alone gets
# <name>'s LABELS, TIMEOUT and ENVIRONMENT.
function(rlk_alone name)
  cmake_parse_arguments(A "" "REASON" "CASES" ${ARGN})
  if(NOT A_REASON OR NOT A_CASES)
    message(FATAL_ERROR "rlk_alone(${name}): REASON and CASES are required")
  endif()
  get_property(cmd GLOBAL PROPERTY RLK_TEST_COMMAND_${name})
  get_property(wd GLOBAL PROPERTY RLK_TEST_WD_${name})
  if(NOT cmd)
    message(FATAL_ERROR "rlk_alone(${name}): no rlk_server_test named ${name}")
  endif()
  string(REPLACE ";" "," cases "${A_CASES}")
  set_property(GLOBAL PROPERTY RLK_ALONE_CASES_${name} "${cases}")   # the TLS pass splits its run so too
  set(wd_args)
  if(wd)
    set(wd_args WORKING_DIRECTORY "${wd}")
  endif()
  rlk_server_test(NAME ${name}_alone COMMAND ${cmd} ${wd_args})
  foreach(p LABELS TIMEOUT)
    get_test_property(${name} ${p} v)
    if(NOT v STREQUAL "NOTFOUND")
      set_tests_properties(${name}_alone PROPERTIES ${p} "${v}")
    endif()
  endforeach()
  get_test_property(${name} ENVIRONMENT env)
  if(env STREQUAL "NOTFOUND")
    set(env)
  endif()
  set(only_env ${env} RLK_TEST_ONLY=${cases})
  set(skip_env ${env} RLK_TEST_SKIP=${cases})
  set_tests_properties(${name}_alone PROPERTIES ENVIRONMENT "${only_env}" RUN_SERIAL TRUE)
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${skip_env}" RUN_SERIAL FALSE)
endfunction()

# rlk_alone_whole(<name> REASON <text>): every case of <name>'s program checks such a bound: the
# test (and its twins, and its TLS run) RUN_SERIAL.
function(rlk_alone_whole name)
  cmake_parse_arguments(A "" "REASON" "" ${ARGN})
  if(NOT A_REASON)
    message(FATAL_ERROR "rlk_alone_whole(${name}): REASON is required")
  endif()
  set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
  set_property(GLOBAL APPEND PROPERTY RLK_ALONE_WHOLE ${name})
endfunction()

# Call before (or in the same directory as) the rlk_server_test of each name.
function(rlk_valkey_long)
  set_property(GLOBAL APPEND PROPERTY RLK_VALKEY_LONG ${ARGN})
endfunction()

# Names whose tests also run on Redis 8 and Valkey 9 (called here, before any suite registers).
function(rlk_new_servers)
  set_property(GLOBAL APPEND PROPERTY RLK_NEW_SERVER_TESTS ${ARGN})
endfunction()

# The Valkey twins left out of tools/test's default run (docs/testing.md, "The servers"): the two
# slowest server-backed programs, 98 s of the whole Valkey pass's 486 s in one run on this machine.
# runtime_lost_reply injects DEBUG SLEEP / CLIENT PAUSE / CLIENT KILL around every call (its
# Redis run stays in CI); it_fixture tests the fixture itself, whose Valkey cluster and sentinel
# every cluster and sentinel suite starts anyway. `tools/test --server valkey` and
# `ctest -L valkey` run them.
rlk_valkey_long(runtime_lost_reply it_fixture)

# The new servers' set (docs/servers.md, "What runs where"): every kind on one server (the
# reentrant lock's runtime, the three locks of family_locks, the three of family_sync, the
# CLI's commands for every kind), the scripts' specs through EVAL and FCALL, the Functions
# library as an FCALL-only user, one cluster suite (every kind on a cluster), one Sentinel
# suite, one non-blocking (async) suite, the `rlk check` report, and the mock's conformance.
rlk_new_servers(
  runtime_basic family_locks_rwlock family_locks_fair family_locks_fenced
  family_sync_semaphore family_sync_psemaphore family_sync_latch it_cli it_cli_check
  functions_runtime_basic busted_redis busted_redis_fcall conformance
  cluster_kinds it_sentinel async_poll_basic)
