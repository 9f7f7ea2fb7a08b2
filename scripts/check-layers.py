#!/usr/bin/env python3
"""The layer rule of docs/architecture.md, checked on the sources: a file under src/<layer>/
may include headers of its own layer and of layers below it, never above. The order is the
one src/CMakeLists.txt adds the layers in (each folder one library, linking only downward).
Also: no include cycle between layers. Exit 1 listing every arrow back up.

  scripts/check-layers.py [SRC_DIR]
"""
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
cmake = open(os.path.join(src, "CMakeLists.txt")).read()
m = re.search(r"foreach\(layer ([^)]*)\)", cmake)
if not m:
    sys.exit("check-layers: no 'foreach(layer ...)' in src/CMakeLists.txt")
order = m.group(1).split()
rank = {layer: i for i, layer in enumerate(order)}
inc = re.compile(r'^\s*#\s*include\s+"([a-z0-9_-]+)/')
bad, edges = [], set()
for layer in order:
    root = os.path.join(src, layer)
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith((".h", ".cpp")):
                continue
            path = os.path.join(dirpath, f)
            for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                mm = inc.match(line)
                if not mm or mm.group(1) not in rank:
                    continue
                to = mm.group(1)
                if to != layer:
                    edges.add((layer, to))
                if rank[to] > rank[layer]:
                    bad.append(f"{os.path.relpath(path, src)}:{n}: {layer} includes {to} (above it: {line.strip()})")
for b in bad:
    print(b)
print(f"check-layers: {len(order)} layers ({' < '.join(order)}), {len(edges)} arrows between them, "
      f"{len(bad)} back up")
sys.exit(1 if bad else 0)
