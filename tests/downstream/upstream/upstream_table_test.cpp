// An upstream's table of endpoints without sockets (upstream_table.hpp): the balancers' spread,
// weights, the avoided endpoints of a retry, passive ejection and its bounds, panic, a lookup's
// answer that keeps, adds and removes endpoints, and the health probes' verdicts.
#include <catch2/catch.hpp>

#include <map>
#include <thread>

#include "gather/downstream/upstream/upstream_table.hpp"

using namespace gather;

namespace {

upstream_config table_config(std::vector<upstream_entry> entries, balance_kind balance = balance_kind::least_request) {
  upstream_config cfg;
  cfg.name = "prices";
  cfg.endpoints = std::move(entries);
  cfg.balance = balance;
  return cfg;
}

std::vector<upstream_entry> three(int w1 = 1, int w2 = 1, int w3 = 1) {
  return {{"127.0.0.2", 80, w1}, {"127.0.0.3", 80, w2}, {"127.0.0.4", 80, w3}};
}

/// `n` picks, each ended at once with `result`: how many went to each endpoint.
std::map<std::string, int> spread(upstream_table& table, int n, endpoint_result result = endpoint_result::ok) {
  std::map<std::string, int> out;
  for (int i = 0; i < n; ++i) {
    auto pick = table.pick();
    REQUIRE(pick.endpoint);
    ++out[pick.endpoint->text];
    table.report(*pick.endpoint, result);
  }
  return out;
}

std::shared_ptr<upstream_endpoint> endpoint_named(upstream_table& table, const std::string& text) {
  for (auto& e : table.endpoints())
    if (e->text == text)
      return e;
  return nullptr;
}

} // namespace

TEST_CASE("upstream table: an endpoints list of IP literals is its own answer", "[unit][upstreams]") {
  upstream_table table(table_config(three()));
  const auto endpoints = table.endpoints();
  REQUIRE(endpoints.size() == 3);
  CHECK(endpoints[0]->text == "127.0.0.2:80");
  const auto& target = *endpoints[0]->target;
  CHECK(target.address == "127.0.0.2");
  CHECK(target.port == 80);
  CHECK(target.authority == "prices"); // plain: the upstream's name is the Host
  CHECK(target.pool_key.find("prices|127.0.0.2:80|plain") == 0);
  CHECK(table.view().lookups[0] == 0); // nothing was looked up
  CHECK(endpoint_text("fd00::7", 9) == "[fd00::7]:9");
}

TEST_CASE("upstream table: a source that needs a lookup has no endpoint until it answers", "[unit][upstreams]") {
  auto cfg = table_config({});
  cfg.source = upstream_config::source_kind::dns;
  cfg.dns_name = "prices.internal";
  cfg.dns_port = 80;
  upstream_table table(cfg);
  auto none = table.pick();
  CHECK_FALSE(none.endpoint);
  REQUIRE(none.target);
  CHECK(none.target->address.empty());
  CHECK_THAT(none.target->detail, Catch::Matchers::Contains("until its first lookup"));
  table.take({lookup_result::ok, {{"10.0.0.7", 80, 1, "prices.internal"}}, ""});
  auto one = table.pick();
  REQUIRE(one.endpoint);
  CHECK(one.endpoint->text == "10.0.0.7:80");
  table.report(*one.endpoint, endpoint_result::ok);
  table.take({lookup_result::error, {}, "prices.internal: timeout"}); // the last good set stays
  CHECK(table.endpoints().size() == 1);
  const auto view = table.view();
  CHECK(view.lookups[0] == 1);
  CHECK(view.lookups[1] == 1);
  CHECK(view.last_lookup == "error");
}

TEST_CASE("upstream table: least_request spreads equal weights evenly and follows weights", "[unit][upstreams]") {
  upstream_table even(table_config(three()));
  for (const auto& [address, n] : spread(even, 3000))
    CHECK((n > 800 && n < 1200));
  // With calls held in flight P2C leans on the weights: 1:1:2 holds about 25/25/50 percent.
  upstream_table weighted(table_config(three(1, 1, 2)));
  std::vector<endpoint_pick> held;
  std::map<std::string, int> counts;
  for (int i = 0; i < 4000; ++i) {
    held.push_back(weighted.pick());
    ++counts[held.back().endpoint->text];
    if (held.size() >= 40) { // a steady 40 in flight, the oldest ending first
      weighted.report(*held.front().endpoint, endpoint_result::ok);
      held.erase(held.begin());
    }
  }
  CHECK(counts["127.0.0.4:80"] > 1600);
  CHECK(counts["127.0.0.4:80"] < 2400);
  CHECK(counts["127.0.0.2:80"] > 700);
  CHECK(counts["127.0.0.3:80"] > 700);
  for (auto& p : held)
    weighted.report(*p.endpoint, endpoint_result::ok);
}

