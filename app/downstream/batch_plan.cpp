#include "gather/downstream/batch_plan.hpp"

#include <unordered_map>

#include "gather/downstream/downstream_request.hpp"
#include "gather/config/url_template.hpp"

namespace gather {

batch_plan plan_batch(std::vector<batch_item> items, const batch_config& batch,
                      const inbound_request& in) {
  batch_plan plan;
  plan.rows.reserve(items.size());
  plan.call_of_row.reserve(items.size());
  std::unordered_map<std::string, std::size_t> call_of_url;
  for (auto& item : items) {
    // A batch url reads only the item and the inbound request, so it always renders.
    auto url = render_url(batch.url, [&](const url_part& part) {
                 return part.what == url_part::kind::item ? std::optional<std::string>{item.text}
                                                          : inbound_value(part, in);
               }).value();
    auto [it, fresh] = call_of_url.try_emplace(url, plan.urls.size());
    if (fresh)
      plan.urls.push_back(std::move(url));
    plan.call_of_row.push_back(it->second);
    plan.rows.push_back(std::move(item.json));
  }
  return plan;
}

} // namespace gather
