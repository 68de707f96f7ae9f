/* admin/degrade.c: `seckill-admin degrade status|auto|db-only|redis-only [--voucher ID]`
 * (DESIGN.md 12): show the per-voucher degrade switch rows, or set the operator mode of
 * the default (scope 0) or of one voucher. Works with Redis down (DB only): main.c
 * hands the command here before the Redis startup check. The fronts make the state
 * moves that follow a mode change (sk/dswitch.h, producer/degrade.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "sk/db.h"
#include "sk/dswitch.h"
#include "sk/ids.h"

#define PROG "seckill-admin"

const char sk_admin_degrade_usage[] =
        "Usage: " PROG " degrade status|auto|db-only|redis-only [--voucher ID]\n"
        "The Redis-down degrade switch (DESIGN.md 12). status: the default mode and every\n"
        "voucher's mode, state (redis, draining, db, rebuilding), epoch and age. auto: the\n"
        "fronts move a voucher to the DB-only path when their Redis breaker opens and back\n"
        "once Redis was healthy and rebuilt; db-only: move to the DB-only path now and stay;\n"
        "redis-only: never leave Redis (503 while it is down). Without --voucher the mode is\n"
        "the default of every voucher without its own; --voucher ID sets that voucher's own.\n"
        "Exit 0 ok, 1 failure, 2 bad arguments.\n";

int sk_admin_degrade_wants(int argc, char **argv)
{
        int i;

        for (i = 1; i < argc; i++)
                if (!strcmp(argv[i], "degrade"))
                        return 1;
        return 0;
}

static void print_status(const sk_dsw_row_t *rows, size_t n, int def)
{
        size_t i;

        printf("default mode=%s\n", sk_dsw_mode_str(def));
        for (i = 0; i < n; i++)
                printf("voucher=%" PRId64 " mode=%s%s state=%s epoch=%" PRId64 " age_ms=%" PRId64 "\n",
                       rows[i].voucher_id, sk_dsw_mode_str(rows[i].mode),
                       rows[i].own_mode < 0 ? "(default)" : "", sk_dsw_state_str(rows[i].state),
                       rows[i].epoch, rows[i].age_ms);
}

static int run(const sk_conf_t *conf, const char *cmd, int64_t vid)
{
        char errstr[512], who[160], host[64] = "?";
        sk_dsw_row_t *rows = NULL;
        size_t n = 0;
        int mode = 0, def = 0, rc = 0;
        sk_err_t err;
        sk_db_t *db = sk_db_connect(&conf->mysql, 0, 5, errstr, sizeof(errstr));

        if (!db) {
                fprintf(stderr, PROG ": database: %s\n", errstr);
                return 1;
        }
        if (!strcmp(cmd, "status")) {
                err = sk_dsw_read_all(db, &rows, &n, &def, errstr, sizeof(errstr));
                if (err == SK_OK) {
                        size_t i, k = 0;

                        for (i = 0; i < n; i++)
                                if (vid == 0 || rows[i].voucher_id == vid)
                                        rows[k++] = rows[i];
                        print_status(rows, k, def);
                        if (vid != 0 && k == 0) {
                                fprintf(stderr, PROG ": voucher %" PRId64 " has no switch row\n", vid);
                                rc = 2;
                        }
                }
        } else {
                gethostname(host, sizeof(host) - 1);
                snprintf(who, sizeof(who), "admin %s:%d", host, (int)getpid());
                (void)sk_dsw_mode_parse(cmd, &mode);
                err = sk_dsw_set_mode(db, vid, mode, who, errstr, sizeof(errstr));
                if (err == SK_OK && vid)
                        printf("voucher=%" PRId64 " mode=%s\n", vid, sk_dsw_mode_str(mode));
                else if (err == SK_OK)
                        printf("default mode=%s\n", sk_dsw_mode_str(mode));
        }
        if (err != SK_OK) {
                fprintf(stderr, PROG ": degrade %s: %s\n", cmd, errstr);
                rc = err == SK_EINVAL ? 2 : 1;
        }
        free(rows);
        sk_db_close(db);
        return rc;
}

/* The command's own option: its default is written here only. */
static char voucher[32];
static const sk_opt_t OPTS[] = {
        SK_OPT_S("voucher", NULL, voucher, NULL, "the default mode / every voucher", "degrade: one voucher"),
};

int sk_admin_degrade(int argc, char **argv)
{
        sk_conf_t conf;
        int argi = 0, rc, mode;
        int64_t vid = 0;
        char **pos;

        for (rc = 1; rc < argc; rc++)
                if (!strcmp(argv[rc], "--help") || !strcmp(argv[rc], "-h")) {
                        fputs(sk_admin_degrade_usage, stdout);
                        printf("Common options (database, Redis, Kafka...): " PROG " --help\n");
                        return 0;
                }
        rc = sk_conf_load_bin(&conf, SK_BIN_ADMIN, argc, argv, PROG,
                              "degrade status|auto|db-only|redis-only", OPTS, SK_NOPTS(OPTS), &argi);
        if (rc == 1)
                return 0;
        if (rc != 0)
                return 2;
        pos = argv + argi;
        if (argc - argi != 2 || strcmp(pos[0], "degrade") != 0 ||
            (strcmp(pos[1], "status") != 0 && sk_dsw_mode_parse(pos[1], &mode) != 0)) {
                fprintf(stderr, PROG ": degrade needs one of status, auto, db-only, redis-only "
                        "(see " PROG " degrade --help)\n");
                return 2;
        }
        if (voucher[0] && sk_id_parse_cstr(voucher, &vid) != 0) {
                fprintf(stderr, PROG ": --voucher \"%s\" is not a voucher id\n", voucher);
                return 2;
        }
        sk_db_library_init();
        return run(&conf, pos[1], vid);
}
