#!/usr/bin/env python3
"""layout_check.py BUILD_DIR SOURCE_DIR: the structure of README.md "Architecture", checked on
the compiled objects (nm), so it sees calls, not only includes.

1. Layer direction: an object of a common/ layer uses no symbol defined in a layer that is not
   below it (base <- redis, db, kafka <- sale <- queue; base <- db <- lease; http and auth on
   base), and
   no symbol of a binary's core.
2. No circles between the files of one folder: within common/<layer>, producer/, consumer/,
   reconciler/, admin/, the graph "file A calls a function defined in file B" has no cycle.
3. Nor does the include graph of a folder's modules: a module is a name X with its X.c,
   X.h, include/sk/X.h and its private X_int.h; "A includes a header of B" is an edge.
4. The sale's facts stay in the sale: the Lua scripts are embedded in common/sale (every
   sk_lua_* symbol is defined there) and common/redis runs the scripts it is given without
   naming one (its code, comments aside, includes no sk/scripts.h, uses no SK_SCRIPT_*,
   sk_script_* or sk_lua_* name and has no string naming a script of lua/).
5. Nor do the tables: below the sale, a layer's code (comments aside) names only its own
   tables (TABLES: db its lock table, lease tb_worker_lease); a rule on another table (the
   migration runner's unpaid-order guard) is a hook its owner supplies.
Prints every violation and exits 1 if there is one; prints a summary line and exits 0 otherwise.
"""
import os
import re
import subprocess
import sys

LAYERS = {  # layer -> the layers it may use
    "base": set(),
    "redis": {"base"},
    "db": {"base"},
    "kafka": {"base"},
    "sale": {"base", "redis", "db", "kafka"},
    "lease": {"base", "db"},
    "http": {"base"},
    "auth": {"base"},
    "queue": {"base", "redis", "db", "kafka", "sale"},
}
TABLES = {  # layer below the sale -> the only tables (tb_*) its code may name
    "base": set(), "redis": set(), "db": {"tb_lock"}, "kafka": set(),
    "lease": {"tb_worker_lease"}, "http": set(), "auth": set(),
}
TARGETS = {  # CMake target -> source folder
    "sk_base": "common/base", "sk_redis": "common/redis", "sk_db": "common/db",
    "sk_kafka": "common/kafka", "sk_sale": "common/sale", "sk_lease": "common/lease",
    "sk_http": "common/http", "sk_auth": "common/auth", "sk_queue": "common/queue",
    "front_core": "producer", "consumer_core": "consumer",
    "reconciler_core": "reconciler", "admin_core": "admin",
}


def objects(build, target):
    d = os.path.join(build, "CMakeFiles", target + ".dir")
    out = []
    for root, _, files in os.walk(d):
        out += [os.path.join(root, f) for f in files if f.endswith(".c.o")]
    return out


def symbols(obj):
    """(defined, undefined) global symbol sets of one object file."""
    res = subprocess.run(["nm", "-g", obj], capture_output=True, text=True, check=True)
    defined, undef = set(), set()
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undef.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRCVW":
            defined.add(parts[2])
    return defined, undef


def cycles(nodes, edges):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def include_circles(src):
    """Circles of the module include graph of each folder (check 3)."""
    out = []
    for folder in sorted(TARGETS.values()):
        d = os.path.join(src, folder)
        files = [f for f in os.listdir(d) if f.endswith((".c", ".h"))]
        headers = {f: f[:-2] for f in files if f.endswith(".h")}
        inc = os.path.join(d, "include", "sk")
        if os.path.isdir(inc):
            for f in os.listdir(inc):
                headers["sk/" + f] = f[:-2]
                files.append(os.path.join("include", "sk", f))

        def module(name):
            return name[:-len("_int")] if name.endswith("_int") else name

        nodes, edges = set(), {}
        for f in files:
            m = module(os.path.basename(f)[:-2])
            nodes.add(m)
            with open(os.path.join(d, f), encoding="utf-8") as fh:
                for h in re.findall(r'^#include "([^"]+)"', fh.read(), re.M):
                    if h in headers and module(headers[h]) != m:
                        edges.setdefault(m, set()).add(module(headers[h]))
        for comp in cycles(nodes, edges):
            out.append(f"include circle in {folder}/: " + " <-> ".join(comp))
    return out


# A string or character literal (kept), or a comment (dropped).
CODE_TOKENS = re.compile(r'("(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\')|/\*.*?\*/|//[^\n]*', re.S)


