#!/usr/bin/env python3
"""tree_compare.py A B [--ignore PATH]... — compare two root filesystem trees entry by entry:
paths, types, permission bits, owners, symlink targets, file contents (sha256). Not compared:
times, and the directories listed by --ignore (their whole subtree; the intended differences
of docs/images.md). Prints every difference; exit 1 when there is one, 0 when none."""
import hashlib
import os
import stat
import sys


def entries(root, ignore):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        for name in dirnames + filenames:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if any(rel == i or rel.startswith(i + "/") for i in ignore):
                continue
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            kind = stat.S_IFMT(st.st_mode)
            extra = ""
            if stat.S_ISLNK(st.st_mode):
                extra = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    extra = hashlib.sha256(f.read()).hexdigest()[:16]
            out[rel] = (
                {stat.S_IFDIR: "dir", stat.S_IFREG: "file", stat.S_IFLNK: "symlink"}.get(kind, oct(kind)),
                oct(stat.S_IMODE(st.st_mode)),
                f"{st.st_uid}:{st.st_gid}",
                extra,
            )
    return out


def main():
    args = sys.argv[1:]
    ignore = []
    while "--ignore" in args:
        i = args.index("--ignore")
        ignore.append(args[i + 1].strip("/"))
        del args[i : i + 2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = (entries(r, ignore) for r in args)
    diffs = 0
    for rel in sorted(set(a) | set(b)):
        if a.get(rel) != b.get(rel):
            diffs += 1
            print(f"{rel}: {a.get(rel, 'absent')} != {b.get(rel, 'absent')}")
    print(f"tree_compare: {len(a)} and {len(b)} entries, {diffs} differences", file=sys.stderr)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
