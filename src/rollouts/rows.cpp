#include "rollouts/rows.h"

#include "core/config.h"
#include "core/json_text.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace gym::rollouts {
namespace json = boost::json;

namespace {

std::int64_t integer_field(const json::object& row, std::string_view key) {
  const auto* v = row.if_contains(key);
  if (!v) throw std::runtime_error("row has no " + std::string(key));
  if (v->is_int64()) return v->get_int64();
  // Beyond int64 is no index (it would wrap negative); a double is checked for range before the
  // cast, which is undefined outside [-2^63, 2^63).
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (v->is_uint64() && v->get_uint64() <= std::numeric_limits<std::int64_t>::max())
    return static_cast<std::int64_t>(v->get_uint64());
  if (v->is_double() && v->get_double() >= -kTwoTo63 && v->get_double() < kTwoTo63 &&
      v->get_double() == std::trunc(v->get_double()))
    return static_cast<std::int64_t>(v->get_double());
  throw std::runtime_error(std::string(key) + " is not an integer: " + core::render_json(*v));
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

// The lines of a file, read in blocks; a line longer than the limit is refused before more of it
// than the limit is held (a 1 GB line must not cost gigabytes).
class LineReader {
 public:
  struct TooLong {};
  LineReader(std::streambuf& in, std::size_t max_bytes) : in_(in), max_bytes_(max_bytes) {}

  // The next line without its newline; false at the end of the file. Throws TooLong.
  bool next(std::string& line, bool& had_newline) {
    line.clear();
    for (;;) {
      if (pos_ == end_ && !fill()) {
        had_newline = false;
        return !line.empty();
      }
      const char* start = block_.data() + pos_;
      const auto* newline = static_cast<const char*>(std::memchr(start, '\n', end_ - pos_));
      const std::size_t n = newline ? static_cast<std::size_t>(newline - start) : end_ - pos_;
      if (max_bytes_ != 0 && line.size() + n > max_bytes_) throw TooLong{};
      line.append(start, n);
      pos_ += n;
      if (newline) {
        ++pos_;
        had_newline = true;
        return true;
      }
    }
  }

 private:
  bool fill() {
    pos_ = 0;
    end_ = static_cast<std::size_t>(
        std::max<std::streamsize>(0, in_.sgetn(block_.data(), block_.size())));
    return end_ > 0;
  }

  std::streambuf& in_;
  std::size_t max_bytes_;
  std::vector<char> block_ = std::vector<char>(1 << 16);
  std::size_t pos_ = 0, end_ = 0;
};

// Byte-identical input lines share a task index. A line is remembered by a hash of its bytes
// and where it starts, not by its bytes (the input may be gigabytes); a hash seen before is
// confirmed by reading the earlier line again, which happens only for repeated lines (or a
// collision of hashes, which then costs a read and nothing else).
class TaskIndices {
 public:
  explicit TaskIndices(const std::filesystem::path& input) : reread_(input, std::ios::binary) {}

  std::int64_t of(const JsonlLine& line) {
    const std::size_t hash = std::hash<std::string>{}(line.raw);
    auto [first, last] = seen_.equal_range(hash);
    for (auto it = first; it != last; ++it)
      if (same_bytes(it->second.offset, line.raw)) return it->second.task;
    const std::int64_t task = next_++;
    seen_.emplace(hash, Seen{line.offset, task});
    return task;
  }

 private:
  struct Seen {
    std::uint64_t offset;
    std::int64_t task;
  };

  bool same_bytes(std::uint64_t offset, const std::string& raw) {
    earlier_.resize(raw.size());
    reread_.clear();
    reread_.seekg(static_cast<std::streamoff>(offset));
    return reread_.read(earlier_.data(), static_cast<std::streamsize>(raw.size())) &&
           earlier_ == raw;
  }

  std::ifstream reread_;
  std::string earlier_;
  std::unordered_multimap<std::size_t, Seen> seen_;
  std::int64_t next_ = 0;
};

}  // namespace

RolloutKey key_of(const json::object& row) {
  return {integer_field(row, "_ng_task_index"), integer_field(row, "_ng_rollout_index")};
}

std::string agent_of(const json::object& row) {
  const auto* ref = row.if_contains("agent_ref");
  if (!ref || !ref->is_object()) return "";
  const auto* name = ref->get_object().if_contains("name");
  return name && name->is_string() ? std::string(name->get_string()) : "";
}

void for_each_jsonl(const std::filesystem::path& path, const std::function<void(JsonlLine&)>& each,
                    const JsonlReading& how) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path.string() + ": no such file or not readable");
  LineReader reader(*in.rdbuf(), how.max_line_bytes);
  JsonlLine line;
  std::int64_t delivered = 0;
  std::uint64_t offset = 0;
  bool had_newline = false;
  for (std::size_t number = 1; !how.max_lines || delivered < *how.max_lines; ++number) {
    line.raw.clear();
    try {
      if (!reader.next(line.raw, had_newline)) break;
    } catch (const LineReader::TooLong&) {
      throw JsonlLineError(path.string() + " line " + std::to_string(number) + ": longer than " +
                               std::to_string(how.max_line_bytes) +
                               " bytes, the largest request body a server accepts "
                               "(http_max_request_body_bytes); shorten the row, or raise "
                               "http_max_request_body_bytes for the collector and the servers",
                           number);
    }
    const std::uint64_t start = offset;
    offset += line.raw.size() + (had_newline ? 1 : 0);
    if (line.raw.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (how.repair_utf8 && !core::is_valid_utf8(line.raw))
      line.raw = core::utf8_replace_invalid(line.raw);
    boost::system::error_code ec;
    auto value = core::parse_json(line.raw, ec);
    if (ec || !value.is_object())
      throw JsonlLineError(path.string() + " line " + std::to_string(number) + ": " +
                               (ec ? "not valid JSON (" + ec.message() + ")" : "not a JSON object"),
                           number);
    if (had_newline) line.raw.push_back('\n');
    line.number = number;
    line.offset = start;
    line.row = std::move(value.get_object());
    ++delivered;
    each(line);
  }
}

