#!/usr/bin/env python3
"""An independent WebSocket client for imcodec-relay, in Python (websockets + Google's protobuf).

usage: ws_client.py --port W --auth-secret-file FILE [--host 127.0.0.1] [--tcp-peer USER]
                    [--schemas DIR] [--include DIR] [--generated DIR]

It speaks the relay protocol (Sources/imcodec-relay/README.md) with its own encoder and decoder:
Google's protobuf builds the message classes from Schemas/ at run time (protoc --descriptor_set_out,
as Scripts/google_reference.py does) and the `websockets` package carries one Frame per binary
message. With --generated DIR it uses instead the modules `protoc --python_out=DIR` wrote, as a
user of another language would (DIR/imcodec/v1/frame_pb2.py, from the schemas Scripts/export-schemas
writes: Scripts/check_exported_schemas.py runs it so); it then prints "OK schemas: ..." first and
fails if protobuf-c's Python module was imported.

Each user's login token is a JWT (HS256, `sub` the user id, `exp` an hour away) minted here with
the standard library (Scripts/relay_jwt.py) under the relay's secret, the first line of
--auth-secret-file (`imcodec-relay serve` makes DATA-DIR/auth-secret unless it is given one). Two
users, alice and bob, connect over WebSocket and:

1. log in with a `login_request` (each gets a `login_result`: error 0, a session id, a heartbeat
   interval), then alice joins the group "pyteam" with a `membership` request (request_result with
   the same request_id), bob joins it too (alice sees bob's `membership`), and alice pings (a `pong`
   with the same id);
2. alice sends bob a one-to-one text; alice gets the send ack (error 0, a server uid, seq 1) and bob
   the delivery, carrying the sender's fields and the server's uid, seq and time (ServerStamp);
3. bob sends a read receipt for it, which reaches alice;
4. alice recalls it, and the recall reaches bob;
5. alice sends a WebSocket ping and gets the pong;
6. with --tcp-peer USER (a client on the relay's length-prefixed TCP port, which answers every
   message with a text), alice sends USER a text, gets the ack and USER's answer;
7. both close with the close handshake (the relay echoes code 1000).

Each step prints one line starting "OK " (the Swift test IMCodecNIOTests/WebSocketRelayTests checks
them); any failure prints "FAIL ..." and exits 1. Every wait is bounded (--timeout seconds).
Needs: pip install -r Scripts/requirements.txt (Scripts/bootstrap does it), protoc.
"""

import argparse
import asyncio
import os
import sys
import tempfile
import time

from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from google_reference import load_pool, message_class  # noqa: E402
from relay_jwt import mint, read_secret  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


class Client:
    """One WebSocket connection logged in as `user`, reading Frames into a queue."""

    def __init__(self, ws, user, frame_class, timeout):
        self.ws = ws
        self.user = user
        self.Frame = frame_class
        self.timeout = timeout
        self.seen = []

    async def send(self, frame):
        await self.ws.send(frame.SerializeToString())

    async def expect(self, what, predicate):
        """Reads frames until one satisfies `predicate` (bounded by the timeout); returns it."""
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure(f"{self.user}: no {what} within {self.timeout} s; saw {self.seen}")
            try:
                data = await asyncio.wait_for(self.ws.recv(), left)
            except asyncio.TimeoutError:
                continue
            check(isinstance(data, bytes), f"{self.user}: a text message arrived: {data!r}")
            frame = self.Frame.FromString(data)
            kind = frame.WhichOneof("payload")
            self.seen.append(kind if kind != "system_notice" else f"notice:{frame.system_notice.type}")
            if kind == "system_notice" and frame.system_notice.type == "error":
                raise Failure(f"{self.user}: the relay reported {dict(frame.system_notice.params)}")
            if kind == "login_result" and frame.login_result.error_code != 0:
                raise Failure(f"{self.user}: login refused: {frame.login_result.error_description}")
            if predicate(frame):
                return frame


