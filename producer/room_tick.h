/* producer/room_tick.h: the front's side of the waiting room that is not a route
 * (DESIGN.md 18): the admission keys (SECKILL_QUEUE_KEYS_FILE), the table of queued
 * vouchers (read from the DB once a second, so the HTTP threads judge a purchase of a
 * queued voucher without any I/O), the advancing tick (<= 250 ms: every bucket's stock
 * in one pipelined round, noted with Redis TIME, and the DB's PAID count and latest pay
 * deadline at most once a second, passed to queue_advance.lua), the deferred clearing
 * of used bits after a 503, and the room metrics. */
#pragma once
#include <stdint.h>
#include "sk/queue_db.h"
#include "sk/queue_room.h"
#include "sk/queue_token.h"

#define FR_ROOM_TICK_MS 250             /* the advancing tick */
#define FR_ROOM_MAX 64                  /* queued vouchers a front follows at once */
#define FR_ROOM_REDRAW_MS 30000         /* DESIGN.md 18: a lost room's new generation draws
                                         * its first 30 s of joins at random */

/** Load the keys file (if set) and register the metrics. Main thread, before any
 *  thread starts. @returns 0, or -1 with the reason (a keys file that does not load
 *  stops the start). */
int fr_room_init(char *errstr, size_t errstr_size);
/** From the main loop (main thread only): @p hup 1 (SIGHUP seen) re-reads
 *  SECKILL_QUEUE_KEYS_FILE now; otherwise every 10 s it is re-read if its inode, size or
 *  mtime changed (DESIGN.md 15, 18). A failed reload keeps the keys in force, logs
 *  queue_keys_reload_failed once per change and counts
 *  seckill_queue_key_reload_failures_total. */
void fr_room_keys_tick(int hup);
/** Start / stop the tick thread (main thread). @returns 0 or -1. */
int fr_room_start(void);
void fr_room_stop(void);

/** 1 if the front has admission keys (the room's routes are served), 0 if not. */
int fr_room_has_keys(void);
/** The current key set with one reference for the caller (sk_keyfile_set_free), NULL
 *  when there is none. Thread-safe. */
sk_keyfile_set_t *fr_room_keys(void);
/** The queued voucher @p vid as the table last read it into *out. @returns 1 found (a
 *  queued voucher), 0 not in the table. Thread-safe, no I/O. */
int fr_room_find(int64_t vid, sk_queue_voucher_t *out);
/** The table has been read at least once and recently (within 5 s): 1 or 0. */
int fr_room_table_fresh(void);
/** The table has been read at least once since start: 1 or 0 (before that no purchase
 *  can be judged queued or not). */
int fr_room_table_read(void);
/** Remember @p v, a voucher a route just read from the DB: a queued one in the table
 *  until its next read, any other among the facts kept for 1 s (at most 256 vouchers,
 *  the stalest given up first). Thread-safe. */
void fr_room_note(const sk_queue_voucher_t *v);
/** The voucher @p vid for the room's routes: the table's, else facts noted less than 1 s
 *  ago (DESIGN.md 15 "Cost of hostile input": a flood of requests for a voucher without a
 *  room costs one DB read a second). @returns 1 found into *out, 0 (read the DB).
 *  Thread-safe, no I/O. */
int fr_room_facts(int64_t vid, sk_queue_voucher_t *out);
/** The voucher route's stock reading of @p vid (units) if one was noted less than 1 s
 *  ago for a voucher of the table or of the facts. @returns 1 into *units, else 0.
 *  Thread-safe, no I/O. */
int fr_room_units(int64_t vid, int64_t *units);
/** Note a stock reading of @p vid (units) for fr_room_units; a voucher neither in the
 *  table nor among the facts is not noted. Thread-safe. */
void fr_room_units_note(int64_t vid, int64_t units);

/** The sk_qroom_t of @p v (prefix, E) into *room; redraw_ms is FR_ROOM_REDRAW_MS once
 *  this front's tick has seen a generation of the room (a join that finds the state gone
 *  then starts a drawn generation, DESIGN.md 18 "Outage"), else 0. Thread-safe. */
void fr_room_of(const sk_queue_voucher_t *v, sk_qroom_t *room);
/** On the next tick, before it reads the stock: @p op SK_QUSE_CLEAR clears position
 *  @p pos's used bit of generation @p gen (borrowed) of room @p room (copied) (a purchase
 *  answered 503: nothing decided, DESIGN.md 18); SK_QUSE_DONE marks its use done (the
 *  purchase was answered otherwise: a reading after it counts the use). Thread-safe. */
void fr_room_use_later(const sk_qroom_t *room, const char *gen, int64_t pos, int op);

/** Count a poll answered, a sold_out told, a token refused (metrics). Thread-safe. */
void fr_room_count_poll(int64_t vid, int sold_out);
/** The "queue" member of /readyz: {"keys":bool,"rooms":N,"table":bool (read once; /readyz
 *  is 503 until then),"tableFresh":bool (read within 5 s)} into @p buf. */
void fr_room_json(char *buf, size_t size);