TEST_CASE("upstream table: round_robin is smooth and weighted", "[unit][upstreams]") {
  upstream_table table(table_config(three(5, 1, 1), balance_kind::round_robin));
  std::string order;
  for (int i = 0; i < 7; ++i) {
    auto pick = table.pick();
    order += pick.endpoint->text.substr(8, 1); // 2, 3 or 4
    table.report(*pick.endpoint, endpoint_result::ok);
  }
  // nginx's smooth order for 5:1:1: never five of the first in a row.
  CHECK(order.size() == 7);
  CHECK(std::count(order.begin(), order.end(), '2') == 5);
  CHECK(order.find("22222") == std::string::npos);
  const auto counts = spread(table, 700);
  CHECK(counts.at("127.0.0.2:80") == 500);
  CHECK(counts.at("127.0.0.3:80") == 100);
  CHECK(smooth_schedule({5, 1, 1}) == std::vector<std::uint16_t>{0, 0, 1, 0, 2, 0, 0});
}

TEST_CASE("upstream table: a retry avoids the endpoints its earlier calls went to", "[unit][upstreams]") {
  for (auto balance : {balance_kind::least_request, balance_kind::round_robin}) {
    upstream_table table(table_config(three(), balance));
    for (int i = 0; i < 100; ++i) {
      auto first = table.pick();
      std::uint32_t avoid[] = {first.endpoint->id};
      auto second = table.pick(avoid, 1);
      CHECK(second.endpoint->id != first.endpoint->id);
      std::uint32_t both[] = {first.endpoint->id, second.endpoint->id};
      auto third = table.pick(both, 2);
      CHECK(third.endpoint->id != first.endpoint->id);
      CHECK(third.endpoint->id != second.endpoint->id);
      std::uint32_t all[] = {first.endpoint->id, second.endpoint->id, third.endpoint->id};
      auto fourth = table.pick(all, 3); // none left: one of them again, never none
      CHECK(fourth.endpoint);
      for (auto* p : {&first, &second, &third, &fourth})
        table.report(*p->endpoint, endpoint_result::ok);
    }
  }
}

