// `gather demo` as a user meets it: the real binary started as a process, and every curl line it
// prints run as printed (by /bin/sh, with the real curl), each checked for what its comment claims.
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/chromium.hpp"

using namespace gather::test;
using nlohmann::json;

namespace {

struct http_answer {
  int status = 0;
  std::map<std::string, std::string> headers; ///< names lower-case
  std::string body;
};

/// `curl -si` output: the status line, the headers, the body.
http_answer parse_curl_i(const std::string& out) {
  http_answer a;
  const auto head_end = out.find("\r\n\r\n");
  REQUIRE(head_end != std::string::npos);
  std::istringstream head{out.substr(0, head_end)};
  std::string line;
  std::getline(head, line);
  std::smatch m;
  REQUIRE(std::regex_search(line, m, std::regex{R"(^HTTP/1\.[01] (\d{3}))"}));
  a.status = std::stoi(m[1]);
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    const auto colon = line.find(':');
    REQUIRE(colon != std::string::npos);
    std::string name = line.substr(0, colon);
    for (auto& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    a.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
  }
  a.body = out.substr(head_end + 4);
  return a;
}

json parse_json(const std::string& text) {
  INFO("body: " << text);
  auto j = json::parse(text, nullptr, false);
  REQUIRE(!j.is_discarded());
  return j;
}

/// An error answer as the API defines it: JSON, `error` and `request_id` equal to X-Request-Id.
json error_body(const http_answer& a, int status, const std::string& code) {
  CHECK(a.status == status);
  CHECK(a.headers.at("content-type") == "application/json");
  auto body = parse_json(a.body);
  CHECK(body["error"] == code);
  REQUIRE(a.headers.count("x-request-id") == 1);
  CHECK(body["request_id"] == a.headers.at("x-request-id"));
  return body;
}

} // namespace

