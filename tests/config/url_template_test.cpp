#include <catch2/catch.hpp>

#include <map>

#include "gather/config/url_template.hpp"

using gather::url_part;
using json = nlohmann::json;

namespace {

/// The first section url of a config whose route is "/items/{id}" with sections "base" and "next".
gather::url_template parsed_url(const std::string& next_url) {
  const json document = {
      {"routes",
       {{{"path", "/items/{id}"},
         {"sections",
          {{{"name", "base"}, {"url", "http://h/"}, {"timeout_ms", 1}, {"required", true}},
           {{"name", "next"}, {"url", next_url}, {"timeout_ms", 1}, {"required", true}}}}}}}};
  const gather::config_result result = gather::load_config(document.dump());
  for (const std::string& problem : result.problems)
    UNSCOPED_INFO("problem: " << problem);
  REQUIRE(result.value.has_value());
  return result.value->routes[0].sections[1].url;
}

/// Resolves placeholders the way a request does: captures, query, headers and the data of
/// section 0 (`base`); nullopt when a section field is absent or not a scalar.
struct request_values {
  std::map<std::string, std::string> captures;
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;
  json base_data = json::object();

  std::optional<std::string> operator()(const url_part& part) const {
    switch (part.what) {
    case url_part::kind::capture:
      return captures.at(part.text);
    case url_part::kind::query:
      return value_or_empty(query, part.text);
    case url_part::kind::header:
      return value_or_empty(headers, part.text);
    case url_part::kind::section: {
      const json* field = gather::find_field(base_data, part.field);
      return field ? gather::scalar_text(*field) : std::nullopt;
    }
    default:
      return std::nullopt;
    }
  }

  static std::string value_or_empty(const std::map<std::string, std::string>& values,
                                    const std::string& key) {
    const auto it = values.find(key);
    return it == values.end() ? "" : it->second;
  }
};

} // namespace

TEST_CASE("percent_encode keeps only unreserved characters", "[unit][url]") {
  using gather::percent_encode;
  CHECK(percent_encode("AZaz09-._~") == "AZaz09-._~");
  CHECK(percent_encode("") == "");
  CHECK(percent_encode("../") == "..%2F");
  CHECK(percent_encode("../../etc/passwd") == "..%2F..%2Fetc%2Fpasswd");
  CHECK(percent_encode("?") == "%3F");
  CHECK(percent_encode("/") == "%2F");
  CHECK(percent_encode("%") == "%25");
  CHECK(percent_encode("%2F") == "%252F");
  CHECK(percent_encode("a b") == "a%20b");
  CHECK(percent_encode("+") == "%2B");
  CHECK(percent_encode("#") == "%23");
  CHECK(percent_encode("&") == "%26");
  CHECK(percent_encode("=") == "%3D");
  CHECK(percent_encode("x&admin=1#frag") == "x%26admin%3D1%23frag");
  CHECK(percent_encode("evil.com:80@") == "evil.com%3A80%40");
  CHECK(percent_encode("\r\n") == "%0D%0A");
  CHECK(percent_encode(std::string("a\0b", 3)) == "a%00b");
  CHECK(percent_encode("\xC3\xA9") == "%C3%A9");               // é
  CHECK(percent_encode("\xE6\x97\xA5") == "%E6%97%A5");        // 日
  CHECK(percent_encode("\xF0\x9F\x98\x80") == "%F0%9F%98%80"); // an emoji
}

TEST_CASE("percent_encode encodes values made only of dots entirely", "[unit][url]") {
  using gather::percent_encode;
  CHECK(percent_encode(".") == "%2E");
  CHECK(percent_encode("..") == "%2E%2E");
  CHECK(percent_encode("...") == "%2E%2E%2E");
  CHECK(percent_encode("a.b") == "a.b");
  CHECK(percent_encode(".a") == ".a");
  CHECK(percent_encode("..a") == "..a");
}

TEST_CASE("percent_decode decodes %XX and keeps anything malformed", "[unit][url]") {
  using gather::percent_decode;
  CHECK(percent_decode("a%2Fb") == "a/b");
  CHECK(percent_decode("a%2fb") == "a/b");
  CHECK(percent_decode("%2E%2E") == "..");
  CHECK(percent_decode("%C3%A9") == "\xC3\xA9");
  CHECK(percent_decode("a+b") == "a+b");
  CHECK(percent_decode("%") == "%");
  CHECK(percent_decode("%4") == "%4");
  CHECK(percent_decode("%zz") == "%zz");
  CHECK(percent_decode("%%41") == "%A");
  CHECK(percent_decode("100%") == "100%");
  CHECK(percent_decode("%00") == std::string(1, '\0'));
  for (const std::string value : {"../", "a b?c=d&e#f", "%", "\xC3\xA9", ".", ".."})
    CHECK(percent_decode(gather::percent_encode(value)) == value);
}

