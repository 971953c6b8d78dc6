#include "gather/actors/messages.hpp"

#include "gather/actors/section_cache.hpp"
#include "gather/values/section_work.hpp"

namespace gather {

void register_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<section_outcome>("gather.section_outcome");
  cfg.add_message_type<transfer_result>("gather.transfer_result");
  cfg.add_message_type<answer_verdict>("gather.answer_verdict");
  cfg.add_message_type<cache_answer>("gather.cache_answer");
  cfg.add_message_type<section_work>("gather.section_work");
}

void enable_failure_detection(caf::actor_system_config& cfg) {
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds{500}});
  cfg.set("middleman.connection-timeout", caf::timespan{std::chrono::seconds{2}});
}

} // namespace gather
