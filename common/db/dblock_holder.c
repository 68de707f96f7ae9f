/* dblock_holder.c: tb_lock holder strings "host:boot_id:pid:start_ticks:seq" and the
 * dead-holder rule (contract in sk/dblock_holder.h; DESIGN.md 16 (f)).
 *
 * It reads /proc (the boot id, our own and another pid's start time) and parses; it does
 * not touch the database, take a lock, or decide anything but "provably dead or not". */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sk/dblock_holder.h"

#define STAT_FIELD_START 22     /* proc(5): (22) starttime, clock ticks since boot */
#define STAT_MAX 1024           /* /proc/PID/stat is one line well under this */

static pthread_once_t self_once = PTHREAD_ONCE_INIT;
static sk_dblock_holder_t self_cached;
static _Atomic uint64_t next_seq;

/* Read up to @p size - 1 bytes of file @p path into @p out (NUL terminated).
 * @returns the byte count, or -1 with errno. */
static ssize_t read_small(const char *path, char *out, size_t size)
{
        FILE *f = fopen(path, "r");
        size_t n;

        if (!f)
                return -1;
        n = fread(out, 1, size - 1, f);
        out[n] = '\0';
        fclose(f);
        return (ssize_t)n;
}

static int is_host_char(int c)
{
        return isalnum(c) || c == '.' || c == '-' || c == '_';
}

/* A boot id as the kernel prints it: 36 bytes of lowercase hex and '-'. */
static int valid_boot_id(const char *s, size_t len)
{
        if (len == 1 && s[0] == '-')
                return 1;
        if (len != SK_DBLOCK_BOOT_ID_MAX)
                return 0;
        for (size_t i = 0; i < len; i++) {
                if (!(isdigit((unsigned char)s[i]) || (s[i] >= 'a' && s[i] <= 'f') || s[i] == '-'))
                        return 0;
        }
        return 1;
}

/* Unsigned decimal [s, end) into *v: digits only, no sign, no overflow. */
static int parse_u64(const char *s, const char *end, uint64_t *v)
{
        uint64_t x = 0;

        if (s >= end || end - s > 20)
                return 0;
        for (const char *p = s; p < end; p++) {
                unsigned d;

                if (!isdigit((unsigned char)*p))
                        return 0;
                d = (unsigned)(*p - '0');
                if (x > (UINT64_MAX - d) / 10)
                        return 0;
                x = x * 10 + d;
        }
        *v = x;
        return 1;
}

sk_err_t sk_dblock_holder_stat_ticks(const char *stat, uint64_t *start_ticks)
{
        const char *p = stat ? strrchr(stat, ')') : NULL;
        int field = 2;  /* the ')' ends field 2, the command name */

        if (!p)
                return SK_EINVAL;
        p++;
        while (*p) {
                const char *b, *e;

                while (*p == ' ')
                        p++;
                if (!*p || *p == '\n')
                        break;
                b = p;
                while (*p && *p != ' ' && *p != '\n')
                        p++;
                e = p;
                if (++field == STAT_FIELD_START)
                        return parse_u64(b, e, start_ticks) ? SK_OK : SK_EINVAL;
        }
        return SK_EINVAL;
}

/* The host name as a holder writes it. */
static void self_host(char host[SK_DBLOCK_HOST_MAX + 1])
{
        snprintf(host, SK_DBLOCK_HOST_MAX + 1, "unknown");
        (void)gethostname(host, SK_DBLOCK_HOST_MAX);
        host[SK_DBLOCK_HOST_MAX] = '\0';
        if (!host[0])
                snprintf(host, SK_DBLOCK_HOST_MAX + 1, "unknown");
        for (char *p = host; *p; p++) {
                if (!is_host_char((unsigned char)*p))
                        *p = '_';   /* plain characters, readable in a log line, never ':' */
        }
}

static void self_init(void)
{
        char buf[STAT_MAX];
        size_t len;

        memset(&self_cached, 0, sizeof(self_cached));
        self_host(self_cached.host);
        snprintf(self_cached.boot_id, sizeof(self_cached.boot_id), "-");
        if (read_small("/proc/sys/kernel/random/boot_id", buf, sizeof(buf)) > 0) {
                len = strcspn(buf, "\n");
                if (len == SK_DBLOCK_BOOT_ID_MAX && valid_boot_id(buf, len))
                        snprintf(self_cached.boot_id, sizeof(self_cached.boot_id), "%.*s",
                                 (int)len, buf);
        }
        self_cached.pid = (long)getpid();
        if (read_small("/proc/self/stat", buf, sizeof(buf)) <= 0 ||
            sk_dblock_holder_stat_ticks(buf, &self_cached.start_ticks) != SK_OK)
                self_cached.start_ticks = 0;
}

