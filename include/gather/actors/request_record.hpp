// The record of one inbound request: what it is counted, logged and traced as, and the in-flight
// slot it holds. Made by the front when a request is served or refused; finished exactly once by
// whoever ends the request: the front for a refusal, a client that left (499) or a missed hard
// limit (504); the coordinator or the batch coordinator for an answer. Finishing counts the
// request (and an aggregate's sections), writes its one log line, records its SERVER span and
// gives back its in-flight slot; a record dropped unfinished gives back the slot all the same.
//
// It lives in actors/ because both sides finish it: the front (which includes actors) and the
// coordinators (which never include the front). A started request's record travels in its
// reply_sink, whose claim() decides who finishes it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/values/gateway_stats.hpp"
#include "gather/values/inbound_request.hpp"
#include "gather/values/section_outcome.hpp"
#include "gather/values/trace_context.hpp"

namespace gather {

class metrics;
class span_exporter;
struct batch_plan;

/// One of `max_inflight` places for a request being served: taken by admission, given back when
/// the request is finished (or when the slot is dropped, whatever happens to the request).
class inflight_slot {
public:
  inflight_slot() = default;
  /// A slot when fewer than `limit` are taken; an empty one (false) when the gateway is full.
  static inflight_slot try_take(std::atomic<std::int64_t>& inflight, std::size_t limit);

  inflight_slot(inflight_slot&& other) noexcept : count_(other.count_) { other.count_ = nullptr; }
  inflight_slot& operator=(inflight_slot&& other) noexcept;
  inflight_slot(const inflight_slot&) = delete;
  inflight_slot& operator=(const inflight_slot&) = delete;
  ~inflight_slot() { release(); }

  explicit operator bool() const { return count_ != nullptr; }
  void release();

private:
  explicit inflight_slot(std::atomic<std::int64_t>* count) : count_(count) {}
  std::atomic<std::int64_t>* count_ = nullptr;
};

/// Where a record counts and traces: the generation's counters (which must outlive finish(): the
/// one who finishes holds the generation) and the process's span exporter (null: no tracing).
struct record_sinks {
  metrics* counters = nullptr;
  span_exporter* spans = nullptr;
};

class request_record {
public:
  request_record() = default;
  /// `no_route`: the route index that stands for "matched none" (the config's number of routes).
  request_record(record_sinks sinks, std::string request_id, std::string_view method,
                 steady_time arrived, trace_context trace, std::size_t no_route);

  request_record(request_record&&) = default;
  request_record& operator=(request_record&&) = default;

  /// The route the request matched: counted and logged under it (else under no_route).
  void set_route(std::size_t index, const std::string& path);
  void hold(inflight_slot slot) { slot_ = std::move(slot); }
  /// The protocol the request came in (the log line's `proto`).
  void set_proto(inbound_proto proto) { proto_ = proto; }
  /// The client's address (the log line's `client`).
  void set_client(std::string client) { client_ = std::move(client); }

  /// A request answered without sections: a refusal, a client gone (499), a hard limit (504).
  /// `detail` is the log line's (never sent to the client); empty: "refused: <error code>".
  void finish(int status, const std::string& detail = {});
  /// An aggregate request's answer: the request and each section counted, its sections logged.
  void finish(int status, const std::vector<section_config>& sections,
              const std::vector<section_outcome>& outcomes);
  /// A batch request's answer.
  void finish(int status, const batch_plan& plan, const std::vector<section_outcome>& calls);

  bool finished() const { return finished_; }
  const std::string& request_id() const { return request_id_; }
  const trace_context& trace() const { return trace_; }
  steady_time arrived() const { return arrived_; }
  std::size_t route() const { return route_; }
  bool has_slot() const { return static_cast<bool>(slot_); }

private:
  /// Counts the request, records its span, gives back its slot; false when already finished.
  bool close(int status, bool degraded);
  std::int64_t elapsed_ms() const;
  std::string trace_id() const;
  const std::string& route_label() const;

  record_sinks sinks_;
  std::string request_id_;
  std::string method_;
  steady_time arrived_{};
  trace_context trace_{};
  std::size_t route_ = 0;
  const std::string* route_path_ = nullptr; ///< the route's path, in the generation; null: no_route
  inflight_slot slot_;
  inbound_proto proto_ = inbound_proto::http11;
  std::string client_;
  bool finished_ = false;
};

/// The error code a refusal's status stands for (the log's "refused: <code>").
const char* refusal_code(int status);

} // namespace gather
