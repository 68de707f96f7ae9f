/* producer/keyset.c: a reloadable key set of the front (keyset.h, DESIGN.md 15, 18):
 * first load, SIGHUP and changed-file reloads, the pointer swap under a lock, one log line
 * and one counted failure per failed reload.
 * What it does not do: parse a file (the set's module does) or hold the lock during key
 * work (callers take a reference). */
#include <stdio.h>
#include <string.h>

#include "keyset.h"
#include "sk/clock.h"
#include "sk/err.h"
#include "sk/log.h"

int fr_keyset_init(fr_keyset_t *ks, char *errstr, size_t errstr_size)
{
        char why[512] = "";
        sk_keyfile_set_t *keys;

        if (!ks->path || !ks->path[0])
                return 0;
        sk_keyfile_stamp(ks->path, &ks->seen);
        if (!(keys = sk_keyfile_set_load(ks->kind, ks->path, why, sizeof(why)))) {
                sk_seterr(errstr, errstr_size, "%s %s: %s", ks->var, ks->path, why);
                return -1;
        }
        pthread_mutex_lock(&ks->mu);
        ks->keys = keys;
        pthread_mutex_unlock(&ks->mu);
        ks->checked_ms = sk_mono_ms();
        SK_LOG(SK_INFO, ks->ev_loaded, "file=%s keys=%zu", ks->path,
               sk_keyfile_set_count(keys));
        return 0;
}

void fr_keyset_tick(fr_keyset_t *ks, int hup)
{
        char why[512] = "";
        sk_keyfile_set_t *fresh, *old;
        int64_t now = sk_mono_ms();

        if (!ks->path || !ks->path[0])
                return;
        if (!hup) {
                if (now - ks->checked_ms < FR_KEYSET_RECHECK_MS)
                        return;
                ks->checked_ms = now;
                if (!sk_keyfile_changed(ks->path, &ks->seen))
                        return;
        }
        ks->checked_ms = now;
        /* What is read now is what was seen: a failed read is not retried until the file
         * changes again (one line per change, not one every 10 s). */
        sk_keyfile_stamp(ks->path, &ks->seen);
        if (!(fresh = sk_keyfile_set_load(ks->kind, ks->path, why, sizeof(why)))) {
                if (ks->m_failed)
                        sk_metric_add(*ks->m_failed, 1);
                SK_LOG(SK_WARN, ks->ev_failed, "file=%s reason=\"%s\" keys=kept trigger=%s",
                       ks->path, why, hup ? "sighup" : "changed");
                return;
        }
        pthread_mutex_lock(&ks->mu);
        old = ks->keys;
        ks->keys = fresh;
        pthread_mutex_unlock(&ks->mu);
        sk_keyfile_set_free(old); /* freed once the last user of the old set is done */
        if (ks->m_reloads)
                sk_metric_add(*ks->m_reloads, 1);
        SK_LOG(SK_INFO, ks->ev_reloaded, "file=%s keys=%zu trigger=%s", ks->path,
               sk_keyfile_set_count(fresh), hup ? "sighup" : "changed");
}

sk_keyfile_set_t *fr_keyset_get(fr_keyset_t *ks)
{
        sk_keyfile_set_t *keys;

        pthread_mutex_lock(&ks->mu);
        keys = ks->keys ? sk_keyfile_set_ref(ks->keys) : NULL;
        pthread_mutex_unlock(&ks->mu);
        return keys;
}

int fr_keyset_loaded(fr_keyset_t *ks)
{
        int loaded;

        pthread_mutex_lock(&ks->mu);
        loaded = ks->keys != NULL;
        pthread_mutex_unlock(&ks->mu);
        return loaded;
}

void fr_keyset_destroy(fr_keyset_t *ks)
{
        sk_keyfile_set_t *keys;

        pthread_mutex_lock(&ks->mu);
        keys = ks->keys;
        ks->keys = NULL;
        pthread_mutex_unlock(&ks->mu);
        if (keys)
                sk_keyfile_set_free(keys);
}
