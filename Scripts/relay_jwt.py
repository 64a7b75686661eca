#!/usr/bin/env python3
"""Login tokens for imcodec-relay, minted in Python with the standard library only.

The relay (Sources/imcodec-relay/RelayAuth.swift, through vapor/jwt-kit) accepts as a login token a
JWT (RFC 7519) whose header's `alg` is HS256, whose HMAC-SHA256 signature verifies under its secret
(the first line of its secret file, at least 32 characters, used as UTF-8 bytes), which carries
`exp` in the future and whose `sub` is the user id of the login. Everything else is refused with
one failed `login_result` (error 2004) that does not say which check failed.

This module only *makes* tokens (for the relay's Python test clients, Scripts/ws_client.py and
Scripts/relay_resume_client.py): `mint` makes a good one, the `forge_*` helpers make the bad ones
a test expects the relay to refuse. It parses no token; checking tokens is the server's job, and
the server uses a maintained library for it.

    from relay_jwt import mint, read_secret
    token = mint(read_secret("imcodec-relay-data/auth-secret"), "alice", ttl=600)
"""

import base64
import hashlib
import hmac
import json
import time

# The HMAC algorithms this module signs with: JWS `alg` → hashlib digest.
DIGESTS = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}

# A secret the relay under test does not hold (for tokens with a bad signature).
OTHER_SECRET = "this-is-not-the-relay-secret-0123456789abcdef"


def b64url(data):
    """Base64url without padding (RFC 7515, section 2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _segment(value):
    return b64url(json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8"))


def _key(secret):
    return secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)


def read_secret(path):
    """The relay's secret: the first line of the file at `path` (without its line end)."""
    with open(path, "r", encoding="utf-8") as file:
        line = file.readline()
    return line.rstrip("\n").rstrip("\r")


def sign(secret, header, claims, alg="HS256"):
    """A compact JWS of `header` and `claims` (dicts, used as they are), signed with `alg`
    ("HS256", "HS384", "HS512", or "none" for an empty signature) under `secret`."""
    signing_input = f"{_segment(header)}.{_segment(claims)}"
    if alg == "none":
        return signing_input + "."
    digest = DIGESTS[alg]
    signature = hmac.new(_key(secret), signing_input.encode("ascii"), digest).digest()
    return f"{signing_input}.{b64url(signature)}"


def mint(secret, sub, exp=None, ttl=3600, alg="HS256", header_overrides=None, claims_overrides=None):
    """A token for the user `sub`, signed with `alg` under `secret`.

    exp: the expiry, in seconds since the Unix epoch; None: now + `ttl`; False: no `exp` claim.
    alg: the algorithm the token is signed with and that its header names ("none": no signature).
    header_overrides: header fields set after `alg` (so the header may name another algorithm than
        the one that signed it).
    claims_overrides: claims set after `sub` and `exp` (a value None removes the claim).
    """
    now = int(time.time())
    header = {"alg": alg, "typ": "JWT"}
    header.update(header_overrides or {})
    claims = {"sub": sub, "iat": now}
    if exp is None:
        claims["exp"] = now + int(ttl)
    elif exp is not False:
        claims["exp"] = int(exp)
    for name, value in (claims_overrides or {}).items():
        if value is None:
            claims.pop(name, None)
        else:
            claims[name] = value
    return sign(secret, header, claims, alg=alg)


# --- tokens the relay must refuse ---------------------------------------------------------------

def forge_wrong_secret(sub, ttl=3600):
    """HS256, but signed with a secret that is not the relay's."""
    return mint(OTHER_SECRET, sub, ttl=ttl)


def forge_wrong_signature(secret, sub, ttl=3600):
    """A good token whose signature was altered (its first byte flipped)."""
    head, claims, signature = mint(secret, sub, ttl=ttl).split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
    raw[0] ^= 0x01
    return f"{head}.{claims}.{b64url(bytes(raw))}"


def forge_alg_none(sub, ttl=3600):
    """`alg: none` with an empty signature (RFC 7519's unsecured JWT)."""
    return mint("", sub, ttl=ttl, alg="none")


def forge_hs512_header(secret, sub, ttl=3600):
    """A header naming HS512 over a valid HS256 signature under the relay's secret."""
    return mint(secret, sub, ttl=ttl, alg="HS256", header_overrides={"alg": "HS512"})


def forge_hs512(secret, sub, ttl=3600):
    """A genuine HS512 token under the relay's secret (an algorithm the relay does not accept)."""
    return mint(secret, sub, ttl=ttl, alg="HS512")


def forge_without_exp(secret, sub):
    """HS256 under the relay's secret, but without an `exp` claim."""
    return mint(secret, sub, exp=False)


def forge_expired(secret, sub, seconds_ago=600):
    """HS256 under the relay's secret, expired `seconds_ago` seconds ago."""
    return mint(secret, sub, exp=int(time.time()) - seconds_ago)


def forge_other_sub(secret, sub="mallory", ttl=3600):
    """A valid token for another user (`sub`), to be presented with someone else's user id."""
    return mint(secret, sub, ttl=ttl)


def forge_malformed():
    """Not a JWT at all (one segment, no dots)."""
    return "not-a-jwt"


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Mint an imcodec-relay login token (HS256 JWT).")
    ap.add_argument("--auth-secret-file", required=True, help="the relay's secret file (first line)")
    ap.add_argument("--user", required=True)
    ap.add_argument("--ttl", type=int, default=3600)
    args = ap.parse_args()
    print(mint(read_secret(args.auth_secret_file), args.user, ttl=args.ttl))
