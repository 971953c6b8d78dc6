// `gather check` on the page's shape: max_items, warning codes and a route's shape, each problem
// under its JSON path; a valid shape compiled into literal pieces and holes.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "gather/config/config.hpp"

using nlohmann::json;

namespace {

json book_sections() {
  return json::parse(R"([
    {"name": "meta", "url": "http://h/m/{isbn}", "timeout_ms": 300, "required": true},
    {"name": "related", "url": "http://h/r/{isbn}", "timeout_ms": 300, "fallback": [],
     "fields": ["isbn", "title"], "max_items": 5, "warning": "related_unavailable"},
    {"name": "stock", "url": "http://h/s/{isbn}", "timeout_ms": 300, "fallback_from": "meta",
     "warning": "stock_unavailable"}])");
}

json book_document(json sections, json shape = nullptr) {
  json route = {{"path", "/books/{isbn}"}, {"sections", std::move(sections)}};
  if (!shape.is_null())
    route["shape"] = std::move(shape);
  return {{"routes", json::array({route})}};
}

/// Every problem `gather check` gives for `document` (none when it loads).
std::vector<std::string> shape_problems(const json& document) {
  auto result = gather::load_config(document.dump());
  CHECK(result.value.has_value() == result.problems.empty());
  return result.problems;
}

bool mentions(const std::vector<std::string>& problems, const std::string& text) {
  for (const auto& problem : problems)
    if (problem.find(text) != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST_CASE("check: max_items is an integer from 1 to 100000", "[unit][config][shape]") {
  for (const json& bad : {json(0), json(100001), json("5"), json(2.5), json(-1)}) {
    auto sections = book_sections();
    sections[1]["max_items"] = bad;
    INFO(bad.dump());
    CHECK(shape_problems(book_document(sections)) ==
          std::vector<std::string>{"routes[0].sections[1].max_items: must be an integer from 1 to 100000"});
  }
  auto sections = book_sections();
  sections[1]["max_items"] = 100000;
  CHECK(shape_problems(book_document(sections)).empty());
}

TEST_CASE("check: a warning code matches [a-z][a-z0-9_]* and stands for one section", "[unit][config][shape]") {
  for (const json& bad : {json("Stock"), json("1st"), json("stock-out"), json(""), json(5)}) {
    auto sections = book_sections();
    sections[2]["warning"] = bad;
    INFO(bad.dump());
    const auto problems = shape_problems(book_document(sections));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].rfind("routes[0].sections[2].warning: must ", 0) == 0);
  }
  auto twice = book_sections();
  twice[2]["warning"] = "related_unavailable";
  CHECK(shape_problems(book_document(twice)) ==
        std::vector<std::string>{"routes[0].sections[2].warning: \"related_unavailable\" is already the "
                                 "code of sections[1] (related)"});
  // Another section's own default code (`<name>_<status>`) is taken too.
  auto taken = book_sections();
  taken[2]["warning"] = "meta_timeout";
  CHECK(shape_problems(book_document(taken)) ==
        std::vector<std::string>{"routes[0].sections[2].warning: \"meta_timeout\" is already the code of "
                                 "sections[0] (meta)"});
  // Its own default is its own to take.
  auto own = book_sections();
  own[2]["warning"] = "stock_error";
  CHECK(shape_problems(book_document(own)).empty());
}

TEST_CASE("check: a shape names the route's sections and leaves degraded and warnings to the answer",
          "[unit][config][shape]") {
  const auto problems = shape_problems(book_document(
      book_sections(), json::parse(R"({"book": {"title": "{meta.title}", "price": "{price.amount}",
                                                 "list": [1, "{nope}"]},
                                        "degraded": false, "warnings": "{meta}", "ok": "{Price}"})")));
  CHECK(problems == std::vector<std::string>{
                        "routes[0].shape.book.list[1]: \"{nope}\": this route has no section \"nope\"",
                        "routes[0].shape.book.price: \"{price.amount}\": this route has no section \"price\"",
                        "routes[0].shape.degraded: the answer adds \"degraded\" itself: a shape may not use "
                        "it at its top level",
                        "routes[0].shape.warnings: the answer adds \"warnings\" itself: a shape may not use "
                        "it at its top level"});
  // Deeper down they are the template's own keys.
  CHECK(shape_problems(book_document(book_sections(), json::parse(R"({"page": {"degraded": 1}})"))).empty());
  CHECK(shape_problems(book_document(book_sections(), json::array())) ==
        std::vector<std::string>{"routes[0].shape: must be a JSON object: the template of the answer"});
  const json batch = {{"routes", json::array({{{"path", "/o"},
                                               {"batch", {{"url", "http://h/o/{item}"}, {"timeout_ms", 100}}},
                                               {"shape", json::object()}}})}};
  CHECK(shape_problems(batch) ==
        std::vector<std::string>{"routes[0].shape: only an aggregate route (\"sections\") has a shape"});
  CHECK(mentions(shape_problems(book_document(book_sections(), "{meta}")), "routes[0].shape: must be"));
}

TEST_CASE("a shape is compiled once into literal pieces and holes, in the order written", "[unit][config][shape]") {
  const auto loaded = gather::load_config(R"({"routes": [{"path": "/books/{isbn}", "sections": [
      {"name": "meta", "url": "http://h/m/{isbn}", "timeout_ms": 300, "required": true},
      {"name": "stock", "url": "http://h/s/{isbn}", "timeout_ms": 300, "fallback_from": "meta"}],
      "shape": {"z": "{stock.stock}", "a": ["x {meta}", "{meta.author.name}", {"k": "{}"}], "m": "{meta}",
                "t": "{meta.x} {stock.y}"}}]})");
  REQUIRE(loaded.value);
  const auto& shape = loaded.value->routes[0].shape;
  REQUIRE(shape);
  CHECK(shape->has_members);
  CHECK(shape->literals ==
        std::vector<std::string>{R"({"z":)", R"(,"a":["x {meta}",)", R"(,{"k":"{}"}],"m":)",
                                 R"(,"t":"{meta.x} {stock.y}")"});
  REQUIRE(shape->holes.size() == 3);
  CHECK(shape->holes[0].section == 1);
  CHECK(shape->holes[0].field == gather::field_path{"stock"});
  CHECK(shape->holes[1].section == 0);
  CHECK(shape->holes[1].field == gather::field_path{"author", "name"});
  CHECK(shape->holes[2].field.empty());

  const auto empty = gather::load_config(R"({"routes": [{"path": "/b", "sections": [
      {"name": "meta", "url": "http://h/m", "timeout_ms": 300, "required": true}], "shape": {}}]})");
  REQUIRE(empty.value);
  CHECK_FALSE(empty.value->routes[0].shape->has_members);
  CHECK(empty.value->routes[0].shape->literals == std::vector<std::string>{"{"});
}
