#!/usr/bin/env python3
"""README.md's "From Python" program is docs/python/quickstart.py byte for byte: the one
```python block of the section is the file, which python_install_test runs against an
installed package. So the README never shows Python the tests do not run.

Usage: readme_python_test.py <source dir>
"""
import difflib
import pathlib
import re
import sys


def section(markdown, title):
    """The lines of the section whose heading is `title` (up to the next heading of the
    same or a higher level)."""
    lines, out, level = markdown.splitlines(), None, None
    for line in lines:
        m = re.match(r"^(#+) (.*)$", line)
        if out is not None and m and len(m.group(1)) <= level:
            break
        if out is not None:
            out.append(line)
        elif m and m.group(2).strip() == title:
            out, level = [], len(m.group(1))
    if out is None:
        sys.exit(f"FAIL: README.md has no heading '{title}'")
    return out


def python_blocks(lines):
    """The bodies of the ```python fenced blocks among `lines`, in order."""
    blocks, current = [], None
    for line in lines:
        if current is None:
            if line.strip() == "```python":
                current = []
        elif line.strip() == "```":
            blocks.append("\n".join(current) + "\n")
            current = None
        else:
            current.append(line)
    if current is not None:
        sys.exit("FAIL: a ```python block is not closed")
    return blocks


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = pathlib.Path(sys.argv[1])
    readme, program = root / "README.md", root / "docs/python/quickstart.py"
    blocks = python_blocks(section(readme.read_text(encoding="utf-8"), "From Python"))
    source = program.read_text(encoding="utf-8")
    if len(blocks) != 1:
        sys.exit(f"FAIL: README.md's 'From Python' holds {len(blocks)} ```python blocks; it must hold one, "
                 f"{program.relative_to(root)}")
    if blocks[0] == source:
        print(f"ok: README.md's 'From Python' program is {program.relative_to(root)} ({source.count(chr(10))} lines)")
        return
    diff = difflib.unified_diff(source.splitlines(), blocks[0].splitlines(), str(program),
                                "README.md 'From Python'", lineterm="", n=1)
    print("FAIL: the README's program differs from docs/python/quickstart.py:")
    print("\n".join(list(diff)[:40]))
    sys.exit(1)


if __name__ == "__main__":
    main()
