// endpoint_watch (endpoint_lookup.hpp): an upstream's lookups on one event loop, over c-ares
// (dns_channel.hpp). getaddrinfo can ask neither for SRV records nor without holding a thread
// until the system's resolver gives up (name_lookups.hpp); c-ares asks A, AAAA and SRV itself,
// its sockets in the loop's epoll, and reads resolv.conf and /etc/hosts as the system does.
//
// One lookup at a time, each on a channel of its own made when it starts (resolv.conf read
// again: a changed nameserver counts from the next refresh) and destroyed when it ends, which
// abandons whatever it still asks. The watch is one state machine:
//
//   waiting  --due-->        asking  (the queries sent; the timer set to the lookup's bound)
//   asking   --answered-->   waiting (the answer to `done`; the timer set to start + refresh)
//   asking   --timed_out-->  waiting (the channel dropped; `error` to `done`)
//   any      --stop-->       stopped (the destructor: no `done` after)
//   a source of IP literals only answers once and is `stopped` after.
#include "gather/downstream/upstream/endpoint_lookup.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include <arpa/inet.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "upstream/dns_channel.hpp"
#include "upstream/lookup_tally.hpp"

namespace gather {

namespace {

/// An IP literal written as inet_ntop writes it ("FD00:0::7" is "fd00::7"), or "" for a name.
std::string literal_text(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  char text[INET6_ADDRSTRLEN] = {};
  for (int family : {AF_INET, AF_INET6})
    if (inet_pton(family, host.c_str(), buffer) == 1 && inet_ntop(family, buffer, text, sizeof text))
      return text;
  return "";
}

bool is_ip_literal(const std::string& host) { return !literal_text(host).empty(); }

std::string canonical_name(std::string name) {
  while (!name.empty() && name.back() == '.')
    name.pop_back();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

/// SRV weights are 0..65535, an endpoint's 1..100: above 100 the records' weights are scaled
/// down together, so their proportions stay (0 is read as 1, as the contract says).
std::vector<std::uint32_t> endpoint_weights(const std::vector<dns_srv_record>& records) {
  std::uint32_t heaviest = 1;
  for (const auto& r : records)
    heaviest = std::max<std::uint32_t>(heaviest, r.weight);
  std::vector<std::uint32_t> weights;
  for (const auto& r : records) {
    std::uint32_t w = heaviest > 100 ? (r.weight * 100u + heaviest / 2) / heaviest : r.weight;
    weights.push_back(std::clamp<std::uint32_t>(w, 1, 100));
  }
  return weights;
}

std::string subject_of(const endpoint_source& source) {
  switch (source.what) {
  case endpoint_source::kind::dns: return "dns " + source.name;
  case endpoint_source::kind::srv: return "srv " + source.name;
  case endpoint_source::kind::endpoints: break;
  }
  return "endpoints";
}

bool literals_only(const endpoint_source& source) {
  return source.what == endpoint_source::kind::endpoints &&
         std::all_of(source.entries.begin(), source.entries.end(),
                     [](const endpoint_source::entry& e) { return is_ip_literal(e.host); });
}

} // namespace

struct endpoint_watch::impl : std::enable_shared_from_this<impl> {
  enum class phase { waiting, asking, stopped };
  enum class event { due, answered, timed_out, stop };

  boost::asio::io_context& loop;
  endpoint_source source;
  std::chrono::milliseconds refresh;
  std::size_t max_endpoints;
  completion done;
  endpoint_watch_options options;

  phase now = phase::waiting;
  boost::asio::steady_timer timer;
  std::uint64_t generation = 0; ///< bumped by every transition: a stale timer or post is dropped
  std::chrono::steady_clock::time_point started{};
  std::unique_ptr<dns_channel> dns; ///< while asking
  std::optional<lookup_tally> tally;
  int outstanding = 0; ///< queries asked and not answered in this lookup

  impl(boost::asio::io_context& l, endpoint_source s, std::chrono::milliseconds r, std::size_t max,
       completion d, endpoint_watch_options o)
      : loop(l), source(std::move(s)), refresh(r), max_endpoints(max), done(std::move(d)),
        options(std::move(o)), timer(l) {}

  std::chrono::milliseconds bound() const {
    return options.lookup_timeout.count() > 0 ? options.lookup_timeout : refresh;
  }

  /// Runs `e` on the loop's next turn unless another transition came first.
  void post(event e) {
    boost::asio::post(loop, [weak = weak_from_this(), e, g = generation] {
      if (auto self = weak.lock(); self && self->generation == g)
        self->on(e);
    });
  }

  void arm(std::chrono::steady_clock::time_point at, event e) {
    timer.expires_at(at);
    timer.async_wait([weak = weak_from_this(), e, g = generation](const boost::system::error_code& ec) {
      if (auto self = weak.lock(); !ec && self && self->generation == g)
        self->on(e);
    });
  }

  /// The one transition function: every change of phase happens here.
  void on(event e) {
    auto keep = shared_from_this(); // `done` may destroy the watch
    ++generation;
    if (e == event::stop || now == phase::stopped) {
      now = phase::stopped;
      timer.cancel();
      dns.reset();
      return;
    }
    if (now == phase::waiting && e == event::due) {
      now = phase::asking;
      started = std::chrono::steady_clock::now();
      arm(started + bound(), event::timed_out);
      ask_all();
      return;
    }
    if (now != phase::asking || (e != event::answered && e != event::timed_out))
      return;
    lookup_answer answer =
        e == event::answered
            ? tally->finish()
            : lookup_answer{lookup_result::error, {},
                            subject_of(source) + ": no answer within " + std::to_string(bound().count()) +
                                " ms (unanswered queries: " + std::to_string(outstanding) + ")"};
    dns.reset(); // abandons what is still asked
    tally.reset();
    now = phase::waiting;
    arm(started + refresh, event::due);
    done(std::move(answer));
  }

