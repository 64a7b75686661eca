#!/usr/bin/env python3
"""An independent client that checks imcodec-relay's promises across a crash: logins, the user
stream, events for offline devices, several devices per user.

usage: relay_resume_client.py --relay PATH [--nodes POSTGRES_URL] [--timeout SECONDS] [--keep-data]
                              [--schemas DIR] [--include DIR]

It shares no code with the relay: Google's protobuf builds the message classes from Schemas/ at
run time (as Scripts/google_reference.py does), the TCP wire is Google's delimited format (a varint
length before each Frame), and login tokens are JWTs minted here with the standard library
(Scripts/relay_jwt.py). It starts the relay itself, as a child process (`PATH serve --port 0
--data-dir TMP`), reads the port from its output, signs tokens with the secret the relay created in
TMP/auth-secret, and checks, in order:

  a. credentials: a token signed with another secret, one with an altered signature, alg "none",
     an HS512 header over an HS256 signature, a genuine HS512 token, no `exp`, an expired `exp`, a
     `sub` naming another user, a malformed token: each gets exactly one login_result (error 2004,
     the same description for all) and the connection closes; a good token logs in;
  b. alice and bob (device "phone") log in with stream_resume and catch up; alice joins group "g",
     bob joins it (alice sees it live); bob sends alice a text;
  c. bob catches up, records his stream position P, acknowledges it (stream_ack) and disconnects;
  d. alice sends bob one-to-one texts and group texts (each acknowledged: send_ack error 0, seqs
     growing), reacts to a group text, pins one, sends a read receipt for bob's text, deletes a
     group text for everyone, recalls a text, carol joins "g", and alice edits a text; the events
     that the relay answers (reaction, delete, recall, edit, membership) are acknowledged by a
     request_result, the others are followed by a ping (its pong comes after their commit);
  e. the moment the last answer arrives, the relay is killed with SIGKILL, and started again on the
     same data directory;
  f. alice sends 3 more texts: acknowledged, their seqs above every seq acknowledged before;
  g. bob ("phone") logs in with stream_position P and pages through stream_sync_request (a small
     limit) until has_more is false: he must get exactly the frames of d and f, each once, in the
     order they were made (positions strictly increasing, every Frame.stream_position equal to its
     StreamFrame.position), messages in seq order per conversation with direction RECEIVED;
  h. bob's "laptop" (a new device, stream_position 0) logs in while "phone" is online: it reads the
     whole stream (bob's own text from "phone" with direction SENT, and the same bytes as "phone"
     at every position after P); nobody is kicked; alice's next text reaches both devices live at
     the same stream_position; a text bob sends from "phone" reaches "laptop" live with direction
     SENT, alice with direction RECEIVED, and not "phone";
  i. a new login on device "phone" kicks the older "phone" connection (kicked_offline
     LOGGED_IN_ELSEWHERE, then the connection closes); "laptop" stays online; that login, with
     stream_position 0, resumes from the position "phone" acknowledged in c (kept across the kill).

With --nodes POSTGRES_URL it runs the same checks against two relay nodes on that database
(`serve --store URL --node-port 0`, the same data dir for the auth secret): node A routes, node B
forwards its clients to A; alice and carol talk to A, bob and the credential checks to B, so every
message and event crosses the nodes. In e the routing node A is killed with SIGKILL; node B takes
over routing on the port it forwarded on, and A is started again, now forwarding to B.

Each check prints one line starting "OK "; a failure prints "FAIL ..." (with the tail of the relay's
output) and exits 1. The last line is "relay_resume_client: N passed, M failed". Every wait is
bounded (--timeout seconds); every relay it starts is killed before it exits.
Needs: pip install -r Scripts/requirements.txt (Scripts/bootstrap does it), protoc.
"""

import argparse
import asyncio
import ctypes
import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from google_reference import load_pool, message_class  # noqa: E402
import relay_jwt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ONE_TO_ONE, GROUP = 1, 2  # ConversationType
SENT, RECEIVED = 1, 2  # MessageDirection
JOIN = 1  # MembershipAction
READ = 2  # ReceiptKind
ADD = 1  # ReactionAction
EVERYONE = 2  # DeleteScope
LOGGED_IN_ELSEWHERE = 1  # KickReason
REFUSED = 2004  # LoginResult.error_code of a refused token
REFUSED_DESCRIPTION = "notLoggedIn: the credentials were refused"
PLATFORM_LINUX = 6


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


def now_ms():
    return int(time.time() * 1000)


def kind(frame):
    return frame.WhichOneof("payload")


class Report:
    def __init__(self):
        self.passed = 0

    def ok(self, line):
        self.passed += 1
        print(f"OK {line}", flush=True)


# --- the relay as a child process ----------------------------------------------------------------

