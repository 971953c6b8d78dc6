// How sections depend on each other: depends_on, resolve_order, cycles, projected-away fields.
#include <catch2/catch.hpp>

#include "gather/config/config.hpp"
#include "config/config_test_support.hpp"

using gather::config_result;
using gather::load_config;
using gather::millis;
using gather::url_part;
using json = nlohmann::json;
using namespace gather::test::config_support;

TEST_CASE("depends_on lists the distinct sections a url reads", "[unit][config]") {
  json document = with_sections(json::array({
      config_section("a", "http://h/"),
      config_section("b", "http://h/"),
      config_section("c", "http://h/{b.x}/{a.y}/{b.z}"),
  }));
  document["routes"][0]["sections"][1]["required"] = false;
  document["routes"][0]["sections"][1]["fallback_from"] = "a.x";
  const gather::config cfg = require_valid(document);
  CHECK(cfg.routes[0].sections[0].depends_on.empty());
  CHECK(cfg.routes[0]
            .sections[1]
            .depends_on.empty()); // fallback_from orders, but does not gate the start
  CHECK(cfg.routes[0].sections[2].depends_on == std::vector<std::size_t>{0, 1});
}

TEST_CASE("resolve_order puts every section after what it waits for, ties in route order",
          "[unit][config]") {
  json document = with_sections(json::array({
      config_section("late", "http://h/{mid.x}"),
      config_section("free", "http://h/"),
      config_section("mid", "http://h/"),
      config_section("last", "http://h/"),
      config_section("other", "http://h/"),
  }));
  document["routes"][0]["sections"][2]["required"] = false;
  document["routes"][0]["sections"][2]["fallback_from"] = "last.v";
  CHECK(require_valid(document).routes[0].resolve_order == std::vector<std::size_t>{1, 3, 2, 0, 4});
}

TEST_CASE("dependency cycles are errors naming the cycle", "[unit][config]") {
  SECTION("through urls") {
    require_problem(with_sections(json::array(
                        {config_section("a", "http://h/{b.x}"), config_section("b", "http://h/{a.x}")})),
                    "routes[0].sections: dependency cycle: a -> b -> a");
  }
  SECTION("through three sections") {
    const config_result result = load(with_sections(json::array({
        config_section("a", "http://h/{c.x}"),
        config_section("b", "http://h/{a.x}"),
        config_section("c", "http://h/{b.x}"),
        config_section("d", "http://h/{a.x}"),
    })));
    REQUIRE(result.problems.size() == 1);
    CHECK(result.problems[0] == "routes[0].sections: dependency cycle: a -> c -> b -> a");
  }
  SECTION("through fallback_from") {
    json document =
        with_sections(json::array({config_section("a", "http://h/{b.x}"), config_section("b", "http://h/")}));
    document["routes"][0]["sections"][1]["required"] = false;
    document["routes"][0]["sections"][1]["fallback_from"] = "a";
    require_problem(document, "routes[0].sections: dependency cycle: a -> b -> a");
  }
}

TEST_CASE("a reference to a field that the section's projection drops is an error", "[unit][config]") {
  const auto referring = [](const std::string& url, json fallback_from) {
    json source = config_section("src", "http://h/");
    source["fields"] = {"a", "k.v"};
    json reader = config_section("reader", url);
    if (!fallback_from.is_null()) {
      reader["required"] = false;
      reader["fallback_from"] = std::move(fallback_from);
    }
    return with_sections(json::array({source, reader}));
  };
  require_problem(referring("http://h/{src.b}", nullptr),
                  "routes[0].sections[1].url: {src.b} reads a field that");
  require_problem(referring("http://h/{src.k}", nullptr),
                  "routes[0].sections[1].url: {src.k} reads a field that");
  require_problem(referring("http://h/", "src.b"),
                  "routes[0].sections[1].fallback_from: \"src.b\" reads a field that");
  require_valid(referring("http://h/{src.a}/{src.a.deep}/{src.k.v}", nullptr));
  require_valid(referring("http://h/", "src.k")); // the object {"v": ...} that the projection keeps
  require_valid(referring("http://h/", "src"));
}
