#include "gather/admission/batch_body.hpp"

#include <nlohmann/json.hpp>

namespace gather {

namespace {

batch_body refused(std::string why) {
  batch_body out;
  out.problem = std::move(why);
  return out;
}

} // namespace

batch_body parse_batch_body(std::string_view body, std::size_t max_items) {
  // nlohmann's parser keeps its own stack, so a deeply nested body costs memory (bounded by
  // max_body_bytes), never the handler thread's stack.
  auto parsed = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (parsed.is_discarded())
    return refused("the body is not valid JSON");
  if (!parsed.is_object())
    return refused("the body must be a JSON object {\"items\": [...]}");
  auto found = parsed.find("items");
  if (found == parsed.end())
    return refused("the body has no \"items\"");
  auto& items = *found;
  if (!items.is_array())
    return refused("\"items\" must be an array");
  if (items.size() > max_items)
    return refused("too many items: " + std::to_string(items.size()) + " (this route takes at most " +
                   std::to_string(max_items) + ")");
  batch_body out;
  out.items.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& item = items[i];
    if (item.is_string()) {
      auto json = item.dump();
      out.items.push_back({std::move(item.get_ref<std::string&>()), std::move(json)});
    } else if (item.is_number()) {
      auto json = item.dump();
      out.items.push_back({json, json});
    } else {
      return refused("items[" + std::to_string(i) + "] must be a string or a number, not " +
                     std::string{item.type_name()});
    }
  }
  return out;
}

} // namespace gather
