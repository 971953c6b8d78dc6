// upstream_feeds (upstream_feeds.hpp): each upstream's lookups and health checks on its loop.
#include "gather/downstream/upstream/upstream_feeds.hpp"

#include <boost/asio/post.hpp>

#include "gather/downstream/call/downstream_client.hpp"
#include "gather/downstream/upstream/endpoint_lookup.hpp"
#include "gather/downstream/upstream/health_probe.hpp"
#include "gather/runtime/io_loops.hpp"

namespace gather {

namespace {

/// What a feed is made from: equal texts, the same lookups and probes.
std::string signature_of(const upstream_config& up) {
  std::string s = std::to_string(static_cast<int>(up.source)) + "|" + up.dns_name + ":" +
                  std::to_string(up.dns_port) + "|" + up.srv_name + "|" + std::to_string(up.refresh.count()) + "|" +
                  std::to_string(up.max_endpoints);
  for (const auto& e : up.endpoints)
    s += "|" + e.host + ":" + std::to_string(e.port) + "*" + std::to_string(e.weight);
  if (up.health) {
    const auto& h = *up.health;
    s += "|health " + h.path + "|" + (h.grpc_service ? "grpc " + *h.grpc_service : std::string("-")) + "|" +
         std::to_string(h.interval.count()) + "|" + std::to_string(h.timeout.count()) + "|" +
         std::to_string(h.unhealthy) + "|" + std::to_string(h.healthy);
  }
  if (up.tls)
    s += "|tls " + up.tls->ca_file + "|" + up.tls->cert_file + "|" + up.tls->key_file + "|" + up.tls->server_name;
  return s;
}

endpoint_source source_of(const upstream_config& up) {
  endpoint_source source;
  switch (up.source) {
  case upstream_config::source_kind::endpoints:
    source.what = endpoint_source::kind::endpoints;
    for (const auto& e : up.endpoints)
      source.entries.push_back({e.host, static_cast<std::uint16_t>(e.port), static_cast<std::uint32_t>(e.weight)});
    break;
  case upstream_config::source_kind::dns:
    source.what = endpoint_source::kind::dns;
    source.name = up.dns_name;
    source.port = static_cast<std::uint16_t>(up.dns_port);
    break;
  case upstream_config::source_kind::srv:
    source.what = endpoint_source::kind::srv;
    source.name = up.srv_name;
    break;
  }
  return source;
}

health_schedule_options health_options_of(const upstream_health_config& h, std::size_t max_response_bytes) {
  health_schedule_options o;
  if (h.grpc_service) {
    o.probe.what = health_probe_spec::kind::grpc_service;
    o.probe.grpc_service = *h.grpc_service;
  } else {
    o.probe.path = h.path;
  }
  o.probe.timeout = h.timeout;
  o.probe.max_response_bytes = max_response_bytes;
  o.interval = h.interval;
  o.unhealthy = static_cast<unsigned>(h.unhealthy);
  o.healthy = static_cast<unsigned>(h.healthy);
  return o;
}

} // namespace

/// One upstream's lookups and probes. Made, changed and destroyed on `loop`'s thread only.
struct upstream_feeds::feed : std::enable_shared_from_this<feed> {
  feed(boost::asio::io_context& l, std::shared_ptr<upstream_table> t, std::string s)
      : loop(l), table(std::move(t)), signature(std::move(s)) {}

  boost::asio::io_context& loop;
  std::shared_ptr<upstream_table> table;
  std::string signature;
  std::string scheme = "http";
  std::unique_ptr<endpoint_watch> watch;
  std::unique_ptr<health_schedule> health;
  /// The probes' origins ("http://10.0.0.7:9002") and the endpoints they name, as the table has them.
  std::map<std::string, std::shared_ptr<upstream_endpoint>> probed;

