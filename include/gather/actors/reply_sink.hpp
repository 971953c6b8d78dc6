// Where a coordinator's answer goes. The actors define this seam and the HTTP front implements
// it, so no actor knows a connection, a socket, an event loop or the protocol that carries the
// answer (HTTP/1.1 framing, chunks, compression are the front's).
//
// An answer is either whole (`deliver`) or progressive (docs/api.md, "Progressive answers"):
// `open` with the head, then `write` once per event, then `end`. Every call is posted and returns
// at once; the pieces leave in the order they were handed over, each sent as soon as it can be.
#pragma once

#include <atomic>
#include <string>

#include "gather/actors/request_record.hpp"
#include "gather/values/http_reply.hpp"

namespace gather {

class reply_sink {
public:
  reply_sink() = default;
  explicit reply_sink(request_record record) : record_(std::move(record)) {}
  virtual ~reply_sink() = default;

  /// True for the first caller only. The coordinator claims before it finishes the record and
  /// delivers its answer (or opens a progressive one); the front claims before it finishes the
  /// record with a 499 (client gone) or a 504 (hard limit) of its own: one request, one log line,
  /// one count. A progressive answer's record is finished by its coordinator, at its last line
  /// (200) or when the front stops it because its client hung up (499).
  bool claim() { return !claimed_.exchange(true, std::memory_order_acq_rel); }

  /// The request's record, for whoever claimed (and for nobody else): finish it, then deliver.
  request_record& record() { return record_; }

  /// Hands the whole answer over; never blocks (the front posts it to the connection's event loop).
  /// Called at most once, by whoever claimed, and never after `open`.
  virtual void deliver(http_reply reply) = 0;

  /// Starts a progressive answer: `head` has its status, content type and headers; its body is
  /// empty. Called at most once, by whoever claimed; then `write` and `end` only.
  virtual void open(http_reply head) = 0;
  /// One piece of the progressive answer (an event as its format frames it), sent at once.
  virtual void write(std::string piece) = 0;
  /// The last piece, and the end of the answer.
  virtual void end(std::string last) = 0;

private:
  std::atomic<bool> claimed_{false};
  request_record record_;
};

} // namespace gather
