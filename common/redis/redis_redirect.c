/* redis_redirect.c: the pure routing logic of DESIGN.md 4b (sk/redis_redirect.h):
 * redirect parsing, the routing key of a command, one pipelined command's state.
 * No I/O, no allocation; thread-safe. */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "sk/crc16.h"
#include "sk/redis_error.h"
#include "sk/redis_redirect.h"

/* "SLOT HOST:PORT" of [p, e) after MOVED/ASK. HOST may be "[v6]" or empty. */
static int parse_target(const char *p, const char *e, sk_redir_t *out)
{
        const char *sp, *colon;
        long v = 0;
        size_t hl;

        for (sp = p; sp < e && isdigit((unsigned char)*sp); sp++) {
                v = v * 10 + (*sp - '0');
                if (v >= SK_CLUSTER_SLOTS)
                        return -1;
        }
        if (sp == p || sp >= e || *sp != ' ')
                return -1;
        out->slot = (int)v;
        p = sp + 1;
        for (colon = e; colon > p && colon[-1] != ':'; colon--)
                ;
        if (colon == p || colon == e)   /* no ':' or nothing after it */
                return -1;
        v = 0;
        for (const char *q = colon; q < e; q++) {
                if (!isdigit((unsigned char)*q))
                        return -1;
                v = v * 10 + (*q - '0');
                if (v > 65535)
                        return -1;
        }
        if (v == 0)
                return -1;
        out->port = (int)v;
        hl = (size_t)(colon - 1 - p);
        if (hl >= 2 && p[0] == '[' && p[hl - 1] == ']') {
                p++;
                hl -= 2;
        }
        if (hl >= sizeof(out->host))
                return -1;
        memcpy(out->host, p, hl);
        out->host[hl] = '\0';
        return 0;
}

sk_redir_kind_t sk_redir_parse(const char *s, size_t len, sk_redir_t *out)
{
        const char *e = s + len;

        memset(out, 0, sizeof(*out));
        out->slot = -1;
        if (sk_redis_error_is(s, len, "MOVED") && len > 6) {
                if (parse_target(s + 6, e, out) == 0)
                        out->kind = SK_REDIR_MOVED;
        } else if (sk_redis_error_is(s, len, "ASK") && len > 4) {
                if (parse_target(s + 4, e, out) == 0)
                        out->kind = SK_REDIR_ASK;
        } else if (sk_redis_error_is(s, len, "TRYAGAIN")) {
                out->kind = SK_REDIR_TRYAGAIN;
        } else if (sk_redis_error_is(s, len, "CLUSTERDOWN")) {
                out->kind = SK_REDIR_CLUSTERDOWN;
        }
        if (out->kind == SK_REDIR_NONE)
                out->slot = -1;
        return out->kind;
}

static int arg_is(const char *a, size_t n, const char *w)
{
        return n == strlen(w) && strncasecmp(a, w, n) == 0;
}

int sk_cmd_key_index(int argc, const char **argv, const size_t *argvlen)
{
        static const char *const keyless[] = {
                "PING", "INFO", "CONFIG", "SCRIPT", "MULTI", "EXEC", "DISCARD", "UNWATCH",
                "WAIT", "CLIENT", "CLUSTER", "ROLE", "TIME", "ECHO", "AUTH", "SELECT",
                "HELLO", "FUNCTION", "COMMAND", "MEMORY", "SLOWLOG", "LASTSAVE", "READONLY",
                "READWRITE", "ASKING", "QUIT", "RESET", "LATENCY", NULL };
        static const char *const walks[] = { "SCAN", "KEYS", "DBSIZE", "FLUSHDB",
                                             "FLUSHALL", "RANDOMKEY", NULL };
        size_t n0;
        const char *a;

        if (argc < 1 || !argv[0])
                return 0;
        a = argv[0];
        n0 = argvlen ? argvlen[0] : strlen(a);
        for (int i = 0; keyless[i]; i++)
                if (arg_is(a, n0, keyless[i]))
                        return 0;
        for (int i = 0; walks[i]; i++)
                if (arg_is(a, n0, walks[i]))
                        return -1;
        if (arg_is(a, n0, "EVAL") || arg_is(a, n0, "EVALSHA") || arg_is(a, n0, "EVAL_RO") ||
            arg_is(a, n0, "EVALSHA_RO") || arg_is(a, n0, "FCALL") || arg_is(a, n0, "FCALL_RO")) {
                size_t nl;
                if (argc < 4)
                        return 0;
                nl = argvlen ? argvlen[2] : strlen(argv[2]);
                /* numkeys "0" (or anything not starting with 1-9) -> keyless. */
                return nl >= 1 && argv[2][0] >= '1' && argv[2][0] <= '9' ? 3 : 0;
        }
        return argc >= 2 ? 1 : 0;
}

sk_pcmd_status_t sk_pcmd_on_reply(sk_pcmd_t *c, const sk_redir_t *rd, int redirect_node)
{
        c->backoff = 0;
        switch (rd ? rd->kind : SK_REDIR_NONE) {
        case SK_REDIR_MOVED:
        case SK_REDIR_ASK:
                if (++c->redirects > SK_REDIR_MAX || redirect_node < 0)
                        return c->status = SK_PCMD_NOTRUN;
                c->target = redirect_node;
                c->asking = rd->kind == SK_REDIR_ASK;
                return c->status = SK_PCMD_PENDING;
        case SK_REDIR_TRYAGAIN:
                if (++c->redirects > SK_REDIR_MAX)
                        return c->status = SK_PCMD_NOTRUN;
                c->backoff = 1;
                return c->status = SK_PCMD_PENDING;
        default:
                return c->status = SK_PCMD_ANSWERED;
        }
}

int sk_pcmds_on_conn_error(sk_pcmd_t *cmds, int n, int node)
{
        int changed = 0;

        for (int i = 0; i < n; i++)
                if (cmds[i].status == SK_PCMD_SENT && cmds[i].target == node) {
                        cmds[i].status = SK_PCMD_UNKNOWN;
                        changed++;
                }
        return changed;
}