async def run(args, Frame):
    uri = f"ws://{args.host}:{args.port}/"
    one_to_one = 1  # CONVERSATION_TYPE_ONE_TO_ONE
    async with connect(uri, max_size=1 << 20) as alice_ws, connect(uri, max_size=1 << 20) as bob_ws:
        alice = Client(alice_ws, "alice", Frame, args.timeout)
        bob = Client(bob_ws, "bob", Frame, args.timeout)

        # 1. Login (session layer), join a group, ping.
        for number, client in enumerate((alice, bob), start=1):
            login = Frame()
            login.request_id = number
            login.login_request.user_id = client.user
            login.login_request.token = mint(args.secret, client.user, ttl=3600)
            login.login_request.device_id = f"py-{client.user}"
            login.login_request.platform = 6  # PLATFORM_LINUX
            await client.send(login)
            answer = await client.expect("login_result", lambda f: f.WhichOneof("payload") == "login_result")
            result = answer.login_result
            check(answer.request_id == number, f"{client.user}: login_result request_id {answer.request_id}")
            check(result.error_code == 0, f"{client.user}: login error {result.error_code}")
            check(result.session_id != "" and result.heartbeat_interval_s > 0, f"{client.user}: {result}")
            check(result.server_time_ms > 0, f"{client.user}: no server time")
            print(f"OK login {client.user} session={result.session_id}", flush=True)

        group = 2  # CONVERSATION_TYPE_GROUP
        for client, request_id in ((alice, 10), (bob, 20)):
            join = Frame()
            join.request_id = request_id
            join.membership.action = 1  # MEMBERSHIP_ACTION_JOIN
            join.membership.conversation.type = group
            join.membership.conversation.target_id = "pyteam"
            await client.send(join)
            done = await client.expect("request_result", lambda f: f.WhichOneof("payload") == "request_result")
            check(done.request_id == request_id, f"{client.user}: request_result for {done.request_id}")
            check(done.request_result.error_code == 0, f"{client.user}: join error {done.request_result}")
            print(f"OK join {client.user} #pyteam", flush=True)
        seen = (await alice.expect("bob's join", lambda f: f.WhichOneof("payload") == "membership")).membership
        check(seen.user_id == "bob" and seen.action == 1 and seen.conversation.target_id == "pyteam", f"{seen}")
        print("OK membership alice saw bob join #pyteam", flush=True)

        ping = Frame()
        ping.request_id = 30
        ping.ping.id = 7
        await alice.send(ping)
        pong = await alice.expect("pong", lambda f: f.WhichOneof("payload") == "pong")
        check(pong.pong.id == 7 and pong.request_id == 30, f"pong {pong}")
        print("OK heartbeat alice pong id=7", flush=True)

        # 2. A one-to-one text, its ack and its delivery.
        text = Frame()
        m = text.message
        m.client_msg_id = "py-1"
        m.sender_id = "alice"
        m.conversation.type = one_to_one
        m.conversation.target_id = "bob"
        m.client_time_ms = int(time.time() * 1000)
        m.flags = 1  # MESSAGE_FLAG_NEED_READ_RECEIPT
        m.elements.add().text.text = "hello bob, from Python 🐍"
        await alice.send(text)
        ack = (await alice.expect("send ack", lambda f: f.WhichOneof("payload") == "send_ack")).send_ack
        check(ack.error_code == 0, f"ack error {ack.error_code}: {ack.error_description}")
        check(ack.client_msg_id == "py-1", f"ack for {ack.client_msg_id!r}")
        check(ack.server_msg_uid != "" and ack.seq == 1 and ack.server_time_ms > 0, f"ack fields {ack}")
        check(ack.conversation.type == one_to_one and ack.conversation.target_id == "bob", "ack conversation")
        print(f"OK ack py-1 seq={ack.seq} uid={ack.server_msg_uid}", flush=True)

        got = (await bob.expect("delivery", lambda f: f.WhichOneof("payload") == "message")).message
        check(got.sender_id == "alice" and got.client_msg_id == "py-1", f"delivery ids {got.sender_id}")
        check(len(got.elements) == 1 and got.elements[0].text.text == "hello bob, from Python 🐍", "delivery text")
        check(got.server_msg_uid == ack.server_msg_uid, f"delivery uid {got.server_msg_uid}")
        check(got.seq == ack.seq and got.server_time_ms == ack.server_time_ms, "delivery seq or time")
        check(got.flags == 1 and got.client_time_ms == m.client_time_ms, "delivery flags or client time")
        print(f"OK delivery bob text={got.elements[0].text.text!r} seq={got.seq} uid={got.server_msg_uid}",
              flush=True)

        # 3. bob's read receipt reaches alice.
        receipt = Frame()
        r = receipt.receipt
        r.kind = 2  # RECEIPT_KIND_READ
        r.message.client_msg_id = got.client_msg_id
        r.message.server_msg_uid = got.server_msg_uid
        r.message.seq = got.seq
        r.message.sender_id = got.sender_id
        r.message.conversation.type = one_to_one
        r.message.conversation.target_id = "alice"
        r.user_id = "bob"
        r.is_peer_read = True
        r.time_ms = int(time.time() * 1000)
        await bob.send(receipt)
        read = (await alice.expect("receipt", lambda f: f.WhichOneof("payload") == "receipt")).receipt
        check(read.kind == 2 and read.user_id == "bob" and read.is_peer_read, f"receipt {read}")
        check(read.message.server_msg_uid == ack.server_msg_uid, "receipt refers to another message")
        print(f"OK receipt alice from=bob uid={read.message.server_msg_uid}", flush=True)

        # 4. alice recalls the message; bob gets the recall.
        recall = Frame()
        rc = recall.recall
        rc.message.client_msg_id = "py-1"
        rc.message.server_msg_uid = ack.server_msg_uid
        rc.message.seq = ack.seq
        rc.message.sender_id = "alice"
        rc.message.conversation.type = one_to_one
        rc.message.conversation.target_id = "bob"
        rc.revoker_id = "alice"
        rc.time_ms = int(time.time() * 1000)
        await alice.send(recall)
        gone = (await bob.expect("recall", lambda f: f.WhichOneof("payload") == "recall")).recall
        check(gone.revoker_id == "alice" and gone.message.server_msg_uid == ack.server_msg_uid, f"recall {gone}")
        print(f"OK recall bob uid={gone.message.server_msg_uid}", flush=True)

        # 5. WebSocket ping, pong.
        pong = await alice_ws.ping(b"imcodec")
        await asyncio.wait_for(pong, args.timeout)
        print("OK pong alice", flush=True)

        # 6. Across transports: a client on the TCP port.
        if args.tcp_peer:
            peer = args.tcp_peer
            cross = Frame()
            c = cross.message
            c.client_msg_id = "py-2"
            c.sender_id = "alice"
            c.conversation.type = one_to_one
            c.conversation.target_id = peer
            c.elements.add().text.text = f"hello {peer} over TCP"
            await alice.send(cross)
            ack2 = (await alice.expect("send ack", lambda f: f.WhichOneof("payload") == "send_ack")).send_ack
            check(ack2.error_code == 0 and ack2.client_msg_id == "py-2", f"ack {ack2}")
            print(f"OK ack py-2 seq={ack2.seq} uid={ack2.server_msg_uid}", flush=True)
            answer = (await alice.expect(f"{peer}'s answer", lambda f: f.WhichOneof("payload") == "message")).message
            check(answer.sender_id == peer and answer.server_msg_uid != "", f"answer {answer}")
            print(f"OK answer alice from={peer} text={answer.elements[0].text.text!r} seq={answer.seq}",
                  flush=True)

        # 7. Close handshake.
        for client in (alice, bob):
            await client.ws.close()
            check(client.ws.close_code == 1000, f"{client.user}: close code {client.ws.close_code}")
            print(f"OK close {client.user} code={client.ws.close_code}", flush=True)