def _die_with_parent():
    """In the child, before exec: the kernel kills it with SIGKILL if this script dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Relay:
    """`imcodec-relay serve --port 0 --data-dir DIR [EXTRA...]`, its output kept for failure reports.
    With `--node-port` in EXTRA it is a relay node: it routes, or forwards its clients to the node
    that does."""

    def __init__(self, binary, data_dir, timeout, extra=(), name="relay"):
        self.binary = binary
        self.data_dir = data_dir
        self.timeout = timeout
        self.extra = list(extra)
        self.name = name
        self.process = None
        self.port = None
        self.output = []
        self.pump = None
        self.routing = None
        self.ready = None

    async def start(self):
        """Starts it and waits until it routes, or (a node) forwards to the node that does."""
        self.output.append(f"--- {self.name}: {self.binary} serve --port 0 --data-dir {self.data_dir} "
                           + " ".join(self.extra))
        self.routing = asyncio.Event()
        self.ready = asyncio.Event()
        self.port = None
        self.process = await asyncio.create_subprocess_exec(
            self.binary, "serve", "--port", "0", "--data-dir", self.data_dir, *self.extra,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            preexec_fn=_die_with_parent)
        self.pump = asyncio.ensure_future(self._read())
        try:
            await asyncio.wait_for(self.ready.wait(), self.timeout)
        except asyncio.TimeoutError:
            raise Failure(f"{self.name} did not print 'relay listening on' (or link as a node) within {self.timeout} s")
        if self.port is None:
            status = await asyncio.wait_for(self.process.wait(), self.timeout)
            raise Failure(f"{self.name} exited (status {status}) before listening")
        return self.port

    async def wait_routing(self):
        """Waits until it routes (a node that took over prints 'relay listening on')."""
        try:
            await asyncio.wait_for(self.routing.wait(), self.timeout)
        except asyncio.TimeoutError:
            raise Failure(f"{self.name} did not take over within {self.timeout} s")
        check(self.alive(), f"{self.name} exited instead of taking over")

    async def _read(self):
        while True:
            line = await self.process.stdout.readline()
            if not line:
                self.ready.set()  # it exited
                self.routing.set()
                return
            text = line.decode("utf-8", "replace").rstrip("\n")
            self.output.append(f"{self.name}: {text}")
            match = re.match(r"relay (?:node: )?listening on 127\.0\.0\.1:(\d+)", text)
            if match and self.port is None:
                self.port = int(match.group(1))
            if text.startswith("relay listening on"):
                self.routing.set()
                self.ready.set()
            if text.startswith("relay node: forwarding clients to the relay that routes"):
                self.ready.set()

    @property
    def pid(self):
        return self.process.pid

    async def kill(self):
        """SIGKILL, then reap it."""
        if self.process is None or self.process.returncode is not None:
            return
        try:
            os.kill(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        await asyncio.wait_for(self.process.wait(), self.timeout)
        if self.pump is not None:
            try:
                await asyncio.wait_for(self.pump, self.timeout)
            except asyncio.TimeoutError:
                pass
        self.output.append(f"--- {self.name} killed (status {self.process.returncode})")

    def alive(self):
        return self.process is not None and self.process.returncode is None


class Relays:
    """One relay on a SQLite data directory, or (--nodes URL) two relay nodes on one PostgreSQL
    database: node A routes first, node B forwards its clients to A. alice and carol talk to A, bob
    and the credential checks to B, so every message crosses the nodes."""

    def __init__(self, binary, data_dir, timeout, nodes_url=None):
        self.data_dir = data_dir
        self.nodes = nodes_url is not None
        if self.nodes:
            extra = ["--store", nodes_url, "--node-port", "0"]
            self.all = [Relay(binary, data_dir, timeout, extra, "node A"), Relay(binary, data_dir, timeout, extra, "node B")]
        else:
            self.all = [Relay(binary, data_dir, timeout)]
        self.routing = self.all[0]

    async def start(self):
        """Starts them; returns what to report."""
        for relay in self.all:
            await relay.start()
        if not self.nodes:
            return f"relay started (pid {self.routing.pid}, port {self.routing.port}, data dir {self.data_dir})"
        a, b = self.all
        return (f"relay started: two nodes on one PostgreSQL database, node A (pid {a.pid}, port {a.port}) "
                f"routes, node B (pid {b.pid}, port {b.port}) forwards to it")

    def port_of(self, user):
        """Where `user` connects: on two nodes, bob (and the credential checks) on B, the others on A."""
        return self.all[-1].port if user in ("bob", "creds") else self.all[0].port

    async def kill_routing(self):
        await self.routing.kill()
        return self.routing.process.returncode

    async def restart(self):
        """After the kill: the same relay again on the same data dir; or node B takes over (routing on
        the port it forwarded on) and node A starts again, forwarding to B. Returns what to report."""
        if not self.nodes:
            port = await self.all[0].start()
            return f"relay restarted on the same data dir (pid {self.routing.pid}, port {port})"
        a, b = self.all
        await b.wait_routing()
        self.routing = b
        await a.start()
        check(not a.routing.is_set(), "node A routes again instead of forwarding to node B")
        return (f"relay nodes: node B took over routing on its port {b.port}; node A started again "
                f"(pid {a.pid}, port {a.port}) and forwards to B")

    def alive(self):
        return [relay for relay in self.all if relay.alive()]

    @property
    def output(self):
        return [line for relay in self.all for line in relay.output]

    async def kill_all(self):
        for relay in self.all:
            await relay.kill()


# --- one TCP connection --------------------------------------------------------------------------

def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class Connection:
    """A TCP connection to the relay, reading delimited Frames into a queue (None: closed)."""

    next_request_id = 1000

    def __init__(self, name, Frame, timeout):
        self.name = name
        self.Frame = Frame
        self.timeout = timeout
        self.queue = asyncio.Queue()
        self.reader = None
        self.writer = None
        self.task = None
        self.closed = False
        self.extra = []  # frames read while waiting for something else

    @classmethod
    def request_id(cls):
        cls.next_request_id += 1
        return cls.next_request_id

    async def open(self, port):
        self.reader, self.writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), self.timeout)
        self.task = asyncio.ensure_future(self._read())
        return self

    async def _read(self):
        try:
            while True:
                length, shift = 0, 0
                while True:
                    byte = (await self.reader.readexactly(1))[0]
                    length |= (byte & 0x7F) << shift
                    shift += 7
                    if not byte & 0x80:
                        break
                    if shift > 35:
                        raise Failure(f"{self.name}: a frame length varint is too long")
                data = await self.reader.readexactly(length)
                await self.queue.put(self.Frame.FromString(data))
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        except Exception as error:  # a frame Google's protobuf cannot parse
            await self.queue.put(error)
        await self.queue.put(None)

    async def send(self, frame):
        data = frame.SerializeToString()
        self.writer.write(varint(len(data)) + data)
        await asyncio.wait_for(self.writer.drain(), self.timeout)

    async def recv(self, what, timeout=None):
        """The next frame; None when the relay closed the connection."""
        if self.closed:
            return None
        try:
            item = await asyncio.wait_for(self.queue.get(), timeout or self.timeout)
        except asyncio.TimeoutError:
            raise Failure(f"{self.name}: no {what} within {timeout or self.timeout} s; "
                          f"read meanwhile: {[kind(f) for f in self.extra]}")
        if item is None:
            self.closed = True
        if isinstance(item, Exception):
            raise Failure(f"{self.name}: a frame Google's protobuf cannot parse: {item}")
        return item

    async def expect(self, what, predicate, timeout=None):
        """Reads until a frame satisfies `predicate`; keeps the others in `extra`."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure(f"{self.name}: no {what} within {timeout or self.timeout} s; "
                              f"read meanwhile: {[kind(f) for f in self.extra]}")
            frame = await self.recv(what, left)
            if frame is None:
                raise Failure(f"{self.name}: the relay closed the connection while waiting for {what}; "
                              f"read before: {[describe(f) for f in self.extra]}")
            if kind(frame) == "system_notice" and frame.system_notice.type == "error":
                raise Failure(f"{self.name}: the relay reported {dict(frame.system_notice.params)} "
                              f"while waiting for {what}")
            if kind(frame) == "kicked_offline":
                raise Failure(f"{self.name}: kicked offline (reason {frame.kicked_offline.reason}: "
                              f"{frame.kicked_offline.description}) while waiting for {what}")
            if predicate(frame):
                return frame
            self.extra.append(frame)

    async def answer(self, frame, payload):
        """Sends `frame` with a new request id; the answer with that id and payload kind."""
        frame.request_id = self.request_id()
        await self.send(frame)
        return await self.expect(f"{payload} for request {frame.request_id}",
                                 lambda f: f.request_id == frame.request_id and kind(f) == payload)

    async def barrier(self):
        """A ping: the relay answers it after everything this connection sent before is committed
        and routed, so every frame that was to reach this connection before it has arrived."""
        ping = self.Frame()
        ping.ping.id = self.request_id()
        answer = await self.answer(ping, "pong")
        check(answer.pong.id == ping.ping.id, f"{self.name}: pong id {answer.pong.id}")

    def take_extra(self):
        extra, self.extra = self.extra, []
        return extra

    async def wait_closed(self, what):
        """Reads until the relay closes the connection; returns what it read."""
        got = []
        while True:
            frame = await self.recv(what)
            if frame is None:
                return got
            got.append(frame)

    async def close(self):
        if self.writer is not None:
            self.writer.close()
            try:
                await asyncio.wait_for(self.writer.wait_closed(), self.timeout)
            except (asyncio.TimeoutError, ConnectionError, OSError):
                pass
        if self.task is not None:
            self.task.cancel()
            try:
                await self.task
            except (asyncio.CancelledError, Exception):
                pass
        self.closed = True


