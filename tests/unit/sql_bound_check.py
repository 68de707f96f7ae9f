#!/usr/bin/env python3
"""sql_bound_check.py SOURCE_DIR: every value reaches the database as a bound parameter
(sk/db.h), so production code (the .c and .h files under common/, producer/, consumer/,
reconciler/, admin/) builds no SQL text with values in it:

1. no `snprintf(sql` / `sprintf(sql` (the buffer named sql), and no *printf whose format
   string starts with an SQL statement (SELECT, INSERT, UPDATE, DELETE, REPLACE, CREATE,
   ALTER, DROP, GRANT, REVOKE, SET, CALL, DO);
2. no escaping or quoting call: mysql_real_escape_string(_quote), mysql_escape_string,
   mysql_hex_string, sk_db_quote. An identifier that cannot be bound (a database name)
   goes through sk_db_exec_ident, which validates it.

EXCEPT lists the files whose SQL is still formatted, each with the reason; a hit there is
printed as a note. Comments are not scanned. Prints every hit and exits 1 if there is one
outside EXCEPT; prints a summary line and exits 0 otherwise."""
import os
import re
import sys

FOLDERS = ("common", "producer", "consumer", "reconciler", "admin")
EXCEPT = {  # file name -> why its SQL is still formatted (remove the entry once it is bound)
}
SQL_BUF = re.compile(r"\bs?n?printf\s*\(\s*sql\b")
PRINTF = re.compile(r"\bv?s?n?printf\s*\(")
SQL_FORMAT = re.compile(r'^"\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|ALTER|DROP|GRANT|'
                        r'REVOKE|SET|CALL|DO)\b')
ESCAPE = re.compile(r"\b(mysql_real_escape_string(_quote)?|mysql_escape_string|mysql_hex_string|"
                    r"sk_db_quote)\s*\(")


def strip_comments(text):
    """The text with /* */ and // comments blanked (newlines kept, strings left alone)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def format_arg(text, start):
    """The first string literal among the first three arguments of the call at @p start."""
    depth, i, args = 0, start, 0
    while i < len(text) and args < 3:
        c = text[i]
        if c == '"':
            return text[i:i + 40]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return ""
            depth -= 1
        elif c == "," and depth == 0:
            args += 1
        i += 1
    return ""


def hits(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = strip_comments(f.read())
    found = []
    for m in SQL_BUF.finditer(text):
        found.append((text.count("\n", 0, m.start()) + 1, "SQL formatted into sql[]"))
    for m in PRINTF.finditer(text):
        if SQL_FORMAT.match(format_arg(text, m.end())) and not SQL_BUF.match(text, m.start()):
            found.append((text.count("\n", 0, m.start()) + 1, "a printf format that is SQL"))
    for m in ESCAPE.finditer(text):
        found.append((text.count("\n", 0, m.start()) + 1, "escaping call " + m.group(1)))
    return sorted(found)


def main():
    if len(sys.argv) != 2:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    src = sys.argv[1]
    bad = nfiles = 0
    for folder in FOLDERS:
        for root, _, files in os.walk(os.path.join(src, folder)):
            for name in sorted(files):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(root, name)
                nfiles += 1
                for line, what in hits(path):
                    rel = os.path.relpath(path, src)
                    if name in EXCEPT:
                        print(f"note: {rel}:{line}: {what} (excepted: {EXCEPT[name]})")
                        continue
                    print(f"{rel}:{line}: {what}: bind the value (sk/db.h)")
                    bad += 1
    if bad:
        print(f"sql_bound_check: {bad} statement(s) with values outside bound parameters")
        return 1
    print(f"sql_bound_check: {nfiles} files, every value bound")
    return 0


if __name__ == "__main__":
    sys.exit(main())
