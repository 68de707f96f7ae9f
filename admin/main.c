/* seckill-admin: operator commands against the database and Redis (DESIGN.md 2):
 *   db migrate                                   apply ddl/ migrations
 *   db grants --app USER --admin USER [--host H] print the least-privilege GRANTs
 *   voucher create --stock N [--buckets B] --begin T --end T [--status S] [--preheat]
 *                  [--price MINOR] [--currency CUR]
 *   payment refunds [--json] | payment refunded --txn ID --ref R   (admin/payment.c, 13)
 *   voucher add-stock ID --stock K --request-id R [--wait-ms MS]
 *   voucher preheat ID [--rebuild-from-db] [--wait-ms MS]
 *   voucher show ID [--json]
 *   voucher set-status ID N
 *   verify VOUCHER_ID                            invariants of DESIGN.md 9
 *   degrade status|auto|db-only|redis-only [--voucher ID]   (admin/degrade.c, DESIGN.md 12)
 * Configuration: defaults < SECKILL_* environment < flags (sk/conf.h); the subcommand
 * flags are declared to sk_conf_load too, so they may appear anywhere on the line.
 * Exit status: 0 ok, 1 runtime failure, 2 bad arguments or a refusal (see admin.h). */
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "sk/db.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/redis.h"

#define PROG "seckill-admin"

const sk_admin_opts_t *sk_admin_opts;

typedef struct cmd_help {
        const char *w1, *w2;     /* command words; w2 NULL for one-word commands */
        const char *summary;     /* one line, for `--help` and `<group> --help` */
        const char *text;
        const char *allowed;     /* subcommand flags it accepts, space-separated */
} cmd_help_t;

