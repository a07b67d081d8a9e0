#!/usr/bin/env python3
"""The includes follow docs/architecture.md.

1. Every `#include "<folder>/..."` of a file in src/<folder>/ or environments/<name>/ names its own
   folder, one its row of the table "Folders and what they may use" lists under "uses", or one
   that those use in turn (dependencies point down the table; "everything" allows all, "—"
   none). A folder of src/ the table does not list fails too.
2. Inside src/telemetry/, the folders by signal include only downwards: common/ nothing of
   telemetry but itself; metrics/ and traces/ common/; logs/ common/ and traces/; the files at
   the root anything of telemetry. So no include cycle can run between them.

Run: tests/layers_test.py [repo root]. Registered with ctest as layers_check.
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([\w.-]+)/')
TELEMETRY_MAY_INCLUDE = {
    "common": {"common"},
    "metrics": {"common", "metrics"},
    "traces": {"common", "traces"},
    "logs": {"common", "traces", "logs"},
}


def allowed_uses():
    """folder -> the folders it may include (None: everything), from the architecture table."""
    rows, in_table = {}, False
    with open(os.path.join(ROOT, "docs/architecture.md"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("| folder | owns | uses |"):
                in_table = True
                continue
            if in_table and not line.startswith("|"):
                break
            if not in_table or line.startswith("| ---"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            folder = re.match(r"`(?:src/|environments/)?([\w<>]+)/`", cells[0])
            if not folder:
                continue
            uses = cells[-1]
            if uses == "everything":
                rows[folder.group(1)] = None
                continue
            names = set()
            for part in re.split(r"[,;]", uses):
                word = re.match(r"\s*(\w+)", part)
                if word:
                    names.add(word.group(1))
            rows[folder.group(1)] = names
    # What a folder uses, it may include with what that uses in turn.
    closed = {}
    for name, direct in rows.items():
        if direct is None:
            closed[name] = None
            continue
        seen, todo = set(), list(direct)
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            todo += list(rows.get(n) or ())
        closed[name] = seen
    return closed


def source_files(top):
    for d, dirs, names in os.walk(os.path.join(ROOT, top)):
        dirs[:] = [x for x in dirs if not x.startswith(".") and x != "tests"]
        for n in names:
            if n.endswith((".h", ".cpp")):
                yield os.path.join(d, n)


def main():
    uses = allowed_uses()
    folders = set(os.listdir(os.path.join(ROOT, "src"))) | {"proto"}
    environments = set(os.listdir(os.path.join(ROOT, "environments")))
    problems = []
    for path in list(source_files("src")) + list(source_files("environments")):
        rel = os.path.relpath(path, ROOT)
        parts = rel.split(os.sep)
        owner = parts[1]
        row = uses.get("<name>" if parts[0] == "environments" else owner, set())
        if owner not in uses and parts[0] == "src":
            problems.append(f"{rel}: src/{owner}/ has no row in docs/architecture.md")
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                if parts[0] == "environments" and target in environments:
                    if target != owner and (row is None or target not in row):
                        problems.append(f"{rel}:{number}: includes environments/{target}/, "
                                        "which its row does not list")
                    continue
                if target not in folders or target == owner or row is None or target in row:
                    pass
                else:
                    problems.append(f"{rel}:{number}: includes {target}/, which the row of "
                                    f"{owner} in docs/architecture.md does not list")
                if owner == "telemetry" and target == "telemetry":
                    here = parts[2] if len(parts) > 3 else "root"
                    sub = line.split('"')[1].split("/")
                    there = sub[1] if len(sub) > 2 else "root"
                    if here in TELEMETRY_MAY_INCLUDE and there not in TELEMETRY_MAY_INCLUDE[here]:
                        problems.append(f"{rel}:{number}: telemetry/{here}/ includes "
                                        f"telemetry/{there if there != 'root' else ''}"
                                        f"{'/' if there != 'root' else ''}{sub[-1]}")
    for p in problems:
        print(p)
    if problems:
        print(f"\n{len(problems)} include(s) against docs/architecture.md: change the code, or the "
              "table if the design changed.")
        return 1
    print("every include follows docs/architecture.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
