// The events of a progressive answer: framing (NDJSON, SSE), order of completion, fallbacks held
// back until what they read has ended, and data equal to the whole answer's.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "gather/answer/aggregate_response.hpp"
#include "gather/answer/progressive_answer.hpp"

using gather::answer_format;
using gather::section_outcome;
using gather::section_status;
using nlohmann::json;

namespace {

gather::config product_config() {
  auto loaded = gather::load_config(R"({"routes": [{"path": "/p/{id}", "sections": [
      {"name": "base", "url": "http://127.0.0.1:1/b", "timeout_ms": 100, "required": true},
      {"name": "price", "url": "http://127.0.0.1:1/p", "timeout_ms": 100, "fallback": {"amount": null}},
      {"name": "stock", "url": "http://127.0.0.1:1/s", "timeout_ms": 100, "fallback_from": "base.stock"},
      {"name": "shop", "url": "http://127.0.0.1:1/s/{base.shop}", "timeout_ms": 100, "fallback": {}}]}]})");
  REQUIRE(loaded.value);
  return *loaded.value;
}

section_outcome ok(std::string data, int ms) {
  section_outcome o;
  o.status = section_status::ok;
  o.attempts = 1;
  o.ms = ms;
  o.data = std::move(data);
  return o;
}

section_outcome failed(section_status status, int ms) {
  section_outcome o;
  o.status = status;
  o.attempts = 1;
  o.ms = ms;
  return o;
}

json line_json(const std::string& event) {
  REQUIRE(event.back() == '\n');
  REQUIRE(std::count(event.begin(), event.end(), '\n') == 1);
  return json::parse(event);
}

} // namespace

TEST_CASE("progressive answer: lines in completion order, fallback_from held until its source", "[unit][answer][stream]") {
  const auto cfg = product_config();
  const auto& route = cfg.routes[0];
  gather::progressive_answer stream(route, answer_format::ndjson);
  std::vector<section_outcome> outcomes(4);

  outcomes[1] = ok("{\"amount\":\n  9.5}", 5); // pretty-printed downstream JSON: flattened
  auto events = stream.ended(1, outcomes);
  REQUIRE(events.size() == 1);
  auto price = line_json(events[0]);
  CHECK(price == json{{"section", "price"}, {"status", "ok"}, {"source", "live"}, {"attempts", 1}, {"ms", 5},
                      {"data", {{"amount", 9.5}}}});

  outcomes[2] = failed(section_status::error, 7); // its fallback reads base: held back
  CHECK(stream.ended(2, outcomes).empty());

  outcomes[0] = ok(R"({"id":"42","stock":3,"shop":"s1"})", 20);
  events = stream.ended(0, outcomes);
  REQUIRE(events.size() == 2);
  CHECK(line_json(events[0])["section"] == "base");
  const auto stock = line_json(events[1]);
  CHECK(stock["section"] == "stock");
  CHECK(stock["status"] == "error");
  CHECK(stock["source"] == "fallback");
  CHECK(stock["data"] == 3);

  outcomes[3] = failed(section_status::timeout, 100);
  events = stream.ended(3, outcomes);
  REQUIRE(events.size() == 1);
  CHECK(line_json(events[0])["data"] == json::object());
  CHECK(stream.ended(3, outcomes).empty()); // once only

  const auto done = line_json(stream.done(outcomes, "req-1"));
  CHECK(done == json{{"done", true}, {"degraded", true}, {"warnings", {"stock_error", "shop_timeout"}},
                     {"request_id", "req-1"}});

  // Every line's data and status equal the whole answer's.
  auto copy = outcomes;
  const auto whole = json::parse(gather::build_aggregate_reply(route, copy, "req-1").body);
  CHECK(whole["data"]["price"] == price["data"]);
  CHECK(whole["data"]["stock"] == stock["data"]);
  CHECK(whole["sections"]["stock"]["source"] == "fallback");
  CHECK(whole["degraded"] == done["degraded"]);
  CHECK(whole["warnings"] == done["warnings"]);
}

TEST_CASE("progressive answer: Server-Sent Events frame the same lines", "[unit][answer][stream]") {
  const auto cfg = product_config();
  gather::progressive_answer stream(cfg.routes[0], answer_format::sse);
  std::vector<section_outcome> outcomes(4);
  outcomes[0] = ok(R"({"id":"42"})", 3);
  const auto events = stream.ended(0, outcomes);
  REQUIRE(events.size() == 1);
  CHECK(events[0] ==
        "event: section\ndata: {\"section\":\"base\",\"status\":\"ok\",\"source\":\"live\",\"attempts\":1,"
        "\"ms\":3,\"data\":{\"id\":\"42\"}}\n\n");
  for (std::size_t i = 1; i < 4; ++i)
    outcomes[i] = ok("{}", 1);
  CHECK(stream.done(outcomes, "r") ==
        "event: done\ndata: {\"done\":true,\"degraded\":false,\"warnings\":[],\"request_id\":\"r\"}\n\n");
}

TEST_CASE("progressive answer: batch rows and the last line", "[unit][answer][stream]") {
  auto row = gather::batch_row_event(answer_format::ndjson, 2, "7", ok("{\"s\":\r\n1}", 4));
  CHECK(line_json(row) == json{{"index", 2}, {"item", 7}, {"status", "ok"}, {"data", {{"s", 1}}}, {"attempts", 1}});
  row = gather::batch_row_event(answer_format::ndjson, 0, "\"o1\"", failed(section_status::timeout, 9));
  CHECK(line_json(row) == json{{"index", 0}, {"item", "o1"}, {"status", "timeout"}, {"attempts", 1}});
  gather::batch_counts counts;
  counts.ok = 1;
  counts.timeout = 1;
  CHECK(line_json(gather::batch_done_event(answer_format::ndjson, counts, 2)) ==
        json{{"done", true}, {"counts", {{"ok", 1}, {"timeout", 1}, {"error", 0}, {"rejected", 0}}}, {"degraded", true}});
}