static const cmd_help_t CMDS[] = {
        { "db", "migrate", "apply the ddl/ migrations not yet applied (creates the database)",
          "Usage: " PROG " db migrate [--allow-unpaid] [common options]\n"
          "Create the database if missing and apply the ddl/ migrations not yet recorded in\n"
          "schema_migrations (serialized by the tb_lock row seckill:migrate:<db>, waited\n"
          "for up to 30 s; safe to run twice or concurrently).\n"
          "From v4: stop every v4 binary first; while the v5 payment migration (0008) is\n"
          "pending and an order is UNPAID it refuses (exit 2) before changing anything;\n"
          "--allow-unpaid goes on and leaves those orders payable at amount 0, currency\n"
          "SECKILL_CURRENCY.\n"
          "Prints: applied N migration(s). Exit 0 ok, 1 failure, 2 refused.\n"
          "Run it as the admin user of `db grants` (or the database's root on a test stack).\n",
          " allow-unpaid " },
        { "db", "grants", "print the GRANT statements of the least-privilege users",
          "Usage: " PROG " db grants --app USER --admin USER [--host H]\n"
          "Print, for the database of SECKILL_MYSQL_URL, the GRANT statements of the two\n"
          "users of DESIGN.md 17 (either may be left out): the admin user (--admin, for\n"
          "`db migrate`) may create the database and change its schema; the app user (--app,\n"
          "every binary at run time and every other command) may SELECT, INSERT and UPDATE\n"
          "the rows of each table of the migrations, nothing else. USER is 1..32 chars of\n"
          "[A-Za-z0-9_.-]; H (default %) the host part of the accounts. Connects to nothing.\n"
          "Create the users (CREATE USER ... IDENTIFIED BY ...), then, as the DB's root:\n"
          "  " PROG " db grants --admin seckill_admin | mysql\n"
          "  SECKILL_MYSQL_URL=mysql://seckill_admin:...@host/db " PROG " db migrate\n"
          "  " PROG " db grants --app seckill_app | mysql     # table grants need the tables\n"
          "Again after an upgrade whose migrations add a table. Exit 0 ok, 2 bad arguments.\n",
          " app admin host " },
        { "voucher", "create", "insert a voucher and its stock buckets (optionally preheat)",
          "Usage: " PROG " voucher create --stock N [--buckets B] --begin T --end T [--status S] [--preheat] [--price MINOR] [--currency CUR]\n"
          "Insert a voucher (init_stock = stock = N, 1..1000000000) with a fresh snowflake id,\n"
          "its stock split over B buckets (1..16, default 1; N/B each, the remainder one unit\n"
          "each to the first buckets; B is fixed for the voucher's life; leases a worker id in\n"
          "the database like the front). T is epoch seconds (1764439200) or\n"
          "ISO-8601 WITH a zone (2026-11-29T18:00:00Z, 2026-11-29T18:00:00+08:00); a time\n"
          "without a zone is rejected. --status 1 on sale (default), 2 offline, 3 expired,\n"
          "4 paused. --preheat also writes the Redis state (see voucher preheat).\n"
          "--price: the price in minor units (a whole number >= 0, default 0) and --currency\n"
          "its ISO 4217 code (default SECKILL_CURRENCY, CNY), fixed for the voucher's life;\n"
          "every order copies them, and an order with a price > 0 is created UNPAID and\n"
          "paid only by the payment provider's signed callback (DESIGN.md 13).\n"
          "Prints: {\"voucherId\":\"ID\"}. Exit 0 ok, 1 failure, 2 bad arguments.\n",
          " stock buckets begin end status preheat price currency " },
        { "voucher", "preheat", "copy a voucher's DB state to Redis, or rebuild it from the DB",
          "Usage: " PROG " voucher preheat ID [--rebuild-from-db] [--wait-ms MS]\n"
          "Copy a voucher's DB state to Redis: stock (never overwriting a stock that was sold\n"
          "down: exit 2), the active buyers, then meta last, with the expiry of DESIGN.md 4.\n"
          "If the stock key is missing and the voucher could have sales (DB rows, Redis\n"
          "remnants, or one of its messages unconsumed in Kafka), runs the rebuild instead.\n"
          "--rebuild-from-db: the rebuild of DESIGN.md 8: pause the voucher (status 4), wait\n"
          "up to --wait-ms (default 2 x delivery timeout) for the consumer group to reach\n"
          "the end of the voucher's partitions and for every DEDUCT to be decided (pending\n"
          "rollbacks are run), then set stock and users (in chunks) from the DB and restore\n"
          "meta. Not settled in time: exit 2.\n",
          " rebuild-from-db wait-ms " },
        { "voucher", "show", "print a voucher's DB row and Redis keys side by side",
          "Usage: " PROG " voucher show ID [--json]\n"
          "Print the DB row and the Redis meta, stock, users and trace sizes side by side.\n"
          "Exit 0 ok, 1 failure, 2 bad arguments or not in the database.\n", " json " },
        { "voucher", "add-stock", "add units to a voucher (idempotent by request id)",
          "Usage: " PROG " voucher add-stock ID --stock K --request-id R [--wait-ms MS]\n"
          "Add K units (1..1000000000) to a voucher (DESIGN.md 14): one DB transaction records\n"
          "R (1..64 chars) in tb_seckill_stock_change and spreads K over the bucket rows like\n"
          "voucher create (init_stock and stock), and the voucher's init_stock; then rebuilds\n"
          "the voucher's Redis state from the DB. A repeated R changes nothing (exit 0, says so).\n"
          "Exit 0 ok, 1 failure, 2 bad arguments, unknown voucher, or rebuild not settled.\n",
          " stock request-id wait-ms " },
        { "voucher", "set-status", "set a voucher's status in the DB and in Redis",
          "Usage: " PROG " voucher set-status ID N\n"
          "Set the status (1 on sale, 2 offline, 3 expired, 4 paused) in the DB, then in the\n"
          "Redis meta if it exists. Exit 0 ok, 1 failure, 2 bad arguments.\n", "" },
        { "payment", "refunds", "list the payments to refund (refund_due, not yet refunded)",
          "Usage: " PROG " payment refunds [--json]\n"
          "List the payments the payment callback recorded as refund_due (the order was\n"
          "closed, cancelled, late, already paid by another transaction, failed, or the\n"
          "amount or currency differed; DESIGN.md 13) and not yet marked refunded, oldest\n"
          "first: txn id, order id, amount (minor units), currency, reason, received_at\n"
          "(UTC), age in seconds. Refund each through the provider's refund API, then mark\n"
          "it with `payment refunded`. Exit 0 ok, 1 failure.\n", " json " },
        { "payment", "refunded", "mark a refund_due payment as refunded",
          "Usage: " PROG " payment refunded --txn ID --ref R\n"
          "Mark the refund_due payment ID refunded (refunded_at = now, refund_ref = R, the\n"
          "provider's refund reference; both 1..128 printable ASCII characters). A repeat\n"
          "with the same R is a success. Exit 0 ok, 1 failure, 2 no refund_due payment of\n"
          "that id, already marked with another ref, or bad arguments.\n", " txn ref " },
        { "verify", NULL, "check the invariants of DESIGN.md 9 on one voucher",
          "Usage: " PROG " verify VOUCHER_ID [--json] [--quiesced]\n"
          "Check invariants 1, 2, 4, 6 and active <= init of DESIGN.md 9 on the live state;\n"
          "with --quiesced (no traffic, consumers caught up, after a reconciler --repair\n"
          "pass) also invariant 3: each bucket's Redis stock = its DB stock, the users\n"
          "hashes = the active buyers, each in their home bucket. Exit 0 iff all hold.\n",
          " json quiesced " },
};
#define NCMDS (sizeof(CMDS) / sizeof(CMDS[0]))

