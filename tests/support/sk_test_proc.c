/* sk_test_proc.c: child processes of a test (sk_test_proc.h). Children are forked
 * from the test's main thread and exec'd at once; each one started here is remembered
 * so a teardown can SIGKILL those a failed check left running (CK_NOFORK: a failed
 * assertion skips the test's own stop). */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "sk_test.h"
#include "sk/clock.h"
#include "sk/url.h"

static pid_t children[64];
static int nchildren;

static void remember(pid_t pid)
{
        if (nchildren < (int)(sizeof(children) / sizeof(children[0])))
                children[nchildren++] = pid;
}

static void forget(pid_t pid)
{
        for (int i = 0; i < nchildren; i++)
                if (children[i] == pid) {
                        children[i] = children[--nchildren];
                        return;
                }
}

/* In the child: "NAME=VALUE" sets, "NAME" unsets. */
static void apply_env(const char *const *env)
{
        for (; env && *env; env++) {
                const char *eq = strchr(*env, '=');
                char k[128];

                if (!eq) {
                        unsetenv(*env);
                        continue;
                }
                if ((size_t)(eq - *env) >= sizeof(k))
                        continue;
                memcpy(k, *env, (size_t)(eq - *env));
                k[eq - *env] = '\0';
                setenv(k, eq + 1, 1);
        }
}

/* In the child: the run's names (and, unless names_only, endpoints and timeouts). */
static void conf_env(const sk_test_spawn_t *o, const sk_conf_t *conf)
{
        char num[32];

        setenv("SECKILL_REDIS_PREFIX", conf->redis_prefix, 1);
        setenv("SECKILL_TOPIC", conf->topic, 1);
        setenv("SECKILL_GROUP_ID", o->group ? o->group : conf->group_id, 1);
        setenv("SECKILL_MYSQL_URL", conf->mysql_url, 1);
        /* Tests use pay windows of seconds: no webhook grace after pay_deadline unless a
         * test passes SECKILL_PAY_GRACE_S in its env (DESIGN.md 13; production 120 s). */
        setenv("SECKILL_PAY_GRACE_S", "0", 1);
        if (o->names_only)
                return;
        setenv("SECKILL_REDIS_URL", conf->redis_url, 1);
        setenv("SECKILL_KAFKA_BROKERS", conf->kafka_brokers, 1);
        snprintf(num, sizeof(num), "%d", conf->topic_partitions);
        setenv("SECKILL_TOPIC_PARTITIONS", num, 1);
        snprintf(num, sizeof(num), "%d", conf->kafka_delivery_timeout_ms);
        setenv("SECKILL_KAFKA_DELIVERY_TIMEOUT_MS", num, 1);
        snprintf(num, sizeof(num), "%d", conf->reconcile_window_hours);
        setenv("SECKILL_RECONCILE_WINDOW_HOURS", num, 1);
        setenv("SECKILL_METRICS_ADDR", "off", 1);
}

/* The fronts started by this process: API port -> operations port (sk_test_spawn
 * chooses a free one unless the caller set SECKILL_OPS_ADDR). Test main thread only. */
static struct { int api, ops; } ops_ports[64];
static int ops_next;

int sk_test_ops_port(int api_port)
{
        for (int i = 0; i < 64; i++)
                if (ops_ports[i].api == api_port && ops_ports[i].ops > 0)
                        return ops_ports[i].ops;
        return api_port;
}

/* The port of "host:port" in @p v (after the last ':'), or 0. */
static int addr_port(const char *v)
{
        const char *c = v ? strrchr(v, ':') : NULL;

        return c ? (int)strtol(c + 1, NULL, 10) : 0;
}

/* A front gets SECKILL_OPS_ADDR on a free port unless @p o sets one: several fronts run
 * at once (ctest -j2, two fronts in a test), and the default 9465 is one port. Records
 * API port -> ops port. Writes "SECKILL_OPS_ADDR=..." into @p buf or leaves it "". */
static void front_ops_addr(const sk_test_spawn_t *o, char *buf, size_t cap)
{
        int api = 0, ops = 0;

        buf[0] = '\0';
        if (strcmp(o->bin, "seckill-front") != 0)
                return;
        for (int i = 0; o->env && o->env[i]; i++) {
                if (!strncmp(o->env[i], "SECKILL_HTTP_ADDR=", 18))
                        api = addr_port(o->env[i] + 18);
                if (!strncmp(o->env[i], "SECKILL_OPS_ADDR=", 17))
                        ops = addr_port(o->env[i] + 17);
        }
        for (int i = 0; o->args && o->args[i]; i++) {
                if (!strcmp(o->args[i], "--http-addr") && o->args[i + 1])
                        api = addr_port(o->args[i + 1]);
                if (!strcmp(o->args[i], "--ops-addr") && o->args[i + 1])
                        ops = addr_port(o->args[i + 1]);
        }
        if (!ops) {
                ops = sk_test_free_port();
                snprintf(buf, cap, "SECKILL_OPS_ADDR=127.0.0.1:%d", ops);
        }
        if (api) {
                for (int i = 0; i < 64; i++)    /* a restart on the same API port: the new one */
                        if (ops_ports[i].api == api)
                                ops_ports[i].api = 0;
                ops_ports[ops_next].api = api;
                ops_ports[ops_next].ops = ops;
                ops_next = (ops_next + 1) % 64;
        }
}

