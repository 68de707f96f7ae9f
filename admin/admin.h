/* admin.h: the subcommands of seckill-admin (DESIGN.md 2), one function each, called by
 * main.c after the configuration was loaded. Each returns the process exit status:
 * 0 success, 1 runtime failure (a dependency is down or answered an error),
 * 2 bad arguments or a refusal that needs a human (sold-down stock, rebuild not
 * settled, lock busy). Every function prints its result on stdout and one error line on
 * stderr; none of them is thread-safe (the admin is single-threaded). */
#pragma once
#include <stdint.h>
#include "sk/conf.h"
#include "sk/db.h"

/** Options and arguments of a command (main.c fills them: the flags through
 *  sk_conf_load, from its option table). Every command function below takes the
 *  configuration and these, and returns the exit status. */
typedef struct sk_admin_opts {
        int stock;              /* --stock N, -1 = not given */
        char begin[64];         /* --begin T ("" = not given) */
        char end[64];           /* --end T */
        int status;             /* --status 1..4 (create: default 1) */
        int preheat;            /* --preheat */
        int rebuild_from_db;    /* --rebuild-from-db */
        int json;               /* --json */
        int wait_ms;            /* --wait-ms (rebuild), 0 = 2 x delivery timeout */
        int buckets;            /* --buckets N 1..16 (create), 0 = not given (1) */
        char request_id[65];    /* --request-id R (add-stock), "" = not given */
        int quiesced;           /* --quiesced (verify: judge invariant 3, DESIGN.md 9) */
        char users[64];         /* --users LIST (db grants): roles, "" = all four */
        char user_prefix[24];   /* --user-prefix P (db grants): user = P + role, "" = seckill_ */
        char host[256];         /* --host H (db grants), required */
        char price[24];         /* --price MINOR (create), "" = 0 (DESIGN.md 13) */
        char currency[8];       /* --currency CUR (create), "" = SECKILL_CURRENCY */
        char txn[160];          /* --txn ID (payment refunded) */
        char ref[160];          /* --ref R (payment refunded) */
        int allow_unpaid;       /* --allow-unpaid (db migrate: the v4 -> v5 guard) */
        int queue;              /* --queue (create: the voucher sells through a waiting room, DESIGN.md 18) */
        int queue_open_s;       /* --queue-open S (create), -1 = not given (600) */
        int queue_ttl_s;        /* --queue-ttl S (create), -1 = not given (60) */
        int queue_overbook_pct; /* --queue-overbook P (create), -1 = not given (125) */
        int queue_rate;         /* --queue-rate R (create), -1 = not given (0: the stock alone) */
        char title[520];        /* --title T (create), "" = none; <= 128 UTF-8 characters */
        char **args;            /* the positional arguments after the command words (argv's,
                                   NULL-terminated; main.c checks their count per command) */
        int nargs;
} sk_admin_opts_t;

/** `db migrate [--allow-unpaid]`: apply the pending ddl/ migrations; prints "applied N
 *  migration(s)". Exit 2 while an order is UNPAID and the v5 payment migration is pending,
 *  unless --allow-unpaid (those orders stay at amount 0, currency SECKILL_CURRENCY; DESIGN.md
 *  header, "Migration from v4"; sk/unpaid_guard.h). */
int sk_admin_db_migrate(const sk_conf_t *conf, const sk_admin_opts_t *o);
/** `db grants --host H [--users LIST] [--user-prefix P]` (DESIGN.md 15, 17;
 *  admin/grants.c): prints the GRANT statements of one least-privilege user per binary
 *  (admin, front, consumer, reconciler; named P + role) for the database of
 *  SECKILL_MYSQL_URL. No connection. Exit 2 without --host or with a bad name. */
int sk_admin_db_grants(const sk_conf_t *conf, const sk_admin_opts_t *o);
/** The text `db grants` prints for @p database (borrowed) and the options @p o
 *  (borrowed: users, user_prefix, host) into *@p sql_out (owned by the caller, free();
 *  on success only). @returns SK_OK; SK_EINVAL (no host, an unknown role, a bad name:
 *  the reason in @p errstr); SK_ENOMEM. Thread-safe. */
sk_err_t sk_admin_grants_sql(const char *database, const sk_admin_opts_t *o, char **sql_out,
                             char *errstr, size_t errstr_size);

/** `voucher create --stock N [--buckets N] --begin T --end T [--status S] [--preheat]
 *  [--queue [--queue-open S --queue-ttl S --queue-overbook P --queue-rate R]] [--title T]`:
 *  one DB transaction inserts the voucher (with its waiting-room columns, DESIGN.md 18),
 *  its bucket rows (sk_bucket_share) and its tb_seckill_switch row (DESIGN.md 6, 14). */
