"""README examples as checks, for tests/demo.sh (`make demo`).

Two commands:

  extract OUTDIR FILE... -- NAME=VALUE...
      Reads the ```sh demo SERVICE blocks of the FILEs (README.md, docs/*.md),
      in order, and writes one numbered step per shell statement into OUTDIR:
      NNNN.sh (the statement, with the addresses and /tmp/ paths substituted)
      and, for a curl/grpcurl command, NNNN.json (what the file expects).
      The NAME=VALUE pairs are the substitutions (see SUBSTITUTIONS). Every
      service must have at least one block in README.md.

  check EXPECT.json STATUS BODY_FILE HEADERS_FILE
      Compares one answer with its expectation; prints nothing and exits 0
      when it matches, else prints why and exits 1.

The README convention (also described in the header of tests/demo.sh):

  ```sh demo router-demo      <- a block that `make demo` runs, top to bottom,
                                 against the service it names (greeter,
                                 router-demo, router-demo-tls, token-auth,
                                 token-auth-captcha)
  B=http://127.0.0.1:8000     <- any shell line runs as written
  curl -s $B/hello            <- a curl or grpcurl command (may continue
  # 200 Hello World!              with a trailing backslash) must be followed
  # Content-Type: text/plain…     by `# STATUS [BODY]`, then optional
                                  `# Header-Name: value` lines
  ```

A study example is run the same way and its whole stdout checked:

  ```sh demo example          <- one `cargo run --example NAME` line
  cargo run --example abort
  ```
  ```text                     <- the very next block: what it prints,
  --> GET /plain                 line by line
  ```

Lines are compared with runs of whitespace collapsed and `…` standing for
any text (a time, a latency); the example must also exit 0. Its stderr
(Rust's panic hook, cargo) is not compared.

STATUS is the HTTP status for curl and the gRPC code name for grpcurl (`OK`,
`AlreadyExists`, ...). BODY is optional (absent: not compared). A BODY that
starts with `{` or `[` is JSON and compared by shape: same keys in the same
order as the server writes them, same types, equal values, except that `…` inside a string stands for any text
(`"eyJ…"`), a bare `…` for any value and `[…]` for any array. Any other BODY
is text, compared with runs of whitespace collapsed; `…` stands for any text.
For a failed grpcurl call the body is the error's message.
"""

import json
import os
import re
import sys

ELLIPSIS = "\u2026"
ANY = "\u0000any"

# The services a ```sh demo block may name.
SERVICES = ("greeter", "router-demo", "router-demo-tls", "token-auth", "token-auth-captcha")

# The services the README itself must show (the others are variants run by
# the docs' examples: over TLS, with a captcha provider).
README_SERVICES = ("greeter", "router-demo", "token-auth")
# A ```sh demo example block runs a study example instead of calling a service.
EXAMPLE = "example"
EXAMPLE_RE = re.compile(r"^cargo run (?:-q |--quiet )?--example ([a-z0-9_]+)$")

# What the README writes -> which NAME=VALUE given to `extract` replaces it.
# The block's service decides which one `localhost:8000` means.
SUBSTITUTIONS = [
    ("localhost:9000", "GREETER_GRPC"),
    ("localhost:9300", "CAPTCHA"),
    ("/tmp/", "TMP"),
]
HTTP_BY_SERVICE = {
    "greeter": "GREETER_HTTP",
    "router-demo": "ROUTER_HTTP",
    "router-demo-tls": "ROUTER_TLS",
    "token-auth": "AUTH_HTTP",
    "token-auth-captcha": "AUTH_CAPTCHA",
}

GRPC_CODES = (
    "OK Canceled Unknown InvalidArgument DeadlineExceeded NotFound AlreadyExists "
    "PermissionDenied ResourceExhausted FailedPrecondition Aborted OutOfRange "
    "Unimplemented Internal Unavailable DataLoss Unauthenticated"
).split()

EXPECT_RE = re.compile(r"^#\s+(\d{3}|" + "|".join(GRPC_CODES) + r")(?:\s+(.*))?$")
HEADER_RE = re.compile(r"^#\s+([A-Za-z][A-Za-z0-9-]*):\s?(.*)$")
COMMAND_RE = re.compile(r"^(curl|grpcurl)\s")


class ReadmeError(Exception):
    pass


def demo_blocks(name, lines):
    """Yield (service, [(line_number, text)], output) for each ```sh demo
    SERVICE block; output is the lines of the ```text block that follows a
    ```sh demo example block (None for a service)."""
    block = None
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        if block is not None:
            if line.startswith("```"):
                output = None
                if service == EXAMPLE:
                    output, number = example_output(name, lines, number)
                yield service, block, output
                block = None
            else:
                block.append((number, line))
            continue
        if line.startswith("```"):
            info = line[3:].split()
            if info[:2] == ["sh", "demo"]:
                service = info[2] if len(info) == 3 else None
                if service not in SERVICES + (EXAMPLE,):
                    raise ReadmeError(
                        f"{name}:{number}: a demo block must name its service: "
                        f"```sh demo {'|'.join(SERVICES + (EXAMPLE,))}"
                    )
                block = []
    if block is not None:
        raise ReadmeError(f"{name}: a ```sh demo block is not closed")


