#!/usr/bin/env python3
"""Where the difference between two callgrind runs of the same program goes, by source file.

callgrind_annotate charges inlined code to the function it was inlined into (often
io_context::run in our servers), which hides it. This reads the raw callgrind files instead and
sums each function's own cost by the file its lines come from (`fi=`/`fe=` records), so inlined
code counts in its own file. Call costs (after `calls=`) are skipped: every instruction counts once.

Usage: bench/callgrind_by_file.py BASE.out OTHER.out [DIVISOR] [ROWS]
  prints OTHER - BASE per file, divided by DIVISOR (e.g. the rollouts measured), largest first.
Example (bench/trace_callgrind.sh with KEEP_TMP=1):
  bench/callgrind_by_file.py metrics.<server>.out default.<server>.out 800
"""
import collections
import re
import sys


def cost_by_file(path):
    names = {}
    cost = collections.Counter()
    current_file = inline_file = None
    skip_next = False

    def name_of(value):  # "(12) /path" defines id 12, "(12)" refers to it
        m = re.match(r"\((\d+)\)(?:\s+(.*))?", value)
        if not m:
            return value
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "?")

    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            key, _, value = line.partition("=")
            if key == "fl":
                current_file, inline_file = name_of(value), None
            elif key in ("fi", "fe"):
                inline_file = name_of(value)
            elif key == "fn":
                inline_file = None
            elif key == "calls":
                skip_next = True
            elif key in ("cfl", "cfi", "cfn", "cob", "ob"):
                name_of(value)  # keeps the id table complete
            elif line[0].isdigit() or line[0] in "+-*":
                if skip_next:
                    skip_next = False
                    continue
                parts = line.split()
                if len(parts) >= 2 and parts[1].isdigit():
                    cost[inline_file or current_file] += int(parts[1])
    return cost


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    base, other = cost_by_file(sys.argv[1]), cost_by_file(sys.argv[2])
    divisor = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    rows = int(sys.argv[4]) if len(sys.argv) > 4 else 25
    diff = {f: (other[f] - base[f]) / divisor for f in set(base) | set(other)}
    print(f"total {sum(diff.values()):,.0f}")
    for f, d in sorted(diff.items(), key=lambda kv: -kv[1])[:rows]:
        print(f"{d:12,.0f}  {f}")


if __name__ == "__main__":
    main()
