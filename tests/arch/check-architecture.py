#!/usr/bin/env python3
"""The rules docs/ARCHITECTURE.md states, checked against the tree.

    check-architecture.py [--root DIR] architecture|size|self-test

architecture: reads from docs/ARCHITECTURE.md its layout table (which module
owns which public header), its layer diagram, its "calls" table, its table
of the modules and files that call MPI and its table of the rooms that
advance a virtual clock (with the clock writers it names), then scans
src/<module>/ and bench/ (and include/nvlemu/, each header in its module)
and names file and line of every break:
  - an #include of a public header of a module the "calls" table does not
    list for the includer, or of a module not below it in the layers; an
    #include of another module's private header; a public header that no
    module of the layout table owns; a folder of src/ the layout table
    does not list; a module listed as called but never included, even
    through another header (the table would be false);
  - a file cycle inside a module: a.c calls a function defined in b.c and
    b.c (perhaps through c.c) calls one defined in a.c;
  - a call of an MPI function (MPI_Xxx(...)) from a file the MPI table does
    not list, or a listed file or module that calls none;
  - a clock written (a clock writer called, or now_ps assigned) outside the
    listed rooms, or a listed room that writes none;
  - a module's table of its files ("| file | room |" under its "###
    module:" heading) that misses one of its .c files or names one that
    is not there.
size: no source file (src/, include/, bench/ C and Python, tests/ C and Python,
scripts/ Python and the extensionless Python entry points in scripts/, bench/sweep)
over 600 lines and no C function over 80 lines, counted
from its `{` at column 0 to its `}` at column 0, both included, nor any
Python function (its def to its last line) of those files.
self-test: builds a small tree that breaks every rule once and checks that
each break is reported (the checks can fail).

Exit status 0 when every rule holds, 1 when one is broken (each break on
its own line, file:line: what), 2 when the document cannot be read (a table
missing or malformed, so a rule would go unchecked)."""
import argparse
import ast
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from arch_model import (DOC, MAX_FILE_LINES, MAX_FUNC_LINES, MPI_CALL,  # noqa: E402
                        NOW_PS_WRITE, CFile, Doc, DocError, rel)

# ----------------------------------------------------------------- tree --

def module_files(root, doc):
    """module -> [CFile] for src/<module>/ and bench/."""
    out = {}
    for mod in doc.modules + ["bench"]:
        d = os.path.join(root, "bench" if mod == "bench" else "src/" + mod)
        if not os.path.isdir(d):
            continue
        out[mod] = [CFile(os.path.join(d, f)) for f in sorted(os.listdir(d))
                    if f.endswith((".c", ".h"))]
    return out


def check_includes(root, doc, files, fail):
    headers = os.path.join(root, "include/nvlemu")
    public = {}
    for h in sorted(os.listdir(headers)):
        if not h.endswith(".h"):
            continue
        if h not in doc.header_owner:
            fail(f"include/nvlemu/{h}:1", "public header that no module of "
                 f"{DOC}'s layout table lists")
            continue
        public.setdefault(doc.header_owner[h], []).append(
            CFile(os.path.join(headers, h)))
    used = {m: set() for m in doc.calls}
    via_header = {m: set() for m in doc.calls}  # what m's public headers include
    for mod in doc.calls:
        for cf in files.get(mod, []) + public.get(mod, []):
            here = os.path.dirname(cf.path)
            for inc, line in cf.includes():
                where = f"{rel(root, cf.path)}:{line}"
                if inc.startswith("nvlemu/"):
                    target = doc.header_owner.get(os.path.basename(inc))
                    if target is None:
                        fail(where, f"includes {inc}, which no module owns")
                    elif target != mod:
                        used[mod].add(target)
                        if cf in public.get(mod, []):
                            via_header[mod].add(target)
                        if target not in doc.calls[mod][1]:
                            fail(where, f"{mod} includes {inc} (module "
                                 f"{target}), which {DOC}'s calls table "
                                 f"does not list for {mod}")
                        if doc.layer[target] >= doc.layer[mod]:
                            fail(where, f"{mod} (layer {doc.layer[mod]}) "
                                 f"includes {inc} of {target} (layer "
                                 f"{doc.layer[target]}): not below it")
                    continue
                path = os.path.normpath(os.path.join(here, inc))
                if os.path.exists(path) and os.path.dirname(path) != here:
                    fail(where, f"includes {inc}, a private header of "
                         "another module")
    reach = {m: set(u) for m, u in used.items()}  # through headers too
    for _ in doc.calls:
        for m in reach:
            for t in list(reach[m]):
                reach[m] |= via_header.get(t, set()) - {m}
    for mod, (line, callees) in doc.calls.items():
        for c in sorted(callees):
            if c not in doc.layer:
                fail(f"{DOC}:{line}", f"{mod} calls {c}, not a module")
            elif doc.layer[c] >= doc.layer[mod]:
                fail(f"{DOC}:{line}", f"{mod} calls {c}, which is not in a "
                     "lower layer")
            elif mod in files and c not in reach[mod]:
                fail(f"{DOC}:{line}", f"{mod} is said to call {c}, but "
                     f"no file of {mod} includes a header of {c}, even "
                     "through another header")


