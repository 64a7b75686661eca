#if Tools
/// A token bucket: how much a user may still have the relay do (Router+RateLimits.swift). It holds
/// `burst` units when full, refills at `rate` a second by ``RelayConfiguration/silenceClock``, and
/// lets a take larger than `burst` through when full, leaving a debt the refill pays first (a
/// message to a group larger than the burst goes, and its sender waits its cost).
struct RateBudget {
    /// What is left, in thousandths of a unit; negative while a debt is paid.
    private var milliUnits: Int64
    /// When ``milliUnits`` was last brought up to date.
    private var lastMs: Int64

    /// A full budget at `nowMs`.
    init(fullAtMs nowMs: Int64, burst: Int) {
        milliUnits = Self.milli(burst)
        lastMs = nowMs
    }

    /// Takes `cost` units at `nowMs` when what is left covers it (or the budget is full); `false`,
    /// taking nothing, when it does not. A time before the latest one seen (a clock that moved
    /// back, or a request answered after a store read, by its arrival) refills nothing, then or
    /// later: the refill counts from the latest.
    mutating func take(_ cost: Int, atMs nowMs: Int64, rate: Int, burst: Int) -> Bool {
        let covered = covers(cost, atMs: nowMs, rate: rate, burst: burst)
        let left = self.left(atMs: nowMs, rate: rate, burst: burst)
        (milliUnits, lastMs) = (left, max(lastMs, nowMs))
        guard covered else { return false }
        milliUnits = left - Self.milli(cost)
        return true
    }

    /// Whether ``take(_:atMs:rate:burst:)`` would take `cost` at `nowMs`, taking nothing.
    func covers(_ cost: Int, atMs nowMs: Int64, rate: Int, burst: Int) -> Bool {
        left(atMs: nowMs, rate: rate, burst: burst) >= min(Self.milli(cost), Self.milli(burst))
    }

    /// Whether the budget is full at `nowMs`: the same as one never used, so it can be forgotten.
    func isFull(atMs nowMs: Int64, rate: Int, burst: Int) -> Bool {
        left(atMs: nowMs, rate: rate, burst: burst) >= Self.milli(burst)
    }

    /// What is left at `nowMs`: the refill since ``lastMs`` (a day at most: no product overflows),
    /// up to the burst.
    private func left(atMs nowMs: Int64, rate: Int, burst: Int) -> Int64 {
        let elapsed = min(max(nowMs &- lastMs, 0), 86_400_000)
        let refill = elapsed * Int64(min(max(rate, 0), 1_000_000_000))
        return min(milliUnits + refill, Self.milli(burst))
    }

    /// `units` in thousandths (at most 2^40 units: no product overflows).
    private static func milli(_ units: Int) -> Int64 { Int64(min(max(units, 0), 1 << 40)) * 1000 }
}
#endif