/* The argument part of a command's usage line ("voucher show ID [--json]"). */
static void print_synopsis(const cmd_help_t *c)
{
        const char *u = c->text + strlen("Usage: " PROG " ");
        const char *nl = strchr(u, '\n');
        int n = (int)(nl - u);
        const char *common = strstr(u, " [common options]");

        if (common && common < nl)
                n = (int)(common - u);
        printf("  %.*s\n      %s\n", n, u, c->summary);
}

/* `seckill-admin --help`: the commands, then the common options the admin uses. */
static void print_overview(void)
{
        printf("Usage: " PROG " [options] COMMAND [ARGS]\n\nCommands (`" PROG
               " COMMAND --help` describes one, with its own options):\n");
        for (size_t c = 0; c < NCMDS; c++)
                print_synopsis(&CMDS[c]);
        printf("  degrade status|auto|db-only|redis-only [--voucher ID]\n"
               "      show or set the Redis-down degrade switch (works with Redis down)\n");
        printf("\nOptions (flag > environment > default):\n");
        sk_conf_print_options(stdout, SK_BIN_ADMIN, NULL, 0);
}

/* `voucher --help`, `db --help`: the commands of that group. */
static void print_group(const char *w1)
{
        printf("Usage: " PROG " %s COMMAND ...\n\n", w1);
        for (size_t c = 0; c < NCMDS; c++)
                if (strcmp(CMDS[c].w1, w1) == 0)
                        print_synopsis(&CMDS[c]);
        printf("\n`" PROG " %s COMMAND --help` describes one; common options: " PROG " --help\n", w1);
}

/* `[<command>] --help` (before sk_conf_load, which would print the generic help):
 * finds the command words among argv and prints the matching help.
 * @returns 1 if help was asked for (and printed), else 0. */
static int help_requested(int argc, char **argv)
{
        int help = 0;
        const char *w[2] = { NULL, NULL };
        int nw = 0;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
                        help = 1;
                else if (argv[i][0] != '-' && nw < 2) {
                        for (size_t c = 0; c < NCMDS; c++)
                                if ((nw == 0 && strcmp(argv[i], CMDS[c].w1) == 0) ||
                                    (nw == 1 && CMDS[c].w2 && strcmp(argv[i], CMDS[c].w2) == 0 &&
                                     strcmp(w[0], CMDS[c].w1) == 0)) {
                                        w[nw++] = argv[i];
                                        break;
                                }
                }
        }
        if (!help)
                return 0;
        if (!w[0]) {
                print_overview();
                return 1;
        }
        for (size_t c = 0; c < NCMDS; c++)
                if (strcmp(w[0], CMDS[c].w1) == 0 &&
                    (!CMDS[c].w2 || (w[1] && strcmp(w[1], CMDS[c].w2) == 0))) {
                        fputs(CMDS[c].text, stdout);
                        printf("Common options (database, Redis, Kafka...): " PROG " --help\n");
                        return 1;
                }
        print_group(w[0]);
        return 1;
}

static int usage_error(const char *fmt, const char *arg)
{
        fprintf(stderr, PROG ": ");
        fprintf(stderr, fmt, arg ? arg : "");
        fprintf(stderr, " (see " PROG " --help)\n");
        return 2;
}

/* A flag given to a command that does not take it is a usage error. */
static int check_flags(const cmd_help_t *cmd, const sk_admin_opts_t *o)
{
        static const struct { const char *name; } names[] = {
                { "stock" }, { "begin" }, { "end" }, { "status" }, { "preheat" },
                { "rebuild-from-db" }, { "json" }, { "wait-ms" }, { "buckets" }, { "request-id" },
                { "quiesced" }, { "app" }, { "admin" }, { "host" }, { "price" }, { "currency" },
                { "txn" }, { "ref" }, { "allow-unpaid" },
        };
        int given[19];
        char pat[40];

        given[0] = o->stock != -1;
        given[1] = o->begin[0] != '\0';
        given[2] = o->end[0] != '\0';
        given[3] = o->status != -1;
        given[4] = o->preheat != 0;
        given[5] = o->rebuild_from_db != 0;
        given[6] = o->json != 0;
        given[7] = o->wait_ms != 0;
        given[8] = o->buckets != 0;
        given[9] = o->request_id[0] != '\0';
        given[10] = o->quiesced != 0;
        given[11] = o->app[0] != '\0';
        given[12] = o->admin[0] != '\0';
        given[13] = o->host[0] != '\0';
        given[14] = o->price[0] != '\0';
        given[15] = o->currency[0] != '\0';
        given[16] = o->txn[0] != '\0';
        given[17] = o->ref[0] != '\0';
        given[18] = o->allow_unpaid != 0;
        for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++) {
                snprintf(pat, sizeof(pat), " %s ", names[i].name);
                if (given[i] && !strstr(cmd->allowed, pat)) {
                        fprintf(stderr, PROG ": option --%s does not apply to `%s%s%s` "
                                "(see " PROG " %s%s%s --help)\n", names[i].name, cmd->w1,
                                cmd->w2 ? " " : "", cmd->w2 ? cmd->w2 : "", cmd->w1,
                                cmd->w2 ? " " : "", cmd->w2 ? cmd->w2 : "");
                        return 2;
                }
        }
        return 0;
}