TEST_CASE("upstream table: consecutive failures eject, for eject_ms times the ejections in a row", "[unit][upstreams]") {
  auto cfg = table_config(three());
  cfg.outlier.consecutive_failures = 3;
  cfg.outlier.eject = millis{60};
  upstream_table table(cfg);
  auto bad = endpoint_named(table, "127.0.0.3:80");
  const auto fail = [&](endpoint_result r) {
    bad->in_flight.fetch_add(1); // as a pick counts it
    table.report(*bad, r);
  };
  fail(endpoint_result::failure);
  fail(endpoint_result::failure);
  fail(endpoint_result::other); // a 404: the machine answered, the row starts again
  fail(endpoint_result::failure);
  fail(endpoint_result::failure);
  CHECK(bad->state(std::chrono::steady_clock::now().time_since_epoch().count()) == endpoint_state::available);
  fail(endpoint_result::failure);
  const auto now_ns = [] { return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  CHECK(bad->state(now_ns()) == endpoint_state::ejected);
  CHECK(table.view().ejections == 1);
  for (const auto& [address, n] : spread(table, 200))
    CHECK(address != "127.0.0.3:80");
  // Back after 60 ms; three more failures eject it for 120 ms (the second in a row).
  const auto until1 = bad->ejected_until.load();
  while (bad->state(now_ns()) == endpoint_state::ejected)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (int i = 0; i < 3; ++i)
    fail(endpoint_result::failure);
  CHECK(bad->ejections_in_row.load() == 2);
  const auto length2 = bad->ejected_until.load() - now_ns();
  CHECK(length2 > 60'000'000); // longer than the first 60 ms
  CHECK(bad->ejected_until.load() > until1);
  // Once back, its first ok resets the count: the next ejection is 60 ms again.
  while (bad->state(now_ns()) == endpoint_state::ejected)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  fail(endpoint_result::ok);
  CHECK(bad->ejections_in_row.load() == 0);
}

TEST_CASE("upstream table: max_ejected_percent bounds the ejected, rounded down, at least one", "[unit][upstreams]") {
  auto cfg = table_config(three());
  cfg.outlier.consecutive_failures = 1;
  cfg.outlier.eject = millis{60000};
  cfg.outlier.max_ejected_percent = 50; // 3 * 50 / 100 = 1
  upstream_table table(cfg);
  for (auto& e : table.endpoints()) {
    e->in_flight.fetch_add(1);
    table.report(*e, endpoint_result::failure);
  }
  CHECK(table.view().ejections == 1);
  cfg.outlier.max_ejected_percent = 0;
  upstream_table none(cfg);
  for (auto& e : none.endpoints()) {
    e->in_flight.fetch_add(1);
    none.report(*e, endpoint_result::failure);
  }
  CHECK(none.view().ejections == 0);
  cfg.outlier.max_ejected_percent = 10; // below one endpoint: still one
  upstream_table one(cfg);
  for (auto& e : one.endpoints()) {
    e->in_flight.fetch_add(1);
    one.report(*e, endpoint_result::failure);
  }
  CHECK(one.view().ejections == 1);
}

TEST_CASE("upstream table: with none available every endpoint not leaving takes calls (panic)", "[unit][upstreams]") {
  std::vector<std::string> lines;
  upstream_table table(table_config(three()), [&](const std::string& line) { lines.push_back(line); });
  for (auto& e : table.endpoints())
    table.mark_health(e->found.address, e->found.port, false);
  const auto counts = spread(table, 300);
  CHECK(counts.size() == 3);
  CHECK(table.view().panic);
  REQUIRE(lines.size() == 1); // once per change, not per call
  CHECK_THAT(lines[0], Catch::Matchers::Contains("\"event\":\"upstream_panic\""));
  table.mark_health("127.0.0.2", 80, true);
  const auto healthy = spread(table, 50);
  CHECK(healthy.size() == 1);
  CHECK(healthy.count("127.0.0.2:80") == 1);
  CHECK(lines.size() == 2);
  CHECK_FALSE(table.view().panic);
  const auto view = table.view();
  CHECK(to_string(view.endpoints[1].state) == std::string("unhealthy"));
}

TEST_CASE("upstream table: an answer keeps the endpoints that stay, drains those that leave", "[unit][upstreams]") {
  upstream_table table(table_config(three()));
  auto stays = endpoint_named(table, "127.0.0.2:80");
  auto leaves = endpoint_named(table, "127.0.0.4:80");
  auto held = table.pick();
  while (held.endpoint != leaves) { // a call in flight on the one that leaves
    table.report(*held.endpoint, endpoint_result::ok);
    held = table.pick();
  }
  stays->failures_in_row = 2; // (after the oks above, which reset it)
  table.take({lookup_result::ok, {{"127.0.0.2", 80, 3, ""}, {"127.0.0.3", 80, 1, ""}, {"127.0.0.5", 80, 1, ""}}, ""});
  CHECK(endpoint_named(table, "127.0.0.2:80") == stays); // the same endpoint, its state kept
  CHECK(stays->failures_in_row.load() == 2);
  CHECK(stays->weight.load() == 3);
  CHECK(leaves->leaving.load());
  CHECK(leaves->target->retired.load());
  CHECK(endpoint_named(table, "127.0.0.4:80") == leaves); // shown while its call runs
  for (const auto& [address, n] : spread(table, 300))
    CHECK(address != "127.0.0.4:80");
  table.report(*held.endpoint, endpoint_result::ok);
  table.take({lookup_result::ok, {{"127.0.0.2", 80, 3, ""}, {"127.0.0.3", 80, 1, ""}, {"127.0.0.5", 80, 1, ""}}, ""});
  CHECK_FALSE(endpoint_named(table, "127.0.0.4:80"));
  CHECK(endpoint_named(table, "127.0.0.5:80"));
}

TEST_CASE("upstream table: tls makes the server name the authority and part of the pool key", "[unit][upstreams]") {
  auto cfg = table_config(three());
  cfg.tls = upstream_tls_config{};
  cfg.tls->server_name = "prices.internal";
  upstream_table table(cfg);
  const auto& target = *table.endpoints()[0]->target;
  CHECK(target.authority == "prices.internal");
  CHECK(target.server_name == "prices.internal");
  REQUIRE(target.tls);
  CHECK(target.pool_key.find("prices|127.0.0.2:80|") == 0);
  CHECK(target.pool_key.find("plain") == std::string::npos);
  // A reload that keeps everything keeps the endpoints (their connections); another TLS does not.
  const auto before = table.endpoints()[0];
  std::string error;
  REQUIRE(table.configure(cfg, error));
  CHECK(table.endpoints()[0] == before);
  cfg.tls->server_name = "other.internal";
  REQUIRE(table.configure(cfg, error));
  CHECK(table.endpoints()[0] != before);
  CHECK(before->target->retired.load());
  cfg.tls->ca_file = "/nonexistent.pem";
  CHECK_FALSE(table.configure(cfg, error));
  CHECK_THAT(error, Catch::Matchers::Contains("ca_file /nonexistent.pem"));
}
