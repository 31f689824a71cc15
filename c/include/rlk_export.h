/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk_export.h - the mark on every function of rlk's public API.
 *
 * The shared library is built with hidden visibility by default
 * (-fvisibility=hidden): only a declaration marked RLK_API is exported, so
 * librlk.so's dynamic symbol table lists exactly the functions declared in
 * the installed headers (docs/abi.md; ctest -L abi checks it). A program
 * never needs to define anything: the mark is the same for the shared and
 * the static library, and for compilers without visibility it is empty.
 */
#ifndef RLK_EXPORT_H
#define RLK_EXPORT_H

#if defined(__GNUC__) && __GNUC__ >= 4
#define RLK_API __attribute__((visibility("default")))
#else
#define RLK_API
#endif

#endif /* RLK_EXPORT_H */
