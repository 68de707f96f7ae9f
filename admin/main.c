/* seckill-admin: operator commands against the database and Redis (DESIGN.md 2). Each
 * command is one row of CMDS below: its words, the function that runs it (admin.h), how
 * many arguments it takes, whether it talks to Redis, and its help (`seckill-admin
 * --help` and `seckill-admin COMMAND --help` are printed from the rows). The command
 * flags are the rows of OPTS, declared to sk_conf_load too, so they may appear anywhere
 * on the line; a command refuses the flags its row does not allow.
 * Configuration: defaults < SECKILL_* environment < flags (sk/conf.h).
 * Exit status: 0 ok, 1 runtime failure, 2 bad arguments or a refusal (see admin.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "sk/db.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/redis.h"

#define PROG "seckill-admin"

/* A command: its words, the function that runs it (the positional arguments after the
 * words in o.args), how many of those it takes (fewer: "<command> needs <need>"; more:
 * unexpected argument), whether it talks to Redis (checked first, DESIGN.md 4), and
 * its help: the summary line of `--help`, the text of `<command> --help`, and the
 * subcommand flags it accepts (the rows of OPTS, space-separated). */
typedef struct cmd {
        const char *w1, *w2;            /* command words; w2 NULL for one-word commands */
        int (*run)(const sk_conf_t *conf, const sk_admin_opts_t *o);
        int min_args, max_args;         /* max -1: the command checks its arguments itself */
        int needs_redis;
        const char *need;               /* what min_args are, for the error line */
        const char *summary;
        const char *text;
        const char *allowed;
} cmd_t;

