#!/usr/bin/env python3
"""Folds `perf script` output into stacks and draws them as a self-contained SVG flame graph.

    perf script -i perf.data | bench/flamegraph.py --title "S1" > s1.svg
    perf script -i perf.data | bench/flamegraph.py --folded > s1.folded   # the folded stacks only
    bench/flamegraph.py --layers < s1.folded                             # share by layer (text)

Debian packages no flame graph tool, so this is the project's own: one frame a rectangle, width
proportional to the samples under it, the caller below its callees, hover for the name and share.
--layers sorts every sample into the layer of its leaf frame (kernel, Beast, CAF, JSON, allocator,
...), the table docs/performance-history.md quotes.
"""
import argparse
import html
import re
import sys
from collections import defaultdict

# Leaf frame -> layer, first match wins (a sample's cost belongs to the code it was running).
LAYERS = [
    ("allocator", r"malloc|_int_free|_int_malloc|cfree|free$|unlink_chunk|operator new|operator delete|mi_|je_|tcache"),
    ("kernel", r"^\[k\]|\[kernel|_sys_|^__x64|^entry_SYSCALL|^do_syscall|^tcp_|^ip_|^__sys_|^sock_|^ep_|^__schedule"),
    ("json (nlohmann)", r"nlohmann"),
    ("beast/asio", r"boost::beast|boost::asio"),
    ("caf", r"^caf::|libcaf"),
    ("libc other", r"^__memcpy|^__memmove|^__memset|^__strlen|^memcpy|^memchr|^__memchr|^pthread_|^__lll|^clock_gettime|^__GI_|^_IO_|^__vfprintf|^__libc"),
    ("libstdc++", r"^std::|libstdc\+\+"),
    ("openssl", r"^EVP_|^SSL_|^ossl_|libcrypto|libssl"),
    ("gather", r"gather::"),
]


def fold(lines):
    """perf script text -> {folded stack: samples}. A sample is a header line then frames, then a blank line."""
    stacks = defaultdict(int)
    frames = []
    in_sample = False
    for raw in lines:
        line = raw.rstrip("\n")
        if not line.strip():
            if frames:
                stacks[";".join(reversed(frames))] += 1
            frames, in_sample = [], False
            continue
        if not in_sample:
            in_sample = True  # the header: comm pid time: period event:
            continue
        # "\t    7f12 symbol+0x12 (/lib/x86_64-linux-gnu/libc.so.6)"
        m = re.match(r"\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
        if not m:
            continue
        sym, dso = m.group(1), m.group(2)
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        if sym == "[unknown]":
            sym = "[" + dso.rsplit("/", 1)[-1] + "]"
        if "kernel.kallsyms" in dso and not sym.startswith("[k]"):
            sym = "[k] " + sym
        frames.append(sym.replace(";", ":"))
    if frames:
        stacks[";".join(reversed(frames))] += 1
    return stacks


def read_folded(lines):
    stacks = defaultdict(int)
    for line in lines:
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if stack:
            stacks[stack] += int(n)
    return stacks


def layer_of(leaf):
    for name, pattern in LAYERS:
        if re.search(pattern, leaf):
            return name
    return "other"


def layers(stacks):
    total = sum(stacks.values()) or 1
    by = defaultdict(int)
    for stack, n in stacks.items():
        by[layer_of(stack.rsplit(";", 1)[-1])] += n
    out = ["%-18s %6s" % ("layer (leaf frame)", "share")]
    for name, n in sorted(by.items(), key=lambda kv: -kv[1]):
        out.append("%-18s %5.1f%%" % (name, 100.0 * n / total))
    out.append("%-18s %6d" % ("samples", total))
    return "\n".join(out)


def svg(stacks, title, width=1200, row=16):
    tree = {"n": 0, "kids": {}}
    for stack, n in stacks.items():
        node = tree
        node["n"] += n
        for frame in stack.split(";"):
            node = node["kids"].setdefault(frame, {"n": 0, "kids": {}})
            node["n"] += n
    total = tree["n"] or 1

    def depth(node):
        return 1 + max((depth(k) for k in node["kids"].values()), default=0)

    rows = depth(tree)
    height = rows * row + 40
    scale = (width - 20) / total
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" font-size="11">'
           % (width, height),
           '<rect width="100%" height="100%" fill="#fdfdf6"/>',
           '<text x="10" y="18" font-size="14">%s (%d samples)</text>' % (html.escape(title), total)]

    def draw(name, node, x, level):
        w = node["n"] * scale
        if w < 0.3:
            return
        y = height - (level + 1) * row - 4
        share = 100.0 * node["n"] / total
        hue = 10 + (hash(name) % 40)
        label = name if len(name) * 6.5 < w else name[: max(0, int(w / 6.5) - 2)] + ".." if w > 20 else ""
        out.append('<g><title>%s (%.2f%%, %d samples)</title><rect x="%.1f" y="%d" width="%.1f" height="%d" '
                   'fill="hsl(%d,85%%,60%%)" stroke="#fdfdf6" stroke-width="0.5"/><text x="%.1f" y="%d">%s</text></g>'
                   % (html.escape(name), share, node["n"], x, y, w, row - 1, hue, x + 2, y + row - 4,
                      html.escape(label)))
        cx = x
        for kname, kid in sorted(node["kids"].items()):
            draw(kname, kid, cx, level + 1)
            cx += kid["n"] * scale

    cx = 10
    for name, kid in sorted(tree["kids"].items()):
        draw(name, kid, cx, 0)
        cx += kid["n"] * scale
    out.append("</svg>")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--title", default="flame graph")
    ap.add_argument("--folded", action="store_true", help="print folded stacks instead of an SVG")
    ap.add_argument("--layers", action="store_true", help="read folded stacks, print the share per layer")
    args = ap.parse_args()
    if args.layers:
        print(layers(read_folded(sys.stdin)))
        return
    stacks = fold(sys.stdin)
    if args.folded:
        for stack, n in sorted(stacks.items()):
            print(stack, n)
    else:
        print(svg(stacks, args.title))


if __name__ == "__main__":
    main()
