#!/usr/bin/env python3
"""Splits a callgrind profile of `gather serve` (bench/callgrind_table.sh) into instructions
(callgrind's Ir) by library and by stage, divided by the number of requests counted.

  bench/callgrind_split.py PROFILE REQUESTS BUILD_DIR [--json]

By library: each function's own instructions (exclusive), by what the function is: Gather's code
(namespace gather), CAF, Beast/Asio, JSON (nlohmann, simdjson), protobuf, nghttp2, OpenSSL,
malloc/free (glibc's or jemalloc's), the rest of libc, libstdc++, the kernel's entry (valgrind
counts no kernel instructions: a system call is the few instructions of its wrapper).

By stage: the folder whose library defines the function (`nm` of BUILD_DIR's libgather_*.a:
front, admission, actors, downstream, answer, ops, tracing, shared, config, values, runtime, ...).
A function of no stage (a library's, or a template instantiated in none of them) passes its
instructions on to its callers, in proportion to what each call cost, until a stage takes them:
malloc called by the HTTP parser counts to the front. What reaches no stage (the event loop's own
epoll and timers, CAF's scheduler between actors) is "loop".
"""
import collections
import glob
import json
import os
import re
import subprocess
import sys

STAGE_OF_LIBRARY = {
    "gather_front": "front", "gather_admission": "admission", "gather_actors": "actors",
    "gather_downstream": "downstream", "gather_answer": "answer", "gather_ops": "ops (log, metrics)",
    "gather_ops_endpoints": "ops (log, metrics)", "gather_tracing": "tracing", "gather_shared": "shared",
    "gather_config": "config", "gather_values": "values", "gather_runtime": "runtime",
    "gather_resilience": "resilience", "gather_cluster": "cluster", "gather_gateway": "gateway",
    "gather_node": "cluster", "gather_demo": "demo", "gather_http2": "http2 codec",
}

LIBRARY_RULES = [
    (re.compile(r"^(je_|malloc|free|calloc|realloc|_int_malloc|_int_free|operator new|operator delete|"
                r"tcache|cfree|posix_memalign|aligned_alloc|memalign|arena_|sdallocx|mallocx|rallocx|"
                r"unlink_chunk|malloc_consolidate|sysmalloc)"), "malloc/free"),
    (re.compile(r"^gather::"), "Gather"),
    (re.compile(r"^caf::"), "CAF"),
    (re.compile(r"^boost::(asio|beast)::"), "Beast/Asio"),
    (re.compile(r"^boost::"), "Boost (other)"),
    (re.compile(r"^(nlohmann|simdjson)::"), "JSON (nlohmann, simdjson)"),
    (re.compile(r"^google::protobuf::"), "protobuf"),
    (re.compile(r"^nghttp2_"), "nghttp2"),
    (re.compile(r"^(SSL_|ssl|EVP_|OPENSSL|CRYPTO|BIO_|ERR_|tls|ossl)"), "OpenSSL"),
    (re.compile(r"^(std::|__gnu_cxx::|__cxxabiv1|__cxa_|_Unwind)"), "libstdc++"),
]


def function_name(demangled):
    """The qualified name of a demangled signature: the part before its argument list, without a
    return type (the last top-level space-separated token before the first top-level '(')."""
    depth = 0
    for i, c in enumerate(demangled):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0 and i > 0:
            head = demangled[:i]
            break
    else:
        head = demangled
    depth = 0
    start = 0
    for i, c in enumerate(head):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == " " and depth == 0 and not head[i + 1:].startswith(("const", "&", "*")):
            start = i + 1
    return head[start:]


def library_of(name, obj):
    qualified = function_name(name)
    for pattern, what in LIBRARY_RULES:
        if pattern.search(qualified):
            return what
    base = os.path.basename(obj or "")
    if base.startswith(("libc.so", "libc-", "ld-linux", "libm.so", "libpthread")):
        return "libc"
    if base.startswith("libstdc++"):
        return "libstdc++"
    if base.startswith("libcaf"):
        return "CAF"
    if base.startswith(("libssl", "libcrypto")):
        return "OpenSSL"
    if base.startswith("libprotobuf"):
        return "protobuf"
    if base.startswith("libnghttp2"):
        return "nghttp2"
    if base.startswith("libjemalloc"):
        return "malloc/free"
    return "other: " + (base or "?")


