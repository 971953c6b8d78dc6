// Where a coordinator's answer goes. The actors define this seam and the HTTP front implements
// it, so no actor knows a connection, a socket or an event loop.
#pragma once

#include <atomic>

#include "gather/actors/request_record.hpp"
#include "gather/values/http_reply.hpp"

namespace gather {

class reply_sink {
public:
  reply_sink() = default;
  explicit reply_sink(request_record record) : record_(std::move(record)) {}
  virtual ~reply_sink() = default;

  /// True for the first caller only. The coordinator claims before it finishes the record and
  /// delivers its answer; the front claims before it finishes the record with a 499 (client gone)
  /// or a 504 (hard limit) of its own: one request, one log line, one count.
  bool claim() { return !claimed_.exchange(true, std::memory_order_acq_rel); }

  /// The request's record, for whoever claimed (and for nobody else): finish it, then deliver.
  request_record& record() { return record_; }

  /// Hands the answer over; never blocks (the front posts it to the connection's event loop).
  /// Called at most once, by whoever claimed.
  virtual void deliver(http_reply reply) = 0;

private:
  std::atomic<bool> claimed_{false};
  request_record record_;
};

} // namespace gather
