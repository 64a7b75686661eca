#!/usr/bin/env python3
"""A user's flow with the exported schemas, checked for real: Python and C++ code generated from
what Scripts/export-schemas writes reads and writes every fixture, and talks to the relay.

usage: check_exported_schemas.py [--relay PATH] [--skip-fixtures] [--skip-cpp] [--timeout SECONDS]
                                 [--keep DIR]

In a temporary folder (or DIR with --keep), as a user of another language would:

  1. export: `Scripts/export-schemas TMP/export` (which also checks that the export's descriptors
     equal Schemas/' with protobuf-c left out);
  2. python: `protoc -I TMP/export --python_out=TMP/python imcodec/v1/*.proto`, the export as the
     only import path: no protobuf-c anywhere, and no generated module names protobuf_c;
  3. fixtures in Python (unless --skip-fixtures), once with each of Google's Python implementations
     (upb, the default, and pure Python), in a child process that imports only the generated
     modules: every case of Fixtures/valid/manifest.json parses from NAME.binpb (the bytes protoc
     --encode made of the text form NAME.txtpb, or of future.proto's wider messages), serializes
     deterministically to exactly NAME.binpb (or NAME.canonical.binpb, where the manifest names
     one), prints NAME.json (compared as parsed JSON values), and, where the manifest says the JSON
     round-trips, parses back from NAME.json to the same bytes. Google's Python protobuf 4.21 has
     documented limits (Fixtures/README.md), each allowed for its own cases only, and each of those
     cases must then pass with the other implementation:
       upb: map keys where one is a prefix of another are written out of byte order
            (map_key_order, nul_in_expansion_key); nesting deeper than 100 levels is refused
            (merger_nested_100_layers);
       pure Python: a double -0.0 is not written (location_extremes);
  4. C++ (unless --skip-cpp): `protoc --cpp_out` from the same export, built with g++ and Debian's
     libprotobuf (pkg-config protobuf) with Scripts/exported_schemas_roundtrip.cc, which parses
     every fixture, re-serializes it to the same bytes, and parses every text form with
     TextFormat (protoc's own parser) to the same message and bytes: all of them, no exception;
  5. the relay (with --relay PATH, an imcodec-relay executable): `PATH serve --port 0
     --websocket-port 0 --data-dir TMP/relay` on loopback, then `Scripts/ws_client.py --generated
     TMP/python` with the relay's secret: the generated modules log alice and bob in, join a group,
     ping, send a text that bob receives on his connection, a receipt and a recall, and close.

Each step prints a line starting "OK "; a failure prints "FAIL ..." and exits 1. The last line is
"check_exported_schemas: N passed, M failed". Every wait is bounded; the relay is killed at the end.
Needs: protoc, python3 with Scripts/requirements.txt, g++ and libprotobuf-dev (Scripts/bootstrap).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "Scripts")
FIXTURES = os.path.join(ROOT, "Fixtures", "valid")

# Google's documented limits (Fixtures/README.md), per implementation: case -> (check, why).
KNOWN_LIMITS = {
    "upb": {
        "map_key_order": ("bytes", "upb 4.21 writes a map key after the keys it is a prefix of"),
        "nul_in_expansion_key": ("bytes", "upb 4.21 writes a map key after the keys it is a prefix of"),
        "merger_nested_100_layers": ("parse", "upb refuses nesting deeper than 100 levels"),
    },
    "python": {
        "location_extremes": ("bytes", "pure-Python protobuf 4.21 does not write a double -0.0"),
    },
}


IMPLEMENTATION_NAMES = {"upb": "upb, the default", "python": "pure Python"}


class Failure(Exception):
    pass


class Report:
    def __init__(self):
        self.passed = 0

    def ok(self, line):
        self.passed += 1
        print("OK " + line, flush=True)


def run(cmd, timeout, **kwargs):
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        raise Failure("%s did not finish within %s s" % (" ".join(cmd), timeout))
    if done.returncode != 0:
        tail = "\n".join(done.stdout.strip().splitlines()[-40:])
        raise Failure("%s exited %d:\n%s" % (" ".join(cmd), done.returncode, tail))
    return done.stdout


def cases():
    """(name, NAME.binpb, expected bytes path, NAME.txtpb or None when not an imcodec.v1.Frame)."""
    with open(os.path.join(FIXTURES, "manifest.json")) as f:
        manifest = json.load(f)
    out = []
    for case in manifest:
        name = case["name"]
        with open(os.path.join(FIXTURES, name + ".txtpb"), encoding="utf-8") as f:
            frame_text = "\n# proto-message: imcodec.v1.Frame\n" in "\n" + f.read()
        out.append((name, os.path.join(FIXTURES, name + ".binpb"),
                    os.path.join(FIXTURES, case["canonical"] or name + ".binpb"),
                    os.path.join(FIXTURES, name + ".txtpb") if frame_text else None, case["json_roundtrip"]))
    return out


# --- 3. the child: the generated Python modules and nothing else ---------------------------------

def fixtures_child(python_dir):
    """Checks every fixture with the generated modules; prints {"implementation", "results"}."""
    sys.path.insert(0, python_dir)
    # One fixture nests 304 levels: pure Python's parser and json_format recurse once or more per level.
    sys.setrecursionlimit(20000)
    from google.protobuf import json_format
    from google.protobuf.internal import api_implementation
    from imcodec.v1 import frame_pb2

    results = {}
    for name, binpb, expected_path, _, json_roundtrip in cases():
        with open(binpb, "rb") as f:
            data = f.read()
        with open(expected_path, "rb") as f:
            expected = f.read()
        with open(os.path.join(FIXTURES, name + ".json"), encoding="utf-8") as f:
            json_text = f.read()
        try:
            frame = frame_pb2.Frame.FromString(data)
        except Exception as error:  # DecodeError, or RecursionError in pure Python
            results[name] = ["parse", "%s: %s" % (type(error).__name__, error)]
            continue
        try:
            if frame.SerializeToString(deterministic=True) != expected:
                results[name] = ["bytes", "re-serialized bytes differ from " + os.path.basename(expected_path)]
            elif json.loads(json_format.MessageToJson(frame)) != json.loads(json_text):
                results[name] = ["json", "MessageToJson differs from %s.json" % name]
            elif json_roundtrip and json_format.Parse(json_text, frame_pb2.Frame(), max_recursion_depth=1000) \
                    .SerializeToString(deterministic=True) != expected:
                results[name] = ["json", "%s.json parses to other bytes" % name]
            else:
                results[name] = ["ok", ""]
        except Exception as error:
            results[name] = ["error", "%s: %s" % (type(error).__name__, str(error)[:200])]
    leaked = sorted(m for m in sys.modules if m.startswith("protobuf_c"))
    print(json.dumps({"implementation": api_implementation.Type(), "results": results, "protobuf_c": leaked}))


def python_fixtures(report, python_dir, timeout):
    total = len(cases())
    passed_by = {}
    for implementation in ("upb", "python"):
        env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=implementation, PYTHONDONTWRITEBYTECODE="1")
        out = run([sys.executable, os.path.abspath(__file__), "--fixtures-child", python_dir], timeout, env=env,
                  cwd=tempfile.gettempdir())
        answer = json.loads(out.strip().splitlines()[-1])
        if answer["implementation"] != implementation:
            raise Failure("asked for Google's %s implementation, got %s" % (implementation, answer["implementation"]))
        if answer["protobuf_c"]:
            raise Failure("the generated modules imported %s" % answer["protobuf_c"])
        results = answer["results"]
        if len(results) != total:
            raise Failure("%s: %d results for %d fixtures" % (implementation, len(results), total))
        known = KNOWN_LIMITS[implementation]
        failed = {n: r for n, r in results.items() if r[0] != "ok"}
        unexpected = ["%s: %s %s" % (n, r[0], r[1]) for n, r in sorted(failed.items())
                      if n not in known or known[n][0] != r[0]]
        if unexpected:
            raise Failure("Google's Python protobuf (%s) with the generated modules:\n  %s"
                          % (implementation, "\n  ".join(unexpected)))
        passed_by[implementation] = {n for n, r in results.items() if r[0] == "ok"}
        limits = "; ".join("%s (%s)" % (n, known[n][1]) for n in sorted(failed))
        report.ok("python (%s): %d of %d fixtures parse, re-serialize to their exact bytes and print their JSON%s"
                  % (IMPLEMENTATION_NAMES[implementation], len(passed_by[implementation]), total,
                     "; Google's documented limits: " + limits if limits else ""))
    neither = sorted(set(n for n, *_ in cases()) - passed_by["upb"] - passed_by["python"])
    if neither:
        raise Failure("no Python implementation round-trips %s" % neither)
    report.ok("python: all %d fixtures round-trip with at least one of Google's Python implementations" % total)


# --- 4. C++ ------------------------------------------------------------------------------------

def cpp_fixtures(report, export_dir, tmp, timeout):
    out = os.path.join(tmp, "cpp")
    os.makedirs(out, exist_ok=True)
    protos = sorted("imcodec/v1/" + n for n in os.listdir(os.path.join(export_dir, "imcodec", "v1")))
    run(["protoc", "-I", export_dir, "--cpp_out=" + out] + protos, timeout, cwd=export_dir)
    flags = run(["pkg-config", "--cflags", "--libs", "protobuf"], timeout).split()
    sources = [os.path.join(out, p[:-len(".proto")] + ".pb.cc") for p in protos]
    program = os.path.join(out, "roundtrip")
    run(["g++", "-std=c++17", "-O0", "-w", "-I", out, os.path.join(SCRIPTS, "exported_schemas_roundtrip.cc")]
        + sources + flags + ["-pthread", "-o", program], timeout)
    all_cases = cases()
    lines = "".join("%s\t%s\t%s\t%s\n" % (n, b, e, t or "-") for n, b, e, t, _ in all_cases)
    try:
        done = subprocess.run([program], input=lines, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure("the C++ round trip did not finish within %s s" % timeout)
    failures = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    summary = "cpp: %d passed, 0 failed" % len(all_cases)
    if done.returncode != 0 or failures or summary not in done.stdout:
        raise Failure("C++ (protoc --cpp_out, libprotobuf):\n" + "\n".join(failures or [done.stdout.strip()]))
    texts = sum(1 for c in all_cases if c[3])
    report.ok("c++ (protoc --cpp_out, libprotobuf %s): all %d fixtures parse and re-serialize to their exact "
              "bytes; all %d text forms parse to the same message and bytes"
              % (run(["pkg-config", "--modversion", "protobuf"], timeout).strip(), len(all_cases), texts))


# --- 5. the relay ------------------------------------------------------------------------------

class Relay:
    """`imcodec-relay serve --port 0 --websocket-port 0 --data-dir DIR` as a child process."""

    def __init__(self, binary, data_dir, timeout):
        self.binary, self.data_dir, self.timeout = binary, data_dir, timeout
        self.output = []
        self.websocket_port = None
        self.ready = threading.Event()
        self.process = None

    def start(self):
        from relay_resume_client import _die_with_parent

        self.process = subprocess.Popen(
            [self.binary, "serve", "--port", "0", "--websocket-port", "0", "--data-dir", self.data_dir],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
            preexec_fn=_die_with_parent)
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(self.timeout) or self.websocket_port is None:
            raise Failure("the relay printed no WebSocket port within %s s:\n%s" % (self.timeout, self.tail()))
        return self.websocket_port

    def _read(self):
        for line in self.process.stdout:
            self.output.append(line.rstrip("\n"))
            match = re.match(r"relay accepting WebSocket on ws://127\.0\.0\.1:(\d+)/", line)
            if match:
                self.websocket_port = int(match.group(1))
                self.ready.set()
        self.ready.set()

    def tail(self):
        return "\n".join(self.output[-20:])

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(self.timeout)


WS_CLIENT_STEPS = [
    "OK schemas: generated modules imcodec/v1/frame_pb2.py", "OK login alice", "OK login bob",
    "OK join alice #pyteam", "OK join bob #pyteam", "OK membership alice saw bob join #pyteam",
    "OK heartbeat alice pong id=7", "OK ack py-1 seq=1", "OK delivery bob text='hello bob, from Python 🐍'",
    "OK receipt alice from=bob", "OK recall bob", "OK pong alice", "OK close alice code=1000",
    "OK close bob code=1000", "OK done",
]


def relay_talk(report, binary, python_dir, tmp, timeout):
    data_dir = os.path.join(tmp, "relay")
    relay = Relay(binary, data_dir, timeout)
    try:
        port = relay.start()
        report.ok("relay started (WebSocket on 127.0.0.1:%d)" % port)
        try:
            done = subprocess.run(
                [sys.executable, os.path.join(SCRIPTS, "ws_client.py"), "--port", str(port), "--auth-secret-file",
                 os.path.join(data_dir, "auth-secret"), "--generated", python_dir, "--timeout", str(timeout)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=4 * timeout,
                env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        except subprocess.TimeoutExpired:
            raise Failure("Scripts/ws_client.py did not finish within %s s" % (4 * timeout))
        lines = done.stdout.splitlines()
        remaining = iter(lines)
        missing = [step for step in WS_CLIENT_STEPS if not any(line.startswith(step) for line in remaining)]
        if done.returncode != 0 or missing:
            raise Failure("Scripts/ws_client.py --generated (exit %d), missing %s:\n%s\n--- relay:\n%s"
                          % (done.returncode, missing, done.stdout.strip(), relay.tail()))
        delivery = next(line for line in lines if line.startswith("OK delivery bob"))
        report.ok("relay: Scripts/ws_client.py with the generated modules logged alice and bob in, bob "
                  "received alice's text on his connection (seq %s), then a receipt and a recall; both closed "
                  "with 1000" % delivery.split(" seq=")[1].split(" ")[0])
    finally:
        relay.stop()


# --- the whole flow ----------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--relay", default="", help="an imcodec-relay executable: also talk to it")
    ap.add_argument("--skip-fixtures", action="store_true", help="skip the Python fixture round trips")
    ap.add_argument("--skip-cpp", action="store_true", help="skip the C++ build and round trips")
    ap.add_argument("--timeout", type=float, default=120, help="the bound on each step, in seconds")
    ap.add_argument("--keep", default="", help="work in this folder and keep it")
    ap.add_argument("--fixtures-child", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fixtures_child:
        fixtures_child(args.fixtures_child)
        return
    sys.path.insert(0, SCRIPTS)
    report = Report()
    tmp = args.keep or tempfile.mkdtemp(prefix="check-exported-schemas.")
    os.makedirs(tmp, exist_ok=True)
    try:
        export_dir = os.path.join(tmp, "export")
        said = run([os.path.join(SCRIPTS, "export-schemas"), export_dir], args.timeout).strip()
        report.ok("export: " + said.split(": ", 1)[-1].replace(export_dir, "TMP/export"))

        python_dir = os.path.join(tmp, "python")
        os.makedirs(python_dir, exist_ok=True)
        protos = sorted("imcodec/v1/" + n for n in os.listdir(os.path.join(export_dir, "imcodec", "v1")))
        run(["protoc", "-I", export_dir, "--python_out=" + python_dir] + protos, args.timeout, cwd=export_dir)
        modules = sorted(os.path.relpath(os.path.join(d, f), python_dir)
                         for d, _, files in os.walk(python_dir) for f in files if f.endswith("_pb2.py"))
        for module in modules:
            with open(os.path.join(python_dir, module), encoding="utf-8") as f:
                if "protobuf_c" in f.read():
                    raise Failure("%s names protobuf_c" % module)
        if len(modules) != len(protos):
            raise Failure("protoc --python_out wrote %s for %s" % (modules, protos))
        report.ok("protoc --python_out (-I the export only): %d modules, none names protobuf_c" % len(modules))

        if not args.skip_fixtures:
            python_fixtures(report, python_dir, args.timeout)
        if not args.skip_cpp:
            cpp_fixtures(report, export_dir, tmp, args.timeout)
        if args.relay:
            relay_talk(report, args.relay, python_dir, tmp, min(args.timeout, 30))
    except Failure as failure:
        print("FAIL %s" % failure, flush=True)
        print("check_exported_schemas: %d passed, 1 failed" % report.passed, flush=True)
        sys.exit(1)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("check_exported_schemas: %d passed, 0 failed" % report.passed, flush=True)


if __name__ == "__main__":
    main()
