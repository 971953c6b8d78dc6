#!/usr/bin/python3
"""Keeps docs/gather.schema.json true to the configuration that `gather check` accepts.

Run by ctest (tests/CMakeLists.txt) as
    /usr/bin/python3 tests/config/schema_test.py --gather build/gather --source .
with Debian's python3-jsonschema (the interpreter is /usr/bin/python3 on purpose: another python on
PATH may lack it).

What it checks:
  - the schema is valid draft 2020-12, its patterns are ECMA-262 regular expressions (what editors
    run; Python's `re` accepts more), every key has a description and every default fits its key;
  - every example config (tests/config/examples/*.json, the ```json blocks of docs/*.md and
    README.md that hold a whole config) is accepted by the schema AND by the binary;
  - every config fixture the tests hold (raw strings in tests/**/*.cpp, fuzz/corpus/config/*) that
    the binary accepts is accepted by the schema: the schema never refuses a working config;
  - every invalid config (tests/config/invalid/*.json) is refused by the schema AND by the binary,
    with exactly one problem from the binary, at a place the schema also complains about;
  - cases derived from the schema itself, on tests/config/examples/every_key.json: for every key,
    a wrong type, each end of its range and one step past it, an unknown key beside it, and each
    required key removed: the schema and the binary must agree on every one;
  - what the schema cannot see (tests/config/schema_blind/*.json: cycles, overlaps, references...)
    passes the schema and fails the binary, so its limits are written down;
  - "$schema" (a URL or a path) is accepted by both.
"""

import argparse
import base64
import concurrent.futures
import copy
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import jsonschema

# ------------------------------------------------------------------------------------------------
# PENDING: keys the schema describes (docs/resilience.md, docs/operations.md "Tracing") that this binary does not
# read yet. Their cases run against the schema only, and they are stripped from examples before
# the binary checks them. test_pending_keys_are_still_unknown_to_the_binary fails as soon as the
# binary accepts one of them: then delete it here, and its cases run against the binary too: every
# generated case for it (types, ranges, unknown keys, required keys) and its files in
# tests/config/invalid/ (hedge_*, max_concurrent_*, circuit_*, retry_budget_*, deadline_header_*,
# tracing_*), which until then are checked against the schema only.
PENDING = {
    "config": set(),
    "section": set(),
}
# ------------------------------------------------------------------------------------------------

ARGS = None
CONFIG_DIR = os.path.dirname(os.path.abspath(__file__))
SCHEMA_URL = "https://json-schema.org/draft/2020-12/schema"


def source_path(*parts):
    return os.path.join(ARGS.source, *parts)


def load_schema():
    with open(source_path("docs", "gather.schema.json"), encoding="utf-8") as f:
        return json.load(f)


SCHEMA = None
VALIDATOR = None
WORK_DIR = None  # the binary runs here: cert.pem and key.pem for the examples' `tls`


def setUpModule():
    global SCHEMA, VALIDATOR, WORK_DIR
    SCHEMA = load_schema()
    VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
    WORK_DIR = tempfile.mkdtemp(prefix="gather-schema-test-")
    made = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem",
         "-out", "cert.pem", "-days", "2", "-subj", "/CN=localhost"],
        cwd=WORK_DIR, capture_output=True, text=True)
    if made.returncode != 0:
        raise RuntimeError("openssl req failed: " + made.stderr)
    # jwks.json for the examples' auth.jwt.jwks_file: an Ed25519 key's JWK (its raw public key is
    # the last 32 bytes of the DER SubjectPublicKeyInfo).
    made = subprocess.run("openssl genpkey -algorithm ed25519 | openssl pkey -pubout -outform DER",
                          shell=True, cwd=WORK_DIR, capture_output=True)
    if made.returncode != 0:
        raise RuntimeError("openssl genpkey failed: " + made.stderr.decode())
    x = base64.urlsafe_b64encode(made.stdout[-32:]).decode().rstrip("=")
    with open(os.path.join(WORK_DIR, "jwks.json"), "w", encoding="utf-8") as f:
        json.dump({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "k1"}]}, f)
    # The examples' protos: the gRPC tests' library.proto as a descriptor set and as a source.
    shutil.copytree(source_path("tests", "downstream", "protos"), os.path.join(WORK_DIR, "protos"))
    made = subprocess.run(["protoc", "-I", "protos", "--include_imports",
                           "--descriptor_set_out=library.pb", "linkd/v3/library.proto"],
                          cwd=WORK_DIR, capture_output=True, text=True)
    if made.returncode != 0:
        raise RuntimeError("protoc failed: " + made.stderr)