  void start(const upstream_config& up, downstream_client& client, std::size_t max_response_bytes) {
    scheme = up.tls ? "https" : "http";
    std::weak_ptr<feed> weak = shared_from_this();
    if (up.health) {
      auto options = health_options_of(*up.health, max_response_bytes);
      options.target_of = [weak](const std::string& origin) -> std::shared_ptr<const call_target> {
        auto self = weak.lock();
        if (!self)
          return nullptr;
        auto it = self->probed.find(origin);
        return it == self->probed.end() ? nullptr : it->second->target;
      };
      health_schedule::callbacks on;
      on.changed = [weak](const std::string& origin, bool healthy) {
        if (auto self = weak.lock(); self)
          if (auto it = self->probed.find(origin); it != self->probed.end())
            self->table->mark_health(it->second->found.address, it->second->found.port, healthy);
      };
      on.probed = [weak](const std::string& origin, const probe_outcome& outcome) {
        if (auto self = weak.lock(); self)
          if (auto it = self->probed.find(origin); it != self->probed.end())
            self->table->count_probe(it->second->found.address, it->second->found.port,
                                     static_cast<health_result>(outcome.result));
      };
      learn_endpoints();
      health = std::make_unique<health_schedule>(loop, client, std::move(options), origins(), std::move(on));
    }
    if (!up.literal_only())
      watch = std::make_unique<endpoint_watch>(loop, source_of(up), up.refresh,
                                               static_cast<std::size_t>(up.max_endpoints),
                                               [weak](lookup_answer answer) {
                                                 if (auto self = weak.lock())
                                                   self->took(answer);
                                               });
  }

  void took(const lookup_answer& answer) {
    table->take(answer);
    if (!health || answer.result != lookup_result::ok)
      return;
    learn_endpoints();
    health->set_origins(origins());
  }

  void learn_endpoints() {
    probed.clear();
    for (auto& e : table->endpoints())
      if (!e->leaving)
        probed.emplace(endpoint_origin(scheme, e->found), e);
  }

  std::vector<std::string> origins() const {
    std::vector<std::string> out;
    for (const auto& [origin, endpoint] : probed)
      out.push_back(origin);
    return out;
  }

  void stop() {
    health.reset(); // cancels its probes in flight
    watch.reset();
    probed.clear();
  }
};

upstream_feeds::upstream_feeds(io_loops& loops, downstream_client& client) : loops_(loops), client_(client) {}

upstream_feeds::~upstream_feeds() { stop(); }

void upstream_feeds::apply(const config& cfg, const upstream_directory& tables) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, std::shared_ptr<feed>> next;
  for (const auto& up : cfg.upstreams) {
    auto table = tables.find(up.name);
    if (table == tables.end())
      continue;
    auto signature = signature_of(up);
    auto it = feeds_.find(up.name);
    if (it != feeds_.end() && it->second->signature == signature && it->second->table == table->second) {
      next.emplace(up.name, std::move(it->second)); // the same lookups and probes go on
      feeds_.erase(it);
      continue;
    }
    if (up.literal_only() && !up.health)
      continue; // nothing to look up or probe: its table took its endpoints itself
    auto& loop = loops_.loop(next_loop_++ % loops_.size());
    auto made = std::make_shared<feed>(loop, table->second, std::move(signature));
    boost::asio::post(loop, [made, up, &client = client_, bytes = cfg.max_response_bytes] {
      made->start(up, client, bytes);
    });
    next.emplace(up.name, std::move(made));
  }
  for (auto& [name, old] : feeds_) // removed or changed: stopped on their loop
    boost::asio::post(old->loop, [old] { old->stop(); });
  feeds_ = std::move(next);
}

void upstream_feeds::stop() {
  std::map<std::string, std::shared_ptr<feed>> all;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    all.swap(feeds_);
  }
  if (all.empty())
    return;
  loops_.run_on_each([&](std::size_t i) {
    for (auto& [name, f] : all)
      if (&f->loop == &loops_.loop(i))
        f->stop();
  });
}

} // namespace gather
