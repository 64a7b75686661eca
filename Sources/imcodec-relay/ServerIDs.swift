#if Tools
import Crypto
import CryptoExtras

/// The ids the relay gives out: each message's `server_msg_uid` and each login's `session_id`.
///
/// An id is a counter of this start, with a byte naming what it counts, enciphered with a key drawn
/// at start (one AES block: a permutation of 16 bytes) and written as 32 hex digits. So:
/// - ids are unique: distinct counters give distinct blocks under one key, and a repeat across starts
///   (a new key each time) is a 2^-128 chance per pair;
/// - an id tells nothing: not how many messages or logins the relay had between two of them, not
///   which came first, not the next one. With counters in the clear (as before), any user learned the
///   whole service's message rate from two of their own uids, and could name other users' messages.
///
/// The router alone makes them, on its event loop (one instance, not shared).
struct ServerIDs {
    private let key = SymmetricKey(size: .bits128)
    private var messages: UInt64 = 0
    private var sessions: UInt64 = 0

    /// What an id counts: the first byte of the enciphered block.
    private enum Kind: UInt8 {
        case message = 1
        case session = 2
    }

    /// The `server_msg_uid` of the next message the relay stamps.
    mutating func nextMessageUID() -> String {
        messages += 1
        return id(.message, messages)
    }

    /// The `session_id` of the next login.
    mutating func nextSessionID() -> String {
        sessions += 1
        return id(.session, sessions)
    }

    private func id(_ kind: Kind, _ counter: UInt64) -> String {
        var block = [UInt8](repeating: 0, count: 16)
        block[0] = kind.rawValue
        for index in 0..<8 { block[8 + index] = UInt8(truncatingIfNeeded: counter >> (56 - 8 * index)) }
        do {
            try AES.permute(&block, key: key)
        } catch {
            // It throws only for a block that is not 16 bytes or a key that is not an AES key.
            preconditionFailure("AES.permute refused a 16-byte block and a 128-bit key: \(error)")
        }
        // Written as the router holds a kept message's uid (``PackedUID``): 32 lowercase hex digits.
        let half = { (range: Range<Int>) in block[range].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        return PackedUID.hex(half(0..<8), half(8..<16)).string
    }
}
#endif