def example_output(name, lines, number):
    """The ```text block right after line `number` (blank lines between are
    allowed): its lines, and the number of the line after it."""
    while number < len(lines) and not lines[number].strip():
        number += 1
    if number >= len(lines) or lines[number].strip() != "```text":
        raise ReadmeError(
            f"{name}:{number + 1}: a ```sh demo example block must be followed "
            "by a ```text block with what the example prints"
        )
    output = []
    for end in range(number + 1, len(lines)):
        if lines[end].startswith("```"):
            return output, end + 1
        output.append(lines[end])
    raise ReadmeError(f"{name}:{number + 1}: the ```text block is not closed")


def statements(block):
    """Join backslash continuations: yield (first_line_number, text)."""
    pending = None
    for number, line in block:
        if pending is None:
            pending = (number, line)
        else:
            pending = (pending[0], pending[1] + "\n" + line)
        if not line.endswith("\\"):
            yield pending
            pending = None
    if pending is not None:
        yield pending


def extract(outdir, files, values):
    step = 0
    in_readme = set()
    for name in files:
        with open(name, encoding="utf-8") as f:
            lines = f.read().splitlines()
        for service, block, output in demo_blocks(name, lines):
            if os.path.basename(name) == "README.md":
                in_readme.add(service)
            if service == EXAMPLE:
                step += 1
                write_example(outdir, step, name, block, output)
                continue
            subst = [(text, values[key]) for text, key in SUBSTITUTIONS]
            http = values[HTTP_BY_SERVICE[service]]
            subst += [("localhost:8000", http), ("127.0.0.1:8000", http)]
            stmts = list(statements(block))
            i = 0
            while i < len(stmts):
                number, text = stmts[i]
                i += 1
                stripped = text.strip()
                if not stripped or stripped.startswith("#"):
                    continue
                step += 1
                command = text
                for old, new in subst:
                    command = command.replace(old, new)
                base = os.path.join(outdir, f"{step:04d}")
                with open(base + ".sh", "w", encoding="utf-8") as f:
                    f.write(command)
                match = COMMAND_RE.match(stripped)
                if not match:
                    continue
                expect = expectation(stmts, i, f"{name}:{number}")
                i += 1 + len(expect["headers"])
                expect.update(line=f"{name}:{number}", kind=match.group(1), service=service)
                with open(base + ".json", "w", encoding="utf-8") as f:
                    json.dump(expect, f)
    missing = set(README_SERVICES) - in_readme
    if missing:
        raise ReadmeError(f"README.md: no ```sh demo block for {sorted(missing)}")
    print(step)


def write_example(outdir, step, name, block, output):
    """One step for a ```sh demo example block: its command and its output."""
    commands = [(n, t.strip()) for n, t in block if t.strip() and not t.strip().startswith("#")]
    if len(commands) != 1 or not EXAMPLE_RE.match(commands[0][1]):
        raise ReadmeError(
            f"{name}:{block[0][0] if block else '?'}: a ```sh demo example block holds "
            "exactly one `cargo run --example NAME` line"
        )
    number, command = commands[0]
    base = os.path.join(outdir, f"{step:04d}")
    with open(base + ".sh", "w", encoding="utf-8") as f:
        f.write(command)
    expect = {
        "line": f"{name}:{number}",
        "kind": "example",
        "service": EXAMPLE,
        "status": "exit 0",
        "body": None,
        "headers": [],
        "output": output,
    }
    with open(base + ".json", "w", encoding="utf-8") as f:
        json.dump(expect, f)


def expectation(stmts, i, where):
    """The `# STATUS [BODY]` line at stmts[i] and the header lines after it."""
    if i >= len(stmts) or not EXPECT_RE.match(stmts[i][1].strip()):
        raise ReadmeError(
            f"{where}: a command in a ```sh demo block must be followed "
            "by an expectation line `# STATUS [BODY]`"
        )
    m = EXPECT_RE.match(stmts[i][1].strip())
    headers = []
    for _, line in stmts[i + 1 :]:
        h = HEADER_RE.match(line.strip())
        if not h or EXPECT_RE.match(line.strip()):
            break
        headers.append([h.group(1), h.group(2)])
    return {"status": m.group(1), "body": m.group(2), "headers": headers}


# ---- comparing ---------------------------------------------------------


