/* sk_test_http.h: a tiny HTTP/1.1 client for the front's API and /metrics (libcurl is
 * not a dependency): one request per connection, the status and the body, a JSON
 * member, a metric line's value, and the reconciler's --json report fields. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SK_TEST_BODY_MAX 65536  /**< bytes of an answer read at most */

/** @brief One request to 127.0.0.1:@p port on a fresh connection (Connection: close,
 *  30 s socket timeouts). @p user: X-User-Id value or NULL (no header); @p extra: more
 *  raw header lines ("K: V\r\n") or NULL. The body goes into @p body (NUL-terminated,
 *  @p body_cap bytes; may be NULL). @returns the status code, or -1 on socket error. */
int sk_test_http(int port, const char *method, const char *path, const char *user,
                 const char *extra, char *body, size_t body_cap);
/** @brief Send the @p len raw bytes of @p request (any bytes: NUL, control, >= 0x80) to
 *  127.0.0.1:@p port on a fresh connection and read the whole answer, head and body,
 *  into @p resp (NUL-terminated, @p cap bytes; may be NULL). @returns the status code,
 *  or -1 on socket error. */
int sk_test_http_raw(int port, const char *request, size_t len, char *resp, size_t cap);
/** @brief sk_test_http with `Authorization: Bearer @p token` (NULL: none) and no
 *  X-User-Id unless @p extra carries one; the whole answer (head and body) in @p resp.
 *  @returns the status code, or -1. */
int sk_test_http_bearer(int port, const char *method, const char *path, const char *token,
                        const char *extra, char *resp, size_t cap);
/** @brief The body of a whole answer @p resp (after the blank line), or "" if none. */
const char *sk_test_resp_body(const char *resp);
/** @brief POST /api/v1/vouchers/@p vid/seckill as @p user (NULL: no X-User-Id).
 *  @returns the status code, the body in @p body (@p cap bytes). */
int sk_test_buy(int port, int64_t vid, const char *user, char *body, size_t cap);
/** @brief Poll GET /readyz (100 ms) until 200. @returns 0, or -1 if child @p pid (if
 *  > 0) exited or @p timeout_s (s) passed. */
int sk_test_wait_ready(int port, pid_t pid, int timeout_s);
/** @brief Member @p name of JSON object @p json as text (strings as is, numbers as
 *  integers, null as "null") into @p out. @returns 0, or -1 if missing. */
int sk_test_json_field(const char *json, const char *name, char *out, size_t out_size);
/** @brief The JSON answer's "code" (a status code, not an id), or -1 if none. */
int sk_test_body_code(const char *body);
/** @brief The value of metric line @p name (exact name with labels, then a space) in
 *  @p text; -1 when missing. */
long long sk_test_metric_value(const char *text, const char *name);
/** @brief GET /metrics on @p port (must be 200) and return line @p name's value. */
long long sk_test_scrape(int port, const char *name);
/** @brief "key":N of voucher @p vid in a reconciler --json report @p out (the first
 *  after its voucherId; true 1, false 0), or -1. */
int64_t sk_test_report_field(const char *out, int64_t vid, const char *key);
