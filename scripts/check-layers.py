#!/usr/bin/env python3
"""The layer rules of docs/architecture.md, checked on the sources. Exit 1 listing every break.

1. The declared picture: the layer table of docs/architecture.md (rows `| `src/<layer>` | owns |
   may use |`) says which layers and libraries each layer may include. Every `#include "..."`
   of every header and source under src/ is mapped to an edge (including file's layer -> the
   included header's layer: the longest table row its path starts with; a name without a folder
   is the file's own layer; `rtf/<name>` is a header generated from src/<layer>/<name>.in, else
   include/rtf/, which is capi's). An edge the row's "may use" cell does not name fails, with
   the file:line and the row to fix. A layer may always include itself.
   "may use" names are layers (`core`, `models/gguf`), a folder of layers (`models`: every
   `models/*` row), `everything`, or an external library. The libraries are checked through
   the fixed header -> library map below (`#include <sonic.h>` is a use of Sonic); headers
   outside the map (std, POSIX, nlohmann/json, CLI11) are not checked. A name that is none of
   these fails too (the table names what the check cannot see). Declared edges the code does
   not use are printed as notes, not failures.
2. The build order: src/CMakeLists.txt adds the layers bottom up (`foreach(layer ...)`, and
   src/models/CMakeLists.txt its engines, `foreach(sub ...)`); each folder is one library linking
   only downward, so no include (and no declared edge) may point up that order. With 1 this
   also rules out include cycles between layers.

  scripts/check-layers.py [SRC_DIR] [--doc FILE]     (default: the tree this script is in)
  scripts/check-layers.py --root DIR                 (DIR/src and DIR/docs/architecture.md)
"""
import argparse
import os
import re
import sys

# <header> -> the library's name as the table's "may use" column spells it.
EXTERNAL = [
    (r"hwloc\.h$|hwloc/", "hwloc"),
    (r"sndfile\.hh?$", "libsndfile"),
    (r"samplerate\.h$", "libsamplerate"),
    (r"sonic\.h$", "Sonic"),
    (r"(ggml[a-z0-9-]*|gguf)\.h$", "ggml"),
    (r"llama[a-z0-9-]*\.h$", "llama"),
    (r"mtmd[a-z0-9-]*\.h$", "mtmd"),
    (r"oneapi/dnnl/|dnnl[a-z0-9_]*\.hp?p?$", "oneDNN"),
    (r"omp\.h$", "OpenMP"),
    (r"sqlite3\.h$", "SQLite"),
    (r"httplib\.h$", "cpp-httplib"),
    (r"websocketpp/", "websocketpp"),
    (r"pocketsphinx[a-z0-9_/]*\.h$", "pocketsphinx"),
    (r"vulkan/", "Vulkan"),
]
NOT_CHECKED = {"std"}  # named in the table, headers not mapped
SOURCES = (".h", ".hpp", ".c", ".cc", ".cpp", ".inc", ".h.in")

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("src", nargs="?", help="the src/ folder (default: ../src beside this script)")
ap.add_argument("--doc", help="the architecture doc (default: SRC/../docs/architecture.md)")
ap.add_argument("--root", help="a tree: DIR/src and DIR/docs/architecture.md")
args = ap.parse_args()
if args.root:
    src = os.path.join(args.root, "src")
    doc_path = args.doc or os.path.join(args.root, "docs", "architecture.md")
else:
    src = args.src or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    doc_path = args.doc or os.path.join(src, "..", "docs", "architecture.md")
src = os.path.normpath(src)
doc_path = os.path.normpath(doc_path)
doc_name = "docs/architecture.md" if doc_path.endswith(os.path.join("docs", "architecture.md")) else doc_path


def die(msg):
    print(f"check-layers: {msg}")
    sys.exit(1)


# --- the layer table ---------------------------------------------------------------------
try:
    doc = open(doc_path, encoding="utf-8").read().split("\n")
except OSError as e:
    die(f"cannot read the layer table: {e}")