def tearDownModule():
    shutil.rmtree(WORK_DIR, ignore_errors=True)


# ------------------------------------------------------------------------------------------------
# The two judges

def schema_errors(document):
    return list(VALIDATOR.iter_errors(document))


def error_pointers(errors):
    """Every instance location an error (or an error inside its oneOf/anyOf context) names."""
    pointers = []
    for error in errors:
        pointers.append(tuple(error.absolute_path))
        pointers.extend(error_pointers(error.context or []))
    return pointers


class CheckResult:
    def __init__(self, returncode, problems, output):
        self.returncode = returncode
        self.problems = problems
        self.output = output


def gather_check_text(text):
    """`gather check --config FILE` on `text`: exit status and problem lines."""
    fd, path = tempfile.mkstemp(suffix=".json", dir=WORK_DIR)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        run = subprocess.run([ARGS.gather, "check", "--config", path], cwd=WORK_DIR,
                             capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    problems = [line for line in run.stderr.splitlines() if line.strip()]
    return CheckResult(run.returncode, problems, run.stdout + run.stderr)


def gather_check(document):
    return gather_check_text(json.dumps(document))


def problem_pointer(problem):
    """`routes[1].sections[0].url: ...` -> ("routes", 1, "sections", 0, "url"); `$: ...` -> ()."""
    path = problem.split(": ", 1)[0]
    if path == "$":
        return ()
    pointer = []
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        pointer.append(int(index) if index else key)
    return tuple(pointer)


def related(a, b):
    """One location contains the other (an error about an object covers its members)."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def locations_agree(problems, errors):
    pointers = error_pointers(errors)
    return any(related(problem_pointer(p), s) for p in problems for s in pointers)


def parallel(function, items):
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(function, items))


# ------------------------------------------------------------------------------------------------
# Pending keys

def pending_pointer(pointer):
    if len(pointer) >= 1 and pointer[0] in PENDING["config"]:
        return True
    return (len(pointer) >= 5 and pointer[0] == "routes" and pointer[2] == "sections"
            and pointer[4] in PENDING["section"])


def sections_of(document):
    if not isinstance(document, dict) or not isinstance(document.get("routes"), list):
        return []
    found = []
    for route in document["routes"]:
        if isinstance(route, dict) and isinstance(route.get("sections"), list):
            found.extend(s for s in route["sections"] if isinstance(s, dict))
    return found


def strip_pending(document, keep=()):
    """A copy without the pending keys (but those in `keep`), as this binary can read it."""
    document = copy.deepcopy(document)
    if isinstance(document, dict):
        for key in PENDING["config"] - set(keep):
            document.pop(key, None)
    for section in sections_of(document):
        for key in PENDING["section"] - set(keep):
            section.pop(key, None)
    return document


def pending_keys_used(document):
    used = set()
    if isinstance(document, dict):
        used |= PENDING["config"] & set(document)
    for section in sections_of(document):
        used |= PENDING["section"] & set(section)
    return used


# ------------------------------------------------------------------------------------------------
# Walking the schema

def resolve(node):
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/$defs/"), ref
        node = SCHEMA["$defs"][ref[len("#/$defs/"):]]
    return node


def def_name(node):
    if isinstance(node, dict) and "$ref" in node:
        return node["$ref"][len("#/$defs/"):]
    return None


def object_schemas():
    """(name, schema) of the root and of every $def that describes an object (not the rules-only
    aggregate_route and batch_route)."""
    yield "config", SCHEMA
    for name, node in SCHEMA["$defs"].items():
        if node.get("type") == "object":
            yield name, node


def instances(document):
    """{def name: [pointer of each object in `document` that the def describes]}."""
    found = {"config": [()]}

    def walk(node, value, pointer):
        name = def_name(node)
        if name:
            found.setdefault(name, []).append(pointer)
        node = resolve(node)
        if not isinstance(node, dict):
            return
        if isinstance(value, dict):
            for key, child in node.get("properties", {}).items():
                if key in value:
                    walk(child, value[key], pointer + (key,))
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):  # a map (`upstreams`: name -> upstream)
                for key, child in value.items():
                    if key not in node.get("properties", {}):
                        walk(extra, child, pointer + (key,))
        if isinstance(value, list) and "items" in node:
            for index, item in enumerate(value):
                walk(node["items"], item, pointer + (index,))

    walk(SCHEMA, document, ())
    return found


def at(document, pointer):
    for step in pointer:
        document = document[step]
    return document


def all_subschemas(node, where="#"):
    if isinstance(node, dict):
        yield where, node
        for key, child in node.items():
            if isinstance(child, (dict, list)):
                yield from all_subschemas(child, where + "/" + str(key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from all_subschemas(child, where + "/" + str(index))


# ------------------------------------------------------------------------------------------------
# Example configs

def read_json(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def example_files():
    return sorted(glob.glob(os.path.join(CONFIG_DIR, "examples", "*.json")))


def doc_config_blocks():
    """(where, text) of each ```json block in docs/*.md and README.md that has a "routes" array:
    a whole config, which must then parse, pass the schema and pass the binary (a log line with
    a "routes" count is not one)."""
    blocks = []
    files = sorted(glob.glob(source_path("docs", "*.md"))) + [source_path("README.md")]
    for path in files:
        text = read_json(path)
        for match in re.finditer(r"^```json[ \t]*\n(.*?)^```", text, re.S | re.M):
            if re.search(r'"routes"\s*:\s*\[', match.group(1)):
                line = text[:match.start()].count("\n") + 2
                blocks.append((os.path.relpath(path, ARGS.source) + ":" + str(line), match.group(1)))
    return blocks


def fixture_configs():
    """(where, text) of each config the tests hold as text: raw strings in tests/**/*.cpp that are
    JSON objects with "routes", and the config fuzz corpus."""
    fixtures = []
    for path in sorted(glob.glob(source_path("tests", "**", "*.cpp"), recursive=True)):
        text = read_json(path)
        for match in re.finditer(r'R"(\w*)\((.*?)\)\1"', text, re.S):
            try:
                value = json.loads(match.group(2))
            except ValueError:
                continue
            if isinstance(value, dict) and "routes" in value:
                line = text[:match.start()].count("\n") + 1
                fixtures.append((os.path.relpath(path, ARGS.source) + ":" + str(line),
                                 match.group(2)))
    for path in sorted(glob.glob(source_path("fuzz", "corpus", "config", "*"))):
        with open(path, "rb") as f:
            fixtures.append((os.path.relpath(path, ARGS.source), f.read().decode("utf-8", "replace")))
    return fixtures


# ------------------------------------------------------------------------------------------------
# Cases derived from the schema

WRONG_TYPE = {"integer": "1", "number": "1", "boolean": "true", "string": 1, "array": {},
              "object": []}


def values_for(prop):
    """(value, valid?) at and around the ends of a numeric key's range."""
    kind = prop.get("type")
    if kind not in ("integer", "number"):
        return []
    step = 1 if kind == "integer" else 0.001
    cases = []
    if "minimum" in prop:
        cases += [(prop["minimum"], True), (prop["minimum"] - step, False)]
    if "exclusiveMinimum" in prop:
        cases += [(prop["exclusiveMinimum"], False), (prop["exclusiveMinimum"] + step, True)]
    if "maximum" in prop:
        cases += [(prop["maximum"], True), (prop["maximum"] + step, False)]
    if kind == "integer":
        cases.append(((prop.get("minimum", 0)) + 0.5, False))
    return [(round(v, 6) if isinstance(v, float) else v, ok) for v, ok in cases]


def generated_cases(base):
    """(name, document, pointer of the change, valid?) for every key of every object."""
    where = instances(base)
    cases = []
    for name, node in object_schemas():
        pointers = where.get(name, [])
        if not pointers:
            continue  # reported by test_every_key_example_covers_the_schema
        first = pointers[0]

        def changed(pointer, change):
            document = copy.deepcopy(base)
            change(at(document, pointer))
            return document

        for key, prop in node["properties"].items():
            holders = [p for p in pointers if key in at(base, p)]
            if not holders:
                continue
            pointer = holders[0]
            prop = resolve(prop)
            label = name + "." + key
            kind = prop.get("type")
            if kind in WRONG_TYPE:
                cases.append((label + " = " + json.dumps(WRONG_TYPE[kind]),
                              changed(pointer, lambda o, k=key, v=WRONG_TYPE[kind]: o.__setitem__(k, v)),
                              pointer + (key,), False))
            for value, valid in values_for(prop):
                cases.append((label + " = " + json.dumps(value),
                              changed(pointer, lambda o, k=key, v=value: o.__setitem__(k, v)),
                              pointer + (key,), valid))
        # Every object refuses unknown keys (docs/config.md "Strict JSON"), whatever the schema says.
        cases.append((name + ": unknown key",
                      changed(first, lambda o: o.__setitem__("no_such_key", 1)),
                      first + ("no_such_key",), False))
        for key in node.get("required", []):
            holders = [p for p in pointers if key in at(base, p)]
            if holders:
                cases.append((name + ": without required " + key,
                              changed(holders[0], lambda o, k=key: o.pop(k)),
                              holders[0] + (key,), False))
    return cases


# Pieces on the edges of each string rule: mostly good ones, so that many strings are valid, and bad
# ones (scheme case, brackets, ports around 0 and 65535, dot segments, braces, non-token characters,
# reserved and hop-by-hop names, spaces, non-ASCII).
PIECES = {
    "scheme": (["http://", "https://"], ["HTTP://", "ftp://", "http:/", ""]),
    "host": (["127.0.0.1", "localhost", "[::1]", "h-1.example", "a_b"],
             ["", "[]", "::1", "[::1", "h{id}", "h h", "é", "u@h"]),
    "port": (["80", "1", "8080", "65535", "08080", "00080"],
             ["0", "00000", "65536", "099999", "", "8o"]),
    "url_piece": (["/", "a", "/{id}", "/{item}", "?q={query.q}", "&t={header.x-t}", "/{base.x}",
                   "/{base.x.y}", "a.b", "%2F", "é", "#f", "=", "/..", "/{query.a.b}"],
                  ["{", "}", "{}", "{query..q}", "{query.}", "{item.x}", "{header.a@b}", " ", "\t",
                   "{s.x}", "{a b}"]),
    "segment": (["a", "{id}", "{x}", "{_a1}", "~", "-", "@", "a.b", "...", "{item}"],
                ["", ".", "..", "%2F", "é", " ", "x{id}", "{id", "{1a}", "{}"]),
    "name": (["a", "b", "_", "1", "z", "x_1"], ["A", "query", "header", "item", "é", "-", " "]),
    "header": (["x", "X-T", "x.y", "!#$%&'*+-.^_`|~", "-"],
               ["a b", "host", "Host", "TE", "Transfer-Encoding", "keep-alive", "é", "@", "", ":"]),
    "field": (["a", "b", "x", "é", " ", "{"], ["", ".", ".."]),
}


