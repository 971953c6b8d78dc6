// A configuration generation made from a JSON text, without a gateway or a socket: what the
// socket-free tests of admission and of the request record run on.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "gather/actors/serving_config.hpp"
#include "gather/config/config.hpp"
#include "gather/ops/metrics.hpp"

namespace gather::test {

struct serving_fixture {
  explicit serving_fixture(const std::string& json_text) {
    auto loaded = load_config(json_text);
    if (!loaded.value)
      throw std::runtime_error("bad test config: " + loaded.problems.at(0));
    serving = std::make_shared<const serving_config>(std::move(*loaded.value), 1, series);
  }

  /// The exposition line `gather_requests_total{route="ROUTE",code="STATUS"} N`, or "" when absent.
  std::string requests_line(const std::string& route, int status) const {
    const auto text = serving->counters.exposition({});
    const auto key = "gather_requests_total{route=\"" + route + "\",code=\"" + std::to_string(status) + "\"} ";
    const auto at = text.find(key);
    return at == std::string::npos ? std::string{} : text.substr(at, text.find('\n', at) - at);
  }

  metrics::registry series;
  std::shared_ptr<const serving_config> serving;
};

} // namespace gather::test