pid_t sk_test_spawn(const sk_test_spawn_t *o)
{
        char ops_env[64];
        const sk_conf_t *conf = o->conf ? o->conf : &sk_test_fx.conf;
        const char *bin = getenv("SK_BIN");
        const char *argv[40];
        int fds[2] = { -1, -1 }, argc = 0;
        char path[1024];
        pid_t pid;

        snprintf(path, sizeof(path), "%s/%s", bin && *bin ? bin : "build/bin", o->bin);
        argv[argc++] = path;
        for (int i = 0; o->args && o->args[i] && argc < 39; i++)
                argv[argc++] = o->args[i];
        argv[argc] = NULL;
        front_ops_addr(o, ops_env, sizeof(ops_env));
        if (!o->log_path && o->out_fd && pipe(fds) != 0) {
                fprintf(stderr, "sk_test_spawn: pipe: %s\n", strerror(errno));
                exit(2);
        }
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid < 0) {
                /* No ck_assert: also called outside a test (a suite's set-up). */
                fprintf(stderr, "sk_test_spawn: fork: %s\n", strerror(errno));
                exit(2);
        }
        if (pid == 0) {
                if (o->log_path) {
                        int fd = open(o->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);

                        if (fd >= 0) {
                                dup2(fd, 1);
                                dup2(fd, 2);
                                close(fd);
                        }
                } else if (o->out_fd) {
                        dup2(fds[1], 1);
                        close(fds[0]);
                        close(fds[1]);
                } else {
                        dup2(2, 1);
                }
                conf_env(o, conf);
                if (o->failpoints)
                        setenv("SECKILL_FAILPOINTS", o->failpoints, 1);
                else
                        unsetenv("SECKILL_FAILPOINTS");
                if (ops_env[0])
                        putenv(ops_env);
                apply_env(o->env);
                execv(path, (char *const *)argv);
                fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
                _exit(127);
        }
        if (fds[1] >= 0) {
                close(fds[1]);
                *o->out_fd = fds[0];
        }
        remember(pid);
        return pid;
}

int sk_test_wait(pid_t pid, int timeout_s)
{
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000;
        int status = 0;

        for (;;) {
                pid_t w = waitpid(pid, &status, WNOHANG);

                if (w == pid) {
                        forget(pid);
                        return status;
                }
                if (w < 0 || sk_mono_ms() > deadline)
                        return -1;
                sk_sleep_ms(50, NULL);
        }
}

/* Reap @p pid, SIGKILLing it if it is still there after @p timeout_s. Raw status. */
static int reap(pid_t pid, int timeout_s)
{
        int status = sk_test_wait(pid, timeout_s);

        if (status == -1) {
                kill(pid, SIGKILL);
                if (waitpid(pid, &status, 0) != pid)
                        status = -1;
                forget(pid);
        }
        return status;
}

int sk_test_wait_exit(pid_t pid, int timeout_s)
{
        int status = reap(pid, timeout_s);

        if (status == -1)
                return -1;
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int sk_test_stop(pid_t pid, int timeout_s)
{
        if (pid <= 0)
                return -1;
        kill(pid, SIGTERM);
        return reap(pid, timeout_s);
}

char *sk_test_log_path(char *out, size_t cap, const char *fmt, ...)
{
        const char *dir = getenv("SK_BUILD");
        char name[200];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(name, sizeof(name), fmt, ap);
        va_end(ap);
        snprintf(out, cap, "%s/%s_%d.log", dir ? dir : "/tmp", name, (int)getpid());
        return out;
}

void sk_test_reap_all(void)
{
        /* waitpid says whether it is still our unreaped child: a pid reaped elsewhere is
         * never signalled, even if the number was reused. */
        while (nchildren > 0) {
                pid_t pid = children[--nchildren];

                if (waitpid(pid, NULL, WNOHANG) == 0) {
                        kill(pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                }
        }
}

pid_t sk_test_proxy_start(int listen, int to)
{
        char a[64], b[64];
        pid_t pid = fork();

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                setpgid(0, 0);
                snprintf(a, sizeof(a), "TCP-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork", listen);
                snprintf(b, sizeof(b), "TCP:127.0.0.1:%d", to);
                execlp("socat", "socat", a, b, (char *)NULL);
                _exit(127);
        }
        setpgid(pid, pid);
        for (int i = 0; i < 100; i++) {
                int fd = socket(AF_INET, SOCK_STREAM, 0);
                struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)listen) };
                int ok;

                sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                ok = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
                close(fd);
                if (ok)
                        return pid;
                usleep(50 * 1000);
        }
        ck_abort_msg("socat did not listen on %d", listen);
        return -1;
}

