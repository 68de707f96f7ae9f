/* producer/listen.c: the API listener's unix socket (producer/listen.h, DESIGN.md 15).
 * Mode and group are set between bind() and listen(): until listen() nobody can
 * connect, so there is no moment at which the socket is open wider than 0660.
 * What it does not do: serve (http.c hands the fd to libmicrohttpd) or decide whom to
 * believe (a unix peer is "unix" in SECKILL_TRUSTED_PROXIES, peers.c). */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "listen.h"
#include "sk/err.h"
#include "sk/log.h"

static ino_t made_ino;          /* the socket file this process created; 0 = none */
static dev_t made_dev;

int fr_listen_is_unix(const char *addr)
{
        return !strncmp(addr, FR_UNIX_PREFIX, sizeof(FR_UNIX_PREFIX) - 1);
}

/* PATH of "unix:PATH" into *sun. @returns 0, or -1 with errstr. */
static int unix_addr(const char *addr, struct sockaddr_un *sun, char *errstr, size_t errstr_size)
{
        const char *path = addr + sizeof(FR_UNIX_PREFIX) - 1;

        memset(sun, 0, sizeof(*sun));
        sun->sun_family = AF_UNIX;
        if (path[0] != '/' || strlen(path) >= sizeof(sun->sun_path)) {
                sk_seterr(errstr, errstr_size, "SECKILL_HTTP_ADDR %s: unix:PATH needs an absolute path "
                          "of at most %zu bytes", addr, sizeof(sun->sun_path) - 1);
                return -1;
        }
        memcpy(sun->sun_path, path, strlen(path) + 1);
        return 0;
}

/* Something at the socket's path: a socket nobody answers on is removed; anything else
 * stops the start. @returns 0 (the path is free now), or -1 with errstr. */
static int clear_stale(const struct sockaddr_un *sun, const char *addr, char *errstr,
                       size_t errstr_size)
{
        struct stat st;
        int fd, live;

        if (lstat(sun->sun_path, &st) != 0)
                return 0;
        if (!S_ISSOCK(st.st_mode)) {
                sk_seterr(errstr, errstr_size, "SECKILL_HTTP_ADDR %s: the path exists and is not a "
                          "socket", addr);
                return -1;
        }
        if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
                sk_seterr(errstr, errstr_size, "socket: %s", strerror(errno));
                return -1;
        }
        live = connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0 || errno != ECONNREFUSED;
        close(fd);
        if (live) {
                sk_seterr(errstr, errstr_size, "SECKILL_HTTP_ADDR %s: a process is listening there "
                          "(another front?)", addr);
                return -1;
        }
        if (unlink(sun->sun_path) != 0 && errno != ENOENT) {
                sk_seterr(errstr, errstr_size, "SECKILL_HTTP_ADDR %s: cannot remove the stale socket: "
                          "%s", addr, strerror(errno));
                return -1;
        }
        SK_LOG(SK_INFO, "http_socket_stale_removed", "path=%s", sun->sun_path);
        return 0;
}

int fr_listen_unix(const char *addr, int backlog, char *errstr, size_t errstr_size)
{
        struct sockaddr_un sun;
        struct group *gr;
        struct stat st;
        int fd = -1;

        if (unix_addr(addr, &sun, errstr, errstr_size) != 0 ||
            clear_stale(&sun, addr, errstr, errstr_size) != 0)
                return -1;
        if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
            bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
                sk_seterr(errstr, errstr_size, "SECKILL_HTTP_ADDR %s: %s", addr, strerror(errno));
                goto fail;
        }
        if (stat(sun.sun_path, &st) == 0) {
                made_ino = st.st_ino;
                made_dev = st.st_dev;
        }
        /* The gateway's user is in the group seckill (DESIGN.md 15, 17). */
        if ((gr = getgrnam(FR_UNIX_GROUP)) && chown(sun.sun_path, (uid_t)-1, gr->gr_gid) != 0) {
                sk_seterr(errstr, errstr_size, "SECKILL_HTTP_ADDR %s: cannot give it the group %s: %s",
                          addr, FR_UNIX_GROUP, strerror(errno));
                goto fail;
        }
        if (chmod(sun.sun_path, 0660) != 0 || listen(fd, backlog) != 0) {
                sk_seterr(errstr, errstr_size, "SECKILL_HTTP_ADDR %s: %s", addr, strerror(errno));
                goto fail;
        }
        SK_LOG(SK_INFO, "http_socket", "path=%s mode=0660 group=%s", sun.sun_path,
               gr ? FR_UNIX_GROUP : "(the process's: no group seckill)");
        return fd;
fail:
        if (fd >= 0)
                close(fd);
        fr_listen_unix_remove(addr);
        return -1;
}

void fr_listen_unix_remove(const char *addr)
{
        struct sockaddr_un sun;
        struct stat st;

        if (!fr_listen_is_unix(addr) || !made_ino || unix_addr(addr, &sun, NULL, 0) != 0)
                return;
        if (stat(sun.sun_path, &st) == 0 && st.st_ino == made_ino && st.st_dev == made_dev)
                unlink(sun.sun_path);
        made_ino = 0;
}