# --- what frames are, for comparing streams ------------------------------------------------------

def ref_key(ref):
    return ref.server_msg_uid


def describe(frame):
    """What a kept frame is, independent of its stream position and direction."""
    k = kind(frame)
    if k == "message":
        m = frame.message
        return ("message", m.conversation.type, m.conversation.target_id, m.seq, m.server_msg_uid, m.client_msg_id)
    if k == "recall":
        return ("recall", ref_key(frame.recall.message))
    if k == "edit":
        e = frame.edit
        return ("edit", ref_key(e.message), e.new_message.elements[0].text.text if e.new_message.elements else "")
    if k == "reaction":
        return ("reaction", ref_key(frame.reaction.message), frame.reaction.emoji, frame.reaction.action)
    if k == "pin":
        return ("pin", ref_key(frame.pin.message), frame.pin.pinned)
    if k == "receipt":
        return ("receipt", ref_key(frame.receipt.message), frame.receipt.kind)
    if k == "delete":
        return ("delete", tuple(ref_key(r) for r in frame.delete.messages), frame.delete.scope)
    if k == "membership":
        c = frame.membership
        return ("membership", c.user_id, c.action, c.conversation.type, c.conversation.target_id)
    return (k,)


# --- the client's actions ------------------------------------------------------------------------

