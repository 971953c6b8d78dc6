#include "gather/actors/request_record.hpp"

#include "gather/downstream/answer/batch_plan.hpp"
#include "gather/ops/metrics.hpp"
#include "gather/ops/request_log.hpp"
#include "gather/tracing/server_span.hpp"

namespace gather {

inflight_slot inflight_slot::try_take(std::atomic<std::int64_t>& inflight, std::size_t limit) {
  if (inflight.fetch_add(1, std::memory_order_relaxed) >= static_cast<std::int64_t>(limit)) {
    inflight.fetch_sub(1, std::memory_order_relaxed);
    return {};
  }
  return inflight_slot{&inflight};
}

inflight_slot& inflight_slot::operator=(inflight_slot&& other) noexcept {
  if (this != &other) {
    release();
    count_ = other.count_;
    other.count_ = nullptr;
  }
  return *this;
}

void inflight_slot::release() {
  if (count_)
    count_->fetch_sub(1, std::memory_order_relaxed);
  count_ = nullptr;
}

request_record::request_record(record_sinks sinks, std::string request_id, std::string_view method,
                               steady_time arrived, trace_context trace, std::size_t no_route)
  : sinks_(sinks),
    request_id_(std::move(request_id)),
    method_(method),
    arrived_(arrived),
    trace_(trace),
    route_(no_route) {}

void request_record::set_route(std::size_t index, const std::string& path) {
  route_ = index;
  route_path_ = &path;
}

const std::string& request_record::route_label() const {
  static const std::string no_route{metrics::no_route_label};
  return route_path_ ? *route_path_ : no_route;
}

std::int64_t request_record::elapsed_ms() const {
  return std::chrono::duration_cast<millis>(std::chrono::steady_clock::now() - arrived_).count();
}

std::string request_record::trace_id() const {
  return trace_.started() ? trace_.trace_id_text() : std::string{};
}

bool request_record::close(int status, bool degraded) {
  if (finished_)
    return false;
  finished_ = true;
  if (sinks_.counters)
    sinks_.counters->request_done(route_, status,
                                  std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::steady_clock::now() - arrived_));
  finish_server_span(sinks_.spans, trace_, method_, route_label(), status, degraded);
  slot_.release();
  return true;
}

void request_record::finish(int status, const std::string& detail) {
  const auto ms = elapsed_ms();
  if (!close(status, false))
    return;
  log_request(request_id_, route_label(), status, ms,
              detail.empty() ? std::string{"refused: "} + refusal_code(status) : detail, trace_id(),
              to_string(proto_), client_);
}

void request_record::finish(int status, const std::vector<section_config>& sections,
                            const std::vector<section_outcome>& outcomes) {
  const auto ms = elapsed_ms();
  if (!close(status, degraded(status, outcomes)))
    return;
  if (sinks_.counters)
    for (std::size_t i = 0; i < outcomes.size(); ++i)
      sinks_.counters->section_done(route_, i, outcomes[i],
                                    // a write route's page is a 201 or 202 too
                                    (status == 200 || status == 201 || status == 202) &&
                                      outcomes[i].status != section_status::ok);
  log_request(request_id_, trace_id(), route_label(), status, ms, sections, outcomes, to_string(proto_), client_);
}

void request_record::finish(int status, const batch_plan& plan,
                            const std::vector<section_outcome>& calls) {
  const auto ms = elapsed_ms();
  if (!close(status, degraded(status, calls)))
    return;
  log_batch_request(request_id_, trace_id(), route_label(), status, ms, plan, calls, to_string(proto_), client_);
}

const char* refusal_code(int status) {
  switch (status) {
    case 400: return "bad_request";
    case 401: return "unauthorized";
    case 403: return "forbidden";
    case 404: return "no_route";
    case 405: return "method_not_allowed";
    case 413: return "payload_too_large";
    case 414: return "uri_too_long";
    case 415: return "unsupported_media_type";
    case 429: return "rate_limited";
    case 431: return "headers_too_large";
    case 503: return "overloaded";
    default: return status >= 500 ? "internal_error" : "bad_request";
  }
}

} // namespace gather