int sk_test_file_count(const char *path, const char *needle)
{
        enum { CAP = 4 << 20 };
        char *buf = malloc(CAP);
        FILE *f = fopen(path, "r");
        const char *p;
        size_t n = 0;
        int count = 0;

        ck_assert_ptr_nonnull(buf);
        if (f) {
                n = fread(buf, 1, CAP - 1, f);
                fclose(f);
        }
        buf[n] = '\0';
        for (p = buf; *needle && (p = strstr(p, needle)); p += strlen(needle))
                count++;
        free(buf);
        return count;
}

void sk_test_read_all(int fd, char *buf, size_t size, int timeout_s)
{
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000;
        size_t len = 0;

        for (;;) {
                struct pollfd pfd = { fd, POLLIN, 0 };
                int left = (int)(deadline - sk_mono_ms());
                ssize_t got;

                if (left <= 0)
                        break;
                if (poll(&pfd, 1, left) <= 0)
                        continue;
                got = read(fd, buf + len, size - 1 - len);
                if (got <= 0) {
                        if (got == 0 || size - 1 - len == 0)
                                break;
                        if (errno == EINTR)
                                continue;
                        break;
                }
                len += (size_t)got;
        }
        buf[len] = '\0';
        close(fd);
}

int sk_test_free_port(void)
{
        struct sockaddr_in sin;
        socklen_t len = sizeof(sin);
        int fd = socket(AF_INET, SOCK_STREAM, 0), port;

        /* ck_abort only on failure: also called from main(), outside a running test,
         * where any ck_assert (even one that holds) is an error. */
        memset(&sin, 0, sizeof(sin));
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
            getsockname(fd, (struct sockaddr *)&sin, &len) != 0)
                ck_abort_msg("free port: %s", strerror(errno));
        port = ntohs(sin.sin_port);
        close(fd);
        return port;
}

pid_t sk_test_redis_start(sk_conf_t *conf, int port, const char *const *extra_args)
{
        const char *argv[32];
        char port_s[16], err[256];
        int argc = 0;
        pid_t pid;

        if (port == 0)
                port = sk_test_free_port();
        snprintf(port_s, sizeof(port_s), "%d", port);
        argv[argc++] = "redis-server";
        argv[argc++] = "--port";
        argv[argc++] = port_s;
        argv[argc++] = "--bind";
        argv[argc++] = "127.0.0.1";
        argv[argc++] = "--save";
        argv[argc++] = "";
        argv[argc++] = "--appendonly";
        argv[argc++] = "no";
        argv[argc++] = "--maxmemory-policy";
        argv[argc++] = "noeviction";
        for (; extra_args && *extra_args && argc < 31; extra_args++)
                argv[argc++] = *extra_args;
        argv[argc] = NULL;
        if ((pid = fork()) < 0)
                ck_abort_msg("fork: %s", strerror(errno));
        if (pid == 0) {
                int fd = open("/dev/null", O_WRONLY);

                if (fd >= 0) {
                        dup2(fd, 1);
                        close(fd);
                }
                execvp("redis-server", (char *const *)argv);
                _exit(127);
        }
        /* The whole parsed URL, not only host and port: the suite may run with a
         * redis-cluster:// or redis-sentinel:// SECKILL_REDIS_URL (label cluster/sentinel),
         * whose kind and seeds would otherwise stay in conf->redis. */
        snprintf(conf->redis_url, sizeof(conf->redis_url), "redis://127.0.0.1:%d/0", port);
        if (sk_redis_url_parse(conf->redis_url, &conf->redis, err, sizeof(err)) != 0)
                ck_abort_msg("%s", err);
        for (int i = 0; i < 100; i++) {
                struct timeval tv = { 1, 0 };
                redisContext *rc = redisConnectWithTimeout("127.0.0.1", port, tv);
                int ok = rc && !rc->err;

                if (rc)
                        redisFree(rc);
                if (ok)
                        return pid;
                usleep(50 * 1000);
        }
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        ck_abort_msg("private redis-server did not start on %d", port);
        return -1;
}

void sk_test_redis_stop(pid_t *pid)
{
        if (*pid > 0) {
                kill(*pid, SIGCONT);
                kill(*pid, SIGTERM);
                waitpid(*pid, NULL, 0);
        }
        *pid = 0;
}
