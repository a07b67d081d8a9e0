#include "core/process_limits.h"

#include <sys/resource.h>

#include <algorithm>

namespace gym::core {

void raise_fd_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  rlim_t want = std::min<rlim_t>(65535, r.rlim_max);
  if (r.rlim_cur < want) {
    r.rlim_cur = want;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace gym::core