static const cmd_t CMDS[] = {
        { "db", "migrate", sk_admin_db_migrate, 0, 0, 0, NULL,
          "apply the ddl/ migrations not yet applied (creates the database)",
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
        { "db", "grants", sk_admin_db_grants, 0, 0, 0, NULL,
          "print the GRANT statements of the least-privilege users",
          "Usage: " PROG " db grants --host H [--users LIST] [--user-prefix P]\n"
          "Print, for the database of SECKILL_MYSQL_URL, the GRANT statements of one user per\n"
          "binary (DESIGN.md 15, 17), named P + role (P default seckill_): admin (`db migrate`\n"
          "and every other command: the database, its schema included), front, consumer and\n"
          "reconciler (table and column grants: what each binary's statements need; the front\n"
          "cannot change a price or mark a refund done; nobody but the admin deletes a row).\n"
          "--users picks roles (comma-separated; default all four). --host, the host part of\n"
          "the accounts, is required ('%' only if you mean any host). Connects to nothing.\n"
          "Create the users (CREATE USER ... IDENTIFIED BY ...), then, as the DB's root:\n"
          "  " PROG " db grants --host 10.0.3.% --users admin | mysql\n"
          "  SECKILL_MYSQL_URL=mysql://seckill_admin:...@host/db " PROG " db migrate\n"
          "  " PROG " db grants --host 10.0.3.% --users front,consumer,reconciler | mysql\n"
          "Table grants need the tables: again after an upgrade whose migrations add a table.\n"
          "Give each binary its own SECKILL_MYSQL_URL. Exit 0 ok, 2 bad arguments.\n",
          " host users user-prefix " },
        { "voucher", "create", sk_admin_voucher_create, 0, 0, 1, NULL,
          "insert a voucher and its stock buckets (optionally preheat)",
          "Usage: " PROG " voucher create --stock N [--buckets B] --begin T --end T [--status S] [--preheat] [--price MINOR] [--currency CUR] [--queue [--queue-open S] [--queue-ttl S] [--queue-overbook P] [--queue-rate R]] [--title T]\n"
          "Insert a voucher (init_stock = stock = N, 1..1000000000) with a fresh snowflake id,\n"
          "its stock split over B buckets (1..16; N/B each, the remainder one unit\n"
          "each to the first buckets; B is fixed for the voucher's life; leases a worker id in\n"
          "the database like the front). T is epoch seconds (1764439200) or\n"
          "ISO-8601 WITH a zone (2026-11-29T18:00:00Z, 2026-11-29T18:00:00+08:00); a time\n"
          "without a zone is rejected. --status 1 on sale, 2 offline, 3 expired,\n"
          "4 paused. --preheat also writes the Redis state (see voucher preheat).\n"
          "--price: the price in minor units (a whole number >= 0) and --currency\n"
          "its ISO 4217 code, fixed for the voucher's life;\n"
          "every order copies them, and an order with a price > 0 is created UNPAID and\n"
          "paid only by the payment provider's signed callback (DESIGN.md 13).\n"
          "--queue: buyers go through the waiting room (DESIGN.md 18; fixed at create): the\n"
          "pre-queue opens --queue-open S before begin (600), an admission is valid\n"
          "--queue-ttl S (60, at least the request deadline), at most ceil(units left x\n"
          "--queue-overbook P / 100) admissions are live (125, >= 100), at most\n"
          "--queue-rate R new ones a second (0 = the stock alone). Create queued vouchers\n"
          "only once every front runs with SECKILL_QUEUE_KEYS_FILE. --title: the name the\n"
          "buyer page shows (UTF-8, at most 128 characters, no control characters).\n"
          "Prints: {\"voucherId\":\"ID\"}. Exit 0 ok, 1 failure, 2 bad arguments.\n",
          " stock buckets begin end status preheat price currency queue queue-open queue-ttl"
          " queue-overbook queue-rate title " },
        { "voucher", "queue", sk_admin_voucher_queue, 1, 1, 1, "a voucher ID",
          "print a queued voucher's waiting room",
          "Usage: " PROG " voucher queue ID [--json]\n"
          "Print the waiting room of a queued voucher (DESIGN.md 18): members (pre-queue and\n"
          "after begin), admitted up to, live / used / expired admissions, units left and\n"
          "held, held until, closed, the generation. Exit 0 ok, 1 failure, 2 bad arguments,\n"
          "unknown voucher or a voucher without a room.\n", " json " },
        { "voucher", "preheat", sk_admin_voucher_preheat, 1, 1, 1, "a voucher ID",
          "copy a voucher's DB state to Redis, or rebuild it from the DB",
          "Usage: " PROG " voucher preheat ID [--rebuild-from-db] [--wait-ms MS]\n"
          "Copy a voucher's DB state to Redis: stock (never overwriting a stock that was sold\n"
          "down: exit 2), the active buyers, then meta last, with the expiry of DESIGN.md 4.\n"
          "If the stock key is missing and the voucher could have sales (DB rows, Redis\n"
          "remnants, or one of its messages unconsumed in Kafka), runs the rebuild instead.\n"
          "--rebuild-from-db: the rebuild of DESIGN.md 8: pause the voucher (status 4), wait\n"
          "up to --wait-ms for the consumer group to reach\n"
          "the end of the voucher's partitions and for every DEDUCT to be decided (pending\n"
          "rollbacks are run), then set stock and users (in chunks) from the DB and restore\n"
          "meta. Not settled in time: exit 2.\n",
          " rebuild-from-db wait-ms " },
        { "voucher", "show", sk_admin_voucher_show, 1, 1, 1, "a voucher ID",
          "print a voucher's DB row and Redis keys side by side",
          "Usage: " PROG " voucher show ID [--json]\n"
          "Print the DB row and the Redis meta, stock, users and trace sizes side by side.\n"
          "Exit 0 ok, 1 failure, 2 bad arguments or not in the database.\n", " json " },
        { "voucher", "add-stock", sk_admin_voucher_add_stock, 1, 1, 1, "a voucher ID",
          "add units to a voucher (idempotent by request id)",
          "Usage: " PROG " voucher add-stock ID --stock K --request-id R [--wait-ms MS]\n"
          "Add K units (1..1000000000) to a voucher (DESIGN.md 14): one DB transaction records\n"
          "R (1..64 chars) in tb_seckill_stock_change and spreads K over the bucket rows like\n"
          "voucher create (init_stock and stock), and the voucher's init_stock; then rebuilds\n"
          "the voucher's Redis state from the DB. A repeated R changes nothing (exit 0, says so).\n"
          "Exit 0 ok, 1 failure, 2 bad arguments, unknown voucher, or rebuild not settled.\n",
          " stock request-id wait-ms " },
        { "voucher", "set-status", sk_admin_voucher_set_status, 2, 2, 1, "ID and STATUS",
          "set a voucher's status in the DB and in Redis",
          "Usage: " PROG " voucher set-status ID N\n"
          "Set the status (1 on sale, 2 offline, 3 expired, 4 paused) in the DB, then in the\n"
          "Redis meta if it exists. Exit 0 ok, 1 failure, 2 bad arguments.\n", "" },
        { "payment", "refunds", sk_admin_payment_refunds, 0, 0, 0, NULL,
          "list the payments to refund (refund_due, not yet refunded)",
          "Usage: " PROG " payment refunds [--json]\n"
          "List the payments the payment callback recorded as refund_due (the order was\n"
          "closed, cancelled, late, already paid by another transaction, failed, or the\n"
          "amount or currency differed; DESIGN.md 13) and not yet marked refunded, oldest\n"
          "first: txn id, order id, amount (minor units), currency, reason, received_at\n"
          "(UTC), age in seconds. Refund each through the provider's refund API, then mark\n"
          "it with `payment refunded`. Exit 0 ok, 1 failure.\n", " json " },
        { "payment", "refunded", sk_admin_payment_refunded, 0, 0, 0, NULL,
          "mark a refund_due payment as refunded",
          "Usage: " PROG " payment refunded --txn ID --ref R\n"
          "Mark the refund_due payment ID refunded (refunded_at = now, refund_ref = R, the\n"
          "provider's refund reference; both 1..128 printable ASCII characters). A repeat\n"
          "with the same R is a success. Exit 0 ok, 1 failure, 2 no refund_due payment of\n"
          "that id, already marked with another ref, or bad arguments.\n", " txn ref " },
        { "verify", NULL, sk_admin_verify, 0, -1, 1, NULL,
          "check the invariants of DESIGN.md 9 on one voucher",
          "Usage: " PROG " verify VOUCHER_ID [--json] [--quiesced]\n"
          "Check invariants 1, 2, 4, 6 and active <= init of DESIGN.md 9 on the live state;\n"
          "with --quiesced (no traffic, consumers caught up, after a reconciler --repair\n"
          "pass) also invariant 3: each bucket's Redis stock = its DB stock, the users\n"
          "hashes = the active buyers, each in their home bucket. Exit 0 iff all hold.\n",
          " json quiesced " },
        /* Handed to admin/degrade.c before the configuration is loaded (its own options;
         * works with Redis down): listed here for `--help` only. */
        { "degrade", NULL, NULL, 0, 0, 0, NULL,
          "show or set the Redis-down degrade switch (works with Redis down)",
          sk_admin_degrade_usage, "" },
};
#define NCMDS (sizeof(CMDS) / sizeof(CMDS[0]))

/* The subcommand flags, in sk_admin_opts_t (admin.h): each default is written here
 * only; sk_conf_load applies it. A flag is given when its value is not the default;
 * a command accepts the flags its row allows (check_flags). */
static sk_admin_opts_t o;
static const sk_opt_t OPTS[] = {
        SK_OPT_I("stock", NULL, &o.stock, 1, 1000000000, -1, "not given",
                 "voucher create: units of stock (required)"),
        SK_OPT_S("begin", NULL, o.begin, NULL, "not given",
                 "voucher create: sale start (epoch s or ISO-8601 with zone)"),
        SK_OPT_S("end", NULL, o.end, NULL, "not given",
                 "voucher create: sale end (epoch s or ISO-8601 with zone)"),
        SK_OPT_I("status", NULL, &o.status, 1, 4, -1, "1, on sale",
                 "voucher create: 1 on sale, 2 offline, 3 expired, 4 paused"),
        SK_OPT_B("preheat", NULL, &o.preheat, "voucher create: preheat Redis too"),
        SK_OPT_B("rebuild-from-db", NULL, &o.rebuild_from_db,
                 "voucher preheat: run the rebuild of DESIGN.md 8"),
        SK_OPT_B("json", NULL, &o.json, "voucher show, verify: JSON output"),
        SK_OPT_B("quiesced", NULL, &o.quiesced,
                 "verify: also judge invariant 3 (Redis = DB; after quiescence)"),
        SK_OPT_I("wait-ms", NULL, &o.wait_ms, 1, 3600000, 0, "2 x delivery timeout",
                 "voucher preheat --rebuild-from-db: settle wait"),
        SK_OPT_I("buckets", NULL, &o.buckets, 1, SK_BUCKETS_MAX, 0, "1",
                 "voucher create: stock buckets (DESIGN.md 14)"),
        SK_OPT_S("request-id", NULL, o.request_id, NULL, "not given",
                 "voucher add-stock: idempotency key of the change (1..64 chars)"),
        SK_OPT_S("users", NULL, o.users, NULL, "all: admin,front,consumer,reconciler",
                 "db grants: the roles whose user is printed"),
        SK_OPT_S("user-prefix", NULL, o.user_prefix, NULL, "seckill_",
                 "db grants: user name = prefix + role"),
        SK_OPT_S("host", NULL, o.host, NULL, "not given: required",
                 "db grants: host part of the accounts"),
        SK_OPT_S("price", NULL, o.price, NULL, "0", "voucher create: price in minor units (DESIGN.md 13)"),
        SK_OPT_S("currency", NULL, o.currency, NULL, "SECKILL_CURRENCY", "voucher create: ISO 4217 currency"),
        SK_OPT_S("txn", NULL, o.txn, NULL, "not given", "payment refunded: the provider txn id"),
        SK_OPT_S("ref", NULL, o.ref, NULL, "not given", "payment refunded: the provider's refund reference"),
        SK_OPT_B("queue", NULL, &o.queue, "voucher create: sell through the waiting room (DESIGN.md 18)"),
        SK_OPT_I("queue-open", NULL, &o.queue_open_s, 0, 604800, -1, "600",
                 "voucher create --queue: the pre-queue opens this many s before begin"),
        SK_OPT_I("queue-ttl", NULL, &o.queue_ttl_s, 1, 86400, -1, "60",
                 "voucher create --queue: an admission is valid this many s"),
        SK_OPT_I("queue-overbook", NULL, &o.queue_overbook_pct, 100, 10000, -1, "125",
                 "voucher create --queue: live admissions <= ceil(units left x P / 100)"),
        SK_OPT_I("queue-rate", NULL, &o.queue_rate, 0, 1000000, -1, "0",
                 "voucher create --queue: most admissions per second (0 = the stock alone)"),
        SK_OPT_S("title", NULL, o.title, NULL, "none",
                 "voucher create: the buyer page's title (<= 128 UTF-8 characters)"),
        SK_OPT_B("allow-unpaid", NULL, &o.allow_unpaid,
                 "db migrate: to v5 despite UNPAID orders (left at amount 0, SECKILL_CURRENCY)"),
};

/* The argument part of a command's usage line ("voucher show ID [--json]"). */
static void print_synopsis(const cmd_t *c)
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

/* `<command> --help`: its text, then the flags it accepts, each rendered from its row
 * of OPTS (with its default). */
static void print_command_help(const cmd_t *cmd)
{
        sk_opt_t rows[SK_NOPTS(OPTS)];
        size_t n = 0;
        char pat[40];

        fputs(cmd->text, stdout);
        for (size_t i = 0; i < SK_NOPTS(OPTS); i++) {
                snprintf(pat, sizeof(pat), " %s ", OPTS[i].name);
                if (strstr(cmd->allowed, pat))
                        rows[n++] = OPTS[i];
        }
        if (n) {
                printf("Flags:\n");
                sk_conf_print_extra(stdout, rows, n);
        }
        printf("Common options (database, Redis, Kafka...): " PROG " --help\n");
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
                        print_command_help(&CMDS[c]);
                        return 1;
                }
        print_group(w[0]);
        return 1;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, PROG ": ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, " (see " PROG " --help)\n");
        return 2;
}

