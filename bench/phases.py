#!/usr/bin/env python3
"""Where a request's CPU goes, by phase of its way through Gather, from a perf profile with call
graphs (bench/run.sh with PERF_OUT, whose default call graph is dwarf): each sample goes to the
phase of the innermost frame of Gather's or its libraries' that names one (the downstream client,
the worker, CAF itself, ...), split by whether the sample was in the kernel or in user space, and
scaled to the row's CPU per request. See docs/performance.md.

  perf script -i PERF_FILE -F comm,tid,ip,sym,dso | bench/phases.py US_CPU_PER_REQ [PHASE]

With PHASE, also the user-space functions the samples of that phase were in.
"""
import collections
import re
import sys

PHASES = [  # the first that matches the innermost user-space frame it can wins
    ("timers", re.compile(r"timer_queue|arm_timeout|wait_handler<gather::connection|on_timer|set_deadline|steady_timer")),
    ("downstream client", re.compile(r"loop_client|downstream_client|downstream_loop::transfer")),
    ("log, metrics, request record", re.compile(r"request_record|log_line|json_line|metrics|histogram|inflight_registry")),
    ("answer building", re.compile(r"aggregate_reply|aggregate_response|progressive_answer")),
    ("worker actor", re.compile(r"section_worker|worker_steps|hedged_attempt|section_attempts|call_span")),
    ("coordinator actor", re.compile(r"gather::coordinator|\(anonymous namespace\)::(finish|advance|answer|launch|on_outcome)|coordinator_state|aggregate_job")),
    ("front", re.compile(r"gather::connection<|request_dispatch|http_server|connection_sink|request_parser|admission")),
    ("CAF runtime", re.compile(r"caf::|libcaf")),
    ("Asio reactor", re.compile(r"boost::asio")),
]


def samples(stream):
    frames = []
    for line in stream:
        if line[:1] not in ("\t", " "):
            if frames:
                yield frames
            frames = []
        elif line.strip():
            frames.append(line.strip())
    if frames:
        yield frames


def phase_of(frames):
    for frame in frames:
        if "[kernel.kallsyms]" in frame:
            continue
        for name, pattern in PHASES:
            if pattern.search(frame):
                return name
    return "other"


def main():
    us_per_request = float(sys.argv[1])
    wanted = sys.argv[2] if len(sys.argv) > 2 else None
    split = collections.defaultdict(lambda: [0, 0])
    leaves = collections.Counter()
    total = 0
    for frames in samples(sys.stdin):
        total += 1
        in_kernel = "[kernel.kallsyms]" in frames[0]
        name = phase_of(frames)
        split[name][1 if in_kernel else 0] += 1
        if name == wanted and not in_kernel:
            leaves[re.sub(r"^[0-9a-f]+ ", "", frames[0])[:120]] += 1
    if total == 0:
        sys.exit("no samples (was the profile recorded with call graphs?)")
    scale = us_per_request / total
    print(f"{total} samples; us of CPU per request by phase (user, kernel), {us_per_request} in all")
    for name, (user, kernel) in sorted(split.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {name:30s} user {user * scale:6.1f}  kernel {kernel * scale:6.1f}")
    if wanted:
        print(f"user-space functions of '{wanted}':")
        for leaf, n in leaves.most_common(25):
            print(f"  {n * scale:6.2f}  {leaf}")


if __name__ == "__main__":
    main()