class Session:
    """A logged-in user on one device."""

    def __init__(self, connection, user, device, result):
        self.conn = connection
        self.user = user
        self.device = device
        self.result = result
        self.position = result.resume_position


async def login(port, Frame, timeout, secret, user, device, stream_resume=True, stream_position=0):
    conn = await Connection(f"{user}/{device}", Frame, timeout).open(port)
    frame = Frame()
    frame.login_request.user_id = user
    frame.login_request.token = relay_jwt.mint(secret, user, ttl=3600)
    frame.login_request.device_id = device
    frame.login_request.platform = PLATFORM_LINUX
    frame.login_request.stream_resume = stream_resume
    frame.login_request.stream_position = stream_position
    answer = await conn.answer(frame, "login_result")
    result = answer.login_result
    check(result.error_code == 0, f"{user}/{device}: login refused: {result.error_code} {result.error_description}")
    check(result.session_id != "", f"{user}/{device}: no session id")
    return Session(conn, user, device, result)


async def catch_up(session, after, limit=100):
    """Pages through stream_sync_request from `after` until has_more is false. Returns
    (frames [(position, Frame)], the last response); checks every page's invariants."""
    conn, got, pages = session.conn, [], 0
    last_position = after
    while True:
        request = conn.Frame()
        request.stream_sync_request.after_position = after
        request.stream_sync_request.limit = limit
        response = (await conn.answer(request, "stream_sync_response")).stream_sync_response
        pages += 1
        check(not response.truncated, f"{conn.name}: the stream was truncated after {after}")
        check(response.error_code == 0, f"{conn.name}: stream sync error {response.error_code} "
                                        f"{response.error_description}")
        check(len(response.frames) <= limit, f"{conn.name}: {len(response.frames)} frames in a page of {limit}")
        for stream_frame in response.frames:
            check(stream_frame.position > last_position,
                  f"{conn.name}: position {stream_frame.position} after {last_position} (not strictly increasing)")
            check(stream_frame.position <= response.next_after_position,
                  f"{conn.name}: position {stream_frame.position} past next_after_position "
                  f"{response.next_after_position}")
            last_position = stream_frame.position
            inner = conn.Frame.FromString(stream_frame.frame)
            check(inner.stream_position == stream_frame.position,
                  f"{conn.name}: the frame at position {stream_frame.position} says stream_position "
                  f"{inner.stream_position}")
            got.append((stream_frame.position, inner, bytes(stream_frame.frame)))
        check(response.next_after_position >= after,
              f"{conn.name}: next_after_position {response.next_after_position} went back from {after}")
        check(response.next_after_position <= response.head_position,
              f"{conn.name}: next_after_position {response.next_after_position} past head {response.head_position}")
        if not response.has_more:
            check(response.next_after_position == response.head_position,
                  f"{conn.name}: the last page ends at {response.next_after_position}, head {response.head_position}")
            session.position = response.next_after_position
            return got, response, pages
        check(response.next_after_position > after, f"{conn.name}: has_more but no progress from {after}")
        after = response.next_after_position
        check(pages < 10_000, f"{conn.name}: stream sync does not end")


def text_frame(Frame, sender, conv_type, target, client_msg_id, text):
    frame = Frame()
    m = frame.message
    m.client_msg_id = client_msg_id
    m.sender_id = sender
    m.conversation.type = conv_type
    m.conversation.target_id = target
    m.client_time_ms = now_ms()
    m.elements.add().text.text = text
    return frame


def fill_ref(ref, sent):
    """A MessageRef to the message `sent` (a dict made by send_text)."""
    ref.client_msg_id = sent["client_msg_id"]
    ref.server_msg_uid = sent["uid"]
    ref.seq = sent["seq"]
    ref.sender_id = sent["sender"]
    ref.conversation.type = sent["type"]
    ref.conversation.target_id = sent["target"]
    ref.server_time_ms = sent["time"]


class Seqs:
    """Every seq acknowledged per conversation: new ones must be above all of them."""

    def __init__(self):
        self.acked = {}

    def add(self, conversation, seq, what):
        before = self.acked.setdefault(conversation, [])
        check(seq not in before, f"{what}: seq {seq} in {conversation} was acknowledged before (seqs {before})")
        if before:
            check(seq > max(before), f"{what}: seq {seq} in {conversation} is below the highest acknowledged "
                                     f"{max(before)} (seqs {before})")
        before.append(seq)


async def send_text(session, seqs, conv_type, target, client_msg_id, text):
    Frame = session.conn.Frame
    frame = text_frame(Frame, session.user, conv_type, target, client_msg_id, text)
    await session.conn.send(frame)
    ack = (await session.conn.expect(f"send_ack {client_msg_id}",
                                     lambda f: kind(f) == "send_ack" and f.send_ack.client_msg_id == client_msg_id)
           ).send_ack
    check(ack.error_code == 0, f"{client_msg_id}: send_ack error {ack.error_code}: {ack.error_description}")
    check(ack.seq > 0 and ack.server_msg_uid != "" and ack.server_time_ms > 0, f"{client_msg_id}: ack {ack}")
    conversation = (conv_type, target if conv_type != ONE_TO_ONE else tuple(sorted((session.user, target))))
    seqs.add(conversation, ack.seq, client_msg_id)
    return {"client_msg_id": client_msg_id, "uid": ack.server_msg_uid, "seq": ack.seq, "sender": session.user,
            "type": conv_type, "target": target, "time": ack.server_time_ms, "text": text}


