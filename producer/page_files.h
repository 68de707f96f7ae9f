/* producer/page_files.h: the buyer page's files as embedded at build time (DESIGN.md 18):
 * cmake/embed_files.cmake turns the files of producer/page/ (.html, .js, .css, .svg) into fr_page_files[],
 * served by page.c. Read-only data, thread-safe. */
#pragma once
#include <stddef.h>

/** One embedded file: its name in producer/page/ (e.g. "sale.js"), its bytes (static,
 *  NUL-terminated) and their count without that NUL. */
typedef struct fr_page_file {
        const char *name;
        const char *data;
        size_t len;
} fr_page_file_t;

/** The files in name order, ended by a row of NULLs; fr_page_nfiles rows before it. */
extern const fr_page_file_t fr_page_files[];
extern const size_t fr_page_nfiles;
