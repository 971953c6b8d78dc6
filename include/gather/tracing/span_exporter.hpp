// The span exporter: a bounded queue of finished spans, sent in batches as OTLP/HTTP JSON
// (POST tracing.otlp_endpoint) over the gateway's own downstream client, on one event loop.
//
// record() is all a request pays: a short lock and a move into the queue, or, when the queue
// holds max_queue_spans already, a dropped span counted (gather_spans_dropped_total). Nothing
// waits for the collector: an export is one transfer with its own timeout (export_timeout_ms),
// at most one is in flight, and its answer only decides what is counted. A collector that is down,
// refusing or hanging therefore changes no answer and no latency; its spans pile up to the
// queue's bound and the rest are dropped. Exports run every export_interval_ms, and as soon as
// max_batch_spans are waiting. Spans still queued when the gateway stops are not sent.
#pragma once

#include <cstdint>
#include <memory>

#include <boost/asio/io_context.hpp>

#include "gather/config/config.hpp"
#include "gather/tracing/span.hpp"

namespace gather {

class downstream_client;

class span_exporter {
public:
  /// Exports from `loop` (one of the loops `client` runs on). The loop must be stopped before
  /// the exporter is destroyed, and the exporter destroyed before the client. `max_response_bytes`
  /// bounds the collector's reply (read and discarded).
  span_exporter(const tracing_config& cfg, downstream_client& client, boost::asio::io_context& loop,
                std::size_t max_response_bytes);
  /// Tracing off (no `tracing` in the config, a cluster node): records and exports nothing.
  span_exporter();
  ~span_exporter();
  span_exporter(const span_exporter&) = delete;
  span_exporter& operator=(const span_exporter&) = delete;

  /// False when tracing is off: a span given to this exporter would only be dropped.
  bool exporting() const { return impl_ != nullptr; }
  /// Queues a finished span; thread-safe, never blocks on I/O.
  void record(span_record span);

  double sample_ratio() const;

  std::uint64_t dropped() const;        ///< spans refused because the queue was full
  std::uint64_t exported() const;       ///< spans in exports the collector accepted (2xx)
  std::uint64_t failed_exports() const; ///< exports that failed (no answer, timeout, non-2xx); their spans are lost
  std::size_t queued() const;           ///< spans waiting now

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace gather
