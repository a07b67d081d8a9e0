#pragma once
// Port checks used before spawning servers (runtime.md 3.3).
#include <cstdint>
#include <string>

namespace gym::orchestrator {

// A port the OS considers free on `host` right now (bind to port 0 and read it back).
std::uint16_t free_port(const std::string& host = "127.0.0.1");
// Whether `port` can be bound on `host` right now.
bool port_free(const std::string& host, int port);

}  // namespace gym::orchestrator
