/* producer/room_snap.c: the room state the tick last read, per queued voucher
 * (room_snap.h, DESIGN.md 18 "Polling costs little"), for polls answered without Redis.
 * What it does not do: read Redis or judge a member (the tick reads, the route judges). */
#include "room_snap.h"

#include <pthread.h>
#include <string.h>

#include "sk/clock.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static fr_room_snap_t snaps[FR_ROOM_SNAP_MAX];       /* guarded by mu */
static int nsnaps;

/* The slot of @p vid, or a free one, or the oldest (mu held). */
static fr_room_snap_t *slot_locked(int64_t vid)
{
        fr_room_snap_t *old = NULL;

        for (int i = 0; i < nsnaps; i++) {
                if (snaps[i].voucher_id == vid)
                        return &snaps[i];
                if (!old || snaps[i].mono_ms < old->mono_ms)
                        old = &snaps[i];
        }
        if (nsnaps < FR_ROOM_SNAP_MAX)
                return &snaps[nsnaps++];
        return old;
}

void fr_room_snap_put(int64_t vid, const sk_qroom_adv_t *adv)
{
        fr_room_snap_t *s;

        pthread_mutex_lock(&mu);
        s = slot_locked(vid);
        memset(s, 0, sizeof(*s));
        s->voucher_id = vid;
        if (!adv->noroom) {
                s->mono_ms = sk_mono_ms();
                s->now_ms = adv->now_ms;
                memcpy(s->generation, adv->generation, sizeof(s->generation));
                s->generation[sizeof(s->generation) - 1] = '\0';
                s->begun = adv->begun;
                s->closed = adv->closed;
                s->npre = adv->npre;
                s->up_to = adv->up_to;
                s->units_left = adv->units_left;
                s->units_held = adv->units_held;
                s->held_until_ms = adv->held_until_ms;
        }
        pthread_mutex_unlock(&mu);
}

int fr_room_snap_get(int64_t vid, fr_room_snap_t *out)
{
        int found = 0;
        int64_t now = sk_mono_ms();

        pthread_mutex_lock(&mu);
        for (int i = 0; i < nsnaps; i++)
                if (snaps[i].voucher_id == vid && snaps[i].mono_ms > 0 &&
                    now - snaps[i].mono_ms <= FR_ROOM_SNAP_FRESH_MS && snaps[i].generation[0]) {
                        *out = snaps[i];
                        found = 1;
                        break;
                }
        pthread_mutex_unlock(&mu);
        return found;
}
