// `trusted_proxies`, `listen_proxy_protocol`, `drain_delay_ms`, `{client.ip}` and /readyz in the
// config reader (docs/config.md, "Behind a load balancer"): every problem named by its JSON path.
#include <catch2/catch.hpp>

#include <string>

#include "gather/config/config.hpp"

using json = nlohmann::json;

namespace {

json lb_config(json top = json::object()) {
  json cfg{{"routes",
            {{{"path", "/p"},
              {"sections", {{{"name", "s"}, {"url", "http://127.0.0.1:1/x?ip={client.ip}"}, {"timeout_ms", 100},
                             {"required", true}}}}}}}};
  for (auto& [key, value] : top.items())
    cfg[key] = value;
  return cfg;
}

std::vector<std::string> lb_problems(const json& cfg) { return gather::load_config(cfg.dump()).problems; }

} // namespace

TEST_CASE("config: trusted_proxies, listen_proxy_protocol and drain_delay_ms are read", "[unit][config][balancer]") {
  const auto loaded = gather::load_config(
    lb_config({{"trusted_proxies", {"10.0.0.0/8", "2001:db8::/32", "192.0.2.7"}},
               {"listen_proxy_protocol", true},
               {"drain_delay_ms", 5000}})
      .dump());
  REQUIRE(loaded.value);
  const auto& cfg = *loaded.value;
  CHECK(cfg.trusted_proxies.ranges.size() == 3);
  CHECK(cfg.trusted_proxies.contains(*gather::parse_ip("10.2.3.4")));
  CHECK(cfg.listen_proxy_protocol);
  CHECK(cfg.drain_delay == gather::millis{5000});
  CHECK(cfg.routes[0].sections[0].url.parts[1].what == gather::url_part::kind::client);
  const auto defaults = gather::load_config(lb_config().dump());
  REQUIRE(defaults.value);
  CHECK(defaults.value->trusted_proxies.empty());
  CHECK_FALSE(defaults.value->listen_proxy_protocol);
  CHECK(defaults.value->drain_delay == gather::millis{0});
}

TEST_CASE("config: load balancer mistakes are named by their JSON path", "[unit][config][balancer]") {
  using Catch::Matchers::Contains;
  CHECK_THAT(lb_problems(lb_config({{"trusted_proxies", {"10.0.0.0/8", "10.0.0.0/33"}}})).at(0),
             Contains("trusted_proxies[1]: the prefix length"));
  CHECK_THAT(lb_problems(lb_config({{"trusted_proxies", {"balancer.internal"}}})).at(0),
             Contains("trusted_proxies[0]: must be a CIDR range"));
  CHECK_THAT(lb_problems(lb_config({{"trusted_proxies", {"10.0.0.1/8"}}})).at(0),
             Contains("trusted_proxies[0]: has bits set past its /8 prefix (the range is 10.0.0.0/8)"));
  CHECK_THAT(lb_problems(lb_config({{"trusted_proxies", {7}}})).at(0), Contains("trusted_proxies[0]: must be a string"));
  CHECK_THAT(lb_problems(lb_config({{"trusted_proxies", "10.0.0.0/8"}})).at(0), Contains("trusted_proxies: must be an array"));
  CHECK_THAT(lb_problems(lb_config({{"listen_proxy_protocol", true}})).at(0),
             Contains("listen_proxy_protocol: needs trusted_proxies"));
  CHECK_THAT(lb_problems(lb_config({{"listen_proxy_protocol", true}, {"trusted_proxies", json::array()}})).at(0),
             Contains("listen_proxy_protocol: needs trusted_proxies"));
  CHECK(lb_problems(lb_config({{"listen_proxy_protocol", false}})).empty());
  CHECK_THAT(lb_problems(lb_config({{"listen_proxy_protocol", "yes"}})).at(0), Contains("listen_proxy_protocol:"));
  CHECK_THAT(lb_problems(lb_config({{"drain_delay_ms", 600001}})).at(0),
             Contains("drain_delay_ms: must be an integer from 0 to 600000"));
  CHECK_THAT(lb_problems(lb_config({{"drain_delay_ms", -1}})).at(0), Contains("drain_delay_ms:"));
  CHECK(lb_problems(lb_config({{"drain_delay_ms", 600000}})).empty());
}

TEST_CASE("config: {client.ip} is the client's only field, `client` no section name, /readyz no route",
          "[unit][config][balancer]") {
  using Catch::Matchers::Contains;
  auto cfg = lb_config();
  cfg["routes"][0]["sections"][0]["url"] = "http://127.0.0.1:1/x?ip={client.port}";
  CHECK_THAT(lb_problems(cfg).at(0), Contains("{client.port}: the client's only field is {client.ip}"));
  cfg = lb_config();
  cfg["routes"][0]["sections"][0]["name"] = "client";
  CHECK_THAT(lb_problems(cfg).at(0), Contains("routes[0].sections[0].name: \"client\" is reserved"));
  cfg = lb_config();
  cfg["routes"][0]["path"] = "/readyz";
  CHECK_THAT(lb_problems(cfg).at(0), Contains("routes[0].path: \"/readyz\" is a built-in endpoint"));
  cfg["admin"] = {{"listen", "127.0.0.1:0"}}; // /readyz answers on both listeners, whatever admin says
  CHECK_THAT(lb_problems(cfg).at(0), Contains("\"/readyz\" is a built-in endpoint"));
}
