// Reading the `routes` array: each route's kind and deadline, then overlaps between routes.

#include "config_reader.hpp"

namespace gather::config_reader {

namespace {

/// A route as read, and whether its path is valid (only then is it compared with the others).
struct read_route_result {
  route_config route;
  bool path_valid = false;
};

/// `method`: GET by default (an aggregate route); a batch route's is POST.
void read_method(const object_reader& route, bool has_batch, route_config& out) {
  out.method = has_batch ? "POST" : "GET";
  const std::string expected = "one of GET, POST, PUT, PATCH, DELETE";
  const auto method = route.read_string("method", "a string: " + expected);
  if (!method)
    return;
  if (!is_route_method(*method))
    route.problem("method", "must be " + expected);
  else if (has_batch && *method != "POST")
    route.problem("method", "a batch route is served on POST");
  else
    out.method = *method;
}

read_route_result read_route(const object_reader& route) {
  route.reject_unknown_keys({"path", "method", "deadline_ms", "sections", "write", "batch", "auth",
                             "rate_limit", "shape"});
  read_route_result result;
  route_config& out = result.route;
  result.path_valid = read_route_path(route, out);
  const json* sections = route.find("sections");
  const json* write = route.find("write");
  const bool has_sections = sections != nullptr;
  const bool has_batch = route.find("batch") != nullptr;
  read_method(route, has_batch, out);
  if (has_sections && has_batch)
    route.problems().add(route.path(),
                         "has both \"sections\" and \"batch\" (a route is one or the other)");
  else if (write && has_batch)
    route.problems().add(route.path(),
                         "has both \"write\" and \"batch\" (a batch route's items are only read)");
  else if (write && out.method == "GET")
    route.problem("write", "needs a \"method\" that takes a body (POST, PUT, PATCH or DELETE): a GET only reads");
  else if (!has_sections && !has_batch && !write)
    route.problems().add(route.path(),
                         out.method == "GET"
                             ? "needs \"sections\" (an aggregate route) or \"batch\" (a batch route)"
                             : "needs \"sections\", \"write\" or both (a " + out.method + " route)");
  if (has_batch && route.find("deadline_ms"))
    route.problem("deadline_ms",
                  "not allowed beside \"batch\" (a batch route's deadline is batch.deadline_ms)");
  else
    route.read_millis("deadline_ms", 1, max_timeout_ms, out.deadline);
  if (has_batch && has_capture(out, "item"))
    route.problem("path",
                  "capture {item} is not allowed in a batch route ({item} is the batch item)");
  // Before the urls: `{claim.NAME}` and `per: claim:` need to know whether the route has auth.
  out.auth = read_auth(route);
  out.rate_limit = read_rate_limit(route, route.find("auth") != nullptr);
  if (has_sections || (write && !has_batch && out.method != "GET"))
    read_sections(route, sections, write, result.path_valid, out);
  if (const auto batch = route.read_object("batch"))
    out.batch = read_batch(*batch, out, result.path_valid);
  out.shape = read_shape(route, out, has_batch);
  return result;
}

/// Reports each route that overlaps an earlier one, on the later route's path. Routes of one
/// `path` and different methods do not overlap: a request takes the one of its method.
void check_overlaps(std::vector<read_route_result>& routes, const std::string& routes_path,
                    problem_list& problems) {
  for (std::size_t later = 0; later < routes.size(); ++later) {
    auto& route = routes[later].route;
    route.same_path.push_back(later);
    for (std::size_t earlier = 0; earlier < later; ++earlier) {
      if (!routes[later].path_valid || !routes[earlier].path_valid)
        continue;
      const auto& other = routes[earlier].route;
      const bool same_path = other.path == route.path;
      if (same_path && other.method == route.method)
        problems.add(member_path(element_path(routes_path, later), "method"),
                     "routes[" + std::to_string(earlier) + "] has the same path and method (" +
                         route.method + " " + route.path + ")");
      else if (same_path)
        route.same_path.insert(route.same_path.end() - 1, earlier);
      else if (overlap(other, route))
        problems.add(member_path(element_path(routes_path, later), "path"),
                     "overlaps routes[" + std::to_string(earlier) + "].path " + in_quotes(other.path));
    }
  }
  // Each route of a path lists all of them (the earlier ones learn of the later ones here).
  for (auto& result : routes)
    for (const auto i : result.route.same_path)
      if (routes[i].route.same_path.size() < result.route.same_path.size())
        routes[i].route.same_path = result.route.same_path;
}

} // namespace

std::vector<route_config> read_routes(const object_reader& top) {
  const std::string expected = "a non-empty array of routes";
  if (!top.require("routes", expected))
    return {};
  const json& routes = *top.find("routes");
  if (!routes.is_array() || routes.empty()) {
    top.problem("routes", "must be " + expected);
    return {};
  }
  std::vector<read_route_result> results;
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const std::string path = element_path(top.path_of("routes"), i);
    if (routes[i].is_object()) {
      results.push_back(read_route(object_reader(routes[i], path, top.problems())));
    } else {
      top.problems().add(path, "must be an object");
      results.emplace_back();
    }
  }
  check_overlaps(results, top.path_of("routes"), top.problems());
  std::vector<route_config> out;
  for (read_route_result& result : results)
    out.push_back(std::move(result.route));
  return out;
}

} // namespace gather::config_reader
