// The page's shape end to end (docs/config.md#shape): real downstreams on 127.0.0.1, the real
// gateway, real HTTP. The seed's book page: a required `meta`, a `related` list trimmed to its
// fields and counted, a `stock` that falls back to meta's snapshot, answered as the page's object.
#include <catch2/catch.hpp>

#include <string>

#include "support/gateway_fixture.hpp"
#include "support/stream_client.hpp"
#include "support/test_helpers.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;

namespace {

/// The book services: meta (404 for "missing"), related (7 books; 503 for an isbn ending "-down"),
/// stock (503 for an isbn ending "-down").
void serve_books(test_server& down) {
  const auto is_down = [](const httplib::Request& req) {
    const auto isbn = req.matches[1].str();
    return isbn.size() > 5 && isbn.compare(isbn.size() - 5, 5, "-down") == 0;
  };
  down.get(R"(/meta/([^/]+))", [](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1].str() == "missing")
      return answer_json(res, {{"error", "no such book"}}, 404);
    answer_json(res, {{"isbn", "978-7-111-12345-6"}, {"title", "服务端通信工程"}, {"author", "Leeting Yan"},
                      {"stock", 12}, {"version", 3}, {"tenant_id", "t-1"}});
  });
  down.get(R"(/related/([^/]+))", [is_down](const httplib::Request& req, httplib::Response& res) {
    if (is_down(req) && req.matches[1].str().find("related") != std::string::npos)
      return answer_json(res, {{"e", 1}}, 503);
    json books = json::array();
    for (int i = 7; i < 14; ++i)
      books.push_back({{"isbn", "978-7-111-12345-" + std::to_string(i)}, {"title", "网络编程基础"},
                       {"author", "Leeting Yan"}, {"stock", 3}, {"created_at", "2026-01-01"}});
    answer_json(res, books);
  });
  down.get(R"(/stock/([^/]+))", [is_down](const httplib::Request& req, httplib::Response& res) {
    if (is_down(req))
      return answer_json(res, {{"e", 1}}, 503);
    answer_json(res, {{"isbn", req.matches[1].str()}, {"stock", 7}, {"warehouse", "SH-2"}});
  });
  down.start();
}

json book_route(const test_server& down, int related_items = 5) {
  const auto base = down.base_url();
  json sections = json::array(
      {section("meta", base + "/meta/{isbn}", 2000, {{"required", true}}),
       section("related", base + "/related/{isbn}", 2000,
               {{"fallback", json::array()}, {"fields", {"isbn", "title", "author", "stock"}},
                {"max_items", related_items}, {"warning", "related_unavailable"}}),
       section("stock", base + "/stock/{isbn}", 2000,
               {{"fallback_from", "meta"}, {"warning", "stock_unavailable"}})});
  json cfg = route_config_json("/books/{isbn}", sections, 4000);
  cfg["routes"][0]["shape"] = {
      {"book", {{"isbn", "{meta.isbn}"}, {"title", "{meta.title}"}, {"author", "{meta.author}"},
                {"stock", "{stock.stock}"}}},
      {"related", "{related}"}};
  return cfg;
}

json related_book(int i) {
  return {{"isbn", "978-7-111-12345-" + std::to_string(i)}, {"title", "网络编程基础"},
          {"author", "Leeting Yan"}, {"stock", 3}};
}

} // namespace

TEST_CASE("shape: the page's own object, fields trimmed and counted", "[shape]") {
  test_server down;
  serve_books(down);
  running_gateway gw{book_route(down)};
  auto r = gw.get("/books/978-7-111-12345-6");
  REQUIRE(r);
  CHECK(r->status == 200);
  json related = json::array();
  for (int i = 7; i < 12; ++i)
    related.push_back(related_book(i));
  CHECK(json::parse(r->body) ==
        json{{"book", {{"isbn", "978-7-111-12345-6"}, {"title", "服务端通信工程"}, {"author", "Leeting Yan"},
                       {"stock", 7}}},
             {"related", related}, {"degraded", false}, {"warnings", json::array()}});
}

TEST_CASE("shape: only a string that is exactly one placeholder is replaced, other text stands as written",
          "[shape]") {
  test_server down;
  serve_books(down);
  auto cfg = book_route(down);
  cfg["routes"][0]["shape"] = {{"t1", "{meta.title}"},
                               {"t2", "{meta.title} {meta.author}"},
                               {"t3", "by {meta.author}"},
                               {"t4", "{}"},
                               {"t5", "{meta.title}}"},
                               {"t6", {"{meta.isbn}", "{{meta.isbn}}"}}};
  running_gateway gw{cfg};
  const auto page = body_of(gw.get("/books/978-7-111-12345-6"));
  CHECK(page == json{{"t1", "服务端通信工程"},
                     {"t2", "{meta.title} {meta.author}"},
                     {"t3", "by {meta.author}"},
                     {"t4", "{}"},
                     {"t5", "{meta.title}}"},
                     {"t6", {"978-7-111-12345-6", "{{meta.isbn}}"}},
                     {"degraded", false},
                     {"warnings", json::array()}});
}

