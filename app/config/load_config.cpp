// Loading a config: the file's text, the JSON with its duplicate keys, then the document's reading.

#include "config_reader.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

namespace gather {

namespace {

using config_reader::element_path;
using config_reader::json;
using config_reader::member_path;
using config_reader::problem_list;
using config_reader::read_config;
using config_reader::root_path;

/// Reports keys that appear twice in one object: nlohmann would silently keep the last one, and a
/// gateway that quietly ignores half of what was written is worse than one that refuses it.
class duplicate_key_finder {
public:
  explicit duplicate_key_finder(problem_list& problems) : problems_(&problems) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      frames_.push_back(frame{child_path(), event == json::parse_event_t::array_start, 0, {}, {}});
      break;
    case json::parse_event_t::key:
      on_key(parsed.get<std::string>());
      break;
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
      frames_.pop_back();
      value_done();
      break;
    case json::parse_event_t::value:
      value_done();
      break;
    }
    return true;
  }

private:
  struct frame {
    std::string path;
    bool array = false;
    std::size_t next_index = 0;
    std::string key;
    std::set<std::string> keys;
  };

  std::string child_path() const {
    if (frames_.empty())
      return "";
    const frame& parent = frames_.back();
    return parent.array ? element_path(parent.path, parent.next_index)
                        : member_path(parent.path, parent.key);
  }

  void on_key(std::string key) {
    frame& object = frames_.back();
    if (!object.keys.insert(key).second)
      problems_->add(member_path(object.path, key), "duplicate key");
    object.key = std::move(key);
  }

  void value_done() {
    if (!frames_.empty() && frames_.back().array)
      ++frames_.back().next_index;
  }

  problem_list* problems_;
  std::vector<frame> frames_;
};

std::optional<json> parse_document(std::string_view text, problem_list& problems) {
  try {
    return json::parse(text.begin(), text.end(), duplicate_key_finder(problems));
  } catch (const json::parse_error& error) {
    // what() is "[json.exception.parse_error.101] parse error at line L, column C: ...".
    std::string detail = error.what();
    if (const std::size_t end_of_id = detail.find("] "); end_of_id != std::string::npos)
      detail.erase(0, end_of_id + 2);
    problems.add(root_path, "invalid JSON (byte " + std::to_string(error.byte) + "): " + detail);
    return std::nullopt;
  } catch (const json::out_of_range& error) {
    // A number beyond a double (1e400) is out_of_range.406, not a parse_error (found by fuzzing:
    // it used to escape load_config and abort `gather check`).
    std::string detail = error.what();
    if (const std::size_t end_of_id = detail.find("] "); end_of_id != std::string::npos)
      detail.erase(0, end_of_id + 2);
    problems.add(root_path, "invalid JSON: " + detail);
    return std::nullopt;
  }
}

std::optional<std::string> read_whole_file(const std::string& file_path, std::string& error) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(file_path.c_str(), "rb"),
                                                             &std::fclose);
  if (!file) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buffer[65536];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, file.get()))
    text.append(buffer, n);
  if (std::ferror(file.get())) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  return text;
}

/// Recompiles each route's `shape` from the text parsed keeping key order: read with the rest of
/// the document, its members came out sorted by key.
void keep_shape_order(std::string_view json_text, config& loaded) {
  if (std::none_of(loaded.routes.begin(), loaded.routes.end(),
                   [](const route_config& route) { return route.shape.has_value(); }))
    return;
  const auto ordered = nlohmann::ordered_json::parse(json_text.begin(), json_text.end());
  const auto& routes = ordered.at("routes");
  for (std::size_t i = 0; i < loaded.routes.size(); ++i) {
    route_config& route = loaded.routes[i];
    if (route.shape)
      route.shape = config_reader::compile_ordered_shape(routes.at(i).at("shape"), route);
  }
}

} // namespace

config_result load_config(std::string_view json_text) {
  problem_list problems;
  const std::optional<json> document = parse_document(json_text, problems);
  if (!document)
    return {std::nullopt, problems.take()};
  config loaded = read_config(*document, problems);
  if (!problems.empty())
    return {std::nullopt, problems.take()};
  keep_shape_order(json_text, loaded);
  return {std::move(loaded), {}};
}

config_result load_config_file(const std::string& file_path) {
  std::string error;
  const std::optional<std::string> text = read_whole_file(file_path, error);
  if (!text)
    return {std::nullopt, {file_path + ": cannot read the file: " + error}};
  return load_config(*text);
}

} // namespace gather
