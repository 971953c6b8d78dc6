// The attempt runner (attempt_runner.hpp) at its seam: a small actor makes one logical call's
// attempts through it as the section worker and the batch coordinator do (attempt, hedge on
// (hedge_atom), retry on (retry_atom), the step after a failure), with a real downstream_client
// calling real HTTP servers on 127.0.0.1. The actor only follows the messages; every decision and
// every call is the runner's.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <caf/all.hpp>

#include "gather/actors/attempt_runner.hpp"
#include "gather/actors/messages.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/resilience/retry_budget.hpp"
#include "gather/tracing/span_exporter.hpp"
#include "gather/values/atoms.hpp"
#include "gather/values/gateway_stats.hpp"

#include "support/test_helpers.hpp"
#include "support/test_server.hpp"

using namespace gather;
using gather::test::eventually;
using std::chrono::milliseconds;

namespace {

using runner_clock = std::chrono::steady_clock;

/// What one run is given: the call, its policy, and what the runner reports to.
struct runner_setup {
  call_description call;
  retry_policy policy;
  millis timeout{1000};
  millis deadline_in{5000};
  retry_budget* budget = nullptr;
  std::optional<std::chrono::microseconds> hedge_after;
  std::shared_ptr<std::atomic<bool>> answered = std::make_shared<std::atomic<bool>>(false);
  downstream_client* client = nullptr;
  gateway_stats* stats = nullptr;
  span_exporter* spans = nullptr;
};

/// The end of a run as the test reads it.
struct run_report {
  section_outcome outcome;
  std::int32_t calls = 0;
  std::string steps; ///< "later", "retry", "now", "hedge" as they happened, comma-separated
  bool hedge_won = false;
};

} // namespace

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<run_report>)

namespace {

struct runner_harness_state {
  std::shared_ptr<runner_setup> setup;
  attempt_runner runner;
  steady_time deadline;
  caf::actor report_to;
  std::string steps;
  static inline const char* name = "attempt_runner_harness";
};

using runner_harness_ptr = caf::stateful_actor<runner_harness_state>*;
constexpr std::size_t runner_harness_key = 7;

void runner_note(runner_harness_ptr self, const char* step) {
  auto& steps = self->state.steps;
  steps += steps.empty() ? "" : ",";
  steps += step;
}

void runner_launch(runner_harness_ptr self) {
  auto& st = self->state;
  static const std::string span_name = "probe";
  auto call = st.setup->call; // each call its own description
  st.runner.launch(std::move(call), call_labels{st.setup->spans, &span_name, nullptr},
                   call_return{caf::actor_cast<caf::actor>(self), st.setup->answered, st.setup->stats, runner_harness_key},
                   st.setup->hedge_after, concurrency_limit::slot{}, runner_clock::now());
}

void runner_attempt(runner_harness_ptr self) {
  self->state.runner.begin_attempt(runner_clock::now(), self->state.setup->budget);
  runner_launch(self);
}

void runner_report_end(runner_harness_ptr self, section_outcome&& outcome, bool hedge_won) {
  auto& st = self->state;
  auto report = std::make_shared<run_report>();
  report->outcome = std::move(outcome);
  report->calls = st.runner.calls();
  report->steps = st.steps;
  report->hedge_won = hedge_won;
  self->send(st.report_to, std::move(report));
  self->quit();
}

caf::behavior runner_harness(caf::stateful_actor<runner_harness_state>* self, std::shared_ptr<runner_setup> setup,
                      caf::actor report_to) {
  auto& st = self->state;
  st.runner = attempt_runner{*setup->client};
  st.deadline = runner_clock::now() + setup->deadline_in;
  st.setup = std::move(setup);
  st.report_to = std::move(report_to);
  runner_attempt(self);
  return {
    [self](done_atom, std::size_t key, std::uint32_t seq, answer_verdict& verdict) {
      auto& st = self->state;
      steady_time started;
      call_span span;
      if (key != runner_harness_key || !st.runner.end_call(seq, started, span))
        return;
      const bool retryable = verdict.retryable;
      auto outcome = outcome_of(std::move(verdict));
      if (outcome.status == section_status::ok) {
        const bool hedge_won = st.runner.is_hedge(seq);
        st.runner.cancel();
        return runner_report_end(self, std::move(outcome), hedge_won);
      }
      if (st.runner.running())
        return;
      const auto& s = *st.setup;
      switch (st.runner.after_failure(self, runner_harness_key, retryable, s.policy, s.timeout, st.deadline,
                                      s.budget, outcome)) {
        case retry_step::now:
          runner_note(self, "now");
          return runner_attempt(self);
        case retry_step::later:
          runner_note(self, "later");
          return;
        case retry_step::none:
          return runner_report_end(self, std::move(outcome), false);
      }
    },
    [self](retry_atom, std::size_t key) {
      if (key != runner_harness_key)
        return;
      runner_note(self, "retry");
      runner_attempt(self);
    },
    [self](hedge_atom, std::size_t key, std::uint32_t number) {
      auto& st = self->state;
      if (key != runner_harness_key || number != st.runner.attempt() || !st.runner.running())
        return;
      runner_note(self, "hedge");
      st.setup->hedge_after.reset(); // one hedge
      runner_launch(self);
    },
  };
}

/// A real client, an actor system, and a run of the harness against `url`.
struct runner_rig {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> system;
  downstream_client client;
  gateway_stats stats;
  span_exporter spans;

