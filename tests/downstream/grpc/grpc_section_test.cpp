// gRPC sections end to end (docs/grpc.md): a real gateway calling a real gRPC
// server (Debian's grpcio, asyncio, handlers registered from the descriptor set protoc made:
// tests/support/grpc_library_server.py), which reports what it saw on its stdout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gather/downstream/call/call_face.hpp"
#include "support/child_process.hpp"
#include "support/grpc_library.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using json = nlohmann::json;
using gather::test::grpc_library;
using gather::test::running_gateway;

namespace {

json book_sections(const grpc_library& server, json related_extra = json::object()) {
  json meta = {{"name", "meta"}, {"required", true}, {"timeout_ms", 300},
               {"forward_headers", {"x-tenant", "grpc-timeout", "grpc-foo"}},
               {"grpc", {{"target", server.target()}, {"method", "linkd.v3.Library/GetBook"},
                         {"message", {{"isbn", "{isbn}"}}}}}};
  json related = {{"name", "related"}, {"timeout_ms", 300}, {"fallback", json::array()},
                  {"grpc", {{"target", server.target()}, {"method", "linkd.v3.Library/SearchBooks"},
                            {"message", {{"query", "{query.q}"}, {"page_size", 5}}},
                            {"max_messages", 5}}}};
  for (auto& [k, v] : related_extra.items())
    related[k] = v;
  return {meta, related};
}

json book_config(const grpc_library& server, json related_extra = json::object()) {
  auto cfg = gather::test::route_config_json("/books/{isbn}", book_sections(server, related_extra), 800);
  cfg["protos"] = {{"descriptor_sets", {GATHER_TEST_DESCRIPTOR_SET}}};
  return cfg;
}

} // namespace

TEST_CASE("grpc: a unary call and a stream taken to 5, with the three print choices", "[grpc-section]") {
  grpc_library server;
  running_gateway gw(book_config(server));
  auto r = gw.get("/books/978-7?q=ten", {{"X-Tenant", "t1"}, {"grpc-timeout", "1H"}, {"grpc-foo", "x"}});
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const auto body = json::parse(r->body);
  // A 0 stock printed, the enum by name, the int64 as a string, an empty list, an unset message
  // field (published) left out, names as the .proto writes them.
  CHECK(body["data"]["meta"] == json{{"isbn", "978-7"}, {"title", "Book 0"}, {"author", "Author 0"},
                                     {"stock", 0}, {"format", "EBOOK"}, {"sold", "12345678901234"},
                                     {"tags", json::array()}});
  REQUIRE(body["data"]["related"].size() == 5);
  CHECK(body["data"]["related"][4]["isbn"] == "ten-4");
  CHECK(body["sections"]["related"]["status"] == "ok");
  const auto call = server.event("\"GetBook\"");
  CHECK(call["request"] == json{{"isbn", "978-7"}});
  CHECK(call["metadata"]["x-tenant"] == "t1");
  CHECK(call["metadata"].contains("x-request-id"));
  CHECK(call["metadata"].contains("traceparent"));
  CHECK_FALSE(call["metadata"].contains("grpc-foo")); // grpc-* names are never forwarded
  // grpc-timeout is the attempt's budget (300 ms), not the forwarded 1H.
  CHECK(call["timeout"].get<double>() <= 0.3);
  CHECK(call["timeout"].get<double>() > 0.2);
  const auto search = server.event("\"SearchBooks\"");
  CHECK(search["request"] == json{{"query", "ten"}, {"page_size", 5}});
  // The 6th message comes 200 ms late: the client cancelled after the 5th, long before the
  // call's deadline (the server's own deadline did not end it).
  const auto cancelled = server.event("\"cancelled\"");
  CHECK(cancelled["method"] == "SearchBooks");
  CHECK(cancelled["sent"] == 5);
  CHECK(cancelled["left"].get<double>() > 0.05);
}

TEST_CASE("grpc: a stream that ends at 3 is ok, one that fails after 2 shows its fallback", "[grpc-section]") {
  grpc_library server;
  running_gateway gw(book_config(server));
  auto r = gw.get("/books/1?q=three");
  REQUIRE(r);
  auto body = json::parse(r->body);
  CHECK(body["data"]["related"].size() == 3);
  CHECK(body["sections"]["related"]["status"] == "ok");
  r = gw.get("/books/1?q=fail2");
  REQUIRE(r);
  body = json::parse(r->body);
  CHECK(body["data"]["related"] == json::array());
  CHECK(body["sections"]["related"]["status"] == "error");
  CHECK(body["warnings"] == json{"related_error"});
}

