#!/usr/bin/env python3
"""inventory_check.py SOURCE_DIR: each source folder's file list lives once, in its README.md
(README.md, "Architecture"), and matches the tree: every .c/.h of the folder is named in the
first column of the README's tables, and every file named there exists.

Folders: producer/, consumer/, reconciler/, admin/, and each layer of common/ (its .c files,
private headers, and include/sk/*.h, written `sk/NAME.h`), all listed in common/README.md.
Prints every difference and exits 1 if there is one."""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layout_check import TARGETS  # noqa: E402  (the one list of source folders)


def readme_groups():
    """README folder -> the source folders it lists: common/README.md lists every layer."""
    groups = {}
    for folder in TARGETS.values():
        groups.setdefault(folder.split("/")[0], []).append(folder)
    return groups


def listed(readme):
    """Every `file.c` / `file.h` / `sk/file.h` in the first column of a table row."""
    names = set()
    with open(readme, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("|"):
                continue
            first = line.split("|")[1]
            names.update(re.findall(r"`([A-Za-z0-9_/.]+\.[ch])`", first))
    return names


def present(src, folder):
    names = set()
    for name in os.listdir(os.path.join(src, folder)):
        if name.endswith((".c", ".h")):
            names.add(name)
    inc = os.path.join(src, folder, "include", "sk")
    if os.path.isdir(inc):
        names.update("sk/" + n for n in os.listdir(inc) if n.endswith(".h"))
    return names


def main():
    if len(sys.argv) != 2:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    src = sys.argv[1]
    bad = 0
    for top, folders in sorted(readme_groups().items()):
        readme = os.path.join(src, top, "README.md")
        if not os.path.exists(readme):
            print(f"missing {top}/README.md")
            bad += 1
            continue
        want = listed(readme)
        have = set()
        for folder in folders:
            have |= present(src, folder)
        for n in sorted(have - want):
            print(f"{top}/README.md does not list {n}")
            bad += 1
        for n in sorted(want - have):
            print(f"{top}/README.md lists {n}, which is not in the tree")
            bad += 1
    if bad:
        print(f"inventory_check: {bad} difference(s)")
        return 1
    print("inventory_check: every folder README matches its files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