def layer_code(src, layer):
    """(file, code without comments) of each .c/.h of common/LAYER, include/sk/ too."""
    d = os.path.join(src, "common", layer)
    files = [f for f in os.listdir(d) if f.endswith((".c", ".h"))]
    inc = os.path.join(d, "include", "sk")
    if os.path.isdir(inc):
        files += [os.path.join("include", "sk", f) for f in os.listdir(inc) if f.endswith(".h")]
    for f in sorted(files):
        with open(os.path.join(d, f), encoding="utf-8") as fh:
            yield f, CODE_TOKENS.sub(lambda m: m.group(1) or " ", fh.read())


def scripts_outside_sale(src, owner):
    """Check 4: where the sale's Lua scripts are named."""
    out = []
    sale = [s for s, (folder, _) in owner.items() if s.startswith("sk_lua_")]
    for s in sorted(sale):
        folder, name = owner[s]
        if folder != "common/sale":
            out.append(f"script: {s} is defined in {folder}/{name}.c, not in common/sale")
    if not sale:
        out.append("script: no sk_lua_* symbol defined (the embedded scripts of lua/)")
    names = {f[:-len(".lua")] for f in os.listdir(os.path.join(src, "lua")) if f.endswith(".lua")}
    for f, code in layer_code(src, "redis"):
        what = set(re.findall(r"\b(?:SK_SCRIPT_|sk_script_|sk_lua_)\w*", code))
        if re.search(r'^#include "sk/scripts.h"', code, re.M):
            what.add("sk/scripts.h")
        for lit in re.findall(r'"((?:[^"\\\n]|\\.)*)"', code):
            what.update(n for n in names if lit == n or n + ".lua" in lit)
        for w in sorted(what):
            out.append(f"script: common/redis/{f} names {w} (the sale's scripts)")
    return out


def tables_below_sale(src):
    """Check 5: the tables a layer below the sale names."""
    out = []
    for layer, own in sorted(TABLES.items()):
        for f, code in layer_code(src, layer):
            for t in sorted(set(re.findall(r"\btb_\w+", code)) - own):
                out.append(f"table: common/{layer}/{f} names {t} (not a table of its layer)")
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    build = sys.argv[1]
    owner = {}      # symbol -> (folder, file)
    files = {}      # (folder, file) -> undefined symbols
    for target, folder in TARGETS.items():
        objs = objects(build, target)
        if not objs:
            print(f"layout_check: no objects of {target} under {build}", file=sys.stderr)
            return 2
        for o in objs:
            name = os.path.basename(o)[:-len(".c.o")]
            if name == "sk_lua_embedded" or name == "sk_ddl_embedded":
                name = name + " (generated)"
            defined, undef = symbols(o)
            files[(folder, name)] = undef
            for s in defined:
                owner[s] = (folder, name)
    bad = 0
    edges, nodes = {}, {}
    for (folder, name), undef in sorted(files.items()):
        for s in sorted(undef):
            if s not in owner:
                continue        # libc, hiredis, ...
            ofolder, oname = owner[s]
            if ofolder == folder:
                if oname != name:
                    edges.setdefault((folder, name), set()).add((folder, oname))
                continue
            if folder.startswith("common/"):
                layer = folder.split("/")[1]
                olayer = ofolder.split("/")[1] if ofolder.startswith("common/") else None
                if olayer not in LAYERS[layer]:
                    print(f"layer: {folder}/{name}.c uses {s} of {ofolder}/{oname}.c")
                    bad += 1
            elif not ofolder.startswith("common/"):
                print(f"binary: {folder}/{name}.c uses {s} of {ofolder}/{oname}.c")
                bad += 1
        nodes.setdefault(folder, set()).add((folder, name))
    for folder in sorted(nodes):
        for comp in cycles(nodes[folder], edges):
            names = " <-> ".join(n for _, n in comp)
            print(f"circle in {folder}/: {names}")
            bad += 1
    for line in (include_circles(sys.argv[2]) + scripts_outside_sale(sys.argv[2], owner) +
                 tables_below_sale(sys.argv[2])):
        print(line)
        bad += 1
    nfiles = len(files)
    nedges = sum(len(v) for v in edges.values())
    if bad:
        print(f"layout_check: {bad} violation(s) in {nfiles} files")
        return 1
    print(f"layout_check: {nfiles} files, {nedges} calls between files of one folder: "
          "layers in order, 0 circles of calls or includes, the sale's scripts and tables "
          "named above the layers below it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