head = next((i for i, l in enumerate(doc)
             if re.match(r"^\|\s*layer\s*\|\s*owns\s*\|\s*may use\s*\|\s*$", l)), None)
if head is None:
    die(f"{doc_name}: no layer table (a '| layer | owns | may use |' header)")
rows = {}  # layer -> (doc line, may-use cell)
for i in range(head + 2, len(doc)):
    line = doc[i].strip()
    if not line.startswith("|"):
        break
    m = re.match(r"^\|\s*`src/([a-z0-9_/-]+)`\s*\|", line)
    if not m or not line.endswith("|"):
        die(f"{doc_name}:{i + 1}: a layer table row is not '| `src/<layer>` | owns | may use |'")
    layer = m.group(1).rstrip("/")
    if layer in rows:
        die(f"{doc_name}:{i + 1}: `src/{layer}` has a second row (first at line {rows[layer][0]})")
    # the may-use cell is the last one: it holds no '|', an owns cell may (`a|b` in code)
    rows[layer] = (i + 1, line[:-1].rsplit("|", 1)[1].strip())
if not rows:
    die(f"{doc_name}:{head + 1}: the layer table has no rows")
layers = sorted(rows)
libraries = {name for _, name in EXTERNAL}


def row_ref(layer):
    return f"{doc_name}:{rows[layer][0]} (`src/{layer}`)"


def split_top(cell):
    """Comma-separated items, commas inside parentheses kept: 'a (x, y), b' -> ['a (x, y)', 'b']."""
    items, depth, cur = [], 0, ""
    for ch in cell:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    return items + [cur]


errors = []
allowed = {}    # layer -> set of layers and libraries it may use
declared = {}   # layer -> [(name as written, set it stands for)]
for layer in layers:
    line, cell = rows[layer]
    allowed[layer], declared[layer] = {layer}, []
    for item in split_top(cell):
        name = re.sub(r"\([^)]*\)", "", item).replace("`", "").strip()
        if not name:
            continue
        if name == "everything":
            means = set(layers) | libraries
        elif name in rows:
            means = {name}
        elif any(l.startswith(name + "/") for l in layers):
            means = {l for l in layers if l.startswith(name + "/")}
        elif name in libraries or name in NOT_CHECKED:
            means = {name}
        else:
            errors.append(f"{row_ref(layer)}: may use '{name}', which is no layer of the table and "
                          f"no library this check knows ({', '.join(sorted(libraries))}, std)")
            continue
        allowed[layer] |= means
        if name != "everything":
            declared[layer].append((name, means))


def layer_of(rel):
    """The table row a path under src/ belongs to (longest prefix), or None."""
    parts = rel.split("/")
    for n in range(len(parts) - 1, 0, -1):
        cand = "/".join(parts[:n])
        if cand in rows:
            return cand
    return None


# --- the build order -----------------------------------------------------------------------
def foreach(path, var):
    try:
        m = re.search(r"foreach\(" + var + r" ([^)]*)\)", open(path).read())
    except OSError:
        return None
    return m.group(1).split() if m else None


order = foreach(os.path.join(src, "CMakeLists.txt"), "layer")
if not order:
    die("no 'foreach(layer ...)' in src/CMakeLists.txt")
rank = {}
for layer in layers:
    top, _, rest = layer.partition("/")
    if top not in order:
        errors.append(f"{row_ref(layer)}: `{top}` is not in src/CMakeLists.txt's foreach(layer ...)")
        continue
    sub = foreach(os.path.join(src, top, "CMakeLists.txt"), "sub") or []
    if rest and rest.split("/")[0] not in sub:
        errors.append(f"{row_ref(layer)}: `{rest}` is not in src/{top}/CMakeLists.txt's foreach(sub ...)")
        continue
    rank[layer] = (order.index(top), sub.index(rest.split("/")[0]) if rest else -1)


for layer in layers:
    for _, means in declared[layer]:
        for to in sorted(means):
            if to in rank and layer in rank and rank[to] > rank[layer]:
                errors.append(f"{row_ref(layer)}: declares `{to}`, which src/CMakeLists.txt builds "
                              f"after `{layer}` (a library links only downward)")