  void ask_all() {
    tally.emplace(subject_of(source), max_endpoints);
    dns = std::make_unique<dns_channel>(loop, options.servers);
    outstanding = 1; // held until every query is sent: an answer from /etc/hosts comes at once
    switch (source.what) {
    case endpoint_source::kind::dns: ask_addresses(source.name, {{source.port, 1}}); break;
    case endpoint_source::kind::srv: ask_srv(); break;
    case endpoint_source::kind::endpoints: {
      std::map<std::string, std::vector<use>> names;
      for (const auto& entry : source.entries) {
        if (is_ip_literal(entry.host))
          tally->found("", {literal_text(entry.host)}, entry.port, entry.weight);
        else
          names[entry.host].push_back({entry.port, entry.weight});
      }
      for (auto& [name, uses] : names)
        ask_addresses(name, std::move(uses));
      break;
    }
    }
    answered_one();
  }

  void answered_one() {
    if (--outstanding == 0)
      post(event::answered); // not here: inside a c-ares callback the channel may not be destroyed
  }

  /// A port and weight a name's addresses are endpoints of: a name listed twice (two entries,
  /// two SRV records of one target) is asked for once.
  struct use {
    std::uint16_t port;
    std::uint32_t weight;
  };

  void ask_addresses(const std::string& name, std::vector<use> uses) {
    ++outstanding;
    dns->addresses(name, [this, name, uses = std::move(uses)](dns_addresses answer) {
      if (answer.status == dns_status::found)
        for (const auto& u : uses)
          tally->found(name, answer.addresses, u.port, u.weight);
      else if (answer.status == dns_status::nothing)
        tally->nothing(name, answer.error.empty() ? "no address" : answer.error);
      else
        tally->failed(name, answer.error);
      answered_one();
    });
  }

  void ask_srv() {
    ++outstanding;
    dns->srv(source.name, [this](dns_records answer) {
      if (answer.status == dns_status::failed)
        tally->failed(source.name, answer.error);
      else if (answer.status == dns_status::nothing)
        tally->nothing(source.name, answer.error.empty() ? "no SRV record" : answer.error);
      else
        ask_targets(std::move(answer.records));
      answered_one();
    });
  }

  /// The records of the lowest priority, each target's addresses asked for (never its SRV
  /// records: a target that names the SRV record itself, or a loop of names, cannot recurse).
  void ask_targets(std::vector<dns_srv_record> records) {
    std::uint16_t lowest = records.front().priority;
    for (const auto& r : records)
      lowest = std::min(lowest, r.priority);
    const std::string self = canonical_name(source.name);
    std::vector<dns_srv_record> kept;
    std::size_t skipped_self = 0, skipped_none = 0;
    for (auto& r : records) {
      if (r.priority != lowest)
        continue;
      if (r.target.empty()) // "." (RFC 2782): the service is decidedly not available there
        ++skipped_none;
      else if (canonical_name(r.target) == self)
        ++skipped_self;
      else
        kept.push_back(std::move(r));
    }
    if (skipped_self)
      tally->note(std::to_string(skipped_self) + " SRV record(s) naming the SRV name itself skipped");
    if (skipped_none)
      tally->note(std::to_string(skipped_none) + " SRV record(s) with target \".\" skipped");
    std::sort(kept.begin(), kept.end(), [](const dns_srv_record& a, const dns_srv_record& b) {
      return std::tie(a.target, a.port) < std::tie(b.target, b.port);
    });
    if (kept.size() > max_endpoints) {
      tally->note("SRV targets cut from " + std::to_string(kept.size()) + " to " +
                  std::to_string(max_endpoints) + " (max_endpoints)");
      kept.resize(max_endpoints);
    }
    auto weights = endpoint_weights(kept);
    std::map<std::string, std::vector<use>> targets;
    for (std::size_t i = 0; i < kept.size(); ++i)
      targets[kept[i].target].push_back({kept[i].port, weights[i]});
    for (auto& [target, uses] : targets)
      ask_addresses(target, std::move(uses));
  }

  /// A source of IP literals: one answer, on the loop's next turn, and nothing more.
  void answer_literals() {
    boost::asio::post(loop, [weak = weak_from_this()] {
      auto self = weak.lock();
      if (!self || self->now == phase::stopped)
        return;
      lookup_tally literals(subject_of(self->source), self->max_endpoints);
      for (const auto& entry : self->source.entries)
        literals.found("", {literal_text(entry.host)}, entry.port, entry.weight);
      self->now = phase::stopped;
      self->done(literals.finish());
    });
  }
};

std::string endpoint_origin(const std::string& scheme, const found_endpoint& endpoint) {
  const bool v6 = endpoint.address.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + endpoint.address + "]" : endpoint.address) + ":" +
         std::to_string(endpoint.port);
}

endpoint_watch::endpoint_watch(boost::asio::io_context& loop, endpoint_source source,
                               std::chrono::milliseconds refresh, std::size_t max_endpoints, completion done)
    : endpoint_watch(loop, std::move(source), refresh, max_endpoints, std::move(done), {}) {}

endpoint_watch::endpoint_watch(boost::asio::io_context& loop, endpoint_source source,
                               std::chrono::milliseconds refresh, std::size_t max_endpoints, completion done,
                               endpoint_watch_options options)
    : impl_(std::make_shared<impl>(loop, std::move(source), refresh, max_endpoints, std::move(done),
                                   std::move(options))) {
  if (literals_only(impl_->source))
    impl_->answer_literals();
  else
    impl_->post(impl::event::due);
}

endpoint_watch::~endpoint_watch() { impl_->on(impl::event::stop); }

} // namespace gather
