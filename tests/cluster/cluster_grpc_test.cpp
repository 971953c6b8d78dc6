// gRPC sections on cluster nodes (docs/cluster.md, "gRPC sections"): real `gather node`
// processes make the calls to a real gRPC server (tests/support/grpc_library_server.py) with the
// message the gateway encoded, and send the answer's messages back undecoded; the gateway decodes
// them with its own descriptors.
#include <catch2/catch.hpp>

#include <csignal>
#include <thread>

#include "support/child_process.hpp"
#include "support/node_child.hpp"
#include "support/gateway_fixture.hpp"
#include "support/grpc_library.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {


/// The book page on a cluster of `node` alone (`local` false: every section goes to the node
/// while it is up): `meta` unary and required, `related` a stream taken to 5 and projected.
json node_book_config(const grpc_library& server, const std::string& node, json meta_extra = json::object()) {
  json meta = {{"name", "meta"}, {"required", true}, {"timeout_ms", 300},
               {"forward_headers", {"x-tenant"}},
               {"grpc", {{"target", server.target()}, {"method", "linkd.v3.Library/GetBook"},
                         {"message", {{"isbn", "{isbn}"}}}}}};
  for (auto& [k, v] : meta_extra.items())
    meta[k] = v;
  json related = {{"name", "related"}, {"timeout_ms", 300}, {"fallback", json::array()},
                  {"fields", {"isbn", "stock"}},
                  {"grpc", {{"target", server.target()}, {"method", "linkd.v3.Library/SearchBooks"},
                            {"message", {{"query", "{query.q}"}, {"page_size", 5}}},
                            {"max_messages", 5}}}};
  auto cfg = route_config_json("/books/{isbn}", {meta, related}, 5000,
                               {{"cluster", {{"nodes", {node}}, {"local", false}}}});
  cfg["protos"] = {{"descriptor_sets", {GATHER_TEST_DESCRIPTOR_SET}}};
  return cfg;
}

bool grpc_node_up(running_gateway& gw) {
  const auto health = json::parse(gw.get("/healthz")->body);
  return !health["nodes"].empty() && health["nodes"][0]["up"] == true;
}

std::uint64_t grpc_node_work(running_gateway& gw) {
  return json::parse(gw.get("/debug/actors")->body)["nodes"][0]["work"].get<std::uint64_t>();
}

bool has_line(const std::string& metrics, const std::string& line) {
  return metrics.find(line + "\n") != std::string::npos;
}

} // namespace

TEST_CASE("cluster grpc: a unary call and a stream taken to 5 run on the node, decoded by the gateway",
          "[cluster][grpc-section]") {
  grpc_library server;
  node_child node{{"--allow", server.target()}};
  running_gateway gw{node_book_config(server, node.address())};
  REQUIRE(eventually([&] { return grpc_node_up(gw); }, milliseconds{10000}));
  auto r = gw.get("/books/978-7?q=ten", {{"X-Tenant", "t1"}});
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const auto body = json::parse(r->body);
  // Both sections went to the node (the gateway's own share is off); the data is what the
  // gateway's descriptors make of the node's bytes: the three print choices, `fields` applied.
  CHECK(grpc_node_work(gw) == 2);
  CHECK(body["data"]["meta"] == json{{"isbn", "978-7"}, {"title", "Book 0"}, {"author", "Author 0"},
                                     {"stock", 0}, {"format", "EBOOK"}, {"sold", "12345678901234"},
                                     {"tags", json::array()}});
  REQUIRE(body["data"]["related"].size() == 5);
  CHECK(body["data"]["related"][4] == json{{"isbn", "ten-4"}, {"stock", 4}});
  CHECK(body["sections"]["related"]["status"] == "ok");
  CHECK(body["sections"]["related"]["attempts"] == 1);
  const auto call = server.event("\"GetBook\"");
  CHECK(call["request"] == json{{"isbn", "978-7"}});
  CHECK(call["metadata"]["x-tenant"] == "t1");
  CHECK(call["metadata"].contains("x-request-id"));
  CHECK(call["timeout"].get<double>() <= 0.3); // grpc-timeout: the attempt's budget, from the node
  // The node cut the stream after the 5th message (the 6th comes 200 ms late).
  const auto cancelled = server.event("\"cancelled\"");
  CHECK(cancelled["method"] == "SearchBooks");
  CHECK(cancelled["sent"] == 5);
  CHECK(cancelled["left"].get<double>() > 0.05);
  // The node reports each call's code; the gateway counts them as its own.
  const auto metrics = gw.get("/metrics")->body;
  CHECK(has_line(metrics, R"(gather_grpc_calls_total{route="/books/{isbn}",section="meta",code="OK"} 1)"));
  CHECK(has_line(metrics, R"(gather_grpc_calls_total{route="/books/{isbn}",section="related",code="OK"} 1)"));
}

