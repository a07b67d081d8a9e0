#include "exporters/prometheus/prometheus_text.h"

#include <array>
#include <charconv>
#include <cmath>
#include <unordered_map>
#include <utility>

namespace gym::exporters {

using telemetry::Attribute;
using telemetry::AttributeSet;
using telemetry::AttributeValue;
using telemetry::HistogramPoint;
using telemetry::InstrumentDescriptor;
using telemetry::InstrumentKind;
using telemetry::MetricData;
using telemetry::MetricsSnapshot;
using telemetry::MetricType;
using telemetry::NumberPoint;

namespace {

struct UnitWord {
  std::string_view unit;
  std::string_view word;
};

// UCUM units (case-sensitive, as OTel writes them) and the word Prometheus conventions use.
constexpr std::array kUnitWords{
    // time
    UnitWord{"d", "days"},
    UnitWord{"h", "hours"},
    UnitWord{"min", "minutes"},
    UnitWord{"s", "seconds"},
    UnitWord{"ms", "milliseconds"},
    UnitWord{"us", "microseconds"},
    UnitWord{"ns", "nanoseconds"},
    // information
    UnitWord{"By", "bytes"},
    UnitWord{"KiBy", "kibibytes"},
    UnitWord{"MiBy", "mebibytes"},
    UnitWord{"GiBy", "gibibytes"},
    UnitWord{"TiBy", "tibibytes"},
    UnitWord{"KBy", "kilobytes"},
    UnitWord{"MBy", "megabytes"},
    UnitWord{"GBy", "gigabytes"},
    UnitWord{"TBy", "terabytes"},
    UnitWord{"bit", "bits"},
    // SI
    UnitWord{"m", "meters"},
    UnitWord{"V", "volts"},
    UnitWord{"A", "amperes"},
    UnitWord{"J", "joules"},
    UnitWord{"W", "watts"},
    UnitWord{"g", "grams"},
    // misc
    UnitWord{"Cel", "celsius"},
    UnitWord{"Hz", "hertz"},
    UnitWord{"%", "percent"},
};

// The denominator of a rate unit (`By/s` -> `bytes_per_second`).
constexpr std::array kPerUnitWords{
    UnitWord{"s", "second"}, UnitWord{"m", "minute"}, UnitWord{"min", "minute"},
    UnitWord{"h", "hour"},   UnitWord{"d", "day"},    UnitWord{"w", "week"},
    UnitWord{"mo", "month"}, UnitWord{"y", "year"},
};

template <std::size_t N>
std::string_view lookup(const std::array<UnitWord, N>& table, std::string_view unit) {
  for (const auto& u : table)
    if (u.unit == unit) return u.word;
  return unit;
}

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Invalid characters -> `_`, runs of `_` collapsed, appended to `out`.
void append_sanitized(std::string& out, std::string_view text) {
  for (char c : text) {
    if (!name_char(c)) c = '_';
    if (c == '_' && !out.empty() && out.back() == '_') continue;
    out.push_back(c);
  }
}

std::string sanitized(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 1);
  append_sanitized(out, text);
  return out;
}

bool has_suffix(std::string_view name, std::string_view word) {
  if (name == word) return true;
  return name.size() > word.size() && name.ends_with(word) &&
         name[name.size() - word.size() - 1] == '_';
}

bool is_gauge(InstrumentKind k) { return telemetry::metric_type(k) == MetricType::gauge; }

void append_escaped(std::string& out, std::string_view text, bool quote) {
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '"':
        if (quote) {
          out += "\\\"";
          break;
        }
        [[fallthrough]];
      default:
        out.push_back(c);
    }
  }
}

void append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }
}

template <class Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_value(std::string& out, const AttributeValue& v) {
  switch (v.index()) {
    case 0:
      append_escaped(out, std::get<std::string>(v), true);
      break;
    case 1:
      out += std::get<bool>(v) ? "true" : "false";
      break;
    case 2:
      append_int(out, std::get<std::int64_t>(v));
      break;
    default:
      append_number(out, std::get<double>(v));
      break;
  }
}

const char* type_word(MetricType t, bool monotonic) {
  switch (t) {
    case MetricType::histogram:
      return "histogram";
    case MetricType::sum:
      return monotonic ? "counter" : "gauge";
    default:
      return "gauge";
  }
}