TEST_CASE("demo: every curl line it prints works as printed and shows what it says", "[system][demo]") {
  child_process demo{GATHER_BINARY, {"demo", "--listen", "127.0.0.1:0"}};
  auto listening = demo.wait_for_line("listening on");
  REQUIRE(listening);
  std::smatch m;
  REQUIRE(std::regex_search(*listening, m, std::regex{R"(listening on (http://127\.0\.0\.1:\d+))"}));
  const std::string base = m[1];

  // The banner, up to its last line.
  std::vector<std::string> curl_lines;
  std::string dashboard_line, page_line;
  std::string banner = *listening + "\n";
  for (;;) {
    auto line = demo.wait_for_line("");
    REQUIRE(line);
    banner += *line + "\n";
    if (line->find("Stop with Ctrl-C.") != std::string::npos)
      break;
    if (line->rfind("  curl ", 0) == 0)
      curl_lines.push_back(line->substr(2));
    if (line->rfind("Dashboard: ", 0) == 0)
      dashboard_line = *line;
    if (line->rfind("Progressive page: ", 0) == 0)
      page_line = *line;
  }

  { // docs/cli.md shows the banner as printed for the default address.
    std::ifstream in{std::string{GATHER_SOURCE_DIR} + "/docs/cli.md"};
    std::stringstream doc;
    doc << in.rdbuf();
    std::string want = banner;
    for (auto at = want.find(base); at != std::string::npos; at = want.find(base, at))
      want.replace(at, base.size(), "http://127.0.0.1:8080");
    // The progressive page and the demo's own switches are on the simulated downstreams' port,
    // picked at start.
    want = std::regex_replace(want, std::regex{R"(Progressive page: http://127\.0\.0\.1:\d+/)"},
                              "Progressive page: http://127.0.0.1:PORT/");
    want = std::regex_replace(want, std::regex{R"(-d '' http://127\.0\.0\.1:\d+/demo/)"},
                              "-d '' http://127.0.0.1:PORT/demo/");
    INFO("docs/cli.md should show, in a code block:\n" << want);
    CHECK(doc.str().find("```\n" + want + "```\n") != std::string::npos);
  }

  // What each example claims, keyed by its command with the address written {base}.
  using runner = const std::function<std::string()>&; // runs the line as printed, gives its stdout
  std::map<std::string, std::function<void(runner)>> claims;
  claims["curl -s {base}/products/42"] = [](runner run_it) {
    auto page = parse_json(run_it());
    CHECK(page["sections"]["base"]["status"] == "ok");
    CHECK(page["sections"]["reviews"]["status"] == "timeout");
    CHECK(page["sections"]["reviews"]["source"] == "fallback");
    CHECK(page["sections"]["reviews"]["ms"].get<int>() >= 120);
    CHECK(page["data"]["reviews"] == json{{"score", 0}, {"count", 0}});
    CHECK(page["sections"]["shop"]["status"] == "ok"); // flaky, and its retry recovers
    CHECK(page["degraded"] == true);
    CHECK(page["warnings"] == json{"reviews_timeout"});
  };
  claims["curl -N -H 'Accept: application/x-ndjson' {base}/products/42"] = [](runner run_it) {
    std::istringstream out{run_it()};
    std::vector<json> lines;
    for (std::string line; std::getline(out, line);)
      lines.push_back(parse_json(line));
    REQUIRE(lines.size() == 7); // six sections as they end, then the last line
    std::set<std::string> names;
    for (std::size_t i = 0; i < 6; ++i)
      names.insert(lines[i]["section"].get<std::string>());
    CHECK(names == std::set<std::string>{"base", "price", "stock", "promo", "reviews", "shop"});
    // The slow one ends at its timeout (on a loaded machine the retried shop may end after it).
    const auto reviews = std::find_if(lines.begin(), lines.end(), [](const json& l) { return l["section"] == "reviews"; });
    REQUIRE(reviews != lines.end());
    CHECK((*reviews)["status"] == "timeout");
    CHECK((*reviews)["data"] == json{{"score", 0}, {"count", 0}});
    CHECK(lines[6]["done"] == true);
    CHECK(lines[6]["warnings"] == json{"reviews_timeout"});
  };
  claims["curl -s {base}/products/17"] = [](runner run_it) {
    auto page = parse_json(run_it());
    CHECK(page["data"]["base"]["shop_id"] == "s-7");
    CHECK(page["sections"]["shop"]["status"] == "ok");
    CHECK(page["data"]["shop"]["id"] == "s-7");
  };
  claims["curl -s {base}/products/1234"] = [](runner run_it) {
    auto page = parse_json(run_it());
    CHECK(page["sections"]["stock"]["status"] == "error");
    CHECK(page["sections"]["stock"]["source"] == "fallback");
    CHECK(page["data"]["stock"] == json{{"available", 3}});
  };
  claims["curl -s {base}/pages/42"] = [](runner run_it) {
    auto page = parse_json(run_it());
    CHECK(page == json{{"product", {{"id", "42"}, {"title", "Demo product 42"}, {"price", 199.0},
                                    {"currency", "CNY"}, {"in_stock", 12}}},
                       {"promo", "10% off this week"}, {"shop", "Demo Shop s-2"},
                       {"reviews", {{"score", 0}, {"count", 0}}}, {"degraded", true},
                       {"warnings", {"reviews_unavailable"}}});
  };
  auto tenant_claim = [](const std::string& tenant) {
    return [tenant](runner run_it) {
      auto first = parse_json(run_it());
      CHECK(first["sections"]["promo"]["source"] == "live");
      CHECK(first["data"]["promo"]["id"] == tenant + "-vip");
      auto second = parse_json(run_it()); // "run twice"
      CHECK(second["sections"]["promo"]["source"] == "cache");
      CHECK(second["sections"]["promo"]["attempts"] == 0);
      CHECK(second["data"]["promo"] == first["data"]["promo"]);
    };
  };
  claims["curl -s -H 'X-Tenant: acme' {base}/products/42"] = tenant_claim("acme");
  claims["curl -s -H 'X-Tenant: globex' {base}/products/42"] = tenant_claim("globex");
  claims[R"(curl -s -H 'Content-Type: application/json' -d '{"items": ["o1", "slow-2", "stuck-3", 4]}' {base}/orders/status)"] =
    [](runner run_it) {
      auto batch = parse_json(run_it());
      REQUIRE(batch["results"].size() == 4);
      const auto& r = batch["results"];
      CHECK(r[0] == json{{"item", "o1"}, {"status", "ok"}, {"attempts", 1},
                         {"data", {{"order", "o1"}, {"state", "shipped"}}}});
      CHECK(r[1]["item"] == "slow-2");
      CHECK(r[1]["status"] == "ok");
      CHECK(r[2]["item"] == "stuck-3");
      CHECK(r[2]["status"] == "timeout");
      CHECK(r[2]["attempts"] == 2);
      CHECK(r[3]["item"] == 4); // a number stays a number
      CHECK(r[3]["status"] == "ok");
      CHECK(batch["counts"] == json{{"ok", 3}, {"timeout", 1}, {"error", 0}, {"rejected", 0}});
      CHECK(batch["degraded"] == true);
    };
  claims[R"(curl -si -H 'Content-Type: application/json' -d '{"items": [true]}' {base}/orders/status)"] =
    [](runner run_it) {
      auto body = error_body(parse_curl_i(run_it()), 400, "bad_request");
      CHECK(body["message"] == "items[0] must be a string or a number, not boolean");
    };
  claims["curl -si {base}/products/abc"] = [](runner run_it) {
    auto body = error_body(parse_curl_i(run_it()), 404, "not_found");
    CHECK(body["section"] == "base");
  };
  claims["curl -si {base}/delivery/42"] = [](runner run_it) {
    auto body = error_body(parse_curl_i(run_it()), 503, "upstream_unavailable");
    CHECK(body["section"] == "carrier");
  };
  // The book page: a gRPC downstream built into the demo.
  claims["curl -s {base}/books/978-7-111-12345-7"] = [](runner run_it) {
    // The seed's BookDetail, exactly: no envelope.
    auto page = parse_json(run_it());
    REQUIRE(page["related"].size() == 5); // the server streams 10
    CHECK(page["related"][0] == json{{"isbn", "978-7-111-12345-7"}, {"title", "网络编程基础"},
                                     {"author", "Leeting Yan"}, {"stock", 3}});
    page.erase("related");
    CHECK(page == json{{"book", {{"isbn", "978-7-111-12345-7"}, {"title", "网络编程基础"},
                                 {"author", "Leeting Yan"}, {"stock", 7}}},
                       {"degraded", false}, {"warnings", json::array()}});
  };
  claims["curl -s {base}/books/978-7-111-12345-6"] = [](runner run_it) {
    auto page = parse_json(run_it());
    CHECK(page["book"] == json{{"isbn", "978-7-111-12345-6"}, {"title", "服务端通信工程"},
                               {"author", "Leeting Yan"}, {"stock", 12}}); // meta's snapshot
    CHECK(page["degraded"] == true);
    CHECK(page["warnings"] == json{"stock_unavailable"});
    CHECK(page.count("sections") == 0);
    CHECK(page.count("data") == 0);
  };
  claims["curl -N -H 'Accept: application/x-ndjson' {base}/books/978-7-111-12345-6"] = [](runner run_it) {
    std::istringstream out{run_it()};
    std::map<std::string, json> sections;
    json last;
    for (std::string line; std::getline(out, line);) {
      auto parsed = parse_json(line);
      if (parsed.contains("section"))
        sections[parsed["section"].get<std::string>()] = parsed;
      else
        last = parsed;
    }
    REQUIRE(sections.size() == 3);
    CHECK(sections["meta"]["status"] == "ok");
    CHECK(sections["stock"]["status"] == "error");
    CHECK(sections["stock"]["source"] == "fallback");
    CHECK(last["done"] == true);
    CHECK(last["data"]["book"]["stock"] == 12);
    CHECK(last["warnings"] == json{"stock_unavailable"});
  };
  claims["curl -si {base}/books/0-00"] = [](runner run_it) {
    auto body = error_body(parse_curl_i(run_it()), 404, "not_found");
    CHECK(body["section"] == "meta");
  };
  claims["curl -s {base}/books/978-7-111-12345-9"] = [](runner run_it) {
    auto page = parse_json(run_it());
    CHECK(page["book"]["isbn"] == "978-7-111-12345-9");
    CHECK(page["related"] == json::array());
    CHECK(page["degraded"] == true);
    CHECK(page["warnings"] == json{"related_unavailable"});
  };
  // The book page's "add to cart": a gRPC write, then the cart read back (run in this order).
  claims[R"(curl -s -H 'Content-Type: application/json' -d '{"isbn": "978-7-111-12345-7", "quantity": 1}' {base}/carts/c1/items)"] =
    [](runner run_it) {
      auto page = parse_json(run_it());
      const json line = {{"sku", "978-7-111-12345-7"}, {"quantity", 1}};
      CHECK(page["data"]["add"] == json{{"cart_id", "c1"}, {"lines", {line}}, {"count", 1}});
      CHECK(page["data"]["cart"] == page["data"]["add"]);
      CHECK(page["sections"]["add"]["status"] == "ok");
      CHECK(page["sections"]["cart"]["status"] == "ok");
      CHECK(page["degraded"] == false);
    };
  claims[R"(curl -si -H 'Content-Type: application/json' -d '{"isbn": "978-7-111-12345-7", "quantity": 5}' {base}/carts/c1/items)"] =
    [](runner run_it) {
      auto body = error_body(parse_curl_i(run_it()), 409, "rejected");
      CHECK(body["section"] == "add");
      CHECK(body["detail"] == json{{"message", "out of stock: 2 left"}});
    };
  claims[R"(curl -si -H 'Content-Type: application/json' -d '{"isbn": "978-7-111-12345-7", "quantity": "two"}' {base}/carts/c1/items)"] =
    [](runner run_it) {
      auto body = error_body(parse_curl_i(run_it()), 400, "bad_request");
      CHECK(body["section"] == "add");
      CHECK(body["message"].get<std::string>().find("body.quantity") != std::string::npos);
    };
  claims["curl -s {base}/debug/upstreams"] = [](runner run_it) {
    // After the book pages above: their gRPC calls went to both instances, in turn.
    const auto library = parse_json(run_it())["upstreams"]["library"];
    CHECK(library["balance"] == "round_robin");
    REQUIRE(library["endpoints"].size() == 2);
    const auto calls = [&](int i) {
      const auto& c = library["endpoints"][i]["calls"];
      return c["ok"].get<int>() + c["failure"].get<int>() + c["other"].get<int>();
    };
    const auto a = calls(0), b = calls(1);
    CHECK(a > 0);
    CHECK(b > 0);
    CHECK(std::abs(a - b) <= 2);
  };
  claims["curl -s -d '' {page}/demo/library2/stop"] = [&base](runner run_it) {
    run_it(); // the second instance stops; the book pages' calls to it fail until it is ejected
    httplib::Client gw{"127.0.0.1", std::stoi(base.substr(base.rfind(':') + 1))};
    auto ejected = [&] {
      auto res = gw.Get("/debug/upstreams");
      if (!res)
        return false;
      const auto endpoints = parse_json(res->body)["upstreams"]["library"]["endpoints"];
      if (endpoints.size() != 2) // one ejected (the stopped one), one available
        return false;
      return (endpoints[0]["state"] == "ejected") != (endpoints[1]["state"] == "ejected") &&
             (endpoints[0]["state"] == "available") != (endpoints[1]["state"] == "available");
    };
    for (int i = 0; i < 20 && !ejected(); ++i) // two calls a page, in turn: 5 failures within 10 pages
      gw.Get("/books/978-7-111-12345-7");
    REQUIRE(ejected());
    auto page = gw.Get("/books/978-7-111-12345-7"); // every call to the first now
    REQUIRE(page);
    CHECK(page->status == 200);
  };
  claims["curl -s {base}/healthz"] = [](runner run_it) {
    CHECK(parse_json(run_it())["status"] == "ok");
  };
  claims["curl -s {base}/metrics"] = [](runner run_it) {
    // Run last: by now it holds the examples above.
    const auto text = run_it();
    auto value = [&](const std::string& series) {
      INFO(series);
      const auto at = text.find("\n" + series + " ");
      REQUIRE(at != std::string::npos);
      return std::stod(text.substr(at + series.size() + 2));
    };
    CHECK(value(R"(gather_requests_total{route="/products/{id}",code="200"})") >= 7);
    CHECK(value(R"(gather_requests_total{route="/delivery/{id}",code="503"})") == 1);
    CHECK(value(R"(gather_cache_events_total{route="/products/{id}",section="promo",event="hit"})") >= 2);
    CHECK(value(R"(gather_retries_total{route="/products/{id}",section="shop"})") >= 1);
    CHECK(value(R"(gather_grpc_calls_total{route="/books/{isbn}",section="related",code="OK"})") >= 2);
    CHECK(value(R"(gather_grpc_calls_total{route="/books/{isbn}",section="meta",code="NOT_FOUND"})") == 1);
    CHECK(value(R"(gather_grpc_calls_total{route="/carts/{cart}/items",section="add",code="ABORTED"})") == 1);
    CHECK(value(R"(gather_requests_total{route="/carts/{cart}/items",code="409"})") == 1);
    CHECK(value(R"(gather_section_duration_seconds_bucket{route="/products/{id}",section="reviews",le="0.125"})") >= 1);
  };

  std::set<std::string> printed;
  for (const auto& line : curl_lines) {
    std::string command = line.substr(0, line.find(" #"));
    command.erase(command.find_last_not_of(' ') + 1);
    for (auto at = command.find(base); at != std::string::npos; at = command.find(base))
      command.replace(at, base.size(), "{base}");
    const auto page_base = command.find(" http://127.0.0.1:"); // the simulated downstreams' own switches
    if (page_base != std::string::npos && command.find("/demo/", page_base) != std::string::npos)
      command.replace(page_base + 1, command.find("/demo/", page_base) - page_base - 1, "{page}");
    INFO("printed: " << line);
    REQUIRE(claims.count(command) == 1); // every example printed has its claim checked here
    printed.insert(command);
    claims.at(command)([&line] {
      auto r = run("/bin/sh", {"-c", line}); // as printed, its comment included
      INFO("stderr: " << r.err);
      REQUIRE(r.code == 0);
      return r.out;
    });
  }
  for (const auto& [command, claim] : claims) {
    INFO("not printed: " << command);
    CHECK(printed.count(command) == 1);
  }
  // The add to cart's log line marks the write's entry.
  CHECK(demo.wait_for_stderr(R"("add":{"status":"ok","source":"live","attempts":1)"));
  CHECK(demo.wait_for_stderr(R"("write":true)"));

  // The dashboard's address.
  REQUIRE(dashboard_line == "Dashboard: " + base + "/dashboard (open it in a browser)");
  httplib::Client c{"127.0.0.1", std::stoi(base.substr(base.rfind(':') + 1))};
  auto page = c.Get("/dashboard");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->get_header_value("Content-Type") == "text/html; charset=utf-8");

  // The progressive page, in a real browser: an EventSource across origins (the demo's cors
  // allows the page's), every section drawn as it arrived, reviews with its fallback, the summary.
  std::smatch page_match;
  REQUIRE(std::regex_search(page_line, page_match, std::regex{R"(Progressive page: (\S+))"}));
  CHECK(page_line == "Progressive page: " + page_match[1].str() + " (the product page drawn part by part)");
  const auto dom = dump_dom(page_match[1].str(), 3000);
  INFO(dom);
  CHECK(dom.find(R"(id="sections" data-state="done")") != std::string::npos);
  for (const char* name : {"base", "price", "stock", "promo", "shop"})
    CHECK(dom.find(std::string{R"(data-section=")"} + name + R"(" data-status="ok")") != std::string::npos);
  CHECK(dom.find(R"(data-section="reviews" data-status="timeout" data-source="fallback" data-order=")") !=
        std::string::npos);
  CHECK(dom.find("Degraded: reviews_timeout") != std::string::npos);

  demo.signal(SIGINT);
  CHECK(demo.wait_exit() == 0);
}