def parse_pattern(text):
    """Parse an expected JSON body: a bare … (outside strings) becomes ANY."""
    out = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif ch == ELLIPSIS:
            out.append(json.dumps(ANY))
        else:
            out.append(ch)
    return json.loads("".join(out))


def glob(pattern, text):
    regex = ".*".join(re.escape(part) for part in pattern.split(ELLIPSIS))
    return re.fullmatch(regex, text, re.DOTALL) is not None


def type_name(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object", type(None): "null"}[type(value)]


def compare(want, got, path="$"):
    """None when got matches the pattern want, else a description of the first difference."""
    if want == ANY:
        return None
    if type_name(want) != type_name(got):
        return f"{path}: expected a {type_name(want)}, got {json.dumps(got)}"
    if isinstance(want, dict):
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        if missing or extra:
            parts = [f"missing {missing}"] * bool(missing) + [f"unexpected {extra}"] * bool(extra)
            return f"{path}: keys differ ({', '.join(parts)})"
        if list(want) != list(got):
            return f"{path}: keys in another order: the server writes {list(got)}"
        for key in want:
            diff = compare(want[key], got[key], f"{path}.{key}")
            if diff:
                return diff
        return None
    if isinstance(want, list):
        if want == [ANY]:
            return None
        if len(want) != len(got):
            return f"{path}: expected {len(want)} element(s), got {len(got)}"
        for n, (w, g) in enumerate(zip(want, got)):
            diff = compare(w, g, f"{path}[{n}]")
            if diff:
                return diff
        return None
    if isinstance(want, str) and ELLIPSIS in want:
        return None if glob(want, got) else f"{path}: {json.dumps(got)} does not match {json.dumps(want)}"
    if want != got:
        return f"{path}: expected {json.dumps(want)}, got {json.dumps(got)}"
    return None


def collapse(text):
    return " ".join(text.split())


def compare_output(want_lines, got_lines):
    """None when the output matches line by line, else where it differs."""
    want = [collapse(line) for line in want_lines]
    got = [collapse(line) for line in got_lines]
    while want and not want[-1]:
        want.pop()
    while got and not got[-1]:
        got.pop()
    for n, (w, g) in enumerate(zip(want, got), 1):
        if not glob(w, g):
            return f"output line {n}: expected {w!r}, got {g!r}"
    if len(want) != len(got):
        extra = got[len(want)] if len(got) > len(want) else want[len(got)]
        which = "more" if len(got) > len(want) else "fewer"
        return f"output: {which} lines than expected ({len(got)} vs {len(want)}), first odd one: {extra!r}"
    return None


def check(expect_file, status, body_file, headers_file):
    with open(expect_file, encoding="utf-8") as f:
        expect = json.load(f)
    with open(body_file, encoding="utf-8", errors="replace") as f:
        body = f.read()
    problems = []
    if expect.get("kind") == "example":
        if status != expect["status"]:
            problems.append(f"status: expected {expect['status']}, got {status}")
        diff = compare_output(expect["output"], body.splitlines())
        if diff:
            problems.append(diff)
        for p in problems:
            print(p)
        return 1 if problems else 0
    if status != expect["status"]:
        problems.append(f"status: expected {expect['status']}, got {status}")
    want = expect["body"]
    if want is not None:
        if want.startswith(("{", "[")):
            try:
                pattern = parse_pattern(want)
            except ValueError as e:
                problems.append(f"{expect['line']}: the expected body is not JSON: {e}")
                pattern = None
            if pattern is not None:
                try:
                    got = json.loads(body)
                except ValueError:
                    problems.append("body: expected JSON, got text")
                else:
                    diff = compare(pattern, got)
                    if diff:
                        problems.append(f"body {diff}")
        elif not glob(collapse(want), collapse(body)):
            problems.append(f"body: expected text {want!r}")
    if expect["headers"]:
        with open(headers_file, encoding="utf-8", errors="replace") as f:
            received = {}
            for line in f.read().splitlines():
                if ":" in line:
                    name, value = line.split(":", 1)
                    received[name.strip().lower()] = value.strip()
        for name, value in expect["headers"]:
            got = received.get(name.lower())
            if got is None:
                problems.append(f"header {name}: missing")
            elif not glob(value.strip(), got):
                problems.append(f"header {name}: expected {value!r}, got {got!r}")
    for p in problems:
        print(p)
    return 1 if problems else 0


def main(argv):
    try:
        if len(argv) >= 3 and argv[0] == "extract" and "--" in argv:
            sep = argv.index("--")
            values = dict(arg.split("=", 1) for arg in argv[sep + 1 :])
            extract(argv[1], argv[2:sep], values)
            return 0
        if len(argv) == 5 and argv[0] == "check":
            return check(argv[1], argv[2], argv[3], argv[4])
    except ReadmeError as e:
        print(f"demo: {e}", file=sys.stderr)
        return 2
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