def message_key(sent):
    return ("message", sent["type"], sent["target"], sent["seq"], sent["uid"], sent["client_msg_id"])


async def join(session, group):
    frame = session.conn.Frame()
    frame.membership.action = JOIN
    frame.membership.conversation.type = GROUP
    frame.membership.conversation.target_id = group
    frame.membership.time_ms = now_ms()
    result = (await session.conn.answer(frame, "request_result")).request_result
    check(result.error_code == 0, f"{session.user}: join {group}: error {result.error_code} {result.error_description}")


async def event_with_result(session, frame, what):
    result = (await session.conn.answer(frame, "request_result")).request_result
    check(result.error_code == 0, f"{what}: error {result.error_code} {result.error_description}")


# --- the checks ----------------------------------------------------------------------------------

async def check_credentials(report, port, Frame, timeout, secret):
    bad = [
        ("another secret", "alice", relay_jwt.forge_wrong_secret("alice")),
        ("an altered signature", "alice", relay_jwt.forge_wrong_signature(secret, "alice")),
        ("alg none", "alice", relay_jwt.forge_alg_none("alice")),
        ("an HS512 header over an HS256 signature", "alice", relay_jwt.forge_hs512_header(secret, "alice")),
        ("a genuine HS512 token", "alice", relay_jwt.forge_hs512(secret, "alice")),
        ("no exp", "alice", relay_jwt.forge_without_exp(secret, "alice")),
        ("an expired exp", "alice", relay_jwt.forge_expired(secret, "alice")),
        ("a sub for another user", "alice", relay_jwt.forge_other_sub(secret, "bob")),
        ("a malformed token", "alice", relay_jwt.forge_malformed()),
        ("three garbage segments", "alice", "eyJhbGciOiJIUzI1NiJ9.!!!.@@@"),
    ]
    descriptions = set()
    for what, user, token in bad:
        conn = await Connection(f"{user} ({what})", Frame, timeout).open(port)
        try:
            frame = Frame()
            frame.request_id = 1
            frame.login_request.user_id = user
            frame.login_request.token = token
            frame.login_request.device_id = "creds"
            await conn.send(frame)
            got = await conn.wait_closed("the end of a refused login")
            kinds = [describe(f) for f in got]
            check(len(got) == 1 and kind(got[0]) == "login_result",
                  f"{what}: expected exactly one login_result then the connection closed; got {kinds}")
            result = got[0].login_result
            check(result.error_code == REFUSED,
                  f"{what}: the token was not refused: login_result error {result.error_code} "
                  f"{result.error_description!r} session {result.session_id!r}")
            check(result.session_id == "", f"{what}: a refused login got a session id {result.session_id!r}")
            check(got[0].request_id == 1, f"{what}: login_result request_id {got[0].request_id}")
            descriptions.add(result.error_description)
        finally:
            await conn.close()
        report.ok(f"credentials refused: {what} (error {REFUSED}, connection closed)")
    check(descriptions == {REFUSED_DESCRIPTION},
          f"the refusals do not all read {REFUSED_DESCRIPTION!r}: {sorted(descriptions)}")
    report.ok(f"credentials: every refusal reads {REFUSED_DESCRIPTION!r}")
    good = await login(port, Frame, timeout, secret, "alice", "creds", stream_resume=False)
    await good.conn.barrier()
    await good.conn.close()
    report.ok(f"credentials: a good HS256 token logs in (session {good.result.session_id})")