TEST_CASE("grpc: a required section maps NOT_FOUND 404, a hang 504, the rest 503", "[grpc-section]") {
  grpc_library server;
  running_gateway gw(book_config(server));
  auto r = gw.get("/books/missing?q=three");
  REQUIRE(r);
  CHECK(r->status == 404);
  CHECK(json::parse(r->body)["error"] == "not_found");
  CHECK(json::parse(r->body)["section"] == "meta");
  CHECK(r->body.find("no such book") == std::string::npos); // grpc-message is never answered
  r = gw.get("/books/denied?q=three");
  REQUIRE(r);
  CHECK(r->status == 503);
  CHECK(json::parse(r->body)["error"] == "upstream_unavailable");
  r = gw.get("/books/hang?q=three");
  REQUIRE(r);
  CHECK(r->status == 504);
  CHECK(json::parse(r->body)["error"] == "upstream_timeout");
  const auto hung = server.event("\"hang\"");
  CHECK(hung["timeout"].get<double>() <= 0.3); // told no more than the attempt's 300 ms
  CHECK(server.event(R"("event": "cancelled", "method": "GetBook")")["method"] == "GetBook"); // the call ended at the server too
  const auto metrics = gw.get("/metrics")->body;
  for (const char* code : {"NOT_FOUND", "PERMISSION_DENIED", "DEADLINE_EXCEEDED"})
    CHECK(metrics.find(std::string(R"(gather_grpc_calls_total{route="/books/{isbn}",section="meta",code=")") +
                       code + "\"} 1") != std::string::npos);
}

TEST_CASE("grpc: a required section's failure cancels a stream in flight", "[grpc-section]") {
  grpc_library server;
  running_gateway gw(book_config(server));
  auto r = gw.get("/books/late-missing?q=hang"); // NOT_FOUND after 100 ms: the stream is open
  REQUIRE(r);
  CHECK(r->status == 404);
  // RST_STREAM CANCEL from the gateway, well before the stream's own deadline.
  const auto cancelled = server.event("\"cancelled\"");
  CHECK(cancelled["method"] == "SearchBooks");
  CHECK(cancelled["left"].get<double>() > 0.1);
}

TEST_CASE("grpc: UNAVAILABLE is retried, NOT_FOUND is not", "[grpc-section]") {
  grpc_library server;
  auto cfg = book_config(server);
  cfg["routes"][0]["sections"][0]["retry"] = {{"attempts", 3}, {"backoff_ms", 10}};
  running_gateway gw(cfg);
  auto r = gw.get("/books/flaky-2?q=three");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(json::parse(r->body)["sections"]["meta"]["attempts"] == 3);
  CHECK(json::parse(r->body)["data"]["meta"]["isbn"] == "flaky-2");
  r = gw.get("/books/missing?q=three");
  REQUIRE(r);
  CHECK(r->status == 404);
  const auto metrics = gw.get("/metrics")->body;
  CHECK(metrics.find(R"(gather_grpc_calls_total{route="/books/{isbn}",section="meta",code="UNAVAILABLE"} 2)") !=
        std::string::npos);
  CHECK(metrics.find(R"(gather_grpc_calls_total{route="/books/{isbn}",section="meta",code="NOT_FOUND"} 1)") !=
        std::string::npos);
}

TEST_CASE("grpc: metadata from a call's header lines", "[grpc-section][unit]") {
  const std::string lines = "Accept: application/json\r\nX-Request-Id: r1\r\nX-Tenant:  t1\r\n"
                            "grpc-timeout: 1H\r\nGrpc-Foo: x\r\nConnection: close\r\nTE: gzip\r\n"
                            "X-Deadline-Ms: 300\r\nX-Bad: caf\xc3\xa9\r\nX-Empty:\r\n";
  const auto metadata = gather::metadata_of(lines, "x-deadline-ms");
  using field = std::pair<std::string, std::string>;
  CHECK(metadata == std::vector<field>{{"x-request-id", "r1"}, {"x-tenant", "t1"}, {"x-empty", ""}});
}

