"""Renders README.md and docs/*.md with a CommonMark parser and fails on what
would show wrong on GitHub (`make lint`; needs markdown-it-py, which the
Makefile installs into target/lint-venv).

Usage: check_markdown.py FILE...
       check_markdown.py --self-test   (each rule against a page that breaks it)

A file fails when:
  - a fenced code block is never closed (it runs to the end of the file);
  - a line inside a fenced code block looks like a fence (```` ``` ```` or
    `~~~`): CommonMark closes a fence only on a line of fence characters
    alone, so "``` some text" does not close it and everything up to the
    next fence line is swallowed, headings included;
  - a line inside a fenced code block looks like a section heading (`## Title`):
    a heading swallowed by a block that was not closed where it was meant to;
  - a relative link names a file that does not exist, or an anchor
    (`#section`, `other.md#section`) that no heading of that file makes.

Prints one line per problem (`FILE:LINE: what`) and exits 1 if there is any.
"""

import os
import re
import sys

from markdown_it import MarkdownIt

FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
SECTION_HEADING = re.compile(r"^ {0,3}#{2,6}\s+\S")
LINK_TARGET = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def parse(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text, MarkdownIt("commonmark").enable("table").parse(text)


def slug(text):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(tokens):
    seen = {}
    out = set()
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            inline = tokens[i + 1]
            plain = "".join(
                c.content for c in (inline.children or []) if c.type in ("text", "code_inline")
            )
            base = slug(plain)
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(tokens):
    """(line, href) of every link."""
    for tok in tokens:
        if tok.type != "inline":
            continue
        line = tok.map[0] + 1 if tok.map else 0
        for child in tok.children or []:
            if child.type == "link_open":
                yield line, child.attrGet("href") or ""


def check_code_blocks(path, text, tokens):
    problems = []
    lines = text.splitlines()
    for tok in tokens:
        if tok.type != "fence" or not tok.map:
            continue
        start, end = tok.map
        last = lines[end - 1] if end - 1 < len(lines) else ""
        closing = last.strip()
        closed = (
            end - 1 > start
            and closing
            and set(closing) == {tok.markup[0]}
            and len(closing) >= len(tok.markup)
        )
        if not closed:
            problems.append(
                f"{path}:{start + 1}: this code fence is never closed "
                "(it runs to the end of the file)"
            )
        body = range(start + 1, end - 1 if closed else end)
        for n in body:
            line = lines[n] if n < len(lines) else ""
            if FENCE_LINE.match(line):
                problems.append(
                    f"{path}:{n + 1}: a fence line inside the code block opened at line "
                    f"{start + 1}; a closing fence cannot carry text, so this does not "
                    "close the block"
                )
            elif SECTION_HEADING.match(line):
                problems.append(
                    f"{path}:{n + 1}: heading {line.strip()!r} is inside the code block "
                    f"opened at line {start + 1}"
                )
    return problems


def check_links(path, tokens, cache):
    problems = []
    base = os.path.dirname(path)
    for line, href in links(tokens):
        if not href or LINK_TARGET.match(href):
            continue
        target, _, anchor = href.partition("#")
        file = os.path.normpath(os.path.join(base, target)) if target else path
        if target and not os.path.exists(file):
            problems.append(f"{path}:{line}: link to {href!r}: no file {file}")
            continue
        if anchor and file.endswith(".md"):
            if file not in cache:
                cache[file] = anchors(parse(file)[1])
            if anchor not in cache[file]:
                problems.append(f"{path}:{line}: link to {href!r}: no heading makes #{anchor}")
    return problems


# (page, what the check must report) for --self-test; the first page is clean.
SELF_TEST = [
    ("# t\n\n```sh\necho\n```\n\n## kept\n\n[up](#t)\n", None),
    ("# t\n\n```sh\necho\n\n## lost\n", "never closed"),
    ("# t\n\n```sh\necho\n``` and text\n\n## lost\n\n```sh\nx\n```\n", "a fence line inside"),
    ("# t\n\n```text\nx\n## meant as a heading\n```\n", "is inside the code block"),
    ("# t\n\n[gone](nowhere.md)\n", "no file"),
    ("# t\n\n[gone](#nowhere)\n", "no heading makes"),
]


def self_test():
    import tempfile

    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, (page, want) in enumerate(SELF_TEST):
            path = os.path.join(tmp, f"page{n}.md")
            with open(path, "w", encoding="utf-8") as f:
                f.write(page)
            text, tokens = parse(path)
            got = check_code_blocks(path, text, tokens) + check_links(path, tokens, {})
            ok = (not got) if want is None else any(want in p for p in got)
            if not ok:
                failures += 1
                print(f"self-test {n}: expected {want or 'no problem'!r}, got {got}")
    print(f"markdown self-test: {len(SELF_TEST) - failures}/{len(SELF_TEST)} rules hold", file=sys.stderr)
    return 1 if failures else 0


def main(paths):
    if paths == ["--self-test"]:
        return self_test()
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    problems = []
    cache = {}
    for path in paths:
        text, tokens = parse(path)
        cache[os.path.normpath(path)] = anchors(tokens)
        problems += check_code_blocks(path, text, tokens)
        problems += check_links(os.path.normpath(path), tokens, cache)
    for p in problems:
        print(p)
    print(f"markdown: {len(paths)} file(s), {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