int sk_admin_voucher_create(const sk_conf_t *conf, const sk_admin_opts_t *o);
/** `voucher preheat ID [--rebuild-from-db] [--wait-ms MS]` (ID = o->args[0]). */
int sk_admin_voucher_preheat(const sk_conf_t *conf, const sk_admin_opts_t *o);
/** `voucher show ID [--json]` (ID = o->args[0]). */
int sk_admin_voucher_show(const sk_conf_t *conf, const sk_admin_opts_t *o);
/** `voucher add-stock ID --stock K --request-id R [--wait-ms MS]` (DESIGN.md 14;
 *  admin/voucher_stock.c; ID = o->args[0]): one DB transaction, idempotent by R, then
 *  the rebuild. */
int sk_admin_voucher_add_stock(const sk_conf_t *conf, const sk_admin_opts_t *o);
/** `voucher queue ID` (DESIGN.md 18; admin/voucher_queue.c): the waiting room of a queued
 *  voucher: members, admitted up to, live / used / expired admissions, units left and
 *  held, the generation (Redis `{q:ID}` keys and the DB row). Exit 2 for a voucher
 *  without a room or unknown. */
int sk_admin_voucher_queue(const sk_conf_t *conf, const sk_admin_opts_t *o);
/** `voucher set-status ID N` (o->args[0], o->args[1]). */
int sk_admin_voucher_set_status(const sk_conf_t *conf, const sk_admin_opts_t *o);

/** `payment refunds [--json]` (DESIGN.md 13; admin/payment.c): the refund_due payments
 *  not yet marked refunded, oldest first. DB only. */
int sk_admin_payment_refunds(const sk_conf_t *conf, const sk_admin_opts_t *o);
/** `payment refunded --txn ID --ref R` (DESIGN.md 13; admin/payment.c): mark one refund
 *  done after the merchant called the provider's refund API. Exit 2 for an unknown txn
 *  or one already marked with another ref. DB only. */
int sk_admin_payment_refunded(const sk_conf_t *conf, const sk_admin_opts_t *o);

/** `verify VOUCHER_ID ...` (DESIGN.md 9; admin/verify.c): checks o->args itself (one
 *  voucher id). */
int sk_admin_verify(const sk_conf_t *conf, const sk_admin_opts_t *o);
/** `degrade status|auto|db-only|redis-only [--voucher ID]` (DESIGN.md 12; admin/degrade.c):
 *  parses its own options from the whole command line (DB only, no Redis check). */
int sk_admin_degrade(int argc, char **argv);
/** 1 if the command line names the degrade command (main.c hands it over). */
int sk_admin_degrade_wants(int argc, char **argv);
/** The text of `degrade --help` (main.c lists the command from it). */
extern const char sk_admin_degrade_usage[];


/** @brief One DB transaction (admin/voucher_stock.c): the voucher row (init_stock =
 *  @p stock, @p buckets 1..16, times in ms since the epoch, @p status), its bucket rows
 *  in tb_seckill_stock (sk_bucket_share of @p stock), its price @p price_minor (minor
 *  units, >= 0) and @p currency (3 letters A-Z, borrowed; DESIGN.md 13), and its
 *  waiting-room columns @p room (borrowed; DESIGN.md 18), and its tb_seckill_switch row
 *  (scope = the voucher, mode NULL, state 'redis') (DESIGN.md 6, 12, 14). Nothing is
 *  written on error (rolled back). 1213/1205 and links lost before COMMIT: the whole
 *  transaction again (5 runs); a COMMIT whose outcome is unknown: the voucher row read
 *  back by @p id on a fresh session (DESIGN.md 16), found -> SK_OK, none -> run
 *  again; unreadable -> SK_EUNKNOWN (a line `voucher_create_commit_unknown` on stderr).
 *  @returns SK_OK or the DB error with the reason. */
/** The waiting-room columns of a new voucher (DESIGN.md 18): mode 0 = no room (the other
 *  numbers are then stored as their defaults), title "" = none (borrowed). */
typedef struct sk_admin_room {
        int mode, open_s, ttl_s, overbook_pct, rate;
        const char *title;
} sk_admin_room_t;

sk_err_t sk_admin_insert_voucher(sk_db_t *db, int64_t id, int64_t stock, int buckets,
                                 int64_t begin_ms, int64_t end_ms, int status,
                                 int64_t price_minor, const char *currency,
                                 const sk_admin_room_t *room,
                                 char *errstr, size_t errstr_size);