/* A flag given to a command that does not take it is a usage error. @returns 0 or 2. */
static int check_flags(const cmd_t *cmd)
{
        char pat[40];

        for (size_t i = 0; i < SK_NOPTS(OPTS); i++) {
                const sk_opt_t *f = &OPTS[i];
                int given = f->type == SK_OPT_STR ? ((const char *)f->dst)[0] != '\0'
                                                  : *(const int *)f->dst != (int)f->def;
                snprintf(pat, sizeof(pat), " %s ", f->name);
                if (given && !strstr(cmd->allowed, pat)) {
                        fprintf(stderr, PROG ": option --%s does not apply to `%s%s%s` "
                                "(see " PROG " %s%s%s --help)\n", f->name, cmd->w1,
                                cmd->w2 ? " " : "", cmd->w2 ? cmd->w2 : "", cmd->w1,
                                cmd->w2 ? " " : "", cmd->w2 ? cmd->w2 : "");
                        return 2;
                }
        }
        return 0;
}

/* "db ..., voucher ..., payment ..., verify, degrade": the commands, for error lines. */
static const char *command_list(void)
{
        static char list[256];
        size_t n = 0;

        for (size_t c = 0; c < NCMDS; c++)
                if (c == 0 || strcmp(CMDS[c].w1, CMDS[c - 1].w1) != 0)
                        n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s%s", n ? ", " : "",
                                              CMDS[c].w1, CMDS[c].w2 ? " ..." : "");
        return list;
}