def check_cycles(root, files, fail):
    for mod, cfs in files.items():
        defined = {}
        for cf in cfs:
            for f in cf.funcs:
                if not f["static"] and f["name"] != "main":
                    defined.setdefault(f["name"], cf.path)
        edges = {}  # file -> {file: (line, name)}
        for cf in cfs:
            own = {f["name"] for f in cf.funcs}
            for name, line in cf.calls():
                other = defined.get(name)
                if other and other != cf.path and name not in own:
                    edges.setdefault(cf.path, {}).setdefault(
                        other, (line, name))
        for comp in strongly_connected(edges):
            if len(comp) < 2:
                continue
            names = " <-> ".join(rel(root, p) for p in sorted(comp))
            for a in sorted(comp):
                for b, (line, name) in sorted(edges.get(a, {}).items()):
                    if b in comp:
                        fail(f"{rel(root, a)}:{line}", f"calls {name} of "
                             f"{os.path.basename(b)}: a file cycle in "
                             f"{mod} ({names})")


def strongly_connected(edges):
    """Tarjan's strongly connected components of a graph {a: {b: ...}}."""
    index, low, stack, on, out = {}, {}, [], set(), []
    nodes = set(edges) | {b for e in edges.values() for b in e}

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check_mpi(root, doc, files, fail):
    for mod, cfs in files.items():
        listed = doc.mpi.get(mod)
        calling = set()
        for cf in cfs:
            name = os.path.basename(cf.path)
            first = next(((i + 1, m.group(0).rstrip("( "))
                          for i, l in enumerate(cf.code)
                          for m in [MPI_CALL.search(l)] if m), None)
            if first is None:
                continue
            calling.add(name)
            where = f"{rel(root, cf.path)}:{first[0]}"
            if listed is None:
                fail(where, f"calls {first[1]}, but {DOC}'s MPI table does "
                     f"not list module {mod}")
            elif name not in listed[1]:
                fail(where, f"calls {first[1]}, but {DOC}'s MPI table does "
                     f"not list {name} for {mod}")
        if listed:
            for name in sorted(listed[1] - calling):
                fail(f"{DOC}:{listed[0]}", f"the MPI table lists {mod}'s "
                     f"{name}, which calls no MPI function")
    for mod, (line, _) in doc.mpi.items():
        if mod not in files:
            fail(f"{DOC}:{line}", f"the MPI table lists {mod}, which has no "
                 "sources")


def check_clock(root, doc, files, fail):
    defined = set()
    for d in ("include/nvlemu", "src"):
        for top, _, names in os.walk(os.path.join(root, d)):
            for n in names:
                if n.endswith((".c", ".h")):
                    defined |= {f["name"] for f in
                                CFile(os.path.join(top, n)).funcs}
    for w in sorted(doc.writers - defined):
        fail(f"{DOC}:1", f"'Clock writers:' names {w}, which no source "
             "defines")
    vclock = CFile(os.path.join(root, "include/nvlemu/vclock.h"))
    for f in vclock.funcs:
        sig = " ".join(vclock.code[max(f["open"] - 3, 0):f["open"]])
        if re.search(r"\(\s*nvl_vclock_t\s*\*", sig) and \
                f["name"] not in doc.writers:
            fail(f"include/nvlemu/vclock.h:{f['open']}", f"{f['name']} "
                 "writes a clock; 'Clock writers:' does not name it")
    writer = re.compile(r"\b(" + "|".join(map(re.escape, sorted(
        doc.writers))) + r")\s*\(")
    writing = set()
    for cfs in files.values():
        for cf in cfs:
            path = rel(root, cf.path)
            for i, line in enumerate(cf.code):
                own = {f["name"] for f in cf.funcs}
                m = writer.search(line)
                hit = m.group(1) if m and m.group(1) not in own else None
                if hit is None and NOW_PS_WRITE.search(line):
                    hit = "a write of now_ps"
                if hit is None:
                    continue
                writing.add(path)
                if path not in doc.rooms:
                    fail(f"{path}:{i + 1}", f"advances a clock ({hit}) but "
                         f"is not one of {DOC}'s rooms that may")
    for path, line in sorted(doc.rooms.items()):
        if path not in writing:
            fail(f"{DOC}:{line}", f"lists {path} as a room that advances a "
                 "clock; it does not" + ("" if os.path.exists(
                     os.path.join(root, path)) else " (no such file)"))


