/* producer/keyset.h: a reloadable key set of the front (DESIGN.md 15, 18): the payment
 * keys and the waiting room's admission keys, each one reference-counted, immutable
 * object behind a pointer, re-read on SIGHUP and within 10 s of a change of its file
 * (inode, size or mtime: sk/keyfile.h); a failed reload keeps the keys in force, logs one
 * line and counts a failure. The set's own module (sk/paysig.h, sk/queue_token.h) parses
 * the file into a key set of sk/keyfile.h; this file only decides when, swaps the pointer
 * and logs. */
#pragma once
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "sk/keyfile.h"
#include "sk/metrics.h"

#define FR_KEYSET_RECHECK_MS 10000      /* DESIGN.md 15: a changed file is seen within 10 s */

/** One key set: the caller fills the hooks and names, then calls fr_keyset_init. */
typedef struct fr_keyset {
        const char *path;               /* the file (borrowed: g_fr); "" = not configured */
        const char *ev_loaded, *ev_reloaded, *ev_failed; /* log event names */
        const char *var;                /* the variable, for the start-up error line */
        const sk_keyfile_kind_t *kind;  /* the file's format: sk_paysig_keyfile, sk_qtoken_keyfile */
        sk_metric_t **m_reloads, **m_failed; /* counters (may be NULL) */
        /* state */
        pthread_mutex_t mu;             /* guards the pointer only, never the key work */
        sk_keyfile_set_t *keys;         /* one reference; NULL until loaded */
        sk_keyfile_stamp_t seen;        /* the file as last read (main thread) */
        int64_t checked_ms;             /* monotonic, last check (main thread) */
} fr_keyset_t;

/** @brief Load @p ks's file when one is configured (a bad file is -1 with @p errstr
 *  naming the variable and file: exit 2). Before any thread uses @p ks.
 *  @returns 0 (loaded, or no file configured) or -1. */
int fr_keyset_init(fr_keyset_t *ks, char *errstr, size_t errstr_size);
/** @brief From the main loop (main thread only): @p hup 1 re-reads the file now;
 *  otherwise every FR_KEYSET_RECHECK_MS it is re-read if it changed. A file that fails
 *  is not read again until it changes again (one line per change). */
void fr_keyset_tick(fr_keyset_t *ks, int hup);
/** @brief The keys in force with one reference for the caller (sk_keyfile_set_free),
 *  NULL if none. Any thread; the lock covers the pointer, not the caller's HMACs. */
sk_keyfile_set_t *fr_keyset_get(fr_keyset_t *ks);
/** @brief 1 if a set is loaded. Any thread. */
int fr_keyset_loaded(fr_keyset_t *ks);
/** @brief Drop the set (exit; no thread may use it afterwards). */
void fr_keyset_destroy(fr_keyset_t *ks);