async def run(args, Frame, report, relays):
    timeout = args.timeout
    report.ok(await relays.start())
    secret = relay_jwt.read_secret(os.path.join(relays.data_dir, "auth-secret"))

    # a. Credentials.
    await check_credentials(report, relays.port_of("creds"), Frame, timeout, secret)

    # b. alice and bob log in with stream_resume, join "g"; bob sends alice a text.
    seqs = Seqs()
    alice = await login(relays.port_of("alice"), Frame, timeout, secret, "alice", "desk")
    bob = await login(relays.port_of("bob"), Frame, timeout, secret, "bob", "phone")
    for session in (alice, bob):
        await catch_up(session, session.result.resume_position)
    report.ok("login alice/desk and bob/phone with stream_resume; both caught up")
    await join(alice, "g")
    await join(bob, "g")
    seen = await alice.conn.expect("bob's join of g", lambda f: kind(f) == "membership")
    check(seen.membership.user_id == "bob" and seen.membership.conversation.target_id == "g",
          f"alice saw {seen.membership}")
    check(seen.stream_position > 0, "bob's join reached alice live without a stream_position")
    report.ok(f"membership: alice and bob joined g; alice saw bob join live at position {seen.stream_position}")
    # c. bob catches up and records P; he sends alice a text (his stream keeps it after P, and
    # his phone must not get it back), acknowledges P (stream_ack) and goes offline.
    frames, last, _ = await catch_up(bob, bob.position)
    check(not bob.conn.take_extra(), "bob read frames he did not ask for")
    position_p = last.next_after_position
    b1 = await send_text(bob, seqs, ONE_TO_ONE, "alice", "b-1", "hi alice, from bob's phone")
    got = (await alice.conn.expect("b-1", lambda f: kind(f) == "message" and f.message.client_msg_id == "b-1"))
    check(got.message.server_msg_uid == b1["uid"] and got.message.direction == RECEIVED and got.stream_position > 0,
          f"alice's b-1: {got.message.server_msg_uid} direction {got.message.direction} at {got.stream_position}")
    ack = Frame()
    ack.stream_ack.position = position_p
    await bob.conn.send(ack)
    await bob.conn.barrier()
    check(not bob.conn.take_extra(), "bob/phone got frames after catching up (his own b-1 came back?)")
    await bob.conn.close()
    report.ok(f"bob/phone caught up at position P={position_p}, sent alice b-1 (seq {b1['seq']}; alice got it "
              f"live at position {got.stream_position}) and went offline")

    # d. While bob is offline: texts and events.
    expected = []  # what bob's stream must hold after P, in order
    texts = {}
    for number in range(1, 4):
        direct = await send_text(alice, seqs, ONE_TO_ONE, "bob", f"a-{number}", f"one-to-one {number}")
        group = await send_text(alice, seqs, GROUP, "g", f"g-{number}", f"group {number}")
        texts[f"a-{number}"], texts[f"g-{number}"] = direct, group
        expected += [message_key(direct), message_key(group)]
    report.ok("alice sent bob a-1..a-3 (seqs " + ", ".join(str(texts[f"a-{n}"]["seq"]) for n in range(1, 4))
              + ") and g a text each time, g-1..g-3 (seqs "
              + ", ".join(str(texts[f"g-{n}"]["seq"]) for n in range(1, 4)) + "), all acknowledged")

    reaction = Frame()
    fill_ref(reaction.reaction.message, texts["g-2"])
    reaction.reaction.user_id = "alice"
    reaction.reaction.emoji = "👍"
    reaction.reaction.action = ADD
    reaction.reaction.time_ms = now_ms()
    await event_with_result(alice, reaction, "reaction to g-2")
    expected.append(("reaction", texts["g-2"]["uid"], "👍", ADD))

    pin = Frame()
    pin.pin.conversation.type = GROUP
    pin.pin.conversation.target_id = "g"
    fill_ref(pin.pin.message, texts["g-1"])
    pin.pin.pinned = True
    pin.pin.operator_id = "alice"
    pin.pin.time_ms = now_ms()
    await alice.conn.send(pin)
    expected.append(("pin", texts["g-1"]["uid"], True))

    receipt = Frame()
    fill_ref(receipt.receipt.message, b1)
    receipt.receipt.kind = READ
    receipt.receipt.user_id = "alice"
    receipt.receipt.is_peer_read = True
    receipt.receipt.time_ms = now_ms()
    await alice.conn.send(receipt)
    expected.append(("receipt", b1["uid"], READ))
    await alice.conn.barrier()

    delete = Frame()
    fill_ref(delete.delete.messages.add(), texts["g-3"])
    delete.delete.scope = EVERYONE
    delete.delete.operator_id = "alice"
    delete.delete.time_ms = now_ms()
    await event_with_result(alice, delete, "delete of g-3 for everyone")
    expected.append(("delete", (texts["g-3"]["uid"],), EVERYONE))

    recall = Frame()
    fill_ref(recall.recall.message, texts["a-1"])
    recall.recall.revoker_id = "alice"
    recall.recall.time_ms = now_ms()
    await event_with_result(alice, recall, "recall of a-1")
    expected.append(("recall", texts["a-1"]["uid"]))

    carol = await login(relays.port_of("carol"), Frame, timeout, secret, "carol", "tablet", stream_resume=False)
    await join(carol, "g")
    await carol.conn.close()
    expected.append(("membership", "carol", JOIN, GROUP, "g"))

    edit = Frame()
    fill_ref(edit.edit.message, texts["a-2"])
    edit.edit.new_message.CopyFrom(text_frame(Frame, "alice", ONE_TO_ONE, "bob", "a-2", "one-to-one 2, edited").message)
    edit.edit.editor_id = "alice"
    edit.edit.time_ms = now_ms()
    edit.request_id = Connection.request_id()
    await alice.conn.send(edit)
    answer = await alice.conn.expect("request_result of the edit",
                                     lambda f: f.request_id == edit.request_id and kind(f) == "request_result")
    # e. The relay dies the moment the last event is acknowledged.
    status = await relays.kill_routing()
    check(answer.request_result.error_code == 0, f"edit of a-2: error {answer.request_result}")
    expected.append(("edit", texts["a-2"]["uid"], "one-to-one 2, edited"))
    report.ok("alice reacted to g-2, pinned g-1, read b-1, deleted g-3 for everyone, recalled a-1, "
              "carol joined g, alice edited a-2 (each answered or followed by a pong)")
    await alice.conn.close()
    report.ok(f"relay killed with SIGKILL the moment the edit was acknowledged (status {status})")

    report.ok(await relays.restart())

    # f. 3 more texts after the restart: seqs continue.
    alice = await login(relays.port_of("alice"), Frame, timeout, secret, "alice", "desk", stream_resume=False)
    for name, conv_type, target in (("a-4", ONE_TO_ONE, "bob"), ("g-4", GROUP, "g"), ("a-5", ONE_TO_ONE, "bob")):
        sent = await send_text(alice, seqs, conv_type, target, name, f"after the restart: {name}")
        texts[name] = sent
        expected.append(message_key(sent))
    report.ok(f"after the restart alice sent a-4 (seq {texts['a-4']['seq']}), g-4 (seq {texts['g-4']['seq']}), "
              f"a-5 (seq {texts['a-5']['seq']}): acknowledged, no seq repeated or went back")

    # g. bob's phone resumes from P.
    phone = await login(relays.port_of("bob"), Frame, timeout, secret, "bob", "phone", stream_position=position_p)
    check(phone.result.resume_position == position_p,
          f"bob/phone: resume_position {phone.result.resume_position}, expected P={position_p}")
    check(phone.result.stream_position >= position_p + len(expected),
          f"bob/phone: head {phone.result.stream_position} < P={position_p} + {len(expected)} frames made offline")
    frames, last, pages = await catch_up(phone, position_p, limit=4)
    got = [describe(f) for _, f, _ in frames]
    if got != expected:
        missing = [e for e in expected if e not in got]
        unexpected = [g for g in got if g not in expected]
        duplicated = sorted({g for g in got if got.count(g) > 1})
        raise Failure(
            f"bob/phone resumed from P={position_p} and did not get exactly what was made while he was offline:\n"
            f"  expected ({len(expected)}): {expected}\n  got ({len(got)}): {got}\n"
            f"  missing: {missing}\n  unexpected: {unexpected}\n  duplicated: {duplicated}")
    for position, frame, _ in frames:
        if kind(frame) == "message":
            check(frame.message.direction == RECEIVED,
                  f"bob/phone: {frame.message.client_msg_id} at {position} has direction {frame.message.direction}")
    by_conversation = {}
    for position, frame, _ in frames:
        if kind(frame) == "message":
            key = (frame.message.conversation.type, frame.message.conversation.target_id)
            check(frame.message.seq > by_conversation.get(key, 0),
                  f"bob/phone: seq {frame.message.seq} after {by_conversation.get(key)} in {key}")
            by_conversation[key] = frame.message.seq
    check(not phone.conn.take_extra(), "bob/phone got frames before catching up")
    messages = sum(1 for e in expected if e[0] == "message")
    report.ok(f"bob/phone resumed from P={position_p} in {pages} pages: exactly {len(got)} frames "
              f"({messages} messages, {len(got) - messages} events), each once, positions "
              f"{frames[0][0]}..{frames[-1][0]} strictly increasing, seqs in order, direction RECEIVED")
    phone_frames = {position: raw for position, _, raw in frames}

    # h. bob's laptop, a second device, online at the same time.
    laptop = await login(relays.port_of("bob"), Frame, timeout, secret, "bob", "laptop", stream_position=0)
    check(laptop.result.resume_position == 0, f"bob/laptop: resume_position {laptop.result.resume_position}")
    all_frames, _, pages = await catch_up(laptop, 0, limit=5)
    positions = [p for p, _, _ in all_frames]
    check(len(set(positions)) == len(positions), f"bob/laptop: repeated positions {positions}")
    mine = [f for _, f, _ in all_frames if kind(f) == "message" and f.message.client_msg_id == "b-1"]
    check(len(mine) == 1 and mine[0].message.direction == SENT and mine[0].message.server_msg_uid == b1["uid"],
          f"bob/laptop: bob's own b-1 from phone: {[(m.message.direction, m.message.server_msg_uid) for m in mine]}")
    laptop_got = [describe(f) for p, f, _ in all_frames if p > position_p and describe(f) != message_key(b1)]
    check(laptop_got == expected, f"bob/laptop: after P it got {laptop_got}, expected {expected}")
    for position, raw in phone_frames.items():
        check(dict((p, r) for p, _, r in all_frames).get(position) == raw,
              f"bob/laptop: the frame at position {position} differs from bob/phone's")
    report.ok(f"bob/laptop (new device, position 0) read the whole stream in {pages} pages: b-1 from bob/phone "
              f"with direction SENT, the same {len(phone_frames)} frames as bob/phone after P")

    alice_live = alice  # logged in since f., live (no stream_resume)
    await phone.conn.barrier()
    for session in (phone, laptop):
        kicks = [f for f in session.conn.take_extra() if kind(f) == "kicked_offline"]
        check(not kicks and not session.conn.closed, f"{session.conn.name} was kicked: {kicks}")
    report.ok("bob/phone and bob/laptop both online (no kicked_offline)")

    live = await send_text(alice_live, seqs, ONE_TO_ONE, "bob", "a-live", "to both of bob's devices")
    positions = []
    for session in (phone, laptop):
        frame = await session.conn.expect("a-live", lambda f: kind(f) == "message")
        check(describe(frame) == message_key(live), f"{session.conn.name}: got {describe(frame)} instead of a-live")
        check(frame.message.direction == RECEIVED, f"{session.conn.name}: a-live direction {frame.message.direction}")
        check(frame.stream_position > position_p, f"{session.conn.name}: a-live at position {frame.stream_position}")
        check(not session.conn.take_extra(), f"{session.conn.name}: frames before a-live")
        positions.append(frame.stream_position)
    check(positions[0] == positions[1], f"a-live at positions {positions} on bob's two devices")
    report.ok(f"alice's a-live reached bob/phone and bob/laptop live at stream_position {positions[0]}")

    b2 = await send_text(phone, seqs, ONE_TO_ONE, "alice", "b-2", "from bob's phone, seen on his laptop")
    other = await laptop.conn.expect("b-2", lambda f: kind(f) == "message")
    check(describe(other) == message_key(b2), f"bob/laptop: got {describe(other)} instead of b-2")
    check(other.message.direction == SENT, f"bob/laptop: b-2 direction {other.message.direction}, expected SENT")
    check(other.stream_position > positions[0], f"bob/laptop: b-2 at position {other.stream_position}")
    to_alice = await alice_live.conn.expect("b-2", lambda f: kind(f) == "message")
    check(describe(to_alice) == message_key(b2) and to_alice.message.direction == RECEIVED,
          f"alice: b-2 {describe(to_alice)} direction {to_alice.message.direction}")
    await phone.conn.barrier()
    echoed = [describe(f) for f in phone.conn.take_extra()]
    check(not echoed, f"bob/phone got frames after sending b-2 (its own message must not come back): {echoed}")
    report.ok(f"bob/phone's b-2 reached bob/laptop live with direction SENT at position {other.stream_position}, "
              "alice with direction RECEIVED, and not bob/phone")

    # i. The same device id again kicks the older connection only.
    again = await login(relays.port_of("bob"), Frame, timeout, secret, "bob", "phone", stream_position=0)
    got = await phone.conn.wait_closed("kicked_offline and the end of the older bob/phone connection")
    kicks = [f for f in got if kind(f) == "kicked_offline"]
    check(len(kicks) == 1, f"the older bob/phone got {[describe(f) for f in got]}, expected one kicked_offline")
    check(kicks[0].kicked_offline.reason == LOGGED_IN_ELSEWHERE,
          f"kicked_offline reason {kicks[0].kicked_offline.reason}, expected LOGGED_IN_ELSEWHERE")
    check(kicks[0].kicked_offline.other_device_id == "phone",
          f"kicked_offline other_device_id {kicks[0].kicked_offline.other_device_id!r}")
    report.ok("a new login on device phone kicked the older bob/phone (LOGGED_IN_ELSEWHERE), then it closed")
    await laptop.conn.barrier()
    await again.conn.barrier()
    check(not laptop.conn.closed and not any(kind(f) == "kicked_offline" for f in laptop.conn.take_extra()),
          "bob/laptop was kicked too")
    report.ok("bob/laptop and the new bob/phone stay online")
    check(again.result.resume_position == position_p,
          f"the new bob/phone login with stream_position 0 resumes from {again.result.resume_position}, "
          f"not from its stream_ack P={position_p} (kept across the restart)")
    report.ok(f"the new bob/phone login (stream_position 0) resumes from its stream_ack P={position_p}, "
              "kept across the restart")

    for session in (alice_live, laptop, again):
        await session.conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--relay", required=True, help="the imcodec-relay executable")
    ap.add_argument("--timeout", type=float, default=20, help="the longest wait for one answer, in seconds")
    ap.add_argument("--keep-data", action="store_true", help="keep the relay's data directory")
    ap.add_argument("--nodes", metavar="POSTGRES_URL",
                    help="run two relay nodes (--node-port) on this PostgreSQL database instead of one relay; "
                         "alice talks to one, bob to the other")
    ap.add_argument("--schemas", default=os.path.join(ROOT, "Schemas"))
    ap.add_argument("--include", default="/usr/include")
    args = ap.parse_args()
    report = Report()
    binary = os.path.abspath(args.relay)
    if not os.access(binary, os.X_OK):
        print(f"FAIL the relay executable {binary} is missing or not executable", flush=True)
        print(f"relay_resume_client: {report.passed} passed, 1 failed", flush=True)
        sys.exit(1)
    with tempfile.TemporaryDirectory() as tmp:
        pool = load_pool(args.schemas, args.include, tmp)
    Frame = message_class(pool, pool.FindMessageTypeByName("imcodec.v1.Frame"))
    data_dir = tempfile.mkdtemp(prefix="imcodec-relay-resume-")
    relays = Relays(binary, os.path.join(data_dir, "data"), args.timeout, args.nodes)
    failure = None

    async def guarded():
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, task.cancel)
        try:
            await run(args, Frame, report, relays)
        finally:
            await relays.kill_all()

    try:
        asyncio.run(guarded())
    except asyncio.CancelledError:
        failure = "interrupted (a signal)"
    except Failure as error:
        failure = str(error)
    except (OSError, asyncio.TimeoutError) as error:
        failure = f"{type(error).__name__}: {error}"
    except Exception as error:  # a bug of this script: still a failure, with its traceback
        import traceback
        traceback.print_exc()
        failure = f"{type(error).__name__}: {error}"
    finally:
        for relay in relays.alive():  # not reached normally: guarded() kills them
            os.kill(relay.pid, signal.SIGKILL)
        if not args.keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)
    if failure is not None:
        print(f"FAIL {failure}", flush=True)
        tail = relays.output[-40:]
        if tail:
            print("relay output (last lines):\n  " + "\n  ".join(tail), flush=True)
        print(f"relay_resume_client: {report.passed} passed, 1 failed", flush=True)
        sys.exit(1)
    print(f"relay_resume_client: {report.passed} passed, 0 failed", flush=True)


if __name__ == "__main__":
    main()