def generated_frame(folder):
    """imcodec.v1.Frame from the modules protoc --python_out wrote into `folder`."""
    sys.path.insert(0, os.path.abspath(folder))
    try:
        from imcodec.v1 import frame_pb2
    except ImportError as error:
        print(f"FAIL cannot import the generated imcodec.v1.frame_pb2 from {folder}: {error}", flush=True)
        sys.exit(1)
    if any(name.startswith("protobuf_c") for name in sys.modules):
        print("FAIL the generated modules imported protobuf-c's module", flush=True)
        sys.exit(1)
    print(f"OK schemas: generated modules {os.path.relpath(frame_pb2.__file__, folder)}", flush=True)
    return frame_pb2.Frame


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--auth-secret-file", required=True,
                    help="the relay's auth secret file; its first line signs the login tokens")
    ap.add_argument("--tcp-peer", default="")
    ap.add_argument("--schemas", default=os.path.join(ROOT, "Schemas"))
    ap.add_argument("--include", default="/usr/include")
    ap.add_argument("--generated", default="",
                    help="import imcodec.v1.frame_pb2 from this folder (protoc --python_out) instead")
    ap.add_argument("--timeout", type=float, default=20)
    args = ap.parse_args()
    try:
        args.secret = read_secret(args.auth_secret_file)
    except OSError as error:
        print(f"FAIL cannot read the auth secret file: {error}", flush=True)
        sys.exit(1)
    if args.generated:
        Frame = generated_frame(args.generated)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            pool = load_pool(args.schemas, args.include, tmp)
        Frame = message_class(pool, pool.FindMessageTypeByName("imcodec.v1.Frame"))
    try:
        asyncio.run(run(args, Frame))
    except (Failure, OSError, WebSocketException) as failure:
        print(f"FAIL {type(failure).__name__}: {failure}", flush=True)
        sys.exit(1)
    print("OK done", flush=True)


if __name__ == "__main__":
    main()