/* "create|preheat|show|add-stock|set-status": the second words of group @p w1. */
static const char *group_list(const char *w1)
{
        static char list[256];
        size_t n = 0;

        for (size_t c = 0; c < NCMDS; c++)
                if (CMDS[c].w2 && strcmp(CMDS[c].w1, w1) == 0)
                        n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", n ? "|" : "", CMDS[c].w2);
        return list;
}

/* The row of the command in @p pos (its first word found as @p *group, NULL if none),
 * or NULL after an error line (*rc = 2). Redis is checked first when the group talks
 * to it (DESIGN.md 4: >= 7.0, noeviction), as is an unknown command. */
static const cmd_t *find_command(const sk_conf_t *conf, char **pos, int npos, int *rc)
{
        const cmd_t *group = NULL;

        *rc = 2;
        if (npos < 1) {
                usage_error("missing command: %s", command_list());
                return NULL;
        }
        for (size_t c = 0; c < NCMDS && !group; c++)
                if (strcmp(CMDS[c].w1, pos[0]) == 0)
                        group = &CMDS[c];
        if ((!group || group->needs_redis) && sk_redis_startup_check(&conf->redis, PROG) != 0)
                return NULL;
        if (!group) {
                usage_error("unknown command \"%s\" (%s)", pos[0], command_list());
                return NULL;
        }
        if (!group->w2)
                return group;
        if (npos < 2) {
                usage_error("missing %s command (%s)", pos[0], group_list(pos[0]));
                return NULL;
        }
        for (const cmd_t *c = group; c < CMDS + NCMDS && strcmp(c->w1, pos[0]) == 0; c++)
                if (strcmp(c->w2, pos[1]) == 0)
                        return c;
        usage_error("unknown %s command \"%s\" (%s)", pos[0], pos[1], group_list(pos[0]));
        return NULL;
}

