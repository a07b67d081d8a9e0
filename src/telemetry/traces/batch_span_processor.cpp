// The span batch processor's instance (common/batch_processor_impl.h), whose exported spans go
// back to their pool instead of being freed.
#include "telemetry/traces/batch_span_processor.h"

#include "telemetry/common/batch_processor_impl.h"
#include "telemetry/traces/span_pool.h"

namespace gym::telemetry {

template <>
struct BatchRelease<std::unique_ptr<SpanData>> {
  static void release(std::vector<std::unique_ptr<SpanData>>& batch) noexcept {
    SpanPool::instance().give(batch);
  }
};

template class BatchProcessor<std::unique_ptr<SpanData>>;

}  // namespace gym::telemetry
