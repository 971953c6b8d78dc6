// The rate limit's token buckets: a burst then refusals with the time to the next token, separate
// buckets per key, a fixed table whatever keys arrive, and no lost token between threads.
#include <catch2/catch.hpp>

#include <thread>
#include <vector>

#include "gather/admission/rate_limiter.hpp"

using namespace gather;
using clock_type = std::chrono::steady_clock;

namespace {

rate_limit_config limit(double rate, double burst, std::size_t max_keys = 1000) {
  rate_limit_config cfg;
  cfg.rate_per_s = rate;
  cfg.burst = burst;
  cfg.max_keys = max_keys;
  return cfg;
}

} // namespace

TEST_CASE("a bucket gives its burst, then refuses with the seconds until a token", "[unit][ratelimit]") {
  rate_limiter limiter{limit(0.5, 3)}; // a token every 2 s
  const auto t0 = clock_type::now();
  for (int i = 0; i < 3; ++i)
    CHECK(limiter.take("client", t0).allowed);
  const auto refused = limiter.take("client", t0);
  CHECK_FALSE(refused.allowed);
  CHECK(refused.retry_after == std::chrono::seconds{2});
  // 1.5 s later the token is 0.5 s away: Retry-After rounds up to 1.
  CHECK(limiter.take("client", t0 + std::chrono::milliseconds{1500}).retry_after == std::chrono::seconds{1});
  CHECK(limiter.take("client", t0 + std::chrono::milliseconds{2000}).allowed);
  CHECK_FALSE(limiter.take("client", t0 + std::chrono::milliseconds{2000}).allowed);
  // Idle long enough, the bucket is full again, never fuller.
  const auto later = t0 + std::chrono::seconds{100};
  for (int i = 0; i < 3; ++i)
    CHECK(limiter.take("client", later).allowed);
  CHECK_FALSE(limiter.take("client", later).allowed);
}

TEST_CASE("each key has its own bucket", "[unit][ratelimit]") {
  rate_limiter limiter{limit(1, 2)};
  const auto t0 = clock_type::now();
  CHECK(limiter.take("a", t0).allowed);
  CHECK(limiter.take("a", t0).allowed);
  CHECK_FALSE(limiter.take("a", t0).allowed);
  CHECK(limiter.take("b", t0).allowed);
  CHECK(limiter.take("", t0).allowed);
  CHECK(limiter.take("b", t0).allowed);
  CHECK_FALSE(limiter.take("b", t0).allowed);
}

TEST_CASE("the table holds at most max_keys buckets and forgets the least recently used", "[unit][ratelimit]") {
  rate_limiter limiter{limit(1, 1, 1000)};
  CHECK(limiter.capacity() == 1000);
  CHECK(rate_limiter{limit(1, 1, 5)}.capacity() == 5);
  CHECK(rate_limiter{limit(1, 1, 1001)}.capacity() <= 1001);
  auto t = clock_type::now();
  CHECK(limiter.take("victim", t).allowed);
  CHECK_FALSE(limiter.take("victim", t).allowed);
  // The victim keeps its (empty) bucket while it is used more recently than the others in its set.
  for (int i = 0; i < 20000; ++i) {
    t += std::chrono::microseconds{1};
    limiter.take("spray-" + std::to_string(i), t);
    if (i % 100 == 0)
      CHECK_FALSE(limiter.take("victim", t).allowed);
  }
}

TEST_CASE("buckets shared by threads lose no token", "[unit][ratelimit]") {
  rate_limiter limiter{limit(0.001, 1000)};
  const auto t0 = clock_type::now();
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      for (int j = 0; j < 500; ++j)
        if (limiter.take("shared", t0).allowed)
          allowed.fetch_add(1);
    });
  for (auto& t : threads)
    t.join();
  CHECK(allowed.load() == 1000);
}

TEST_CASE("threads that meet a new key at once share one full bucket", "[unit][ratelimit]") {
  // The claim of a new key and a first take by another thread race: the claimer's reset of the
  // bucket must not give back a token already taken. Many fresh keys, threads released together.
  constexpr int burst = 8, rounds = 500;
  int wrong = 0;
  for (int round = 0; round < rounds; ++round) {
    rate_limiter limiter{limit(0.001, burst)};
    const auto t0 = clock_type::now();
    std::atomic<int> allowed{0}, ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
      threads.emplace_back([&] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        for (int j = 0; j < burst; ++j)
          if (limiter.take("fresh", t0).allowed)
            allowed.fetch_add(1);
      });
    while (ready.load() < 4) {
    }
    go.store(true, std::memory_order_release);
    for (auto& t : threads)
      t.join();
    wrong += allowed.load() != burst;
  }
  CHECK(wrong == 0);
}

TEST_CASE("the rate limit key: peer, header, claim, route", "[unit][ratelimit]") {
  const std::vector<std::pair<std::string, std::string>> headers{{"x-api-key", "k1"}, {"x-api-key", "k2"}};
  const nlohmann::json claims{{"sub", "alice"}, {"org", 7}};
  auto cfg = limit(1, 1);
  cfg.per = rate_limit_config::key_kind::ip;
  CHECK(rate_limit_key(cfg, "127.0.0.9", headers, &claims) == "127.0.0.9");
  cfg.per = rate_limit_config::key_kind::header;
  cfg.name = "x-api-key";
  CHECK(rate_limit_key(cfg, "127.0.0.9", headers, &claims) == "k1");
  cfg.name = "x-other";
  CHECK(rate_limit_key(cfg, "127.0.0.9", headers, &claims).empty());
  cfg.per = rate_limit_config::key_kind::claim;
  cfg.name = "org";
  CHECK(rate_limit_key(cfg, "127.0.0.9", headers, &claims) == "7");
  CHECK(rate_limit_key(cfg, "127.0.0.9", headers, nullptr).empty());
  cfg.per = rate_limit_config::key_kind::route;
  CHECK(rate_limit_key(cfg, "127.0.0.9", headers, &claims).empty());
}

TEST_CASE("the keyed hash is SipHash under a per-process key", "[unit][ratelimit]") {
  CHECK(keyed_hash("a") == keyed_hash("a"));
  CHECK(keyed_hash("a") != keyed_hash("b"));
  std::uint64_t other = 0;
  std::thread([&] { other = keyed_hash("a"); }).join();
  CHECK(other == keyed_hash("a")); // one key for every thread
}
