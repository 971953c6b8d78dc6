#include "gather/shared/shared_store.hpp"

#include <fstream>
#include <random>
#include <stdexcept>
#include <tuple>

#include <netdb.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>
#include <openssl/sha.h>

#include "gather/ops/request_log.hpp"
#include "gather/values/wall_clock.hpp"
#include "store_connection.hpp"

namespace gather {

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The password: the file's first line (without its line end).
std::string read_password(const std::string& file) {
  if (file.empty())
    return {};
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw std::runtime_error("shared.password_file: cannot read " + file);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r')
    line.pop_back();
  if (line.empty())
    throw std::runtime_error("shared.password_file: " + file + " holds no password on its first line");
  return line;
}

/// The host as an address hiredis can connect to without resolving on a loop.
std::string resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int error = getaddrinfo(host.c_str(), nullptr, &hints, &found); error != 0 || !found)
    throw std::runtime_error("shared.redis: cannot resolve " + host + ": " + gai_strerror(error));
  char text[INET6_ADDRSTRLEN] = {};
  const void* address = found->ai_family == AF_INET6
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr);
  inet_ntop(found->ai_family, address, text, sizeof text);
  freeaddrinfo(found);
  return text;
}

std::string random_id() {
  std::random_device device;
  std::uniform_int_distribution<std::uint64_t> any;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(any(device)));
  return text;
}

void log_store(const char* event, const std::string& redis, const std::string& why) {
  nlohmann::ordered_json record{
      {"event", event},
      {"ts", unix_seconds()},
      {"redis", redis}};
  if (!why.empty())
    record["detail"] = why;
  write_log_line(record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

/// Announces a gateway and answers how many announced themselves in the last 3 s (the store's
/// clock). A key of another type (garbage) is replaced.
constexpr const char* announce_script = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('TYPE', KEYS[1])['ok'] ~= 'zset' then redis.call('DEL', KEYS[1]) end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 3000)
redis.call('PEXPIRE', KEYS[1], 10000)
return redis.call('ZCARD', KEYS[1])
)lua";

} // namespace

std::string store_key_hash(std::string_view client_key) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(client_key.data()), client_key.size(), digest);
  static const char hex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (std::size_t i = 0; i < 16; ++i) {
    out[2 * i] = hex[digest[i] >> 4];
    out[2 * i + 1] = hex[digest[i] & 15];
  }
  return out;
}

/// What the store has on one loop: its connection and, on loop 0, the periodic timers.
/// Touched only on its own loop's thread; stop() lets go of its Asio objects there, so the store
/// (which a configuration generation may keep past the loops) holds none when the loops go.
struct shared_store::loop_part {
  explicit loop_part(boost::asio::io_context& loop)
      : loop(loop), sync_timer(std::make_unique<boost::asio::steady_timer>(loop)),
        announce_timer(std::make_unique<boost::asio::steady_timer>(loop)) {}
  boost::asio::io_context& loop;
  std::shared_ptr<store_connection> connection;
  std::unique_ptr<boost::asio::steady_timer> sync_timer;
  std::unique_ptr<boost::asio::steady_timer> announce_timer;
  bool stopped = false;
};

shared_store::shared_store(const shared_config& cfg)
    : cfg_(cfg), address_(resolve(cfg.host)), password_(read_password(cfg.password_file)),
      id_(random_id()) {}

shared_store::~shared_store() = default;

void shared_store::start(io_loops& loops, shared_figures& figures) {
  loops_ = &loops;
  figures_ = &figures;
  figures.up.store(0);
  figures.gateways.store(1);
  store_endpoint endpoint{address_, cfg_.port, cfg_.db, password_, cfg_.timeout};
  for (std::size_t i = 0; i < loops.size(); ++i) {
    auto part = std::make_shared<loop_part>(loops.loop(i));
    const bool first = i == 0;
    part->connection = std::make_shared<store_connection>(
        loops.loop(i), endpoint, [this, first](bool up, const std::string& why) {
          if (!first)
            return; // loop 0's connection speaks for the store
          ready_connections_.store(up ? 1 : 0);
          if (up) {
            failures_.store(0);
            open_until_ns_.store(0);
          }
          set_state(up, why);
          if (up && !announcing_) { // the first connection starts the announcements
            announcing_ = true;
            announce();
          }
        });
    parts_.push_back(part);
  }
  for (std::size_t i = 0; i < parts_.size(); ++i)
    boost::asio::post(parts_[i]->loop, [this, i] {
      parts_[i]->connection->start();
      if (i == 0)
        on_tick();
    });
}

void shared_store::stop() {
  if (!loops_)
    return;
  loops_->run_on_each([this](std::size_t i) {
    if (i >= parts_.size())
      return;
    auto& part = *parts_[i];
    part.stopped = true;
    part.sync_timer.reset(); // cancels: the handlers see operation_aborted
    part.announce_timer.reset();
    part.connection->close();
    part.connection.reset();
  });
}

