# SPDX-License-Identifier: BSD-3-Clause
# tools/embed.cmake - embeds rlk's Lua scripts into the C library.
#
#   cmake -DRLK_SCRIPTS_DIR=<repo>/scripts -DRLK_OUT_DIR=<dir> -DRLK_LUA=<luajit|lua5.1>
#         [-DRLK_VERSION=<x.y.z>] -P tools/embed.cmake
#
# Expands every <RLK_SCRIPTS_DIR>/<kind>/<op>.lua (its `--- @include "lib/<helper>"` lines) with
# tools/expand.lua into RLK_OUT_DIR/bundle/<kind>/<op>.lua, then reads the expanded scripts (header
# format: docs/script-contract.md) and writes, under RLK_OUT_DIR, each file only when its content
# changes (so an unchanged set never triggers a recompile):
#   bundle/<kind>/<op>.lua        every script expanded: the exact bytes Redis runs
#   generated/rlk_scripts_gen.c   the expanded scripts as byte arrays with name, version,
#                                 number of KEYS (-1: variadic) and SHA-1, sorted by name; and
#                                 each script's KEYS roles as its header names them
#                                 ("lock waiters grant": rlk_script_key_roles, client/scripts.h)
#   manifest.tsv                  "# rlk <RLK_VERSION>", then one line per script,
#                                 name<TAB>version<TAB>numkeys<TAB>sha1, sorted by name
#   bundle/manifest.tsv           the same manifest: with the files, a bundle directory
#   functions.lua                 the Redis 7 Functions library built from bundle/ by
#                                 tools/gen-functions.lua (installed as share/rlk/functions.lua)
#   generated/rlk_functions_gen.c the library's bytes, name, release, scripts id and SHA-1, and the
#                                 SHA-1s of the no-writes scripts (FCALL_RO)
# Only the fields the C table needs are read from the header; tools/check-headers.lua checks the
# rest. A script whose header lacks them, or whose name line disagrees with its path, stops the
# build with a message naming the file.
cmake_minimum_required(VERSION 3.18)

if(NOT RLK_SCRIPTS_DIR OR NOT RLK_OUT_DIR OR NOT RLK_LUA)
  message(FATAL_ERROR "usage: cmake -DRLK_SCRIPTS_DIR=DIR -DRLK_OUT_DIR=DIR -DRLK_LUA=LUA -P embed.cmake")
endif()
get_filename_component(RLK_TOOLS_DIR "${CMAKE_CURRENT_LIST_DIR}" ABSOLUTE)
set(RLK_EXPANDED_DIR "${RLK_OUT_DIR}/bundle")

