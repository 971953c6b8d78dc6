// What the tracing tests (tests/tracing/tracing_*_test.cpp) share: the inbound trace, the
// traceparent values downstream handlers saw, a span id read from one, and the tracing keys.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace gather::test::tracing_support {

inline const std::string inbound_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
inline const std::string inbound_parent = "00f067aa0ba902b7";

inline std::string inbound_traceparent(bool sampled = true) {
  return "00-" + inbound_trace + "-" + inbound_parent + (sampled ? "-01" : "-00");
}

/// The traceparent values downstream handlers saw, in arrival order.
struct seen_headers {
  std::mutex mutex;
  std::vector<std::string> values;
  void add(const httplib::Request& req) {
    std::lock_guard<std::mutex> lock(mutex);
    values.push_back(req.get_header_value("traceparent"));
  }
  std::vector<std::string> all() {
    std::lock_guard<std::mutex> lock(mutex);
    return values;
  }
};

inline std::string span_id_in(const std::string& traceparent) { return traceparent.substr(36, 16); }

inline nlohmann::json tracing_keys(const std::string& endpoint, nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json t = {{"otlp_endpoint", endpoint}, {"service_name", "test-gateway"}, {"export_interval_ms", 50}};
  for (auto& [k, v] : extra.items())
    t[k] = v;
  return t;
}

} // namespace gather::test::tracing_support