def check_file_tables(root, doc, files, fail):
    for mod, (line, names) in sorted(doc.file_tables.items()):
        have = {os.path.basename(cf.path) for cf in files.get(mod, [])
                if cf.path.endswith(".c")}
        for f in sorted(have - set(names)):
            fail(f"src/{mod}/{f}:1", f"a file of {mod} that {DOC}'s table "
                 f"of {mod}'s files (line {line}) does not name")
        for f in sorted(set(names) - have):
            fail(f"{DOC}:{names[f]}", f"the table of {mod}'s files names "
                 f"{f}, which src/{mod}/ does not hold")


def check_architecture(root, fail):
    doc = Doc(root)
    for d in sorted(os.listdir(os.path.join(root, "src"))):
        if os.path.isdir(os.path.join(root, "src", d)) and \
                d not in doc.modules:
            fail(f"src/{d}/", f"a module that {DOC}'s layout table does not "
                 "list (nor its layers, calls, MPI and clock rules)")
    files = module_files(root, doc)
    check_includes(root, doc, files, fail)
    check_cycles(root, files, fail)
    check_mpi(root, doc, files, fail)
    check_clock(root, doc, files, fail)
    check_file_tables(root, doc, files, fail)


# ----------------------------------------------------------------- size --

def size_sources(root):
    def walk(d, ends):
        for top, dirs, names in os.walk(os.path.join(root, d)):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for n in sorted(names):
                if n.endswith(ends):
                    yield os.path.join(top, n)
    yield from walk("src", (".c", ".h"))
    yield from walk("include", (".h",))
    yield from walk("bench", (".c", ".h", ".py"))  # the sweep package too
    yield from walk("tests", (".c", ".h", ".py"))
    yield from walk("scripts", (".py",))
    yield from python_entries(os.path.join(root, "scripts"))
    sweep = os.path.join(root, "bench/sweep")  # its entry, no extension
    if os.path.isfile(sweep):
        yield sweep


def python_entries(folder):
    """The Python entry points of FOLDER (not below it): files with no
    extension whose first line is a python shebang."""
    if not os.path.isdir(folder):
        return
    for n in sorted(os.listdir(folder)):
        path = os.path.join(folder, n)
        if "." in n or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            first = f.readline()
        if first.startswith(b"#!") and b"python" in first:
            yield path


def check_size(root, fail):
    for path in size_sources(root):
        with open(path, encoding="utf-8", errors="replace") as f:
            n = f.read().count("\n")
        if n > MAX_FILE_LINES:
            fail(f"{rel(root, path)}:1", f"{n} lines (at most "
                 f"{MAX_FILE_LINES})")
        if path.endswith((".c", ".h")):
            funcs = [(fn["name"], fn["open"], fn["close"])
                     for fn in CFile(path).funcs]
        else:
            funcs = python_funcs(path)
        for name, first, last in funcs:
            length = last - first + 1
            if length > MAX_FUNC_LINES:
                fail(f"{rel(root, path)}:{first}", f"{name} is {length} "
                     f"lines (at most {MAX_FUNC_LINES})")


def python_funcs(path):
    """(name, first line, last line) of every function of a Python file
    (nested ones too); none when it does not parse (its tests say why)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        try:
            tree = ast.parse(f.read())
        except SyntaxError:
            return []
    return [(n.name, n.lineno, n.end_lineno) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


# ------------------------------------------------------------ self-test --

# The planted tree; "<src>/" stands for "src/" (and so on), so that
# scripts/check-doc-refs does not take these for the repository's paths.
SELF_DOC = """# x
| module | public headers | sources | owns |
|---|---|---|---|
| low | `low.h`, `vclock.h` | | |
| high | `high.h` | | |
| cli | (private `cli.h`) | | |

```
layer 2   cli    <bench>/   commands
layer 1   high            the top
layer 0   low             the bottom
```

| module | calls (public headers) |
|---|---|
| low | none |
| high | low |
| cli | high |
| bench | high |

| module | files that call MPI | for |
|---|---|---|
| high | `a.c`, `quiet.c` | |