TEST_CASE("scalar_text writes JSON scalars as they are substituted", "[unit][url]") {
  using gather::scalar_text;
  CHECK(scalar_text("abc") == "abc");
  CHECK(scalar_text("") == "");
  CHECK(scalar_text(42) == "42");
  CHECK(scalar_text(-7) == "-7");
  CHECK(scalar_text(18446744073709551615ULL) == "18446744073709551615");
  CHECK(scalar_text(42.0) == "42");
  CHECK(scalar_text(-3.0) == "-3");
  CHECK(scalar_text(1.5) == "1.5");
  CHECK(scalar_text(1e300) == json(1e300).dump());
  CHECK(scalar_text(true) == "true");
  CHECK(scalar_text(false) == "false");
  CHECK_FALSE(scalar_text(nullptr));
  CHECK_FALSE(scalar_text(json::object()));
  CHECK_FALSE(scalar_text(json::array({1})));
}

TEST_CASE("find_field walks dotted paths through objects", "[unit][url]") {
  const json data = {{"a", {{"b", {{"c", 1}}}}}, {"list", {1, 2}}, {"n", nullptr}};
  using gather::find_field;
  CHECK(find_field(data, {}) == &data);
  REQUIRE(find_field(data, {"a", "b", "c"}));
  CHECK(*find_field(data, {"a", "b", "c"}) == 1);
  CHECK(*find_field(data, {"a", "b"}) == json{{"c", 1}});
  CHECK(find_field(data, {"n"})->is_null());
  CHECK(find_field(data, {"missing"}) == nullptr);
  CHECK(find_field(data, {"a", "x"}) == nullptr);
  CHECK(find_field(data, {"a", "b", "c", "d"}) == nullptr);
  CHECK(find_field(data, {"list", "0"}) == nullptr);
  CHECK(find_field(json("text"), {"a"}) == nullptr);
}

TEST_CASE("render_url substitutes encoded captures, query values, headers and section fields",
          "[unit][url]") {
  const gather::url_template tpl = parsed_url(
      "http://h:9/items/{id}/seller/{base.seller.id}?tenant={header.x-tenant}&page={query.page}");
  request_values values;
  values.captures["id"] = "42";
  values.query["page"] = "3";
  values.headers["x-tenant"] = "acme";
  values.base_data = {{"seller", {{"id", 7}}}};
  CHECK(gather::render_url(tpl, values) == "http://h:9/items/42/seller/7?tenant=acme&page=3");

  SECTION("hostile values stay inside their segment or query value") {
    values.captures["id"] = "../../admin";
    values.base_data = {{"seller", {{"id", "x/y?z=1#f"}}}};
    values.headers["x-tenant"] = "a&admin=true";
    values.query["page"] = "..";
    CHECK(gather::render_url(tpl, values) ==
          "http://h:9/items/..%2F..%2Fadmin/seller/"
          "x%2Fy%3Fz%3D1%23f?tenant=a%26admin%3Dtrue&page=%2E%2E");
  }
  SECTION("dot values cannot remove a segment") {
    values.captures["id"] = ".";
    values.base_data = {{"seller", {{"id", ".."}}}};
    CHECK(gather::render_url(tpl, values) ==
          "http://h:9/items/%2E/seller/%2E%2E?tenant=acme&page=3");
  }
  SECTION("missing query values and headers substitute the empty string") {
    values.query.clear();
    values.headers.clear();
    CHECK(gather::render_url(tpl, values) == "http://h:9/items/42/seller/7?tenant=&page=");
  }
  SECTION("an absent section field leaves the URL unrendered") {
    values.base_data = {{"seller", json::object()}};
    CHECK_FALSE(gather::render_url(tpl, values));
  }
  SECTION("a section field that is not a scalar leaves the URL unrendered") {
    values.base_data = {{"seller", {{"id", {1, 2}}}}};
    CHECK_FALSE(gather::render_url(tpl, values));
    values.base_data = {{"seller", {{"id", nullptr}}}};
    CHECK_FALSE(gather::render_url(tpl, values));
  }
}

TEST_CASE("render_url copies a template without placeholders as written", "[unit][url]") {
  const gather::url_template tpl = parsed_url("https://h/static?x=%20&y=1");
  CHECK(gather::render_url(tpl, request_values{}) == "https://h/static?x=%20&y=1");
}
