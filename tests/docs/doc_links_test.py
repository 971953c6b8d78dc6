#!/usr/bin/env python3
"""Every link in README.md and docs/*.md that points into the repository resolves: the file
exists, and a `#fragment` names a heading of that file as GitHub spells its anchor. No link leaves
the repository by a relative path (a user gets this repository only). Links to http(s):// pages
are not fetched (the tests make no traffic off this machine).

  doc_links_test.py SOURCE_DIR
"""
import os
import re
import sys

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def anchors_of(path):
    """GitHub's anchors of a Markdown file's headings: lower case, every character but letters,
    digits, spaces, hyphens and underscores dropped, spaces as hyphens; a repeated one gets -1, -2."""
    seen = {}
    out = set()
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            m = None if in_fence else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            text = re.sub(r"`([^`]*)`", r"\1", m.group(2))
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
            slug = "".join(c for c in text.lower() if c.isalnum() or c in " -_").replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links_of(path):
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            for m in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                yield number, m.group(1)


def main():
    root = os.path.realpath(sys.argv[1])
    files = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    files += sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    anchors = {}
    problems = []
    checked = 0
    for path in files:
        for number, target in links_of(path):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            where = f"{os.path.relpath(path, root)}:{number}: {target}"
            file_part, _, fragment = target.partition("#")
            dest = os.path.realpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            checked += 1
            if not (dest == root or dest.startswith(root + os.sep)):
                problems.append(f"{where}: leaves the repository")
                continue
            if not os.path.exists(dest):
                problems.append(f"{where}: no such file")
                continue
            if fragment and dest.endswith(".md"):
                if dest not in anchors:
                    anchors[dest] = anchors_of(dest)
                if fragment not in anchors[dest]:
                    problems.append(f"{where}: no heading with that anchor")
    for p in problems:
        print(p)
    print(f"{checked} links checked in {len(files)} files, {len(problems)} broken")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
