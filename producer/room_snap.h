/* producer/room_snap.h: the room state the front's tick last read, per queued voucher
 * (DESIGN.md 18 "Polling costs little"): the tick stores what queue_advance.lua answered,
 * the poll route reads it to answer a member with a valid position ticket without Redis.
 * What it does not do: I/O, or decide a member's state (room_routes.c). Thread-safe. */
#pragma once
#include <stdint.h>
#include "sk/queue_room.h"

#define FR_ROOM_SNAP_FRESH_MS 1000      /* older than this, a poll reads Redis */
#define FR_ROOM_SNAP_MAX 64             /* rooms remembered (FR_ROOM_MAX of room_tick.h) */

/** What one advance left in the room (Redis time and the front's monotonic clock). */
typedef struct fr_room_snap {
        int64_t voucher_id;
        int64_t mono_ms;                /* when stored (sk_mono_ms) */
        int64_t now_ms;                 /* the advance's Redis time */
        char generation[17];
        int begun, closed;
        int64_t npre, up_to, units_left, units_held, held_until_ms;
} fr_room_snap_t;

/** Store what the advance @p adv of voucher @p vid answered (the tick thread); a
 *  NOROOM advance forgets the room's state. */
void fr_room_snap_put(int64_t vid, const sk_qroom_adv_t *adv);

/** The state of voucher @p vid if stored within FR_ROOM_SNAP_FRESH_MS: 1 with *out, else
 *  0. No I/O. */
int fr_room_snap_get(int64_t vid, fr_room_snap_t *out);