// Writes label lists. Caches converted label names for the duration of one rendering.
class LabelWriter {
 public:
  explicit LabelWriter(const telemetry::InstrumentationScope& scope) {
    scope_labels_ = "otel_scope_name=\"";
    append_escaped(scope_labels_, scope.name, true);
    scope_labels_ += "\",otel_scope_version=\"";
    append_escaped(scope_labels_, scope.version, true);
    scope_labels_ += '"';
  }

  // `a="x",b="y"` for `attributes` (no braces), skipping reserved label names, then the scope
  // labels unless `with_scope` is false.
  void write(std::string& out, const AttributeSet& attributes, bool histogram,
             bool with_scope = true) {
    resolved_.clear();
    bool clash = false;
    for (const Attribute& a : attributes) {
      const std::string& n = name(a.key);
      if (n == "otel_scope_name" || n == "otel_scope_version" || (histogram && n == "le")) continue;
      for (const Entry& e : resolved_) clash = clash || *e.name == n;
      resolved_.push_back({&n, &a.value});
    }
    const std::size_t start = out.size();
    for (std::size_t i = 0; i < resolved_.size(); ++i) {
      const std::string* n = resolved_[i].name;
      bool seen = false;
      for (std::size_t j = 0; clash && j < i; ++j) seen = seen || *resolved_[j].name == *n;
      if (seen) continue;
      out += *n;
      out += "=\"";
      append_value(out, *resolved_[i].value);
      // Keys that convert to the same label name: one label, values joined with ';' in key order.
      for (std::size_t j = i + 1; clash && j < resolved_.size(); ++j) {
        if (*resolved_[j].name != *n) continue;
        out += ';';
        append_value(out, *resolved_[j].value);
      }
      out += "\",";
    }
    if (with_scope) {
      out += scope_labels_;
    } else if (out.size() > start) {
      out.pop_back();  // the last ','
    }
  }

 private:
  struct Entry {
    const std::string* name;  // in names_, stable (node-based map)
    const AttributeValue* value;
  };

  const std::string& name(const std::string& key) {
    auto it = names_.find(key);
    if (it == names_.end()) it = names_.emplace(key, prometheus_label_name(key)).first;
    return it->second;
  }

  std::string scope_labels_;
  std::unordered_map<std::string, std::string> names_;
  std::vector<Entry> resolved_;
};

struct Family {
  std::string name;
  const char* type;  // counter, gauge or histogram
  std::vector<const MetricData*> metrics;
};

void write_help(std::string& out, const Family& f) {
  const auto& d = f.metrics.front()->descriptor;
  out += "# HELP ";
  out += f.name;
  out += ' ';
  append_escaped(out, d.description.empty() ? d.name : d.description, false);
  out += "\n# TYPE ";
  out += f.name;
  out += ' ';
  out += f.type;
  out += '\n';
}

void write_numbers(std::string& out, const Family& f, LabelWriter& labels) {
  for (const MetricData* m : f.metrics) {
    for (const NumberPoint& p : m->number_points()) {
      out += f.name;
      out += '{';
      labels.write(out, p.attributes, false);
      out += "} ";
      if (const auto* i = std::get_if<std::int64_t>(&p.value)) {
        append_int(out, *i);
      } else {
        append_number(out, std::get<double>(p.value));
      }
      out += '\n';
    }
  }
}

void write_histograms(std::string& out, const Family& f, LabelWriter& labels,
                      std::string& scratch) {
  for (const MetricData* m : f.metrics) {
    std::vector<std::string> le;
    le.reserve(m->descriptor.bounds.size());
    for (double b : m->descriptor.bounds) le.push_back(prometheus_number(b));
    for (const HistogramPoint& p : m->histogram_points()) {
      scratch.clear();
      labels.write(scratch, p.attributes, true);
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i <= le.size(); ++i) {
        if (i < p.bucket_counts.size()) cumulative += p.bucket_counts[i];
        out += f.name;
        out += "_bucket{";
        out += scratch;
        out += ",le=\"";
        out += i < le.size() ? std::string_view(le[i]) : std::string_view("+Inf");
        out += "\"} ";
        append_int(out, i < le.size() ? cumulative : p.count);
        out += '\n';
      }
      out += f.name;
      out += "_sum{";
      out += scratch;
      out += "} ";
      append_number(out, p.sum);
      out += '\n';
      out += f.name;
      out += "_count{";
      out += scratch;
      out += "} ";
      append_int(out, p.count);
      out += '\n';
    }
  }
}

}  // namespace