# --- the includes --------------------------------------------------------------------------
quoted = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
angled = re.compile(r"^\s*#\s*include\s*<([^>]+)>")
lib_of = [(re.compile(p), name) for p, name in EXTERNAL]
uses = {}        # (from, to) -> first "file:line"
n_files = n_includes = 0
unowned = set()
undeclared, upward = {}, {}  # (from, to) -> ["file:line: the include"]
for dirpath, dirs, files in os.walk(src):
    dirs.sort()
    for f in sorted(files):
        if not f.endswith(SOURCES):
            continue
        path = os.path.join(dirpath, f)
        rel = os.path.relpath(path, src).replace(os.sep, "/")
        frm = layer_of(rel)
        if frm is None:
            unowned.add(rel.split("/")[0] if "/" in rel else rel)
            continue
        n_files += 1
        for n, text in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
            m = quoted.match(text)
            to = None
            if m:
                inc = m.group(1)
                if "/" not in inc:
                    to = frm
                elif inc.startswith("rtf/"):
                    name = inc[4:]
                    gen = [l for l in layers if os.path.exists(os.path.join(src, l, name + ".in"))]
                    to = gen[0] if gen else ("capi" if "capi" in rows else None)
                else:
                    to = layer_of(inc)
                    if to is None:
                        near = os.path.normpath(os.path.join(dirpath, inc))
                        if os.path.exists(near) and near.startswith(src + os.sep):
                            to = layer_of(os.path.relpath(near, src).replace(os.sep, "/"))
                    if to is None and inc.split("/")[0] in {l.split("/")[0] for l in layers}:
                        errors.append(f"src/{rel}:{n}: {text.strip()}: no row of the layer table "
                                      f"owns it (add its `src/...` row to {doc_name})")
                        continue
            else:
                m = angled.match(text)
                if m:
                    to = next((name for rx, name in lib_of if rx.search(m.group(1))), None)
            if to is None:
                continue
            n_includes += 1
            uses.setdefault((frm, to), f"src/{rel}:{n}")
            if to not in allowed[frm]:
                undeclared.setdefault((frm, to), []).append(f"src/{rel}:{n}: {text.strip()}")
            if to in rank and frm in rank and rank[to] > rank[frm]:
                upward.setdefault((frm, to), []).append(f"src/{rel}:{n}: {text.strip()}")
for (frm, to), where in sorted(undeclared.items()):
    errors.append(f"{frm} -> {to} is not declared: add `{to}` to the may-use cell of {row_ref(frm)}, "
                  f"or drop the include" + ("s" if len(where) > 1 else "") + ":"
                  + "".join(f"\n    {w}" for w in where))
for (frm, to), where in sorted(upward.items()):
    errors.append(f"{frm} -> {to} points up the build order of src/CMakeLists.txt "
                  f"({' < '.join(order)}):" + "".join(f"\n    {w}" for w in where))
for u in sorted(unowned):
    errors.append(f"src/{u}: sources under src/ with no row in the layer table of {doc_name}")

notes = []
for layer in layers:
    for name, means in declared[layer]:
        if name in NOT_CHECKED:
            continue
        if not any((layer, to) in uses for to in means):
            notes.append(f"note: {row_ref(layer)} declares `{name}`, which no include of "
                         f"src/{layer} uses")

for e in errors:
    print(e)
for n in notes:
    print(n)
edges = {e for e in uses if e[0] != e[1]}
n_layer = sum(1 for e in edges if e[1] not in libraries)
print(f"check-layers: {len(layers)} layers, {n_files} files, {n_includes} includes checked: "
      f"{n_layer} layer edges and {len(edges) - n_layer} library edges against the may-use column of "
      f"{doc_name}, and the build order {' < '.join(order)}; {len(errors)} error"
      + ("" if len(errors) == 1 else "s")
      + (f", {len(notes)} declared edge(s) unused (notes above)" if notes else ""))
sys.exit(1 if errors else 0)