void sk_dblock_holder_self(sk_dblock_holder_t *self)
{
        (void)pthread_once(&self_once, self_init);
        *self = self_cached;
        /* A fork after the first call: the child is another process. */
        if (self->pid != (long)getpid()) {
                char buf[STAT_MAX];

                self->pid = (long)getpid();
                if (read_small("/proc/self/stat", buf, sizeof(buf)) <= 0 ||
                    sk_dblock_holder_stat_ticks(buf, &self->start_ticks) != SK_OK)
                        self->start_ticks = 0;
        }
        self->seq = 0;
}

void sk_dblock_holder_format(const sk_dblock_holder_t *h, char *out, size_t size)
{
        snprintf(out, size, "%s:%s:%ld:%" PRIu64 ":%" PRIu64, h->host, h->boot_id, h->pid,
                 h->start_ticks, h->seq);
}

void sk_dblock_holder_make(char *out, size_t size)
{
        sk_dblock_holder_t h;

        sk_dblock_holder_self(&h);
        h.seq = atomic_fetch_add(&next_seq, 1) + 1;
        sk_dblock_holder_format(&h, out, size);
}

sk_err_t sk_dblock_holder_parse(const char *s, sk_dblock_holder_t *out)
{
        const char *f[5], *e[5], *p = s;
        uint64_t pid;

        if (!s)
                return SK_EINVAL;
        for (int i = 0; i < 5; i++) {
                f[i] = p;
                p = strchr(p, ':');
                if (i < 4 && !p)
                        return SK_EINVAL;
                e[i] = p ? p : f[i] + strlen(f[i]);
                if (i == 4 && p)
                        return SK_EINVAL;       /* a sixth field */
                if (p)
                        p++;
        }
        if (e[0] == f[0] || e[0] - f[0] > SK_DBLOCK_HOST_MAX)
                return SK_EINVAL;
        for (const char *q = f[0]; q < e[0]; q++) {
                if (!is_host_char((unsigned char)*q))
                        return SK_EINVAL;
        }
        if (!valid_boot_id(f[1], (size_t)(e[1] - f[1])))
                return SK_EINVAL;
        if (!parse_u64(f[2], e[2], &pid) || pid < 1 || pid > INT32_MAX ||
            !parse_u64(f[3], e[3], &out->start_ticks) || !parse_u64(f[4], e[4], &out->seq))
                return SK_EINVAL;
        snprintf(out->host, sizeof(out->host), "%.*s", (int)(e[0] - f[0]), f[0]);
        snprintf(out->boot_id, sizeof(out->boot_id), "%.*s", (int)(e[1] - f[1]), f[1]);
        out->pid = (long)pid;
        return SK_OK;
}

int sk_dblock_holder_probe_proc(long pid, uint64_t *start_ticks, void *arg)
{
        char path[64], buf[STAT_MAX];

        (void)arg;
        if (pid < 1)
                return -1;
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        if (read_small(path, buf, sizeof(buf)) > 0)
                return sk_dblock_holder_stat_ticks(buf, start_ticks) == SK_OK ? 1 : -1;
        /* No stat file: gone, or no /proc. Only ESRCH proves "gone". */
        if (kill((pid_t)pid, 0) == -1 && errno == ESRCH)
                return 0;
        return -1;
}

int sk_dblock_holder_dead(const char *who, const sk_dblock_holder_t *self,
                          sk_dblock_probe_fn probe, void *arg)
{
        sk_dblock_holder_t h;
        uint64_t ticks = 0;
        int r;

        if (!who || !self || !probe || sk_dblock_holder_parse(who, &h) != SK_OK)
                return 0;
        if (strcmp(h.host, self->host) != 0)
                return 0;               /* another machine: its pids mean nothing here */
        if (strcmp(self->boot_id, "-") == 0 || strcmp(h.boot_id, "-") == 0)
                return 0;               /* a boot id unknown: nothing proves it */
        if (strcmp(h.boot_id, self->boot_id) != 0)
                return 1;               /* our host's earlier boot: every process of it is gone */
        if (h.pid == self->pid && h.start_ticks == self->start_ticks)
                return 0;               /* this very process (another lock object of ours) */
        r = probe(h.pid, &ticks, arg);
        if (r == 0)
                return 1;               /* no process has the pid */
        if (r == 1 && h.start_ticks != 0 && ticks != h.start_ticks)
                return 1;               /* the pid was reused by a later process */
        return 0;
}