std::string prometheus_unit_suffix(std::string_view unit, InstrumentKind kind) {
  // Drop annotations: `{request}` -> "", `By/{request}` -> `By/`.
  std::string plain;
  int depth = 0;
  for (char c : unit) {
    if (c == '{') {
      ++depth;
    } else if (c == '}' && depth > 0) {
      --depth;
    } else if (depth == 0 && c != ' ') {
      plain.push_back(c);
    }
  }
  if (plain.empty()) return {};
  if (plain == "1") return is_gauge(kind) ? "ratio" : "";
  std::string_view text = plain;
  std::string_view num = text, den;
  if (auto slash = text.find('/'); slash != std::string_view::npos) {
    num = text.substr(0, slash);
    den = text.substr(slash + 1);
  }
  std::string out;
  if (!num.empty() && num != "1") append_sanitized(out, lookup(kUnitWords, num));
  if (!den.empty()) {
    if (!out.empty()) out += '_';
    out += "per_";
    append_sanitized(out, lookup(kPerUnitWords, den));
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  while (!out.empty() && out.front() == '_') out.erase(0, 1);
  return out;
}

std::string prometheus_metric_name(const InstrumentDescriptor& d) {
  std::string name = sanitized(d.name);
  if (!name.empty() && name.front() >= '0' && name.front() <= '9') name.insert(0, "_");
  const bool counter = telemetry::is_monotonic(d.kind);
  if (counter && has_suffix(name, "total")) {
    name.resize(name.size() - 5);
    if (!name.empty() && name.back() == '_') name.pop_back();
  }
  const std::string unit = prometheus_unit_suffix(d.unit, d.kind);
  if (!unit.empty() && !has_suffix(name, unit)) {
    if (!name.empty()) name += '_';
    name += unit;
  }
  if (counter) name += name.empty() ? "total" : "_total";
  return name;
}

std::string prometheus_label_name(std::string_view key) {
  std::string name = sanitized(key);
  if (name.empty()) return "key_";
  if (name.front() >= '0' && name.front() <= '9') name.insert(0, "key_");
  return name;
}

std::string prometheus_number(double value) {
  std::string out;
  append_number(out, value);
  return out;
}

std::string render_prometheus_text(const MetricsSnapshot& snapshot,
                                   std::vector<std::string>* conflicts) {
  // Families in first-seen order; OTel metrics converting to one name share a family.
  std::vector<Family> families;
  std::unordered_map<std::string, std::size_t> by_name;
  families.reserve(snapshot.metrics.size());
  for (const MetricData& m : snapshot.metrics) {
    std::string name = prometheus_metric_name(m.descriptor);
    const char* type = type_word(m.type(), m.monotonic());
    if (name == "target_info") {
      if (conflicts) conflicts->push_back(m.descriptor.name);
      continue;
    }
    auto [it, fresh] = by_name.emplace(name, families.size());
    if (fresh) {
      families.push_back(Family{std::move(name), type, {&m}});
    } else if (Family& f = families[it->second]; f.type == type) {
      f.metrics.push_back(&m);
    } else if (conflicts) {
      conflicts->push_back(m.descriptor.name);
    }
  }

  std::string out;
  out.reserve(256 + snapshot.metrics.size() * 512);
  LabelWriter labels(snapshot.scope);
  if (!snapshot.resource.attributes.empty()) {
    out += "# HELP target_info Target metadata\n# TYPE target_info gauge\ntarget_info{";
    labels.write(out, snapshot.resource.attributes, false, false);
    out += "} 1\n";
  }
  std::string scratch;
  for (const Family& f : families) {
    write_help(out, f);
    if (f.metrics.front()->type() == MetricType::histogram) {
      write_histograms(out, f, labels, scratch);
    } else {
      write_numbers(out, f, labels);
    }
  }
  return out;
}

}  // namespace gym::exporters
