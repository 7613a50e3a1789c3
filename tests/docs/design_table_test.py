#!/usr/bin/env python3
"""docs/design.md's table of the folders of core/ against the tree: one row per folder of
core/ and no other, and each row's "may include" column covers every core/ folder the
folder's files (its subfolders' too) include (so the layering the document states is the
one the code has).
Usage: design_table_test.py <source dir>"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
rows = {}
for line in (root / "docs/design.md").read_text().splitlines():
    m = re.match(r"^\| `core/([a-z_]+)/` \|.*\| ([^|]+) \|$", line)
    if m:
        rows[m.group(1)] = m.group(2).strip()
folders = sorted(p.name for p in (root / "core").iterdir() if p.is_dir())
errors = []
if sorted(rows) != folders:
    errors.append(f"the table lists {sorted(rows)}, core/ holds {folders}")
for folder in folders:
    used = set()
    for f in (p for p in (root / "core" / folder).rglob("*") if p.is_file()):
        used |= set(re.findall(r'#include "core/([a-z_]+)/', f.read_text()))
    used.discard(folder)
    allowed = rows.get(folder, "")
    if allowed.startswith("every folder but "):
        excluded = set(re.findall(r"[a-z_]+", allowed[len("every folder but "):])) - {"and"}
        permitted = set(folders) - excluded
    else:
        permitted = set(re.findall(r"[a-z_]+", allowed)) - {"nothing"}
    extra = sorted(used - permitted)
    if extra:
        errors.append(f"core/{folder}/ includes {extra}, which its row ('{allowed}') does not allow")
for e in errors:
    print("design_table_test:", e)
if errors:
    sys.exit(1)
print(f"design_table_test: {len(folders)} folders of core/, each row matches its includes")
