#!/usr/bin/env python3
"""docs/tutorial-c.md quotes docs/tutorial/tutorial.c whole: its ```c blocks, in order and
joined by one blank line, are the program byte for byte. So the tutorial never shows code
the tests do not compile and run, and the program has no line the tutorial leaves out.

Usage: tutorial_quotes_test.py <tutorial-c.md> <tutorial.c>
"""
import difflib
import sys


def c_blocks(markdown):
    """The bodies of the markdown's ```c fenced blocks, in order."""
    blocks, current = [], None
    for line in markdown.splitlines():
        if current is None:
            if line.strip() == "```c":
                current = []
        elif line.strip() == "```":
            blocks.append("\n".join(current))
            current = None
        else:
            current.append(line)
    if current is not None:
        sys.exit("FAIL: a ```c block is not closed")
    return blocks


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    markdown_path, source_path = sys.argv[1], sys.argv[2]
    with open(markdown_path, encoding="utf-8") as f:
        blocks = c_blocks(f.read())
    with open(source_path, encoding="utf-8") as f:
        source = f.read()
    quoted = "\n\n".join(blocks) + "\n"
    if quoted == source:
        print(f"ok: {len(blocks)} code blocks of {markdown_path} are {source_path} "
              f"({source.count(chr(10))} lines)")
        return
    diff = difflib.unified_diff(source.splitlines(), quoted.splitlines(), source_path,
                                markdown_path + " (its c blocks joined by blank lines)", lineterm="", n=1)
    print("FAIL: the tutorial's code blocks differ from the program:")
    print("\n".join(list(diff)[:40]))
    sys.exit(1)


if __name__ == "__main__":
    main()