def random_string_cases(rnd, count):
    def piece(kind, bad_share=0.2):
        good, bad = PIECES[kind]
        return rnd.choice(bad if rnd.random() < bad_share else good)

    def pieces(kind, most, bad_share=0.2):
        return "".join(piece(kind, bad_share) for _ in range(rnd.randint(1, most)))

    def config(section=None, batch_url=None, path="/p/{id}", **top):
        tested = {"name": "s", "url": "http://127.0.0.1/a/{id}", "timeout_ms": 100, "required": True}
        tested.update(section or {})
        routes = [{"path": path, "sections": [
            {"name": "base", "url": "http://127.0.0.1/b", "timeout_ms": 100, "required": True},
            tested]}]
        if batch_url is not None:
            routes.append({"path": "/batch/{id}", "batch": {"url": batch_url, "timeout_ms": 100}})
        return dict(top, routes=routes)

    def url(batch=False):
        port = (":" + piece("port", 0.1)) if rnd.random() < 0.5 else ""
        text = piece("scheme", 0.1) + piece("host", 0.1) + port + pieces("url_piece", 4, 0.1)
        if batch:  # no section to refer to, and {item} mostly
            text = text.replace("{base.", "{query.") + ("/{item}" if rnd.random() < 0.85 else "")
        return text

    def address():
        return piece("host") + (":" if rnd.random() < 0.9 else "") + piece("port")

    def path():
        text = "/" + "/".join(piece("segment") for _ in range(rnd.randint(1, 3)))
        return rnd.choice(["/", "", "/" + text, text + "/"]) if rnd.random() < 0.15 else text

    def dotted():
        return ".".join(pieces("field", 2) for _ in range(rnd.randint(1, 3)))

    makers = {
        "url": lambda v: config({"url": v}),
        "batch.url": lambda v: config(batch_url=v),
        "path": lambda v: config({"url": "http://127.0.0.1/a"}, path=v),
        "name": lambda v: config({"name": v}),
        "fallback_from": lambda v: config({"required": False, "fallback_from": v}),
        "fields": lambda v: config({"fields": [v]}),
        "forward_headers": lambda v: config({"forward_headers": [v]}),
        "listen": lambda v: config(listen=v),
        "cluster.nodes": lambda v: config(cluster={"nodes": [v]}),
    }
    values = {
        "url": url,
        "batch.url": lambda: url(batch=True),
        "path": path,
        "name": lambda: pieces("name", 3),
        "fallback_from": lambda: rnd.choice(["base", "base.", "s.", "x", ""]) + dotted(),
        "fields": dotted,
        "forward_headers": lambda: pieces("header", 2),
        "listen": address,
        "cluster.nodes": address,
    }
    cases = []
    for _ in range(count):
        key = rnd.choice(sorted(makers))
        value = values[key]()
        cases.append((key, value, makers[key](value)))
    return cases