| room | advances a clock by |
|---|---|
| `<src>/high/a.c` | |
| `<src>/high/gone.c` | |

Clock writers: `nvl_vclock_advance` and a write of `now_ps`.

### high: its files

| file | room |
|---|---|
| `a.c`, `b.c` | |
| `gone2.c` | |
"""

SELF_FILES = {
    "<include>/nvlemu/low.h": '#include "nvlemu/high.h"\n',
    "<include>/nvlemu/high.h": "",
    "<include>/nvlemu/stray.h": "",
    "<include>/nvlemu/vclock.h":
        "static inline void nvl_vclock_advance(nvl_vclock_t *c, long d)\n"
        "{\n    c->now_ps += d;\n}\n",
    "<src>/low/l.c": "int l(void)\n{\n    return MPI_Barrier(0);\n}\n",
    "<src>/high/a.c": '#include "nvlemu/low.h"\nint a(void)\n{\n'
                    "    return b() + MPI_Wtime() + nvl_vclock_advance(0, 1);"
                    "\n}\n",
    "<src>/high/b.c": "int b(void)\n{\n    x.now_ps = 3;\n    return a();\n"
                    "}\n",
    "<src>/high/quiet.c": "int q(void)\n{\n" + "    q();\n" * 80 + "}\n",
    "<src>/cli/c.c": '#include "../high/priv.h"\n',
    "<src>/high/priv.h": "",
    "<src>/stray/s.c": "",
    "<bench>/x.c": '#include "nvlemu/high.h"\n',
    "<scripts>/long-entry": "#!/usr/bin/env python3\n" + "pass\n" * 600,
    "<scripts>/long-shell": "#!/bin/sh\n" + ":\n" * 600,
    "<bench>/long_def.py": "def main():\n" + "    pass\n" * 80,
}

SELF_EXPECT = [
    "<include>/nvlemu/stray.h:1: public header that no module",
    "<include>/nvlemu/low.h:1: low includes nvlemu/high.h (module high), "
    "which",
    "<include>/nvlemu/low.h:1: low (layer 0) includes nvlemu/high.h",
    "<src>/cli/c.c:1: includes ../high/priv.h, a private header",
    ": cli is said to call high, but no file",
    "<src>/high/a.c:4: calls b of b.c: a file cycle in high",
    "<src>/high/b.c:4: calls a of a.c: a file cycle in high",
    "<src>/low/l.c:3: calls MPI_Barrier, but",
    ": the MPI table lists high's quiet.c, which calls no MPI function",
    "<src>/high/b.c:3: advances a clock (a write of now_ps) but",
    "lists <src>/high/gone.c as a room that advances a clock; it does not "
    "(no such file)",
    "<src>/high/quiet.c:2: q is 82 lines",
    "<src>/stray/: a module that",
    "<src>/high/quiet.c:1: a file of high that",
    "the table of high's files names gone2.c, which",
    "<scripts>/long-entry:1: 601 lines",
    "<bench>/long_def.py:1: main is 81 lines",
]


def planted(text):
    return re.sub(r"<(src|include|bench|scripts)>/", r"\1/", text)


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        with open(os.path.join(root, DOC), "w") as f:
            f.write(planted(SELF_DOC))
        for path, text in SELF_FILES.items():
            path, text = planted(path), planted(text)
            os.makedirs(os.path.dirname(os.path.join(root, path)),
                        exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        found = []
        check_architecture(root, lambda w, m: found.append(f"{w}: {m}"))
        check_size(root, lambda w, m: found.append(f"{w}: {m}"))
    expect = [planted(e) for e in SELF_EXPECT]
    missed = [e for e in expect if not any(e in f for f in found)]
    for e in missed:
        print(f"self-test: not reported: {e}")
    extra = [f for f in found if not any(e in f for e in expect)]
    for f in extra:
        print(f"self-test: reported beyond the planted breaks: {f}")
    if not missed and not extra:
        print(f"self-test: all {len(expect)} planted breaks reported")
    return 1 if missed or extra else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("check", choices=["architecture", "size", "self-test"])
    a = ap.parse_args()
    if a.check == "self-test":
        return self_test()
    root = os.path.abspath(a.root)
    broken = []

    def fail(where, what):
        broken.append(f"{where}: {what}")

    try:
        (check_architecture if a.check == "architecture" else check_size)(
            root, fail)
    except DocError as e:
        print(f"{DOC}: {e}", file=sys.stderr)
        return 2
    for b in broken:
        print(b)
    print(f"# {a.check}: " + (f"{len(broken)} rule(s) broken" if broken
                              else "every rule holds"))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
