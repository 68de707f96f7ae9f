/* report.c: the reconciler's output on stdout (diagnostics go to stderr as SK_LOG
 * lines): a table with one row per voucher, or one JSON document (ids as strings). */
#include <inttypes.h>
#include <stdio.h>

#include "reconcile.h"
#include "sk/ids.h"
#include "sk/model.h"

/* JSON string escaping for the short notes (ASCII text written by this program). */
static void json_str(FILE *out, const char *s)
{
        fputc('"', out);
        for (; s && *s; s++) {
                unsigned char ch = (unsigned char)*s;
                if (ch == '"' || ch == '\\')
                        fprintf(out, "\\%c", ch);
                else if (ch < 0x20)
                        fprintf(out, "\\u%04x", ch);
                else
                        fputc(ch, out);
        }
        fputc('"', out);
}

static const char *direction(const struct rc_bucket_drift *bd)
{
        if (!bd->judged)
                return "not_judged";
        if (bd->missing)
                return "missing";
        return bd->drift < 0 ? "undersell" : bd->drift > 0 ? "oversell" : "none";
}

/* Per-bucket drift (DESIGN.md 14) of @p s as the JSON fields after "note". */
static void json_buckets(FILE *out, const rc_vstat_t *s)
{
        fprintf(out, ",\"buckets\":%d,\"probingSettled\":%" PRId64 ",\"probingRolledBack\":%"
                PRId64 ",\"strayRestored\":%" PRId64 ",\"homeSteps\":%" PRId64
                ",\"bucketDrift\":[", s->nbuckets, s->probing_settled, s->probing_rolled_back,
                s->stray_restored, s->home_steps);
        for (int b = 0; b < s->nbuckets && b < SK_BUCKETS_MAX; b++)
                fprintf(out, "%s{\"bucket\":%d,\"redisStock\":%" PRId64 ",\"expectedStock\":%"
                        PRId64 ",\"drift\":%" PRId64 ",\"direction\":\"%s\"}", b ? "," : "", b,
                        s->bk[b].redis, s->bk[b].expected, s->bk[b].drift, direction(&s->bk[b]));
        fputc(']', out);
}

static const char *verdict(int code)
{
        return code == 0 ? "consistent" : code == 1 ? "repaired" : "unresolved";
}

int64_t rc_dlq_loop_total(const rc_vstat_t *v, size_t n)
{
        int64_t t = 0;

        for (size_t i = 0; i < n; i++)
                t += v[i].dlq_loop;
        return t;
}

void rc_print(FILE *out, const rc_vstat_t *v, size_t n, int json, int exit_code, const char *note)
{
        size_t i;
        char vid[SK_ID_STRLEN];

        if (json) {
                fprintf(out, "{\"exit\":%d,\"result\":\"%s\",\"dlqRedriveLoopTraces\":%" PRId64
                        ",\"note\":", exit_code, verdict(exit_code), rc_dlq_loop_total(v, n));
                json_str(out, note ? note : "");
                fprintf(out, ",\"vouchers\":[");
                for (i = 0; i < n; i++) {
                        const rc_vstat_t *s = &v[i];
                        sk_id_format(s->voucher_id, vid);
                        fprintf(out, "%s{\"voucherId\":\"%s\",\"result\":\"%s\",\"entries\":%" PRId64
                                ",\"young\":%" PRId64 ",\"checked\":%" PRId64 ",\"consistent\":%" PRId64
                                ",\"redriven\":%" PRId64 ",\"rolledBack\":%" PRId64
                                ",\"inconsistent\":%" PRId64 ",\"drift\":%" PRId64
                                ",\"waiting\":%" PRId64 ",\"dlq\":%" PRId64
                                ",\"dlqRedriveLoop\":%" PRId64 ",\"collisions\":%" PRId64
                                ",\"notPersisted\":%" PRId64 ",\"failedCounted\":%" PRId64
                                ",\"lost\":%" PRId64 ",\"fencedRecorded\":%" PRId64
                                ",\"logMarkedConsistent\":%" PRId64 ",\"driftRows\":%" PRId64
                                ",\"releasesFinished\":%" PRId64
                                ",\"stockDrift\":%s,\"usersDrift\":%s,\"rebuilt\":%s,\"metaReset\":%s"
                                ",\"expiryAlert\":%s,\"errors\":%" PRId64 ",\"note\":",
                                i ? "," : "", vid, verdict(rc_vstat_exit(s)), s->entries, s->young,
                                s->checked, s->consistent, s->redriven, s->rolled_back,
                                s->inconsistent, s->drift, s->waiting, s->dlq, s->dlq_loop,
                                s->collisions,
                                s->not_persisted, s->failed_counted, s->lost, s->fenced,
                                s->log_marked, s->drift_rows, s->released,
                                s->stock_drift ? "true" : "false", s->users_drift ? "true" : "false",
                                s->rebuilt ? "true" : "false", s->meta_reset ? "true" : "false",
                                s->expiry_alert ? "true" : "false", (int64_t)s->errors);
                        json_str(out, s->note);
                        json_buckets(out, s);
                        fputc('}', out);
                }
                fprintf(out, "]}\n");
                return;
        }
        fprintf(out, "%-20s %8s %10s %9s %11s %12s %6s %8s %10s  %s\n", "voucher", "checked",
                "consistent", "redriven", "rolled_back", "inconsistent", "drift", "waiting",
                "result", "note");
        for (i = 0; i < n; i++) {
                const rc_vstat_t *s = &v[i];
                sk_id_format(s->voucher_id, vid);
                fprintf(out, "%-20s %8" PRId64 " %10" PRId64 " %9" PRId64 " %11" PRId64 " %12" PRId64
                        " %6" PRId64 " %8" PRId64 " %10s  %s\n", vid, s->checked, s->consistent,
                        s->redriven, s->rolled_back, s->inconsistent + s->collisions, s->drift,
                        s->waiting, verdict(rc_vstat_exit(s)), s->note);
                for (int b = 0; b < s->nbuckets && b < SK_BUCKETS_MAX; b++)
                        if (s->bk[b].judged && (s->bk[b].drift || s->bk[b].missing))
                                fprintf(out, "  bucket %d: redis %" PRId64 " expected %" PRId64
                                        " drift %+" PRId64 " (%s)\n", b, s->bk[b].redis,
                                        s->bk[b].expected, s->bk[b].drift, direction(&s->bk[b]));
                if (s->probing_settled || s->probing_rolled_back || s->stray_restored ||
                    s->home_steps)
                        fprintf(out, "  probing settled %" PRId64 ", probing rolled back %" PRId64
                                ", stray takes restored %" PRId64 ", home steps %" PRId64 "\n",
                                s->probing_settled, s->probing_rolled_back, s->stray_restored,
                                s->home_steps);
        }
        fprintf(out, "%zu voucher(s); result: %s (exit %d); traces stuck in the DLQ re-drive"
                " loop: %" PRId64 "%s%s\n", n, verdict(exit_code), exit_code, rc_dlq_loop_total(v, n),
                note && *note ? "; " : "", note ? note : "");
}
