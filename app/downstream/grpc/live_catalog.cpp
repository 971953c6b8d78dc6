// One generation's descriptors over time (grpc_reflection.hpp): its `protos`, plus the files its
// reflection targets gave, built into a new catalog on the first request after they changed.
#include "gather/downstream/grpc/grpc_reflection.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "gather/downstream/grpc/proto_catalog.hpp"
#include "gather/values/wall_clock.hpp"

namespace gather {

namespace {

template <typename Visit>
void for_each_call(const config& cfg, Visit visit) {
  for (const auto& route : cfg.routes) {
    if (route.batch && route.batch->grpc)
      visit(*route.batch->grpc);
    for (const auto& section : route.sections)
      if (section.grpc)
        visit(*section.grpc);
  }
}

} // namespace

bool has_reflection(const config& cfg) {
  bool any = false;
  for_each_call(cfg, [&](const grpc_call_config& call) { any = any || call.reflection; });
  return any;
}

live_catalog::live_catalog(const config& cfg, reflection_registry& registry)
  : cfg_(cfg), registry_(registry), catalog_(cfg.descriptors) {
  for_each_call(cfg, [&](const grpc_call_config& call) {
    if (!call.reflection)
      return;
    if (!sources_.count(call.target))
      sources_.emplace(call.target, registry.source_for(call.target));
    auto& services = services_[call.target];
    if (std::find(services.begin(), services.end(), call.service) == services.end())
      services.push_back(call.service);
  });
}

std::uint64_t live_catalog::versions() const {
  std::uint64_t sum = 0;
  for (const auto& [target, source] : sources_)
    sum += source->version();
  return sum;
}

std::shared_ptr<const proto_catalog> live_catalog::current() const {
  const auto seen = versions();
  if (seen != built_.load(std::memory_order_acquire)) {
    // One loop builds; the others go on with the catalog in force meanwhile.
    std::unique_lock<std::mutex> building(build_mutex_, std::try_to_lock);
    if (building && seen != built_.load(std::memory_order_acquire)) {
      std::vector<google::protobuf::FileDescriptorProto> files;
      for (const auto& [target, source] : sources_)
        for (auto& file : source->files())
          files.push_back(std::move(file));
      auto built = build_proto_catalog(cfg_, &files);
      if (registry_.log() && !built.problems.empty()) {
        nlohmann::ordered_json line{{"event", "grpc_reflection"}, {"ts", unix_seconds()},
                                    {"result", built.value ? "built, with problems" : "not built, keeping the descriptors in force"},
                                    {"problems", built.problems}};
        registry_.log()(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      }
      if (built.value) {
        std::lock_guard<std::mutex> lock(mutex_);
        catalog_ = std::move(built.value);
      }
      built_.store(seen, std::memory_order_release);
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return catalog_;
}

void live_catalog::ask_all() const {
  auto* client = registry_.client();
  if (!client)
    return;
  for (const auto& [target, source] : sources_) {
    asks_at_start_[target] = source->asks_done();
    source->ask(*client, services_.at(target), cfg_.protos.reflection);
  }
}

void live_catalog::unknown(const grpc_call_config& call) const {
  auto* client = registry_.client();
  const auto found = sources_.find(call.target);
  if (client && call.reflection && found != sources_.end())
    found->second->ask_unknown(*client, call.service, cfg_.protos.reflection);
}

void live_catalog::wait_first() const {
  const auto until = std::chrono::steady_clock::now() + cfg_.protos.reflection.start_wait;
  for (const auto& [target, source] : sources_) {
    const auto at = asks_at_start_.find(target);
    source->wait_asks((at == asks_at_start_.end() ? 0 : at->second) + 1, until);
  }
}

} // namespace gather
