#include "gather/downstream/answer/batch_plan.hpp"

#include <algorithm>
#include <unordered_map>

#include "gather/config/url_template.hpp"
#include "gather/downstream/call/call_face.hpp"
#include "gather/downstream/call/downstream_request.hpp"
#include "gather/downstream/grpc/grpc_json.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"

namespace gather {

namespace {

/// A gRPC batch: one call per distinct rendered message, each encoded once.
batch_plan plan_grpc_batch(std::vector<batch_item> items, const grpc_call_config& call,
                           const inbound_request& in, const std::shared_ptr<const proto_catalog>& catalog,
                           std::size_t route) {
  batch_plan plan;
  plan.rows.reserve(items.size());
  plan.call_of_row.reserve(items.size());
  const grpc_method_plan* method = catalog && route < catalog->batches.size() && catalog->batches[route]
                                       ? &*catalog->batches[route]
                                       : nullptr;
  const auto path = "/" + call.full_method();
  std::unordered_map<std::string, std::size_t> call_of_key;
  for (auto& item : items) {
    std::optional<nlohmann::json> message;
    if (method)
      message = grpc::render_message(call, method->as_text, [&](const url_part& part) {
        if (part.what != url_part::kind::item) {
          auto text = inbound_value(part, in);
          return text ? std::optional<nlohmann::json>(std::move(*text)) : std::nullopt;
        }
        auto value = nlohmann::json::parse(item.json, nullptr, false);
        return std::optional<nlohmann::json>(value.is_discarded() ? nlohmann::json(item.text) : value);
      });
    auto key = call.target + path + "\n" + (message ? message->dump() : std::string{});
    auto [it, fresh] = call_of_key.try_emplace(key, plan.urls.size());
    if (fresh) {
      plan.urls.push_back(std::move(key));
      std::shared_ptr<grpc_call_part> part;
      std::string refused;
      if (!method) {
        refused = "grpc: " + call.full_method() + " is not known (no descriptors name it)";
      } else if (!message) {
        refused = "grpc message: a value it reads is absent";
      } else {
        const grpc::message_types types{*catalog->resolver, *catalog->factory, catalog->orders.get()};
        auto bytes = grpc::encode_message(types, *method->method->input_type(), *message);
        if (bytes.ok) {
          part = std::make_shared<grpc_call_part>();
          part->catalog = catalog;
          part->plan = method;
          part->path = path;
          part->message = std::move(bytes.text);
          part->max_messages = method->server_streaming() ? std::max<std::size_t>(1, call.max_messages) : 0;
        } else {
          refused = "grpc message: " + bytes.error;
        }
      }
      plan.grpc.push_back(std::move(part));
      plan.refused.push_back(std::move(refused));
    }
    plan.call_of_row.push_back(it->second);
    plan.rows.push_back(std::move(item.json));
  }
  return plan;
}

} // namespace

batch_plan plan_batch(std::vector<batch_item> items, const batch_config& batch,
                      const inbound_request& in, const std::shared_ptr<const proto_catalog>& catalog,
                      std::size_t route) {
  if (batch.grpc)
    return plan_grpc_batch(std::move(items), *batch.grpc, in, catalog, route);
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