def stages_by_symbol(build_dir):
    """Mangled symbol -> stage, from the text symbols each libgather_*.a defines."""
    strong = {}
    weak = collections.defaultdict(set)
    for archive in sorted(glob.glob(os.path.join(build_dir, "libgather_*.a"))):
        library = os.path.basename(archive)[3:-2]
        stage = STAGE_OF_LIBRARY.get(library, library)
        listing = subprocess.run(["nm", "-C", "--defined-only", archive], capture_output=True, text=True).stdout
        for line in listing.splitlines():
            parts = line.split(" ", 2)
            # Gather's own functions only: a library's code instantiated or cloned (`.isra`) in
            # an archive is no stage's, whichever archive holds a copy.
            if len(parts) != 3 or not function_name(parts[2]).startswith("gather::"):
                continue
            if parts[1] in "Tt":
                strong.setdefault(parts[2], stage)
            elif parts[1] in "Ww":
                weak[parts[2]].add(stage)
    # An inline function or a template instantiated by one stage alone is that stage's; one that
    # several instantiate (CAF's and Asio's templates, Gather's own header code) belongs to none
    # and passes its instructions on to its callers.
    for symbol, stages in weak.items():
        if len(stages) == 1 and symbol not in strong:
            strong[symbol] = next(iter(stages))
    return strong


def read_profile(path):
    """(self cost per function, {callee: {caller: inclusive cost of its calls}}, object per function)."""
    names = {"fn": {}, "ob": {}, "fl": {}}
    self_cost = collections.Counter()
    callers = collections.defaultdict(collections.Counter)
    object_of = {}
    current_fn = current_ob = None
    call_target = call_ob = None
    pending_call = False
    cfn_ob = None
    summary = None

    def name(kind, text):
        m = re.match(r"\((\d+)\)(?: (.*))?$", text)
        if not m:
            return text
        key, given = m.group(1), m.group(2)
        table = names[kind]
        if given is not None:
            table[key] = given
        return table.get(key, "?")

    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line:
                continue
            head = line[:4]
            if head == "fn=(" or line.startswith("fn="):
                current_fn = name("fn", line[3:])
                object_of.setdefault(current_fn, current_ob)
                cfn_ob = None
            elif line.startswith("ob="):
                current_ob = name("ob", line[3:])
            elif line.startswith("cob="):
                cfn_ob = name("ob", line[4:])
            elif line.startswith("cfn="):
                call_target = name("fn", line[4:])
                object_of.setdefault(call_target, cfn_ob or current_ob)
            elif line.startswith("calls="):
                pending_call = True
            elif line[0] in "0123456789+-*":
                fields = line.split()
                cost = int(fields[1]) if len(fields) > 1 else 0
                if pending_call:
                    callers[call_target][current_fn] += cost
                    pending_call = False
                else:
                    self_cost[current_fn] += cost
            elif line.startswith(("summary:", "totals:")):
                summary = int(line.split()[1])
    return self_cost, callers, object_of, summary


def split(path, requests, build_dir):
    self_cost, callers, object_of, summary = read_profile(path)
    total = summary or sum(self_cost.values())
    by_library = collections.Counter()
    for fn, cost in self_cost.items():
        by_library[library_of(fn, object_of.get(fn))] += cost
    symbol_stage = stages_by_symbol(build_dir)

    def stage_of(fn):
        return symbol_stage.get(fn)

    by_stage = collections.Counter()
    pending = collections.Counter()
    for fn, cost in self_cost.items():
        stage = stage_of(fn)
        if stage:
            by_stage[stage] += cost
        else:
            pending[fn] += cost
    # Instructions of no stage flow up the call edges to the callers that have one.
    for _ in range(60):
        if not pending:
            break
        moved = collections.Counter()
        for fn, cost in pending.items():
            edges = callers.get(fn)
            if not edges or cost == 0:
                by_stage["loop"] += cost
                continue
            weight = sum(edges.values())
            if weight == 0:
                by_stage["loop"] += cost
                continue
            for caller, edge in edges.items():
                if caller == fn:
                    continue
                share = cost * edge / weight
                stage = stage_of(caller)
                if stage:
                    by_stage[stage] += share
                else:
                    moved[caller] += share
        pending = moved
    by_stage["loop"] += sum(pending.values())
    per = lambda counter: {k: v / requests for k, v in counter.most_common()}
    return {"instructions_per_request": total / requests, "by_library": per(by_library),
            "by_stage": per(by_stage)}


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(64)
    result = split(sys.argv[1], int(sys.argv[2]), sys.argv[3])
    if "--json" in sys.argv:
        print(json.dumps(result))
        return
    print("instructions/request %.0f" % result["instructions_per_request"])
    for title in ("by_library", "by_stage"):
        print("  " + title.replace("_", " ") + ":")
        for key, value in result[title].items():
            share = 100 * value / result["instructions_per_request"]
            if share >= 0.5:
                print("    %-28s %9.0f  %5.1f%%" % (key, value, share))


if __name__ == "__main__":
    main()