TEST_CASE("cluster grpc: statuses map as in the gateway, and the node retries UNAVAILABLE",
          "[cluster][grpc-section]") {
  grpc_library server;
  node_child node{{"--allow", server.target()}};
  running_gateway gw{node_book_config(server, node.address(), {{"retry", {{"attempts", 3}, {"backoff_ms", 10}}}})};
  REQUIRE(eventually([&] { return grpc_node_up(gw); }, milliseconds{10000}));
  auto r = gw.get("/books/missing?q=three");
  REQUIRE(r);
  CHECK(r->status == 404);
  CHECK(json::parse(r->body)["error"] == "not_found");
  CHECK(r->body.find("no such book") == std::string::npos); // grpc-message is never answered
  r = gw.get("/books/denied?q=three");
  REQUIRE(r);
  CHECK(r->status == 503);
  CHECK(json::parse(r->body)["error"] == "upstream_unavailable");
  r = gw.get("/books/flaky-2?q=three");
  REQUIRE(r);
  CHECK(r->status == 200);
  const auto body = json::parse(r->body);
  CHECK(body["sections"]["meta"]["attempts"] == 3); // the node's attempts, reported to the gateway
  CHECK(body["data"]["meta"]["isbn"] == "flaky-2");
  CHECK(body["data"]["related"].size() == 3);
  // Every meta went to the node, and the last request's related (the first two may be cut short
  // before they start: their required meta failed).
  CHECK(grpc_node_work(gw) >= 4);
  const auto metrics = gw.get("/metrics")->body;
  for (const char* line : {R"(section="meta",code="NOT_FOUND"} 1)", R"(section="meta",code="PERMISSION_DENIED"} 1)",
                           R"(section="meta",code="UNAVAILABLE"} 2)", R"(section="meta",code="OK"} 1)"})
    CHECK(has_line(metrics, std::string(R"(gather_grpc_calls_total{route="/books/{isbn}",)") + line));
}

TEST_CASE("cluster grpc: a node not allowed the target makes no call, the section ends error",
          "[cluster][grpc-section][trust]") {
  grpc_library server;
  node_child node{{"--allow", "http://127.0.0.1:1"}};
  auto cfg = node_book_config(server, node.address());
  cfg["routes"][0]["sections"][0]["required"] = false;
  cfg["routes"][0]["sections"][0]["fallback"] = json::object();
  running_gateway gw{cfg};
  REQUIRE(eventually([&] { return grpc_node_up(gw); }, milliseconds{10000}));
  const auto started = std::chrono::steady_clock::now();
  auto r = gw.get("/books/refused-1?q=three");
  REQUIRE(r);
  CHECK(ms_since(started) < 1000); // at once, not at a timeout
  const auto body = json::parse(r->body);
  CHECK(body["sections"]["meta"]["status"] == "error");
  CHECK(body["sections"]["meta"]["attempts"] == 0);
  CHECK(body["sections"]["related"]["status"] == "error");
  CHECK(grpc_node_work(gw) == 2); // they went to the node, which refused them
  CHECK(node.child.wait_for_stderr(R"("event":"origin_refused")"));
  CHECK(node.child.wait_for_stderr(R"("origin":")" + server.target() + "\""));
  // The server saw no call: the first it sees is the next one, made by a gateway of no nodes.
  auto local = node_book_config(server, node.address());
  local.erase("cluster");
  running_gateway here{local};
  REQUIRE(here.get("/books/local-2?q=three")->status == 200);
  CHECK(server.event("\"GetBook\"")["request"]["isbn"] == "local-2");
}

TEST_CASE("cluster grpc: a node killed mid-call ends its section at once, the server's call cancelled",
          "[cluster][grpc-section]") {
  grpc_library server;
  node_child node{{"--allow-any"}};
  auto cfg = node_book_config(server, node.address(), {{"timeout_ms", 3000}});
  running_gateway gw{cfg};
  REQUIRE(eventually([&] { return grpc_node_up(gw); }, milliseconds{10000}));
  int status = 0;
  json body;
  std::thread client([&] {
    auto r = gw.get("/books/hang?q=three");
    status = r ? r->status : 0;
    body = r ? json::parse(r->body) : json{};
  });
  const auto hung = server.event("\"hang\""); // the node's call reached the server
  CHECK(hung["timeout"].get<double>() > 2.0);
  const auto killed_at = std::chrono::steady_clock::now();
  node.child.signal(SIGKILL);
  client.join();
  // A required section whose node died: `error` at once (503), not its 3 s timeout (504).
  CHECK(status == 503);
  CHECK(body["error"] == "upstream_unavailable");
  CHECK(ms_since(killed_at) < 1500);
  // The call died with the node's connection, long before its own deadline.
  const auto cancelled = server.event(R"("event": "cancelled", "method": "GetBook")");
  CHECK(cancelled["left"].get<double>() > 1.0);
}
