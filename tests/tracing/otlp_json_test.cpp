// The OTLP/HTTP JSON encoder against the shape OpenTelemetry's protocol specifies for JSON.
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>

#include "gather/tracing/otlp_json.hpp"
#include "gather/tracing/traceparent.hpp"
#include "support/trace_text.hpp"

using namespace gather;
using gather::test::text;
using nlohmann::json;

namespace {

span_record server_span() {
  span_record s;
  s.trace_id = new_trace_id();
  s.span_id = new_span_id();
  s.name = "/products/{id}";
  s.kind = span_kind::server;
  s.start_unix_ns = 1733050000123456789;
  s.end_unix_ns = 1733050000223456789;
  s.attributes = {span_attribute::of_text("http.request.method", "GET"),
                  span_attribute::of_integer("http.response.status_code", 503),
                  span_attribute::of_bool("gather.degraded", false)};
  s.status = span_status::error;
  s.status_message = "HTTP 503";
  return s;
}

} // namespace

TEST_CASE("otlp json: one resource with service.name, one scope, the spans", "[unit][tracing]") {
  const auto server = server_span();
  span_record client;
  client.trace_id = server.trace_id;
  client.span_id = new_span_id();
  client.parent_id = server.span_id;
  client.has_parent = true;
  client.name = "price \"eur\"\n";
  client.kind = span_kind::client;
  client.start_unix_ns = 1;
  client.end_unix_ns = 2;
  client.attributes = {span_attribute::of_text("gather.status", "ok")};

  const auto doc = json::parse(encode_otlp_json("shop \"edge\"", {server, client}));
  REQUIRE(doc.size() == 1);
  REQUIRE(doc["resourceSpans"].size() == 1);
  const auto& rs = doc["resourceSpans"][0];
  CHECK(rs["resource"]["attributes"] ==
        json::parse(R"([{"key":"service.name","value":{"stringValue":"shop \"edge\""}}])"));
  REQUIRE(rs["scopeSpans"].size() == 1);
  CHECK(rs["scopeSpans"][0]["scope"]["name"] == "gather");
  const auto& spans = rs["scopeSpans"][0]["spans"];
  REQUIRE(spans.size() == 2);

  const auto& s = spans[0];
  CHECK(s["traceId"] == text(server.trace_id)); // hex, not base64
  CHECK(s["spanId"] == text(server.span_id));
  CHECK_FALSE(s.contains("parentSpanId"));      // a root span
  CHECK(s["name"] == "/products/{id}");
  CHECK(s["kind"] == 2);                        // SPAN_KIND_SERVER, an integer
  CHECK(s["startTimeUnixNano"] == "1733050000123456789"); // fixed64: a decimal string
  CHECK(s["endTimeUnixNano"] == "1733050000223456789");
  CHECK(s["attributes"] == json::parse(R"([
    {"key":"http.request.method","value":{"stringValue":"GET"}},
    {"key":"http.response.status_code","value":{"intValue":"503"}},
    {"key":"gather.degraded","value":{"boolValue":false}}])"));
  CHECK(s["status"] == json::parse(R"({"code":2,"message":"HTTP 503"})"));

  const auto& c = spans[1];
  CHECK(c["parentSpanId"] == text(server.span_id));
  CHECK(c["kind"] == 3); // SPAN_KIND_CLIENT
  CHECK(c["name"] == "price \"eur\"\n");
  CHECK(c["status"] == json::object()); // unset
  // Exactly the fields of OTLP's Span that Gather sets.
  std::set<std::string> keys;
  for (auto& [key, value] : c.items())
    keys.insert(key);
  CHECK(keys == std::set<std::string>{"traceId", "spanId", "parentSpanId", "name", "kind",
                                      "startTimeUnixNano", "endTimeUnixNano", "attributes",
                                      "status"});
}

TEST_CASE("otlp json: an empty batch is still a valid request", "[unit][tracing]") {
  const auto doc = json::parse(encode_otlp_json("gather", {}));
  CHECK(doc["resourceSpans"][0]["scopeSpans"][0]["spans"] == json::array());
}