# Writes CONTENT to PATH unless PATH already holds exactly that.
function(rlk_write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
endfunction()

# Reads the header of FILE (script NAME) and sets <out>_version, <out>_numkeys and <out>_roles
# (the KEYS roles, "-- KEYS[i]: <role> - ...", separated by spaces; not the optional ones).
# Messages name the source file: expansion leaves the header as it is.
function(rlk_read_header file name out)
  file(READ "${file}" text)
  set(file "${RLK_SCRIPTS_DIR}/${name}.lua")
  string(FIND "${text}" "\n-- end\n" end_at)
  if(end_at EQUAL -1)
    message(FATAL_ERROR "${file}: no '-- end' line closing the header")
  endif()
  string(SUBSTRING "${text}" 0 ${end_at} header)
  set(header "\n${header}\n")
  if(NOT text MATCHES "^-- name: ([^\n]*)\n")
    message(FATAL_ERROR "${file}: the first line must be '-- name: ${name}'")
  endif()
  if(NOT CMAKE_MATCH_1 STREQUAL name)
    message(FATAL_ERROR "${file}: header name '${CMAKE_MATCH_1}' does not match the path ('${name}')")
  endif()
  if(NOT header MATCHES "\n-- version: ([1-9][0-9]*)\n")
    message(FATAL_ERROR "${file}: no '-- version: N' line (a positive integer) in the header")
  endif()
  set(${out}_version "${CMAKE_MATCH_1}" PARENT_SCOPE)
  string(REGEX MATCHALL "\n-- KEYS\\[[0-9.n]+\\]: *[A-Za-z_]*( - optional)?" keys "${header}")
  set(numkeys 0)
  set(roles "")
  foreach(k IN LISTS keys)
    string(REGEX REPLACE "^.*\\]: *" "" role "${k}")
    # An optional key (the lock-delay key) is not among the roles a caller always passes.
    if(NOT role MATCHES " - optional$")
      string(APPEND roles " ${role}")
    endif()
    if(k MATCHES "\\.\\.")
      set(numkeys -1)
    elseif(NOT numkeys EQUAL -1)
      math(EXPR numkeys "${numkeys} + 1")
    endif()
  endforeach()
  string(STRIP "${roles}" roles)
  set(${out}_numkeys "${numkeys}" PARENT_SCOPE)
  set(${out}_roles "${roles}" PARENT_SCOPE)
endfunction()

# Sets <out> to a C initializer body for the bytes of FILE, 16 bytes per line.
function(rlk_c_bytes file out)
  file(READ "${file}" hex HEX)
  string(REGEX REPLACE "(................................)" "\\1\n" hex "${hex}")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(REGEX REPLACE "\n$" "" hex "${hex}")
  string(REPLACE "\n" "\n    " hex "${hex}")
  set(${out} "    ${hex}" PARENT_SCOPE)
endfunction()

# ---------------------------------------------------------------- expand
# tools/expand.lua writes each expanded script only when its bytes change and removes the .lua
# files of scripts that are gone; a bad include stops the build with the file and line.
file(MAKE_DIRECTORY "${RLK_EXPANDED_DIR}")
execute_process(
  COMMAND "${RLK_LUA}" "${RLK_TOOLS_DIR}/expand.lua" --out "${RLK_EXPANDED_DIR}" "${RLK_SCRIPTS_DIR}"
  RESULT_VARIABLE rc ERROR_VARIABLE errors)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tools/expand.lua failed:\n${errors}")
endif()

# ---------------------------------------------------------------- collect
file(GLOB files RELATIVE "${RLK_EXPANDED_DIR}" "${RLK_EXPANDED_DIR}/*/*.lua")
set(names "")
foreach(rel IN LISTS files)
  string(REGEX REPLACE "\\.lua$" "" name "${rel}")
  if(NOT name MATCHES "^[A-Za-z0-9_-]+/[A-Za-z0-9_-]+$")
    message(FATAL_ERROR "${RLK_SCRIPTS_DIR}/${rel}: script names may use only A-Z a-z 0-9 _ -")
  endif()
  list(APPEND names "${name}")
endforeach()
list(SORT names COMPARE STRING)
list(LENGTH names count)

# ---------------------------------------------------------------- generate
set(arrays "")
set(rows "")
set(roles "")
# The release the bundle belongs to: `rlk scripts load|verify --bundle` compare a bundle with the
# scripts built into rlk, and name both versions when they differ.
if(RLK_VERSION)
  set(manifest "# rlk ${RLK_VERSION}\n")
else()
  set(manifest "")
endif()
set(i 0)
foreach(name IN LISTS names)
  set(file "${RLK_EXPANDED_DIR}/${name}.lua")
  rlk_read_header("${file}" "${name}" h)
  file(SHA1 "${file}" sha1)
  file(SIZE "${file}" size)
  rlk_c_bytes("${file}" bytes)
  string(APPEND arrays "/* ${name}.lua */\nstatic const unsigned char rlk_body_${i}[] = {\n${bytes}\n    0x00\n};\n\n")
  string(APPEND rows "    {\"${name}\", ${h_version}, ${h_numkeys}, \"${sha1}\",\n     (const char *)rlk_body_${i}, ${size}},\n")
  string(APPEND roles "    {\"${name}\", \"${h_roles}\"},\n")
  string(APPEND manifest "${name}\t${h_version}\t${h_numkeys}\t${sha1}\n")
  math(EXPR i "${i} + 1")
endforeach()

set(gen "/* Generated by tools/embed.cmake from scripts/: do not edit. */\n")
string(APPEND gen "#include <stddef.h>\n#include \"rlk.h\"\n#include \"client/scripts.h\"\n\n")
string(APPEND gen "${arrays}")
string(APPEND gen "/* Sorted by name; a NULL entry ends the table. */\n")
string(APPEND gen "const rlk_script_info rlk_embedded_scripts[] = {\n${rows}")
string(APPEND gen "    {NULL, 0, 0, NULL, NULL, 0}\n};\n\n")
string(APPEND gen "const size_t rlk_embedded_scripts_count = ${count};\n\n")
string(APPEND gen "/* Each script's KEYS roles, as its header names them; sorted by name, NULL ends it. */\n")
string(APPEND gen "const rlk_script_roles rlk_embedded_key_roles[] = {\n${roles}    {NULL, NULL}\n};\n")

file(MAKE_DIRECTORY "${RLK_OUT_DIR}/generated" "${RLK_OUT_DIR}/bundle")
rlk_write_if_changed("${RLK_OUT_DIR}/generated/rlk_scripts_gen.c" "${gen}")
rlk_write_if_changed("${RLK_OUT_DIR}/manifest.tsv" "${manifest}")
rlk_write_if_changed("${RLK_OUT_DIR}/bundle/manifest.tsv" "${manifest}")

# ---------------------------------------------------------------- functions library
execute_process(
  COMMAND "${RLK_LUA}" "${RLK_TOOLS_DIR}/gen-functions.lua" --bundle "${RLK_OUT_DIR}/bundle"
          --lua "${RLK_OUT_DIR}/functions.lua" --c "${RLK_OUT_DIR}/generated/rlk_functions_gen.c"
  RESULT_VARIABLE rc ERROR_VARIABLE errors)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tools/gen-functions.lua failed:\n${errors}")
endif()