std::vector<JsonlLine> read_jsonl(const std::filesystem::path& path,
                                  std::optional<std::int64_t> max_lines,
                                  std::size_t max_line_bytes) {
  JsonlReading how;
  how.max_lines = max_lines;
  how.max_line_bytes = max_line_bytes;
  std::vector<JsonlLine> lines;
  for_each_jsonl(
      path, [&](JsonlLine& line) { lines.push_back(std::move(line)); }, how);
  return lines;
}

void for_each_input_line(const std::filesystem::path& input, const CollectionOptions& options,
                         const std::function<void(JsonlLine&)>& each) {
  JsonlReading how;
  how.max_lines = options.limit;
  how.max_line_bytes = options.max_row_bytes;
  bool reading = true;  // an error of the file, not of what `each` does with a line
  try {
    for_each_jsonl(
        input,
        [&](JsonlLine& line) {
          reading = false;
          each(line);
          reading = true;
        },
        how);
  } catch (const std::runtime_error& e) {
    if (!reading || dynamic_cast<const core::ConfigError*>(&e)) throw;
    throw core::ConfigError(std::string("input: ") + e.what());
  }
}

std::size_t check_rows(const std::filesystem::path& input, const CollectionOptions& options,
                       const std::vector<std::string>& agents) {
  // The problems of every line, reported together (the first kMaxProblems of them: a wrong
  // file of a million lines needs no million-line message).
  constexpr std::size_t kMaxProblems = 100;
  std::vector<std::string> problems;
  std::size_t problem_count = 0;
  std::set<std::string> missing_repeats;
  std::set<std::string> unknown_agents;
  std::size_t rows = 0;
  for_each_input_line(input, options, [&](JsonlLine& line) {
    ++rows;
    const std::string where = "  line " + std::to_string(line.number) + ": ";
    auto problem = [&](std::string text) {
      if (problem_count++ < kMaxProblems) problems.push_back(where + text);
    };
    const auto* params = line.row.if_contains("responses_create_params");
    if (!params || !params->is_object()) problem("no responses_create_params object");
    std::string agent = agent_of(line.row);
    if (agent.empty() && line.row.contains("agent_ref")) problem("agent_ref has no name");
    if (agent.empty()) agent = options.agent_name.value_or("");
    if (agent.empty()) {
      problem("no agent: set agent_ref.name in the row or pass --agent NAME");
    } else if (std::find(agents.begin(), agents.end(), agent) == agents.end()) {
      auto hint = core::did_you_mean(agent, agents);
      unknown_agents.insert(agent);
      problem("agent '" + agent + "' is not a responses_api_agents instance" +
              (hint ? " (did you mean '" + *hint + "'?)" : ""));
    } else if (!options.num_repeats.is_fixed() && !options.num_repeats.fallback &&
               !options.num_repeats.per_agent.count(agent)) {
      missing_repeats.insert(agent);
    }
    if (line.row.contains("_ng_task_index")) {
      try {
        integer_field(line.row, "_ng_task_index");
      } catch (const std::exception& e) {
        problem(e.what());
      }
    }
  });
  if (problem_count > 0) {
    std::string msg = input.string() + ": " + std::to_string(problem_count) +
                      " problem(s) in the input rows; nothing was dispatched:\n";
    for (const auto& p : problems) msg += p + "\n";
    if (problem_count > problems.size())
      msg += "  ... and " + std::to_string(problem_count - problems.size()) + " more\n";
    msg += "configured agents: " + join(agents);
    if (!unknown_agents.empty()) {
      // Never a silent substitute: rows made for another environment get its rewards only there.
      const std::string name = *unknown_agents.begin();
      msg += "\nThe rows were made for agent(s) " +
             join(std::vector<std::string>(unknown_agents.begin(), unknown_agents.end())) +
             ", which this deployment does not have. Serve the environment they belong to (`gym "
             "list` shows which preset defines each agent, e.g. --resources-server <env>)";
      if (!agents.empty())
        msg +=
            ", or, to run them through a configured agent on purpose, define the name as a "
            "copy of it: ++" +
            name + "={_copy: " + agents.front() + "} (rewards are then its environment's)";
    }
    throw core::ConfigError(msg);
  }
  if (!missing_repeats.empty()) {
    std::vector<std::string> names(missing_repeats.begin(), missing_repeats.end());
    throw core::ConfigError("num_repeats has no entry for agent(s) " + join(names) +
                            " and no _default; add ++num_repeats._default=<n>");
  }
  return rows;
}