void shared_store::call(store_op op, const std::vector<std::string>& argv, store_done done,
                        const std::shared_ptr<store_budget>& budget) {
  const auto loop = loops_ ? loops_->current() : std::nullopt;
  if (!loop || *loop >= parts_.size() || parts_[*loop]->stopped) {
    if (figures_)
      figures_->count(op, store_result::skipped);
    return; // not on a loop of this store, or stopped: the loop is going, nobody waits
  }
  auto& part = *parts_[*loop];
  const auto skip = [&] {
    finished(op, store_result::skipped);
    boost::asio::post(part.loop, [done = std::move(done)] { done(store_result::skipped, resp_value{}); });
  };
  // Not asked: the breaker is open, or there is no connection to ask on (a store down from the
  // start, or reconnecting).
  if (now_ns() < open_until_ns_.load(std::memory_order_relaxed) || !part.connection->ready())
    return skip();
  auto timeout = cfg_.timeout;
  std::shared_ptr<store_budget::lease> lease;
  if (budget) { // the request's operations together wait at most timeout_ms
    std::tie(timeout, lease) = budget->begin();
    if (!lease)
      return skip();
  }
  part.connection->command(
      argv,
      [this, op, done = std::move(done), lease = std::move(lease)](store_result result,
                                                                  const resp_value& value) {
        const bool usable = done(result, value);
        finished(op, result == store_result::ok && !usable ? store_result::error : result);
      },
      timeout);
}

void shared_store::skipped(store_op op) {
  if (figures_)
    figures_->count(op, store_result::skipped);
}

void shared_store::finished(store_op op, store_result result) {
  figures_->count(op, result);
  if (result == store_result::skipped)
    return;
  if (result == store_result::ok) {
    if (failures_.exchange(0) != 0 || open_until_ns_.load() != 0) {
      open_until_ns_.store(0);
      set_state(ready_connections_.load() > 0, "");
    }
    return;
  }
  if (failures_.fetch_add(1) + 1 >= failures_to_open) {
    open_until_ns_.store(now_ns() + std::chrono::nanoseconds(open_for).count());
    set_state(false, std::to_string(failures_to_open) + " failures in a row (the last: " +
                         store_result_names[static_cast<int>(result)] + "): not asked for " +
                         std::to_string(open_for.count()) + " ms at a time");
  }
}

bool shared_store::up() const {
  return figures_ && figures_->up.load(std::memory_order_relaxed) == 1;
}

std::uint64_t shared_store::gateways() const {
  return gateways_.load(std::memory_order_relaxed);
}

void shared_store::set_state(bool up, const std::string& why) {
  up = up && open_until_ns_.load() == 0;
  std::lock_guard<std::mutex> lock(state_mutex_);
  figures_->up.store(up ? 1 : 0);
  if (logged_state_ == (up ? 1 : 0))
    return;
  logged_state_ = up ? 1 : 0;
  log_store(up ? "shared_store_up" : "shared_store_down", cfg_.redis, why);
}

void shared_store::every_sync(std::weak_ptr<std::function<void()>> tick) {
  std::lock_guard<std::mutex> lock(ticks_mutex_);
  ticks_.push_back(std::move(tick));
}

void shared_store::on_tick() {
  auto& part = *parts_[0];
  if (part.stopped)
    return;
  std::vector<std::shared_ptr<std::function<void()>>> live;
  {
    std::lock_guard<std::mutex> lock(ticks_mutex_);
    auto alive = ticks_.begin();
    for (auto it = ticks_.begin(); it != ticks_.end(); ++it)
      if (auto strong = it->lock()) {
        live.push_back(std::move(strong));
        if (alive != it) // a weak_ptr moved onto itself would be emptied
          *alive = std::move(*it);
        ++alive;
      }
    ticks_.erase(alive, ticks_.end());
  }
  for (const auto& tick : live)
    (*tick)();
  part.sync_timer->expires_after(std::max(std::chrono::milliseconds(1), cfg_.sync));
  part.sync_timer->async_wait([this](auto ec) {
    if (!ec)
      on_tick();
  });
}

void shared_store::announce() {
  auto& part = *parts_[0];
  if (part.stopped)
    return;
  call(store_op::sync, {"EVAL", announce_script, "1", cfg_.prefix + "gateways", id_},
       [this](store_result result, const resp_value& value) {
         if (result != store_result::ok)
           return false;
         if (!value.is_integer() || value.integer < 1 || value.integer > 100000)
           return false;
         gateways_.store(static_cast<std::uint64_t>(value.integer));
         figures_->gateways.store(static_cast<std::uint64_t>(value.integer));
         return true;
       });
  part.announce_timer->expires_after(announce_every);
  part.announce_timer->async_wait([this](auto ec) {
    if (!ec)
      announce();
  });
}

} // namespace gather
