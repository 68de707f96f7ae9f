/* sk/keyfile.h: the one reader of the line-per-key secret files (DESIGN.md 15, 18):
 * SECKILL_PAYMENT_KEYS_FILE (sk/paysig.h) and SECKILL_QUEUE_KEYS_FILE (sk/queue_token.h).
 * A file of at most SK_KEYFILE_MAX_BYTES, split into lines; each line's trailing CR,
 * spaces and tabs trimmed; blank lines and lines starting with '#' skipped; a NUL byte in
 * a kept line, more than the caller's number of lines, or no line at all refuses the
 * whole file. Each kept line goes to the caller's hook, which parses its own format. A
 * key set (sk_keyfile_set_t) holds a module's parsed keys behind one reference-counted,
 * immutable object, wiped when its last reference goes. The file's stamp (device, inode,
 * size, mtime) tells a reloader whether the file changed.
 * What it does not do: interpret a line, or reload on its own schedule (the caller does);
 * every error names the file or the line number, never a line's content.
 * Thread-safety: every function is thread-safe (no shared state; a set changes only its
 * atomic reference count after it is made). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define SK_KEYFILE_MAX_BYTES (64 * 1024)   /* a larger file is refused */

/** A kept line to the caller: @p line (@p len bytes, trimmed, not NUL-terminated,
 *  borrowed: wiped after the call) is line number @p lineno (1-based) of the text and the
 *  @p index -th kept line (0-based). @returns 0, or -1 with the reason in @p errstr
 *  (never the line's content); the reader prefixes "line N: ". */
typedef int (*sk_keyfile_line_fn)(void *arg, const char *line, size_t len, int lineno,
                                  size_t index, char *errstr, size_t errstr_size);

/** @brief Read the kept lines of @p text (@p len bytes, borrowed), at most @p max_lines
 *  of them, handing each to @p on_line with @p arg. @p what names the file's kind in the
 *  reasons ("payment keys file").
 *  @returns the number of kept lines (>= 1), or -1 with the reason in @p errstr
 *  (permanent: fix the file): no kept line, more than @p max_lines, a NUL byte, or the
 *  hook's error. Any thread. */
int sk_keyfile_parse(const char *text, size_t len, size_t max_lines, const char *what,
                     sk_keyfile_line_fn on_line, void *arg, char *errstr, size_t errstr_size);

/** @brief sk_keyfile_parse of the file at @p path (borrowed; at most
 *  SK_KEYFILE_MAX_BYTES); the text read is wiped before the return.
 *  @returns as sk_keyfile_parse; an unreadable or too large file is an error too (the
 *  reason names @p path). Blocking file I/O; any thread. */
int sk_keyfile_load(const char *path, size_t max_lines, const char *what,
                    sk_keyfile_line_fn on_line, void *arg, char *errstr, size_t errstr_size);

/** What a reloader remembers of a file: all zero when it could not be stat'ed. */
typedef struct sk_keyfile_stamp {
        uint64_t dev, ino;
        int64_t size, mtime_s, mtime_ns;
} sk_keyfile_stamp_t;

/** @brief The stamp of the file at @p path (borrowed) into @p out (all zero if stat
 *  fails). Any thread. */
void sk_keyfile_stamp(const char *path, sk_keyfile_stamp_t *out);

/** @brief 1 if the file at @p path is not the one @p seen describes (another inode,
 *  size or mtime, or it cannot be stat'ed now), else 0. Any thread. */
int sk_keyfile_changed(const char *path, const sk_keyfile_stamp_t *seen);

/** @brief Overwrite @p n bytes at @p p with zeros in a way the compiler keeps (for
 *  secrets). NULL or 0 is a no-op. Any thread. */
void sk_wipe(void *p, size_t n);

/* ----------------------------------------------------------------- key sets ---- */

/** What a module's key set is (sk/paysig.h, sk/queue_token.h): a static, constant row the
 *  module owns; its address tags the sets it makes. */
typedef struct sk_keyfile_kind {
        const char *what;               /* the file's kind in reasons ("payment keys file") */
        size_t max_lines;               /* keys per file */
        size_t body_size;               /* bytes of the module's parsed keys (the body) */
        /* Each kept line, with arg = the set's body (zeroed before the first line). */
        sk_keyfile_line_fn on_line;
} sk_keyfile_kind_t;

/** A loaded key set: the module's parsed keys (the body) and the number of kept lines.
 *  Immutable once made; reference counted (1 when made), so a reload never frees a set a
 *  verification still holds; the last reference wipes the whole set (sk_wipe) and frees
 *  it. Any number of threads may use one set at once, each holding a reference. */
typedef struct sk_keyfile_set sk_keyfile_set_t;

/** @brief A set of @p kind (borrowed; kept by the set: static) from @p text (@p len
 *  bytes, borrowed), through sk_keyfile_parse with @p kind's hook and limits.
 *  @returns a set owned by the caller (sk_keyfile_set_free), or NULL with the reason in
 *  @p errstr (permanent: fix the file; "out of memory", or sk_keyfile_parse's reason:
 *  never a secret). Any thread. */
sk_keyfile_set_t *sk_keyfile_set_parse(const sk_keyfile_kind_t *kind, const char *text,
                                       size_t len, char *errstr, size_t errstr_size);
/** @brief sk_keyfile_set_parse of the file at @p path (borrowed; read by sk_keyfile_load,
 *  at most SK_KEYFILE_MAX_BYTES). @returns as sk_keyfile_set_parse (an unreadable or too
 *  large file is an error too). Blocking file I/O; any thread. */
sk_keyfile_set_t *sk_keyfile_set_load(const sk_keyfile_kind_t *kind, const char *path,
                                      char *errstr, size_t errstr_size);
/** @brief The body of @p set (borrowed, valid while the caller holds a reference) when it
 *  is a set of @p kind; NULL for a NULL set or a set of another kind. Any thread. */
const void *sk_keyfile_set_body(const sk_keyfile_set_t *set, const sk_keyfile_kind_t *kind);
/** @brief Number of keys (kept lines) in @p set; 0 for NULL. Any thread. */
size_t sk_keyfile_set_count(const sk_keyfile_set_t *set);
/** @brief One more reference to @p set (NULL: none; atomic). @returns @p set. Any thread. */
sk_keyfile_set_t *sk_keyfile_set_ref(sk_keyfile_set_t *set);
/** @brief Drop one reference to @p set (atomic); the last one wipes the whole set, keys
 *  included, and frees it. NULL is a no-op. Any thread. */
void sk_keyfile_set_free(sk_keyfile_set_t *set);