void for_each_expanded_row(const std::filesystem::path& input, const CollectionOptions& options,
                           const std::function<void(json::object&&)>& each) {
  TaskIndices task_of_line(input);
  std::map<std::int64_t, std::int64_t> next_rollout;
  for_each_input_line(input, options, [&](JsonlLine& line) {
    json::object row = std::move(line.row);
    if (!row.contains("agent_ref") && options.agent_name)
      row["agent_ref"] = json::object{{"name", *options.agent_name}};
    auto& params = row["responses_create_params"].as_object();
    for (const auto& kv : options.create_params_overrides) params[kv.key()] = kv.value();
    if (!row.contains("_ng_task_index")) row["_ng_task_index"] = task_of_line.of(line);
    const std::int64_t task = integer_field(row, "_ng_task_index");
    const std::string agent = agent_of(row);
    std::int64_t repeats = options.num_repeats.fixed;
    if (!options.num_repeats.is_fixed()) {
      auto it = options.num_repeats.per_agent.find(agent);
      repeats =
          it != options.num_repeats.per_agent.end() ? it->second : *options.num_repeats.fallback;
    }
    for (std::int64_t r = 0; r < repeats; ++r) {
      json::object copy = row;
      const std::int64_t rollout = next_rollout[task]++;
      copy["_ng_rollout_index"] = rollout;
      if (options.num_repeats_add_seed) {
        const std::string where = input.string() + " line " + std::to_string(line.number) + ": ";
        auto& metadata = copy["responses_create_params"].as_object()["metadata"];
        if (metadata.is_null()) metadata = json::object{};
        if (!metadata.is_object())
          throw core::ConfigError(where +
                                  "responses_create_params.metadata is not an object, so "
                                  "no seed can be added");
        auto& extra = metadata.as_object()["extra_body"];
        json::value body = json::object{};
        if (!extra.is_null()) {
          boost::system::error_code ec;
          if (extra.is_string()) body = core::parse_json(extra.get_string(), ec);
          if (!extra.is_string() || ec || !body.is_object())
            throw core::ConfigError(where +
                                    "responses_create_params.metadata.extra_body is not a "
                                    "JSON object string, so no seed can be added");
        }
        body.as_object()["seed"] = rollout;
        extra = core::render_json_indented(body, -1);  // json.dumps default separators
      }
      each(std::move(copy));
    }
  });
}

std::vector<json::object> expand_rows(const std::filesystem::path& input,
                                      const CollectionOptions& options,
                                      const std::vector<std::string>& agents) {
  check_rows(input, options, agents);
  std::vector<json::object> rows;
  for_each_expanded_row(input, options,
                        [&](json::object&& row) { rows.push_back(std::move(row)); });
  return rows;
}

void write_jsonl(const std::filesystem::path& path, const std::vector<json::object>& rows,
                 bool append) {
  std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  if (!out) throw std::runtime_error("cannot write " + path.string());
  std::string text;
  for (const auto& row : rows) {
    text.clear();
    core::render_json(row, text);
    text.push_back('\n');
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace gym::rollouts