# ------------------------------------------------------------------------------------------------

class SchemaTest(unittest.TestCase):
    maxDiff = None

    def assertNoFailures(self, failures, what):
        self.assertFalse(failures, what + ":\n  " + "\n  ".join(failures))

    # -- the schema itself ----------------------------------------------------------------------

    def test_schema_is_valid_draft_2020_12(self):
        self.assertEqual(SCHEMA.get("$schema"), SCHEMA_URL)
        jsonschema.Draft202012Validator.check_schema(SCHEMA)

    def test_patterns_are_ecma_262(self):
        patterns = sorted({node["pattern"] for _, node in all_subschemas(SCHEMA)
                           if isinstance(node.get("pattern"), str)})
        self.assertGreater(len(patterns), 5)
        for pattern in patterns:
            re.compile(pattern)
        # Editors (VS Code's JSON service) compile patterns as JavaScript RegExps with the u flag.
        script = ("let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{let bad=[];"
                  "for(const p of JSON.parse(s)){try{new RegExp(p,'u')}catch(e){bad.push(p+': '+e.message)}}"
                  "console.log(bad.join('\\n'));process.exit(bad.length?1:0)})")
        node = shutil.which("node") or "/usr/bin/node"
        run = subprocess.run([node, "-e", script], input=json.dumps(patterns),
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, "not ECMA-262 (u flag):\n" + run.stdout + run.stderr)

    def test_every_key_is_described(self):
        failures = []
        for name, node in object_schemas():
            if "description" not in node:
                failures.append(name)
            for key, prop in node["properties"].items():
                if prop is not False and "description" not in prop and \
                        "description" not in resolve(prop):
                    failures.append(name + "." + key)
        self.assertNoFailures(failures, "keys without a description")

    def test_every_default_fits_its_key(self):
        resolver = jsonschema.RefResolver.from_schema(SCHEMA)
        failures = []
        for where, node in all_subschemas(SCHEMA):
            if "default" in node:
                validator = jsonschema.Draft202012Validator(node, resolver=resolver)
                failures += [where + ": " + e.message for e in validator.iter_errors(node["default"])]
        self.assertNoFailures(failures, "defaults that do not fit")

    # -- configs that must pass -----------------------------------------------------------------

    def check_valid(self, where, text):
        """Failures (empty: fine) of a config that both judges must accept."""
        try:
            document = json.loads(text)
        except ValueError as error:
            return [where + ": not JSON: " + str(error)]
        failures = [where + ": schema: " + e.message + " at " + e.json_path
                    for e in schema_errors(document)]
        stripped = strip_pending(document)
        check = gather_check(stripped) if stripped != document else gather_check_text(text)
        if check.returncode != 0:
            failures.append(where + ": gather check: " + check.output.strip())
        return failures

    def test_examples_pass_schema_and_binary(self):
        files = example_files()
        self.assertIn(os.path.join(CONFIG_DIR, "examples", "every_key.json"), files)
        failures = parallel(lambda p: self.check_valid(os.path.relpath(p, ARGS.source), read_json(p)),
                            files)
        self.assertNoFailures(sum(failures, []), "examples")

    def test_doc_examples_pass_schema_and_binary(self):
        blocks = doc_config_blocks()
        self.assertTrue(blocks, "no ```json block with a whole config found in docs/ or README.md")
        failures = parallel(lambda b: self.check_valid(*b), blocks)
        self.assertNoFailures(sum(failures, []), "configs in the docs")

    def test_fixtures_the_binary_accepts_pass_the_schema(self):
        fixtures = fixture_configs()

        def judge(fixture):
            where, text = fixture
            check = gather_check_text(text)
            if check.returncode != 0:
                return None
            try:
                document = json.loads(text)
            except ValueError as error:
                return [where + ": the binary accepts text Python cannot parse: " + str(error)]
            return [where + ": " + e.message + " at " + e.json_path for e in schema_errors(document)]

        verdicts = parallel(judge, fixtures)
        accepted = [v for v in verdicts if v is not None]
        self.assertGreaterEqual(len(accepted), 3, "too few fixtures found to mean anything")
        self.assertNoFailures(sum(accepted, []), "fixtures gather accepts but the schema refuses")

    def test_dollar_schema_is_accepted_by_both(self):
        with open(os.path.join(CONFIG_DIR, "examples", "minimal.json"), encoding="utf-8") as f:
            minimal = json.load(f)
        failures = []
        for value in ["https://example.com/gather/gather.schema.json", "./gather.schema.json",
                      "../../../docs/gather.schema.json", source_path("docs", "gather.schema.json")]:
            document = dict(minimal, **{"$schema": value})
            failures += self.check_valid("$schema " + json.dumps(value), json.dumps(document))
        self.assertNoFailures(failures, "$schema")

    # -- configs that must fail -----------------------------------------------------------------

    def test_invalid_configs_fail_schema_and_binary(self):
        files = sorted(glob.glob(os.path.join(CONFIG_DIR, "invalid", "*.json")))
        self.assertGreater(len(files), 30)

        def judge(path):
            where = os.path.relpath(path, ARGS.source)
            text = read_json(path)
            document = json.loads(text)
            failures = []
            errors = schema_errors(document)
            if not errors:
                failures.append(where + ": the schema accepts it")
            if pending_keys_used(document):
                return failures  # the binary half runs once the key leaves PENDING
            check = gather_check_text(text)
            if check.returncode != 2:
                failures.append(where + ": gather check exit " + str(check.returncode) +
                                " (expected 2): " + check.output.strip())
            elif len(check.problems) != 1:
                failures.append(where + ": gather check reports " + str(len(check.problems)) +
                                " problems; a case should test one thing: " + "; ".join(check.problems))
            elif errors and not locations_agree(check.problems, errors):
                failures.append(where + ": gather (" + check.problems[0] + ") and the schema (" +
                                "; ".join(e.json_path + ": " + e.message for e in errors) +
                                ") complain about different places")
            return failures

        self.assertNoFailures(sum(parallel(judge, files), []), "invalid configs")

    def test_what_the_schema_cannot_see_fails_only_the_binary(self):
        files = sorted(glob.glob(os.path.join(CONFIG_DIR, "schema_blind", "*.json")))
        self.assertTrue(files)

        def judge(path):
            where = os.path.relpath(path, ARGS.source)
            text = read_json(path)
            failures = [where + ": the schema refuses it now (" + e.message + " at " + e.json_path +
                        "): move it to tests/config/invalid/"
                        for e in schema_errors(json.loads(text))]
            if gather_check_text(text).returncode != 2:
                failures.append(where + ": gather check accepts it")
            return failures

        self.assertNoFailures(sum(parallel(judge, files), []), "schema-blind configs")

    # -- cases derived from the schema ----------------------------------------------------------

    def every_key(self):
        with open(os.path.join(CONFIG_DIR, "examples", "every_key.json"), encoding="utf-8") as f:
            return json.load(f)

    def test_every_key_example_covers_the_schema(self):
        base = self.every_key()
        where = instances(base)
        failures = []
        for name, node in object_schemas():
            pointers = where.get(name, [])
            if not pointers:
                failures.append(name + " (no such object)")
                continue
            for key in node["properties"]:
                if not any(key in at(base, p) for p in pointers):
                    failures.append(name + "." + key)
        self.assertNoFailures(failures, "keys missing from tests/config/examples/every_key.json")

    def test_schema_and_binary_agree_on_every_key(self):
        cases = generated_cases(self.every_key())
        self.assertGreater(len(cases), 100)

        def judge(case):
            label, document, pointer, valid = case
            failures = []
            errors = schema_errors(document)
            if bool(errors) == valid:
                failures.append(label + ": the schema " + ("refuses" if errors else "accepts") + " it" +
                                "".join("; " + e.json_path + ": " + e.message for e in errors[:2]))
            if pending_pointer(pointer):
                return failures
            check = gather_check(strip_pending(document))
            if valid and check.returncode != 0:
                failures.append(label + ": gather check refuses it: " + "; ".join(check.problems))
            if not valid and check.returncode != 2:
                failures.append(label + ": gather check exit " + str(check.returncode) +
                                " (expected 2)")
            if not valid and check.returncode == 2 and errors and \
                    not locations_agree(check.problems, errors):
                failures.append(label + ": gather (" + "; ".join(check.problems) +
                                ") and the schema complain about different places")
            return failures

        self.assertNoFailures(sum(parallel(judge, cases), []), "schema and gather disagree")

    def test_schema_and_binary_agree_on_random_strings(self):
        """The keys whose form is a pattern (url, batch url, path, name, fallback_from, fields,
        forward_headers, listen, cluster nodes), each set to strings put together from pieces that
        sit on the edges of the rules, with a fixed seed. The schema must never refuse what gather
        accepts; gather may refuse more only for what no schema can see (references)."""
        blind = ("this route has no section", "duplicate section name", "cannot refer to its own",
                 "cannot fall back to its own", "the route path has no capture")
        failures = []

        def judge(case):
            key, value, document = case
            check = gather_check(document)
            errors = schema_errors(document)
            if check.returncode == 0 and errors:
                return [key + " " + json.dumps(value) + ": gather accepts it, the schema says " +
                        errors[0].message]
            if check.returncode != 0 and not errors and \
                    not all(any(b in p for b in blind) for p in check.problems):
                return [key + " " + json.dumps(value) + ": the schema accepts it, gather says " +
                        "; ".join(check.problems)]
            return []

        for failure in parallel(judge, random_string_cases(random.Random(12), 300)):
            failures += failure
        self.assertNoFailures(failures, "schema and gather disagree")

    def test_pending_keys_are_still_unknown_to_the_binary(self):
        base = self.every_key()
        failures = []
        for level, keys in PENDING.items():
            for key in sorted(keys):
                check = gather_check(strip_pending(base, keep=(key,)))
                unknown = [p for p in check.problems
                           if p.endswith(": unknown key") and problem_pointer(p)[-1:] == (key,)]
                if not unknown:
                    failures.append(key + ": this binary reads it now; remove it from PENDING in "
                                    "tests/config/schema_test.py so its cases run against the binary")
        self.assertNoFailures(failures, "pending keys")


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gather", required=True, help="the gather binary")
    parser.add_argument("--source", default=os.path.dirname(os.path.dirname(CONFIG_DIR)),
                        help="the source tree (default: this file's)")
    ARGS, rest = parser.parse_known_args()
    ARGS.gather = os.path.abspath(ARGS.gather)
    ARGS.source = os.path.abspath(ARGS.source)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