TEST_CASE("grpc: a call's CLIENT span has the rpc attributes, its traceparent goes as metadata", "[grpc-section][tracing]") {
  std::mutex mutex;
  std::vector<json> spans;
  gather::test::test_server receiver; // OTLP/HTTP JSON
  receiver.raw().Post("/v1/traces", [&](const httplib::Request& req, httplib::Response& res) {
    const auto doc = json::parse(req.body, nullptr, false);
    std::lock_guard<std::mutex> lock(mutex);
    if (!doc.is_discarded())
      for (const auto& rs : doc["resourceSpans"])
        for (const auto& ss : rs["scopeSpans"])
          for (const auto& span : ss["spans"])
            if (span["kind"] == 3)
              spans.push_back(span);
    res.set_content("{}", "application/json");
  });
  receiver.start();
  grpc_library server;
  auto cfg = book_config(server);
  cfg["tracing"] = {{"otlp_endpoint", receiver.base_url() + "/v1/traces"}, {"export_interval_ms", 50}};
  running_gateway gw(cfg);
  const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  auto r = gw.get("/books/missing?q=three", {{"traceparent", "00-" + trace + "-00f067aa0ba902b7-01"}});
  REQUIRE(r);
  CHECK(r->status == 404);
  const auto call = server.event("\"GetBook\"");
  const std::string sent = call["metadata"]["traceparent"];
  REQUIRE(gather::test::eventually([&] {
    std::lock_guard<std::mutex> lock(mutex);
    return std::any_of(spans.begin(), spans.end(), [](const json& s) { return s["name"] == "meta"; });
  }, std::chrono::milliseconds{10000}));
  std::lock_guard<std::mutex> lock(mutex);
  const auto meta = *std::find_if(spans.begin(), spans.end(), [](const json& s) { return s["name"] == "meta"; });
  CHECK(meta["traceId"] == trace);
  CHECK(sent == "00-" + trace + "-" + meta["spanId"].get<std::string>() + "-01");
  std::map<std::string, json> attributes;
  for (const auto& a : meta["attributes"])
    attributes[a["key"]] = a["value"];
  CHECK(attributes["rpc.system"] == json{{"stringValue", "grpc"}});
  CHECK(attributes["rpc.service"] == json{{"stringValue", "linkd.v3.Library"}});
  CHECK(attributes["rpc.method"] == json{{"stringValue", "GetBook"}});
  CHECK(attributes["rpc.grpc.status_code"] == json{{"intValue", "5"}});
  CHECK(meta["status"]["code"] == 2);
}

TEST_CASE("grpc: a batch calls its method once per distinct rendered message", "[grpc-section][batch]") {
  grpc_library server;
  json batch = {{"timeout_ms", 300}, {"fields", {"isbn", "stock"}},
                {"grpc", {{"target", server.target()}, {"method", "linkd.v3.Library/GetBook"},
                          {"message", {{"isbn", "{item}"}}}}}};
  auto cfg = gather::test::batch_route_config_json("/books", batch);
  cfg["protos"] = {{"descriptor_sets", {GATHER_TEST_DESCRIPTOR_SET}}};
  running_gateway gw(cfg);
  auto r = gw.post("/books", R"({"items": ["978-1", "missing", 7, "978-1"]})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const auto results = json::parse(r->body)["results"];
  REQUIRE(results.size() == 4);
  CHECK(results[0]["status"] == "ok");
  CHECK(results[0]["data"] == json{{"isbn", "978-1"}, {"stock", 0}}); // projected by fields
  CHECK(results[1]["status"] == "error");
  CHECK(results[2]["status"] == "ok");
  CHECK(results[2]["data"]["isbn"] == "7"); // a number item into a string field
  CHECK(results[3] == json{{"item", "978-1"}, {"status", "ok"}, {"attempts", 1}, {"data", results[0]["data"]}});
  std::multiset<std::string> asked;
  for (int i = 0; i < 3; ++i)
    asked.insert(server.event("\"GetBook\"")["request"]["isbn"].get<std::string>());
  CHECK(asked == std::multiset<std::string>{"978-1", "7", "missing"}); // 978-1 once
}