int main(int argc, char **argv)
{
        sk_conf_t conf;
        sk_admin_opts_t o;
        int argi = 0, rc, npos;
        char **pos;

        memset(&o, 0, sizeof(o));
        o.stock = -1;
        o.status = -1;
        const sk_opt_t extra[] = {
                { "stock", NULL, SK_OPT_INT, &o.stock, 0, 1, 1000000000,
                  "voucher create: units of stock (required; -1 = not given)" },
                { "begin", NULL, SK_OPT_STR, o.begin, sizeof(o.begin), 0, 0,
                  "voucher create: sale start (epoch s or ISO-8601 with zone)" },
                { "end", NULL, SK_OPT_STR, o.end, sizeof(o.end), 0, 0,
                  "voucher create: sale end (epoch s or ISO-8601 with zone)" },
                { "status", NULL, SK_OPT_INT, &o.status, 0, 1, 4,
                  "voucher create: 1 on sale (default), 2 offline, 3 expired, 4 paused" },
                { "preheat", NULL, SK_OPT_BOOL, &o.preheat, 0, 0, 1,
                  "voucher create: preheat Redis too" },
                { "rebuild-from-db", NULL, SK_OPT_BOOL, &o.rebuild_from_db, 0, 0, 1,
                  "voucher preheat: run the rebuild of DESIGN.md 8" },
                { "json", NULL, SK_OPT_BOOL, &o.json, 0, 0, 1, "voucher show, verify: JSON output" },
                { "quiesced", NULL, SK_OPT_BOOL, &o.quiesced, 0, 0, 1,
                  "verify: also judge invariant 3 (Redis = DB; after quiescence)" },
                { "wait-ms", NULL, SK_OPT_INT, &o.wait_ms, 0, 1, 3600000,
                  "voucher preheat --rebuild-from-db: settle wait (0 = 2 x delivery timeout)" },
                { "buckets", NULL, SK_OPT_INT, &o.buckets, 0, 1, SK_BUCKETS_MAX,
                  "voucher create: stock buckets 1..16 (default 1, DESIGN.md 14)" },
                { "request-id", NULL, SK_OPT_STR, o.request_id, sizeof(o.request_id), 0, 0,
                  "voucher add-stock: idempotency key of the change (1..64 chars)" },
                { "app", NULL, SK_OPT_STR, o.app, sizeof(o.app), 0, 0, "db grants: the app user" },
                { "admin", NULL, SK_OPT_STR, o.admin, sizeof(o.admin), 0, 0, "db grants: the admin user" },
                { "host", NULL, SK_OPT_STR, o.host, sizeof(o.host), 0, 0,
                  "db grants: host part of both accounts (default %)" },
                { "price", NULL, SK_OPT_STR, o.price, sizeof(o.price), 0, 0,
                  "voucher create: price in minor units (default 0, DESIGN.md 13)" },
                { "currency", NULL, SK_OPT_STR, o.currency, sizeof(o.currency), 0, 0,
                  "voucher create: ISO 4217 currency (default SECKILL_CURRENCY)" },
                { "txn", NULL, SK_OPT_STR, o.txn, sizeof(o.txn), 0, 0,
                  "payment refunded: the provider txn id" },
                { "ref", NULL, SK_OPT_STR, o.ref, sizeof(o.ref), 0, 0,
                  "payment refunded: the provider's refund reference" },
                { "allow-unpaid", NULL, SK_OPT_BOOL, &o.allow_unpaid, 0, 0, 1,
                  "db migrate: to v5 despite UNPAID orders (left at amount 0, SECKILL_CURRENCY)" },
        };

        if (sk_admin_degrade_wants(argc, argv))
                return sk_admin_degrade(argc, argv); /* its own options; works with Redis down */
        if (help_requested(argc, argv))
                return 0;
        rc = sk_conf_load_bin(&conf, SK_BIN_ADMIN, argc, argv, PROG, "COMMAND [ARGS]", extra,
                              sizeof(extra) / sizeof(extra[0]), &argi);
        if (rc == 1)
                return 0;
        if (rc != 0)
                return 2;
        sk_admin_opts = &o;
        sk_log_init("admin");
        sk_db_library_init();

        pos = argv + argi;
        npos = argc - argi;
        if (npos < 1)
                return usage_error("missing command: db migrate, voucher ..., payment ..., verify%s",
                                   NULL);

        if (strcmp(pos[0], "db") == 0) {
                int grants = npos >= 2 && strcmp(pos[1], "grants") == 0;
                if (npos < 2 || (!grants && strcmp(pos[1], "migrate") != 0))
                        return usage_error("unknown db command \"%s\" (db migrate|grants)",
                                           npos < 2 ? "" : pos[1]);
                if (npos > 2)
                        return usage_error("unexpected argument \"%s\"", pos[2]);
                if (check_flags(&CMDS[grants ? 1 : 0], &o))
                        return 2;
                return grants ? sk_admin_db_grants(&conf, &o) : sk_admin_db_migrate(&conf, &o);
        }
        if (strcmp(pos[0], "payment") == 0) { /* DB only (DESIGN.md 13) */
                int refunded = npos >= 2 && strcmp(pos[1], "refunded") == 0;
                const cmd_help_t *cmd = NULL;

                if (npos < 2 || (!refunded && strcmp(pos[1], "refunds") != 0))
                        return usage_error("unknown payment command \"%s\" (refunds|refunded)",
                                           npos < 2 ? "" : pos[1]);
                if (npos > 2)
                        return usage_error("unexpected argument \"%s\"", pos[2]);
                for (size_t c = 0; c < NCMDS; c++)
                        if (CMDS[c].w2 && strcmp(CMDS[c].w1, "payment") == 0 &&
                            strcmp(CMDS[c].w2, pos[1]) == 0)
                                cmd = &CMDS[c];
                if (check_flags(cmd, &o))
                        return 2;
                return refunded ? sk_admin_payment_refunded(&conf, &o)
                                : sk_admin_payment_refunds(&conf, &o);
        }
        /* Every other command talks to Redis (DESIGN.md 4: >= 7.0, noeviction). */
        if (sk_redis_startup_check(&conf.redis, PROG) != 0)
                return 2;
        if (strcmp(pos[0], "voucher") == 0) {
                const cmd_help_t *cmd = NULL;
                int want;
                if (npos < 2)
                        return usage_error("missing voucher command%s "
                                           "(create|preheat|show|add-stock|set-status)", NULL);
                for (size_t c = 1; c < NCMDS; c++)
                        if (CMDS[c].w2 && strcmp(CMDS[c].w1, "voucher") == 0 &&
                            strcmp(CMDS[c].w2, pos[1]) == 0)
                                cmd = &CMDS[c];
                if (!cmd)
                        return usage_error("unknown voucher command \"%s\" "
                                           "(create|preheat|show|add-stock|set-status)", pos[1]);
                want = strcmp(cmd->w2, "create") == 0 ? 2
                     : strcmp(cmd->w2, "set-status") == 0 ? 4 : 3;
                if (npos < want)
                        return usage_error(want == 4 ? "voucher %s needs ID and STATUS"
                                                     : "voucher %s needs a voucher ID",
                                           cmd->w2);
                if (npos > want)
                        return usage_error("unexpected argument \"%s\"", pos[want]);
                if (check_flags(cmd, &o))
                        return 2;
                if (strcmp(cmd->w2, "create") == 0)
                        return sk_admin_voucher_create(&conf, &o);
                if (strcmp(cmd->w2, "preheat") == 0)
                        return sk_admin_voucher_preheat(&conf, pos[2], &o);
                if (strcmp(cmd->w2, "show") == 0)
                        return sk_admin_voucher_show(&conf, pos[2], &o);
                if (strcmp(cmd->w2, "add-stock") == 0)
                        return sk_admin_voucher_add_stock(&conf, pos[2], &o);
                return sk_admin_voucher_set_status(&conf, pos[2], pos[3]);
        }
        if (strcmp(pos[0], "verify") == 0) {
                if (check_flags(&CMDS[NCMDS - 1], &o))
                        return 2;
                return sk_admin_verify(&conf, npos - 1, pos + 1);
        }
        return usage_error("unknown command \"%s\" (db migrate, voucher ..., payment ..., verify)",
                           pos[0]);
}
