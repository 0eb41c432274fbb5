"""End-to-end: the README and docs/ against the repository and the binary.

- README.md stays short: at most 16 KB (the goal is 15 KB; the margin is for
  a row a later change adds before someone condenses).
- Every relative link resolves: markdown links `[text](path)` (relative to
  the page), and every `docs/....md` path named in the text (relative to the
  repository root, as the pages write them), in README.md and docs/**/*.md.
- Every long flag each command's `--help` prints appears on that command's
  page. The commands are read from the binary itself: the top-level help's
  command list, and each command's "Subcommands:" (`bench io`, `net probe`,
  `plan memory`), so a new command or flag needs only its page. A command
  `A B` is documented on docs/commands/A-B.md if it exists, else on
  docs/commands/A.md.
- The docs speak the user's words: "seed" only as a random seed (`pack
  --seed`), no issue numbers, no paths of the machine they were written on.
"""

import glob
import os
import re
import unittest

import e2e_common as e2e

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README_LIMIT_BYTES = 16 * 1024

# [text](target) and ![alt](target); the target ends at whitespace or ')'.
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# docs/....md named in prose or code spans, not inside a longer path or a URL.
DOCS_PATH = re.compile(r"(?<![\w./-])(docs/[\w./-]*\.md)\b")
# A command in the top-level help: two spaces, the name, two or more spaces.
COMMAND_LINE = re.compile(r"^  ([a-z][a-z0-9-]*)\s{2,}\S")
# A subcommand under CLI11's "Subcommands:".
SUBCOMMAND_LINE = re.compile(r"^\s+([a-z][a-z0-9-]*)\s{2,}\S")
# An option line: "  -b,--minbytes TEXT" or "  --json".
OPTION_LINE = re.compile(r"^\s+(?:-\w,)?(--[a-z0-9][a-z0-9-]*)")


def doc_pages():
    pages = [os.path.join(ROOT, "README.md")]
    pages += sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return pages


def without_code_blocks(text):
    """The text with fenced blocks blanked: example output is not a link."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return out


def is_external(target):
    return re.match(r"^[a-z][a-z0-9+.-]*:", target) is not None or target.startswith("#")


def broken_links(page):
    """(line number, target) of each relative reference that does not resolve."""
    with open(page, encoding="utf-8") as f:
        lines = without_code_blocks(f.read())
    broken = []
    for number, line in enumerate(lines, 1):
        for target in MARKDOWN_LINK.findall(line):
            if is_external(target):
                continue
            path = target.split("#", 1)[0]
            if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(page), path))):
                broken.append((number, target))
        for target in DOCS_PATH.findall(line):
            if not os.path.exists(os.path.join(ROOT, target)):
                broken.append((number, target))
    return broken


def help_text(args):
    rc, out, err, _ = e2e.run(list(args) + ["--help"])
    if rc != 0:
        raise AssertionError("stallscope %s --help exited %d: %s" % (" ".join(args), rc, err))
    return out


def section(text, title):
    """The lines of CLI11's section TITLE ("Subcommands:"), up to a blank line."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.strip() == title:
            inside = True
        elif inside and not line.strip():
            break
        elif inside:
            lines.append(line)
    return lines


def commands():
    """Every leaf command as a tuple of words, with its --help text."""
    top = help_text([])
    names = []
    listed = section(top, "commands:") or section(top, "Subcommands:")
    for line in listed:
        m = COMMAND_LINE.match(line)
        if m:
            names.append(m.group(1))
    if not names:
        raise AssertionError("no command list in the top-level --help:\n" + top)
    leaves = []
    for name in names:
        text = help_text([name])
        subs = [m.group(1) for m in map(SUBCOMMAND_LINE.match, section(text, "Subcommands:")) if m]
        if not subs:
            leaves.append(((name,), text))
        for sub in subs:
            leaves.append(((name, sub), help_text([name, sub])))
    return leaves


def long_flags(text):
    flags = []
    for line in text.splitlines():
        m = OPTION_LINE.match(line)
        if m and m.group(1) != "--help" and m.group(1) not in flags:
            flags.append(m.group(1))
    return flags


def page_of(words):
    candidates = ["-".join(words)] + ([words[0]] if len(words) > 1 else [])
    for name in candidates:
        path = os.path.join(ROOT, "docs", "commands", name + ".md")
        if os.path.exists(path):
            return path
    return os.path.join(ROOT, "docs", "commands", candidates[0] + ".md")