  runner_rig() {
    register_message_types(cfg);
    system = std::make_unique<caf::actor_system>(cfg);
  }

  std::shared_ptr<runner_setup> setup(const std::string& url) {
    auto s = std::make_shared<runner_setup>();
    s->call.url = url;
    s->call.header_lines = "Accept: application/json\r\n";
    s->client = &client;
    s->stats = &stats;
    s->spans = &spans;
    return s;
  }

  /// Runs the harness to its report (none within 10 s fails the test).
  run_report run(std::shared_ptr<runner_setup> s) {
    caf::scoped_actor me{*system};
    system->spawn(runner_harness, std::move(s), caf::actor{me});
    run_report out;
    bool got = false;
    me->receive([&](std::shared_ptr<run_report>& r) { out = *r; got = true; },
                caf::after(std::chrono::seconds(10)) >> [] {});
    REQUIRE(got);
    return out;
  }
};

/// A server whose first `failures` calls answer 503, then 200 with a JSON body.
std::unique_ptr<test::test_server> runner_flaky_server(int failures, std::shared_ptr<std::atomic<int>> seen) {
  auto srv = std::make_unique<test::test_server>();
  srv->get("/x", [failures, seen](const httplib::Request&, httplib::Response& res) {
    if (seen->fetch_add(1) < failures) {
      res.status = 503;
      res.set_content("{}", "application/json");
      return;
    }
    res.set_content(R"({"ok":true})", "application/json");
  });
  srv->start();
  return srv;
}

/// What a run against runner_flaky_server(failures) with `policy` ended with, `tweak` setting the
/// rest of the run, and how many calls the server saw.
struct flaky_result {
  run_report report;
  int server_calls = 0;
};

flaky_result run_flaky(int failures, retry_policy policy,
                       const std::function<void(runner_setup&)>& tweak = {}) {
  auto seen = std::make_shared<std::atomic<int>>(0);
  auto srv = runner_flaky_server(failures, seen);
  runner_rig rig;
  auto s = rig.setup(srv->base_url() + "/x");
  s->policy = policy;
  if (tweak)
    tweak(*s);
  flaky_result out;
  out.report = rig.run(s);
  out.server_calls = srv->calls();
  return out;
}

} // namespace

TEST_CASE("attempt runner: a retryable failure is retried after its backoff, counted, then ok", "[actors][retry]") {
  const auto [r, server_calls] = run_flaky(1, retry_policy{3, millis{20}, 2.0});
  CHECK(r.outcome.status == section_status::ok);
  CHECK(r.outcome.data == R"({"ok":true})");
  CHECK(r.calls == 2);
  CHECK(r.steps == "later,retry"); // the backoff came as (retry_atom, key)
  CHECK(server_calls == 2);
}

TEST_CASE("attempt runner: with no backoff the next attempt starts at once", "[actors][retry]") {
  const auto [r, server_calls] = run_flaky(2, retry_policy{3, millis{0}, 2.0});
  CHECK(r.outcome.status == section_status::ok);
  CHECK(r.calls == 3);
  CHECK(r.steps == "now,now");
  CHECK(server_calls == 3);
}

TEST_CASE("attempt runner: the attempts of the policy are all it makes", "[actors][retry]") {
  const auto [r, server_calls] = run_flaky(100, retry_policy{2, millis{0}, 2.0});
  CHECK(r.outcome.status == section_status::error);
  CHECK(r.outcome.last_http == 503);
  CHECK(r.calls == 2);
  CHECK(server_calls == 2);
  CHECK(r.outcome.not_made == not_made_reason::none);
}

