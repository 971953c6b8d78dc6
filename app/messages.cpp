#include "gather/messages.hpp"

namespace gather {

void register_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<section_outcome>("gather.section_outcome");
  cfg.add_message_type<transfer_result>("gather.transfer_result");
}

} // namespace gather
