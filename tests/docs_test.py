#!/usr/bin/env python3
"""Every document a tracked file cites exists in the repository.

The design lives in docs/ (docs/design/ for the decisions the code relies on). A comment, string
or page that points at a document must point at one a clone has, so this test fails when a
tracked file:

1. names a Markdown file (`docs/reference/http-client.md`, `../guides/slurm.md`, a bare
   `configuration.md`) that exists neither relative to the file nor to the repository root;
2. gives such a pointer an anchor (`limits.md#sessions`) that is no heading of that file;
3. cites a numbered section of a Markdown file (`runtime.md 7.9`, `telemetry.md section 3`) that
   has no heading with that number (gym-cpp's docs have no numbered sections);
4. cites a decision by its number (`D9`, `R1`, `T2`: decision tables of documents the
   repository does not have), or a bare `section 7.6` without naming a standard (RFC, W3C, ...);
5. in a comment of source code, cites a section by its bare number: `(7.3)`, `(8.4 step 2)`,
   `// 6.2: ...` (the numbered sections of documents a clone does not have).

Paths with placeholders (`<name>.md`, `$TMP/x.md`) and URLs (`https://.../README.md`) are not
checked. Run: tests/docs_test.py [repo root]; `--list` prints every finding (the default stops
after 50). Registered with ctest as docs_check, so `make test` runs it.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-")
                       else os.path.join(os.path.dirname(__file__), ".."))
LIST_ALL = "--list" in sys.argv

# Files that are data, not prose: fuzz inputs, recorded rows, lock files. This file names the
# patterns it looks for.
SKIP_DIRS = ("fuzz/corpus/",)
SKIP_FILES = ("tests/docs_test.py",)
SKIP_SUFFIXES = (".jsonl", ".json", ".pb", ".bin", ".png", ".svg", ".lock", ".gz")

# A Markdown path: path characters, then `.md`, then an optional #anchor. Placeholders
# (<..>, $VAR, ${..}, *) are taken into the token so that the whole token can be skipped.
MD_REF = re.compile(r"(?<![\w./<>${}*-])((?:[\w.<>${}*-]+/)*[\w.<>${}*-]*[\w>}*]\.md)(?![\w-]|\.\w)"
                    r"(#[\w-]*)?")
URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.I)
# `runtime.md 7.9`, `telemetry.md, section 3.2`, `environments.md §5`, `runtime.md R1`.
SECTION_CITE = re.compile(r"([\w./-]+\.md)\)?,?\s+(?:sections?\s+|§\s*)?(\d+(?:\.\d+)*[a-z]?)\b")
DECISION_AFTER_MD = re.compile(r"([\w./-]+\.md)\)?,?\s+(?:decisions?\s+)?((?:D|R|T)\d{1,2})\b")
# The decision numbers of the design tables a clone does not have: D1-D13, R1-R8, T1-T6.
DECISION = re.compile(r"(?<![\w.\-$%#/<])(D(?:1[0-3]|[1-9])|R[1-8]|T[1-6])(?![\w\-/>]|\.\w)")
# In a comment (after // or #): "(7.3)", "(6.3, 6.4)", "(8.4 step 5)", or "// 6.2: " opening it.
# Numbers a comment uses otherwise (rewards 1.0, ratios 0.5, versions 1.2.3) have a zero or a third
# part, or no parentheses.
_SEC = r"(?:1[0-2]|[1-9])\.(?:1[0-9]|[1-9])[a-z]?"
COMMENT_SECTION = re.compile(r"\(" + _SEC + r"(?:(?:, ?| and )" + _SEC + r")*(?: step \d+)?\)|"
                             r"^(?://|#) " + _SEC + r"(?:, ?" + _SEC + r")*:")
COMMENT_START = re.compile(r"//|(?<![\w\"'$])#(?![!\w{(])")
SOURCE_SUFFIXES = (".h", ".cpp", ".py", ".sh", ".cmake", "CMakeLists.txt")
BARE_SECTION = re.compile(r"\bsections?\s+\d+(?:\.\d+)*\b|§\s*\d", re.I)
STANDARD = re.compile(r"\b(RFC|W3C|ISO|IEEE|POSIX|ECMA|OpenTelemetry specification)\b")


def tracked_files():
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(ROOT):
            dirs[:] = [x for x in dirs if not x.startswith(".") and x != "build"]
            files += [os.path.relpath(os.path.join(d, n), ROOT) for n in names]
        return files


def slug(heading):
    """The anchor GitHub gives a heading."""
    text = re.sub(r"<[^>]+>", "", heading.strip().strip("#").strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_headings = {}


def headings(path):
    """(anchors, section numbers) of a Markdown file."""
    if path not in _headings:
        anchors, numbers, seen, fence = set(), set(), {}, False
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lstrip().startswith(("```", "~~~")):
                    fence = not fence
                if fence or not re.match(r"#{1,6} ", line):
                    continue
                title = line.lstrip("#").strip()
                base = slug(title)
                n = seen.get(base, 0)
                seen[base] = n + 1
                anchors.add(base if n == 0 else f"{base}-{n}")
                m = re.match(r"(\d+(?:\.\d+)*)\.?\s", title)
                if m:
                    numbers.add(m.group(1))
        _headings[path] = (anchors, numbers)
    return _headings[path]


def resolve(ref, where):
    """The existing file a reference names, else None."""
    bases = [os.path.dirname(os.path.join(ROOT, where)), ROOT]
    if where.startswith("src/cli/env_template/"):  # becomes environments/<name>/...
        bases.append(os.path.join(ROOT, "environments", "NAME"))
    for base in bases:
        path = os.path.normpath(os.path.join(base, ref))
        if os.path.isfile(path):
            return path
    return None


def check_line(where, number, line, problems):
    urls = [m.span() for m in URL.finditer(line)]

    def in_url(pos):
        return any(a <= pos < b for a, b in urls)

    for m in MD_REF.finditer(line):
        ref, anchor = m.group(1), m.group(2)
        if in_url(m.start()) or re.search(r"[<>${}*]", ref):
            continue
        path = resolve(ref, where)
        if path is None:
            problems.append((where, number, f"names {ref}, which the repository does not have"))
        elif anchor and anchor != "#" and anchor[1:] not in headings(path)[0]:
            problems.append((where, number, f"{ref}{anchor}: no such heading in {ref}"))
    for m in SECTION_CITE.finditer(line):
        if in_url(m.start()):
            continue
        path = resolve(m.group(1), where)
        if path is None or m.group(2) not in headings(path)[1]:
            problems.append((where, number, f"cites section {m.group(2)} of {m.group(1)}"))
    for m in DECISION_AFTER_MD.finditer(line):
        problems.append((where, number, f"cites decision {m.group(2)} of {m.group(1)}"))
    for m in DECISION.finditer(line):
        if not in_url(m.start()):
            problems.append((where, number, f"cites decision {m.group(1)}: say the reason, or "
                             "point at docs/design/"))
    if BARE_SECTION.search(line) and not STANDARD.search(line):
        problems.append((where, number, "cites a numbered section without naming the document"))
    if where.endswith(SOURCE_SUFFIXES):
        start = COMMENT_START.search(line)
        if start and COMMENT_SECTION.search(line[start.start():].strip()) \
                and not STANDARD.search(line):
            problems.append((where, number, "cites a section by its bare number in a comment: "
                             "point at a docs/ page, or say the reason"))


def main():
    problems = []
    for where in tracked_files():
        if where.startswith(SKIP_DIRS) or where.endswith(SKIP_SUFFIXES) or where in SKIP_FILES:
            continue
        full = os.path.join(ROOT, where)
        if not os.path.isfile(full) or os.path.getsize(full) > 4 << 20:
            continue
        with open(full, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue
        text = data.decode("utf-8", errors="replace")
        if ".md" not in text and not DECISION.search(text) and "section" not in text.lower() \
                and "§" not in text and not (where.endswith(SOURCE_SUFFIXES)
                                             and re.search(_SEC, text)):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            check_line(where, number, line, problems)
    seen = set()
    unique = [p for p in problems if not (p in seen or seen.add(p))]
    for where, number, what in unique if LIST_ALL else unique[:50]:
        print(f"{where}:{number}: {what}")
    if len(unique) > 50 and not LIST_ALL:
        print(f"... and {len(unique) - 50} more (--list shows all)")
    if unique:
        print(f"\n{len(unique)} citation(s) of documents or sections the repository does not have. "
              "Point at a docs/ page that exists (docs/design/ holds the design decisions, "
              "docs/design/README.md says how to point at them), or say the reason in the "
              "comment itself.")
        return 1
    print("every cited document and section exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
