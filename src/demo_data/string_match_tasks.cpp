// string_match demo tasks (environments/string_match/README.md): generated word problems with a
// number or a weekday as the answer, each asking for one of the boxed, final_answer or last_line
// formats.
// Wrong trajectories reason to a wrong value, slip by a few units on a large number (the
// grader's 0.98 partial credit), or ignore the requested format.
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cmath>
#include <functional>

#include "demo_data/tasks.h"

namespace gym::demo_data {
namespace json = boost::json;

namespace {

struct Problem {
  std::string topic;
  std::string question;
  std::string answer;
  std::string working;  // reasoning that reaches `answer`
  std::string wrong;    // a tempting wrong answer
  std::string slip;     // reasoning that reaches `wrong`
};

Problem pencils(Rng& r) {
  int p = r.between(12, 95), n = r.between(12, 60);
  return {"shopping",
          fmt::format("Pencils cost {} cents each. How many cents do {} pencils cost?", p, n),
          std::to_string(p * n),
          fmt::format("{} pencils at {} cents each cost {} × {} = {} cents.", n, p, n, p, p * n),
          std::to_string(p * (n - 1)),
          fmt::format("{} pencils at {} cents: {} × {} = {} cents.", n, p, n - 1, p, p * (n - 1))};
}

Problem precedence(Rng& r) {
  int a = r.between(2, 30), b = r.between(2, 15), c = r.between(2, 15);
  return {"arithmetic",
          fmt::format("What is {} + {} × {}?", a, b, c),
          std::to_string(a + b * c),
          fmt::format("Multiplication comes first: {} × {} = {}, and {} + {} = {}.", b, c, b * c, a,
                      b * c, a + b * c),
          std::to_string((a + b) * c),
          fmt::format("From left to right: {} + {} = {}, and {} × {} = {}.", a, b, a + b, a + b, c,
                      (a + b) * c)};
}

Problem weekday(Rng& r) {
  int d = r.below(7), n = r.between(10, 60);
  const auto& day = kDays[static_cast<std::size_t>(d)];
  const auto& answer = kDays[static_cast<std::size_t>((d + n) % 7)];
  const auto& wrong = kDays[static_cast<std::size_t>((d + n + 1) % 7)];
  return {"calendar",
          fmt::format("Today is {}. Which day of the week will it be {} days from now?", day, n),
          answer,
          fmt::format("{} = 7 × {} + {}, so count {} days on from {}: {}.", n, n / 7, n % 7, n % 7,
                      day, answer),
          wrong,
          fmt::format("Counting {} days forward from {} lands on {}.", n, day, wrong)};
}

Problem percent(Rng& r) {
  static const std::vector<int> kRates{10, 15, 20, 25, 30, 40, 50, 75};
  int p = r.pick(kRates), x = 20 * r.between(3, 60);
  return {"percentages",
          fmt::format("What is {}% of {}?", p, x),
          std::to_string(p * x / 100),
          fmt::format("{}% of {} is {} × {} / 100 = {}.", p, x, x, p, p * x / 100),
          std::to_string(p * x / 10),
          fmt::format("{}% of {} is {} × {} / 10 = {}.", p, x, x, p, p * x / 10)};
}

Problem film(Rng& r) {
  int h = r.between(1, 3), m = r.between(5, 55);
  return {"time",
          fmt::format("A film lasts {} h {} min. How long is it in minutes?", h, m),
          std::to_string(60 * h + m),
          fmt::format("{} hours are {} minutes; adding {} gives {}.", h, 60 * h, m, 60 * h + m),
          std::to_string(60 * h + m + 10),
          fmt::format("{} hours are {} minutes; adding {} gives {}.", h, 60 * h + 10, m,
                      60 * h + m + 10)};
}

Problem triangular(Rng& r) {
  int n = r.between(10, 99);
  return {"series",
          fmt::format("What is the sum of the whole numbers from 1 to {}?", n),
          std::to_string(n * (n + 1) / 2),
          fmt::format("Pairing the first and last numbers gives {} × {} / 2 = {}.", n, n + 1,
                      n * (n + 1) / 2),
          std::to_string(n * (n - 1) / 2),
          fmt::format("Pairing the numbers gives {} × {} / 2 = {}.", n, n - 1, n * (n - 1) / 2)};
}

Problem speed(Rng& r) {
  int v = r.between(8, 40), t = r.between(2, 6);
  return {
      "rates",
      fmt::format("A cyclist rides {} km in {} hours at a steady pace. What is her speed in km/h?",
                  v * t, t),
      std::to_string(v),
      fmt::format("Speed is distance over time: {} km / {} h = {} km/h.", v * t, t, v),
      std::to_string(2 * v),
      fmt::format("Covering {} km in {} hours works out to {} km/h.", v * t, t, 2 * v)};
}

Problem product(Rng& r) {
  int a = r.between(101, 999), b = r.between(11, 99);
  int tens = b / 10 * 10, ones = b % 10;
  return {
      "multiplication",
      fmt::format("Compute {} × {}.", a, b),
      std::to_string(a * b),
      fmt::format("{} × {} = {} × {} + {} × {} = {} + {} = {}.", a, b, a, tens, a, ones, a * tens,
                  a * ones, a * b),
      std::to_string(a * (b + 10)),
      fmt::format("{} × {} = {} × {} + {} × {} = {}.", a, b, a, tens + 10, a, ones, a * (b + 10))};
}

const std::vector<std::function<Problem(Rng&)>> kTemplates{pencils, precedence, weekday, percent,
                                                           film,    triangular, speed,   product};

bool is_number(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// The grader on the answers this generator writes: numbers and weekdays compared
// case-insensitively, trailing `.!?` dropped; a number within about 1% scores 0.98.
double grade(const std::string& expected, const std::optional<std::string>& extracted) {
  if (!extracted) return 0.0;
  auto norm = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    while (s.size() > 1 && (s.back() == '.' || s.back() == '!' || s.back() == '?')) s.pop_back();
    return s;
  };
  std::string p = norm(*extracted), g = norm(expected);
  if (p == g) return 1.0;
  if (!is_number(p) || !is_number(g)) return 0.0;
  double pv = std::stod(p), gv = std::stod(g);
  double soft =
      std::pow(std::max(0.0, 1.0 - std::fabs(pv - gv) / std::max(std::fabs(gv), 1e-9)), 2);
  return soft > 0.98 ? 0.98 : 0.0;
}

struct Mode {
  std::string name;
  std::string instruction;
};
const std::vector<Mode> kModes{
    {"boxed", "Give the result inside \\boxed{}."},
    {"final_answer", "Close with a line that reads 'Final answer: ' followed by the result."},
    {"last_line", "State the result alone on the final line."}};

}  // namespace

Task string_match_task(Rng& rng, int /*index*/) {
  Problem q = rng.pick(kTemplates)(rng);
  const Mode& mode = rng.pick(kModes);
  const bool word_answer = !is_number(q.answer);
  json::object part{{"type", "input_text"}, {"text", q.question + " " + mode.instruction}};
  Task task;
  task.row = json::object{
      {"responses_create_params",
       json::object{
           {"input", json::array{json::object{{"type", "message"},
                                              {"role", "user"},
                                              {"content", json::array{std::move(part)}}}}}}},
      {"expected_answer", q.answer},
      {"extraction_mode", mode.name},
      {"case_sensitive", false},
      {"metadata", json::object{{"topic", q.topic}, {"source", "gym-cpp demo generator"}}}};

  for (bool right : draw_outcomes(rng)) {
    std::string reasoning = right ? q.working : q.slip;
    std::string value = right ? q.answer : q.wrong;
    double u = rng.unit();
    bool follows_format = right || u < 0.75;
    if (!right && u < 0.2 && !word_answer && std::stol(q.answer) >= 500) {
      // Off by a few units on a large number: a slip the grader half-forgives.
      value = std::to_string(std::stol(q.answer) + (rng.chance(0.5) ? 1 : -1) * rng.between(1, 3));
      reasoning = "Working it out roughly, the total comes to " + value + ".";
    }
    std::string text = reasoning + "\n\n";
    std::optional<std::string> extracted;
    if (!follows_format) {
      text += "So the answer is " + value + ".";
      // Nothing to extract in the boxed and final_answer modes; the last line is the sentence.
      if (mode.name == "last_line") extracted = "So the answer is " + value + ".";
    } else if (mode.name == "boxed") {
      bool text_wrapped = word_answer && rng.chance(0.5);
      text += "So the answer is \\boxed{" + (text_wrapped ? "\\text{" + value + "}" : value) + "}.";
      extracted = value;
    } else if (mode.name == "final_answer") {
      text += "Final answer: " + value + (rng.chance(0.5) ? "." : "");
      extracted = value;
    } else {
      text += value;
      extracted = value;
    }
    Trajectory t;
    t.output.push_back(assistant_message(rng, text));
    t.reward = grade(q.answer, extracted);
    t.extras = json::object{
        {"expected_answer", q.answer},
        {"extracted_answer", extracted ? json::value(*extracted) : json::value(nullptr)}};
    task.trajectories.push_back(std::move(t));
  }
  return task;
}

}  // namespace gym::demo_data
