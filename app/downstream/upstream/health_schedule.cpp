// health_schedule (health_probe.hpp): every endpoint probed every interval on one loop's timers.
// Each endpoint is a small state machine, `waiting` (its timer set to the next probe) or `probing`
// (a probe in flight, the timer idle); a probe's end is taken on the schedule's loop, posted there
// when the client ran the probe on another of its loops.
#include "gather/downstream/upstream/health_probe.hpp"

#include <map>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace gather {

struct health_schedule::impl : std::enable_shared_from_this<impl> {
  using clock = std::chrono::steady_clock;

  struct endpoint {
    enum class phase { waiting, probing };
    explicit endpoint(boost::asio::io_context& loop, const health_schedule_options& o)
        : timer(loop), streak(o.unhealthy, o.healthy) {}
    phase now = phase::waiting;
    boost::asio::steady_timer timer;
    health_streak streak;
    clock::time_point next{};   ///< when the next probe is due
    std::uint64_t probe_id = 0; ///< while probing
    std::uint64_t serial = 0;   ///< which probe's end is awaited (a cancelled one's may still come)
  };

  boost::asio::io_context& loop;
  downstream_client& client;
  health_schedule_options options;
  callbacks on;
  std::map<std::string, std::unique_ptr<endpoint>> endpoints;
  std::uint64_t serials = 0;
  bool stopped = false;

  impl(boost::asio::io_context& l, downstream_client& c, health_schedule_options o, callbacks cb)
      : loop(l), client(c), options(std::move(o)), on(std::move(cb)) {}

  void add(const std::string& origin, clock::time_point first) {
    auto& e = endpoints[origin];
    if (e)
      return;
    e = std::make_unique<endpoint>(loop, options);
    e->next = first;
    wait(origin, *e);
  }

  void wait(const std::string& origin, endpoint& e) {
    e.now = endpoint::phase::waiting;
    e.timer.expires_at(e.next);
    e.timer.async_wait([weak = weak_from_this(), origin](const boost::system::error_code& ec) {
      if (auto self = weak.lock(); self && !ec)
        self->due(origin);
    });
  }

  void due(const std::string& origin) {
    auto it = endpoints.find(origin);
    if (stopped || it == endpoints.end() || it->second->now != endpoint::phase::waiting)
      return;
    endpoint& e = *it->second;
    e.now = endpoint::phase::probing;
    e.serial = ++serials;
    e.next = clock::now() + options.interval;
    e.probe_id = probe_endpoint(client, origin, options.probe,
                                [weak = weak_from_this(), origin, serial = e.serial,
                                 &loop = loop](probe_outcome outcome) {
                                  // Taken on the schedule's loop; the weak pointer is only
                                  // locked there, so the schedule is only ever freed there too.
                                  auto take = [weak, origin, serial, outcome = std::move(outcome)] {
                                    if (auto self = weak.lock())
                                      self->probed(origin, serial, outcome);
                                  };
                                  if (loop.get_executor().running_in_this_thread())
                                    take();
                                  else
                                    boost::asio::post(loop, std::move(take));
                                },
                                options.target_of ? options.target_of(origin) : nullptr);
  }

  void probed(const std::string& origin, std::uint64_t serial, const probe_outcome& outcome) {
    auto it = endpoints.find(origin);
    if (stopped || it == endpoints.end() || it->second->serial != serial ||
        it->second->now != endpoint::phase::probing)
      return;
    endpoint& e = *it->second;
    e.probe_id = 0;
    auto change = e.streak.record(outcome.result);
    wait(origin, e); // before the callbacks: they may change the endpoints or destroy the schedule
    auto keep = shared_from_this();
    if (on.probed)
      on.probed(origin, outcome);
    if (change != health_streak::change::none && !stopped && on.changed)
      on.changed(origin, change == health_streak::change::into_rotation);
  }

  void remove(std::map<std::string, std::unique_ptr<endpoint>>::iterator it) {
    if (it->second->probe_id)
      client.cancel(it->second->probe_id);
    it->second->timer.cancel();
    endpoints.erase(it);
  }

  void stop() {
    stopped = true;
    while (!endpoints.empty())
      remove(endpoints.begin());
  }
};

health_schedule::health_schedule(boost::asio::io_context& loop, downstream_client& client,
                                 health_schedule_options options, std::vector<std::string> origins,
                                 callbacks on)
    : impl_(std::make_shared<impl>(loop, client, std::move(options), std::move(on))) {
  const auto now = impl::clock::now();
  const auto n = origins.size();
  for (std::size_t i = 0; i < n; ++i)
    impl_->add(origins[i], now + std::chrono::milliseconds(impl_->options.interval.count() *
                                                           static_cast<long>(i) / static_cast<long>(n)));
}

health_schedule::~health_schedule() { impl_->stop(); }

void health_schedule::set_origins(std::vector<std::string> origins) {
  std::map<std::string, bool> wanted;
  for (auto& o : origins)
    wanted.emplace(std::move(o), true);
  for (auto it = impl_->endpoints.begin(); it != impl_->endpoints.end();) {
    auto next = std::next(it);
    if (!wanted.count(it->first))
      impl_->remove(it);
    it = next;
  }
  const auto now = impl::clock::now();
  for (const auto& [origin, yes] : wanted)
    impl_->add(origin, now);
}

} // namespace gather
