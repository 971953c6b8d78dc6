// What the process gives every actor of every request: the same objects from start to stop.
//
// Never null. What a process lacks is an object that does nothing, not a missing pointer: a
// cluster node has no cluster of its own (a `cluster` without nodes: every section runs here), no
// tracing (a `span_exporter` that exports nothing), a cache its calls never ask (they carry no
// cache key) and an in-flight registry no endpoint reads; a gateway calls any origin
// (`origin_allowlist::any()`). What belongs to one configuration generation (its counters,
// guards, limits, deadline header) is not here: each request carries its `serving_config`.
#pragma once

namespace gather {

class downstream_client;
struct gateway_stats;
class inflight_registry;
class section_cache;
class cluster;
class span_exporter;
class origin_allowlist;

struct process_services {
  downstream_client& client;
  gateway_stats& stats;
  inflight_registry& inflight;
  section_cache& cache;
  cluster& nodes;                  ///< without nodes: place() always answers "here"
  span_exporter& spans;            ///< without tracing: exporting() is false, nothing is recorded
  const origin_allowlist& origins; ///< what this process's workers may call
};

} // namespace gather