TEST_CASE("shape: degraded with stable codes, the seed's book page exactly", "[shape]") {
  test_server down;
  serve_books(down);
  running_gateway gw{book_route(down, 1)};
  // stock is down: {stock.stock} is meta's snapshot.
  auto page = body_of(gw.get("/books/978-stock-down"));
  CHECK(page == json::parse(R"({"book": {"isbn": "978-7-111-12345-6", "title": "服务端通信工程",
                                         "author": "Leeting Yan", "stock": 12},
                                "related": [{"isbn": "978-7-111-12345-7", "title": "网络编程基础",
                                             "author": "Leeting Yan", "stock": 3}],
                                "degraded": true, "warnings": ["stock_unavailable"]})"));
  // Both optional services down: their fallbacks in place, their codes in route order.
  page = body_of(gw.get("/books/978-related-down"));
  CHECK(page["related"] == json::array());
  CHECK(page["book"]["stock"] == 12);
  CHECK(page["warnings"] == json{"related_unavailable", "stock_unavailable"});
  // The metrics keep every section's status and source.
  auto metrics = gw.get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find(R"(gather_section_total{route="/books/{isbn}",section="stock",status="error",source="fallback"} 2)") !=
        std::string::npos);
  CHECK(metrics->body.find(R"(gather_section_total{route="/books/{isbn}",section="related",status="error",source="fallback"} 1)") !=
        std::string::npos);
}

TEST_CASE("shape: a required section's failure is the ordinary error answer", "[shape]") {
  test_server down;
  serve_books(down);
  running_gateway gw{book_route(down)};
  auto r = gw.get("/books/missing");
  REQUIRE(r);
  CHECK(r->status == 404);
  const auto body = json::parse(r->body);
  CHECK(body["error"] == "not_found");
  CHECK(body["section"] == "meta");
}

TEST_CASE("shape: a progressive answer's last line carries the rendered page as data", "[shape][stream]") {
  test_server down;
  serve_books(down);
  running_gateway gw{book_route(down, 2)};
  stream_client c{gw.port(), get_request("/books/978-stock-down", {"Accept: application/x-ndjson"})};
  REQUIRE(c.read_head());
  CHECK(c.status == 200);
  std::vector<json> lines;
  while (auto piece = c.next_chunk(std::chrono::seconds(8)))
    lines.push_back(json::parse(piece->bytes));
  REQUIRE(c.ended());
  REQUIRE(lines.size() == 4);
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(lines[i].contains("section")); // section lines as without a shape
  const auto& last = lines[3];
  CHECK(last["done"] == true);
  CHECK(last["warnings"] == json{"stock_unavailable"});
  CHECK(last["data"] == json{{"book", {{"isbn", "978-7-111-12345-6"}, {"title", "服务端通信工程"},
                                       {"author", "Leeting Yan"}, {"stock", 12}}},
                             {"related", {related_book(7), related_book(8)}}});
}

TEST_CASE("batch: fields walk arrays in each item's data, and max_items still bounds the body", "[shape][batch]") {
  test_server down;
  down.get(R"(/orders/(\w+))", [](const httplib::Request& req, httplib::Response& res) {
    answer_json(res, {{"order", req.matches[1].str()},
                      {"lines", {{{"sku", "a"}, {"qty", 1}, {"cost", 9}}, {{"sku", "b"}, {"qty", 2}}}},
                      {"internal", true}});
  });
  down.start();
  running_gateway gw{batch_route_config_json(
      "/orders", {{"url", down.base_url() + "/orders/{item}"}, {"timeout_ms", 2000}, {"max_items", 2},
                  {"fields", {"order", "lines.sku"}}})};
  auto page = body_of(gw.post("/orders", R"({"items": ["o1", "o2"]})"));
  REQUIRE(page["results"].size() == 2);
  CHECK(page["results"][0]["data"] ==
        json{{"order", "o1"}, {"lines", {{{"sku", "a"}}, {{"sku", "b"}}}}});
  auto over = gw.post("/orders", R"({"items": ["o1", "o2", "o3"]})");
  REQUIRE(over);
  CHECK(over->status == 400);
  CHECK(json::parse(over->body)["error"] == "bad_request");
}