int main(int argc, char **argv)
{
        const cmd_t *cmd;
        sk_conf_t conf;
        int argi = 0, rc, words, npos;

        if (sk_admin_degrade_wants(argc, argv))
                return sk_admin_degrade(argc, argv); /* its own options; works with Redis down */
        if (help_requested(argc, argv))
                return 0;
        rc = sk_conf_load_bin(&conf, SK_BIN_ADMIN, argc, argv, PROG, "COMMAND [ARGS]", OPTS,
                              SK_NOPTS(OPTS), &argi);
        if (rc != 0)
                return rc == 1 ? 0 : 2;
        sk_log_init("admin");
        sk_db_library_init();

        npos = argc - argi;
        if (!(cmd = find_command(&conf, argv + argi, npos, &rc)))
                return rc;
        words = cmd->w2 ? 2 : 1;
        o.args = argv + argi + words;
        o.nargs = npos - words;
        if (o.nargs < cmd->min_args)
                return usage_error("%s %s needs %s", cmd->w1, cmd->w2, cmd->need);
        if (cmd->max_args >= 0 && o.nargs > cmd->max_args)
                return usage_error("unexpected argument \"%s\"", o.args[cmd->max_args]);
        if (check_flags(cmd))
                return 2;
        return cmd->run(&conf, &o);
}