def mentions(page_text, flag):
    return re.search(re.escape(flag) + r"(?![a-z0-9-])", page_text) is not None


class Readme(unittest.TestCase):
    def test_readme_is_short(self):
        size = os.path.getsize(os.path.join(ROOT, "README.md"))
        self.assertLessEqual(size, README_LIMIT_BYTES,
                             "README.md is %d bytes, over %d: move depth to docs/ and link it"
                             % (size, README_LIMIT_BYTES))

    def test_readme_links_the_docs_index(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            self.assertTrue("(docs/README.md)" in f.read(), "README.md does not link docs/README.md")


class Links(unittest.TestCase):
    def test_every_relative_link_resolves(self):
        problems = []
        for page in doc_pages():
            for number, target in broken_links(page):
                problems.append("%s:%d: %s" % (os.path.relpath(page, ROOT), number, target))
        self.assertEqual(problems, [], "references that do not resolve:\n  " + "\n  ".join(problems))

    def test_the_checker_sees_a_broken_link(self):
        # The checker itself: a page with one good and two bad references.
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            page = os.path.join(d, "page.md")
            with open(os.path.join(d, "there.md"), "w") as f:
                f.write("x\n")
            with open(page, "w") as f:
                f.write("[ok](there.md) [bad](missing.md#a) see `docs/no-such-page.md`\n"
                        "```\n[in a block](ignored.md)\n```\n[web](https://example.org/x.md)\n")
            self.assertEqual(broken_links(page), [(1, "missing.md#a"), (1, "docs/no-such-page.md")])


# A line may say "seed" only about a random seed.
RANDOM_SEED = re.compile(r"--seed|seed=|\"seed\"|input and seed|random seed", re.IGNORECASE)
# Words of the project's own bookkeeping, or of one machine, that mean nothing to a reader.
NOT_FOR_READERS = re.compile(r"\b[Ii]ssue \d+|\bsession \d+|/work/|\.\./shared/")


class Wording(unittest.TestCase):
    def lines(self):
        for page in doc_pages():
            with open(page, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    yield "%s:%d" % (os.path.relpath(page, ROOT), number), line

    def test_seed_only_as_a_random_seed(self):
        bad = [where for where, line in self.lines()
               if re.search(r"seed", line, re.IGNORECASE) and not RANDOM_SEED.search(line)]
        self.assertEqual(bad, [], "'seed' not meaning a random seed (give the reasoning instead): "
                         + ", ".join(bad))

    def test_no_issue_numbers_or_machine_paths(self):
        bad = ["%s: %s" % (where, NOT_FOR_READERS.search(line).group(0))
               for where, line in self.lines() if NOT_FOR_READERS.search(line)]
        self.assertEqual(bad, [], "issue numbers or machine paths in the docs:\n  " + "\n  ".join(bad))


class FlagsOnPages(unittest.TestCase):
    def test_every_command_has_a_page_with_every_flag(self):
        problems = []
        leaves = commands()
        self.assertGreater(len(leaves), 10, [w for w, _ in leaves])
        for words, text in leaves:
            page = page_of(words)
            rel = os.path.relpath(page, ROOT)
            command = "stallscope " + " ".join(words)
            if not os.path.exists(page):
                problems.append("%s: no page (write %s)" % (command, rel))
                continue
            with open(page, encoding="utf-8") as f:
                page_text = f.read()
            missing = [flag for flag in long_flags(text) if not mentions(page_text, flag)]
            if missing:
                problems.append("%s: %s does not mention %s" % (command, rel, ", ".join(missing)))
        self.assertEqual(problems, [], "flags in --help but not on the command's page:\n  "
                         + "\n  ".join(problems))

    def test_run_has_its_flags(self):
        # The parser of the help text: run's help has these flags today.
        flags = long_flags(help_text(["run"]))
        for flag in ("--interval", "--out", "--procs", "--profile"):
            self.assertIn(flag, flags)
        self.assertNotIn("--help", flags)

    def test_every_docs_index_entry_exists_for_each_command(self):
        with open(os.path.join(ROOT, "docs", "README.md"), encoding="utf-8") as f:
            index = f.read()
        missing = []
        for words, _ in commands():
            rel = os.path.relpath(page_of(words), os.path.join(ROOT, "docs"))
            if rel not in index:
                missing.append("%s (%s)" % (" ".join(words), rel))
        self.assertEqual(missing, [], "docs/README.md does not link: " + ", ".join(missing))


if __name__ == "__main__":
    e2e.main()
