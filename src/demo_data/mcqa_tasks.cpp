// mcqa demo tasks: generated arithmetic and calendar questions with 4 to 6 lettered options,
// graded strict_single_letter_boxed (environments/mcqa/README.md). A right answer boxes the gold
// letter; a wrong one boxes another letter; an unparsable one forgets the box or boxes the option's
// text (the verifier extracts nothing: reward 0, extracted_answer null).
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "demo_data/tasks.h"

namespace gym::demo_data {
namespace json = boost::json;

namespace {

struct Question {
  std::string topic;
  std::string stem;
  std::string answer;                    // the correct option's text
  std::vector<std::string> distractors;  // at least 5, distinct, none equal to `answer`
  std::string working;                   // the reasoning that reaches `answer`
};

// Candidate wrong values as option texts: positive, distinct, not the answer.
std::vector<std::string> wrong_numbers(long answer, std::vector<long> candidates,
                                       const std::string& unit = "") {
  std::vector<std::string> out;
  for (long c : candidates) {
    std::string text = std::to_string(c) + unit;
    if (c > 0 && c != answer && std::find(out.begin(), out.end(), text) == out.end())
      out.push_back(text);
  }
  return out;
}

Question product(Rng& r) {
  int a = r.between(12, 99), b = r.between(13, 99);
  long p = long{a} * b;
  int tens = b / 10 * 10, ones = b % 10;
  std::string working = ones == 0
                            ? fmt::format("{} × {} = {}.", a, b, p)
                            : fmt::format("Split {} into {} + {}: {} × {} = {} + {} = {}.", b, tens,
                                          ones, a, b, long{a} * tens, long{a} * ones, p);
  return {"multiplication", fmt::format("What is {} × {}?", a, b), std::to_string(p),
          wrong_numbers(p, {p + 10, p - 10, p + a, p - b, p + 100, p - 100, long{a} * (b + 1) + 1}),
          working};
}

Question remainder(Rng& r) {
  int a = r.between(100, 999), b = r.between(7, 19);
  int q = a / b, rem = a % b;
  std::vector<std::string> wrong;
  for (int k : {1, b - 1, 2, 3, b - 2, 4}) wrong.push_back(std::to_string((rem + k) % b));
  return {"remainders", fmt::format("What is the remainder when {} is divided by {}?", a, b),
          std::to_string(rem), wrong,
          fmt::format("{} = {} × {} + {}, so the remainder is {}.", a, b, q, rem, rem)};
}

bool is_prime(int n) {
  for (int d = 2; d * d <= n; ++d)
    if (n % d == 0) return false;
  return n > 1;
}

Question prime(Rng& r) {
  std::vector<int> primes, lookalikes;  // odd composites without an obvious factor of 5
  for (int n = 49; n < 230; n += 2) {
    if (is_prime(n))
      primes.push_back(n);
    else if (n % 5 != 0)
      lookalikes.push_back(n);
  }
  int p = r.pick(primes);
  r.shuffle(lookalikes);
  std::vector<std::string> wrong;
  for (int i = 0; i < 5; ++i)
    wrong.push_back(std::to_string(lookalikes[static_cast<std::size_t>(i)]));
  return {"primes", "Which of the following numbers is prime?", std::to_string(p), wrong,
          fmt::format("{} has no divisor between 2 and {}, so it is prime; each of the other "
                      "numbers has a small factor.",
                      p, static_cast<int>(std::sqrt(p)))};
}

Question minutes(Rng& r) {
  int h = r.between(2, 9), m = r.between(5, 55);
  long total = 60L * h + m;
  return {"time", fmt::format("How many minutes are there in {} hours and {} minutes?", h, m),
          std::to_string(total),
          wrong_numbers(total, {100L * h + m, 60L * h, total + 10, total - 10, 60L * (h + 1) + m,
                                60L * h - m, total + 1}),
          fmt::format("{} hours are {} minutes, and {} more make {}.", h, 60 * h, m, total)};
}

Question weekday(Rng& r) {
  int d = r.below(7), n = r.between(10, 100);
  const std::string& day = kDays[static_cast<std::size_t>(d)];
  const std::string& answer = kDays[static_cast<std::size_t>((d + n) % 7)];
  std::vector<std::string> wrong;
  for (const auto& other : kDays)
    if (other != answer) wrong.push_back(other);
  r.shuffle(wrong);
  std::string working =
      n % 7 == 0 ? fmt::format("{} days are exactly {} weeks, so it is {} again.", n, n / 7, day)
                 : fmt::format("{} days are {} weeks and {} days; {} days after {} comes {}.", n,
                               n / 7, n % 7, n % 7, day, answer);
  return {"calendar", fmt::format("Which day of the week is it {} days after a {}?", n, day),
          answer, wrong, working};
}

Question sequence(Rng& r) {
  int a = r.between(2, 40), d = r.between(3, 15);
  long next = a + 4L * d;
  return {
      "sequences",
      fmt::format("What is the next number in the sequence {}, {}, {}, {}, …?", a, a + d, a + 2 * d,
                  a + 3 * d),
      std::to_string(next),
      wrong_numbers(next, {next + 1, next - 1, next + d, next + 2, next - 2, next + 10, next * 2}),
      fmt::format("Each term adds {}, so the next one is {} + {} = {}.", d, a + 3 * d, d, next)};
}

Question area(Rng& r) {
  int w = r.between(3, 30), h = r.between(3, 30);
  if (h == w) ++h;
  long a = long{w} * h;
  return {
      "geometry", fmt::format("A rectangle is {} cm wide and {} cm long. What is its area?", w, h),
      std::to_string(a) + " cm²",
      wrong_numbers(a, {2L * (w + h), a + w, a - h, a + 10, long{w} + h, a + 2 * w, a - 1}, " cm²"),
      fmt::format("Area = width × length = {} × {} = {} cm².", w, h, a)};
}

Question percent(Rng& r) {
  static const std::vector<int> kRates{5, 10, 15, 20, 25, 30, 35, 40, 45, 60, 75};
  int p = r.pick(kRates), x = 20 * r.between(2, 45);
  long v = long{p} * x / 100;
  return {"percentages", fmt::format("What is {}% of {}?", p, x), std::to_string(v),
          wrong_numbers(v, {v * 2, v + 5, v + 10, x - v, v - 5, v + x / 10, v * 10}),
          fmt::format("{}% of {} is {} × {} / 100 = {}.", p, x, x, p, v)};
}

const std::vector<std::function<Question(Rng&)>> kTemplates{product, remainder, prime, minutes,
                                                            weekday, sequence,  area,  percent};

std::string uuid(Rng& r) {
  std::string hex = r.id("", 32);
  hex[12] = '4';  // version 4 in shape, although drawn from the seeded generator
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

}  // namespace

Task mcqa_task(Rng& rng, int /*index*/) {
  Question q = rng.pick(kTemplates)(rng);
  if (q.distractors.size() < 5)
    throw std::logic_error("mcqa demo: too few distractors for " + q.topic);
  rng.shuffle(q.distractors);
  const int n = rng.between(4, 6);
  std::vector<std::string> texts{q.answer};
  texts.insert(texts.end(), q.distractors.begin(), q.distractors.begin() + (n - 1));
  rng.shuffle(texts);

  std::string prompt =
      "Answer the following multiple-choice question. Think it through step by step, then write "
      "only the letter of the correct option inside \\boxed{}.\n\n" +
      q.stem + "\n";
  json::array options;
  std::string gold;
  std::vector<std::string> letters;
  for (int i = 0; i < n; ++i) {
    std::string letter(1, static_cast<char>('A' + i));
    const auto& text = texts[static_cast<std::size_t>(i)];
    prompt += "\n" + letter + ": " + text;
    options.push_back(json::object{{letter, text}});
    if (text == q.answer) gold = letter;
    letters.push_back(letter);
  }

  Task task;
  task.row = json::object{
      {"responses_create_params",
       json::object{{"input", json::array{input_message("user", prompt)}}}},
      {"options", std::move(options)},
      {"expected_answer", gold},
      {"grading_mode", "strict_single_letter_boxed"},
      {"uuid", uuid(rng)},
      {"metadata", json::object{{"topic", q.topic}, {"source", "gym-cpp demo generator"}}}};

  static const std::vector<std::string> kSlips{"Working it out quickly, I get {}.",
                                               "A rough estimate points to {}.",
                                               "I believe the result is {}."};
  for (bool right : draw_outcomes(rng)) {
    std::string text;
    json::value extracted = nullptr;
    double u = rng.unit();
    if (right) {
      text = q.working + "\n\nThat is option " + gold + ".\n\n\\boxed{" + gold + "}";
      extracted = gold;
    } else if (u < 0.65) {
      std::string letter;
      do letter = rng.pick(letters);
      while (letter == gold);
      const auto& chosen = texts[static_cast<std::size_t>(letter[0] - 'A')];
      text = fmt::format(fmt::runtime(rng.pick(kSlips)), chosen) + "\n\nThat is option " + letter +
             ".\n\n\\boxed{" + letter + "}";
      extracted = letter;
    } else if (u < 0.85) {
      text = q.working + "\n\nSo the answer is option " + gold + ".";  // no box: nothing to extract
    } else {
      text = q.working + "\n\n\\boxed{" + q.answer + "}";  // the option's text, not its letter
    }
    Trajectory t;
    t.output.push_back(assistant_message(rng, text));
    t.reward = right ? 1.0 : 0.0;
    t.extras = json::object{{"expected_answer", gold}, {"extracted_answer", extracted}};
    task.trajectories.push_back(std::move(t));
  }
  return task;
}

}  // namespace gym::demo_data