TEST_CASE("attempt runner: a spent retry budget makes no retry and says so", "[actors][retry]") {
  retry_budget budget{retry_budget_policy{0.0, 0.0}}; // no room for any extra call
  const auto [r, server_calls] = run_flaky(100, retry_policy{3, millis{0}, 2.0},
                                           [&](runner_setup& s) { s.budget = &budget; });
  CHECK(r.outcome.status == section_status::error);
  CHECK(r.calls == 1);
  CHECK(server_calls == 1);
  CHECK(r.outcome.not_made == not_made_reason::retry_budget);
  CHECK(r.outcome.detail.find("no retry: the retry budget of its host is spent") != std::string::npos);
}

TEST_CASE("attempt runner: a retry that could not end before the deadline is not made", "[actors][retry]") {
  const auto [r, server_calls] = run_flaky(100, retry_policy{3, millis{0}, 2.0}, [](runner_setup& s) {
    s.timeout = millis{2000};
    s.deadline_in = millis{1500}; // a retry's whole timeout would pass it
  });
  CHECK(r.calls == 1);
  CHECK(server_calls == 1);
  CHECK(r.outcome.not_made == not_made_reason::none);
  CHECK(r.outcome.detail.find("no retry: it would not finish before the deadline") != std::string::npos);
}

TEST_CASE("attempt runner: a call unanswered after the hedge delay gets a hedge, which may win", "[actors][hedge]") {
  auto seen = std::make_shared<std::atomic<int>>(0);
  test::test_server srv;
  srv.get("/x", [&srv, seen](const httplib::Request&, httplib::Response& res) {
    if (seen->fetch_add(1) == 0)
      srv.delay(milliseconds{3000}); // the first call is slow: the hedge answers first
    res.set_content(R"({"n":1})", "application/json");
  });
  srv.start();
  runner_rig rig;
  auto s = rig.setup(srv.base_url() + "/x");
  s->hedge_after = std::chrono::milliseconds{50};
  s->call.timeout = millis{5000};
  const auto started = runner_clock::now();
  const auto r = rig.run(s);
  CHECK(r.outcome.status == section_status::ok);
  CHECK(r.steps == "hedge");
  CHECK(r.hedge_won);
  CHECK(r.calls == 2);
  CHECK(runner_clock::now() - started < milliseconds{2500}); // it did not wait for the slow one
}

TEST_CASE("attempt runner: a call that answers before the hedge delay makes no hedge", "[actors][hedge]") {
  const auto [r, server_calls] = run_flaky(0, retry_policy{}, [](runner_setup& s) {
    s.hedge_after = std::chrono::milliseconds{2000};
  });
  CHECK(r.outcome.status == section_status::ok);
  CHECK(r.steps.empty());
  CHECK(r.calls == 1);
  CHECK(server_calls == 1);
  CHECK_FALSE(r.hedge_won);
}

TEST_CASE("attempt runner: its end cancels the calls still running (their connections close)", "[actors]") {
  test::silent_server srv;
  runner_rig rig;
  {
    auto s = rig.setup(srv.base_url() + "/x");
    s->call.timeout = millis{10000};
    caf::scoped_actor me{*rig.system};
    auto h = rig.system->spawn(runner_harness, s, caf::actor{me});
    REQUIRE(eventually([&] { return srv.accepted() == 1; }, milliseconds{5000}));
    caf::anon_send_exit(h, caf::exit_reason::kill); // the runner goes with its actor's state
    REQUIRE(eventually([&] { return srv.closed_by_peer() == 1; }, milliseconds{5000}));
  }
  CHECK(rig.client.inflight() == 0);
  CHECK(rig.stats.late_replies.load() == 0);
}

TEST_CASE("attempt runner: a verdict after its request was answered is counted late, not sent", "[actors]") {
  test::test_server srv;
  std::atomic<bool> release{false};
  srv.get("/x", [&](const httplib::Request&, httplib::Response& res) {
    while (!release.load())
      std::this_thread::sleep_for(milliseconds{5});
    res.set_content("{}", "application/json");
  });
  srv.start();
  runner_rig rig;
  auto s = rig.setup(srv.base_url() + "/x");
  caf::scoped_actor me{*rig.system};
  rig.system->spawn(runner_harness, s, caf::actor{me});
  REQUIRE(eventually([&] { return srv.calls() == 1; }, milliseconds{5000}));
  s->answered->store(true); // the request's answer left first
  release = true;
  REQUIRE(eventually([&] { return rig.stats.late_replies.load() == 1; }, milliseconds{5000}));
  bool reported = false;
  me->receive([&](std::shared_ptr<run_report>&) { reported = true; }, caf::after(milliseconds{0}) >> [] {});
  CHECK_FALSE(reported);
}
