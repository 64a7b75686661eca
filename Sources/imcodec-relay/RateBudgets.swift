#if Tools
/// One kind of budget of every user (or requester and owner) that spends it, at one rate
/// (Router+RateLimits.swift): each key's ``RateBudget`` while it spends, forgotten once full again.
struct RateBudgets<Key: Hashable> {
    /// Units a second the budgets refill at, at most ``Router/maxRate`` (no product overflows).
    private let rate: Int
    /// Units a full budget holds.
    private let burst: Int
    /// Units one thing counted costs: 1 for a rate a second, 60 for a rate a minute.
    private let unit: Int
    private var budgets: [Key: RateBudget] = [:]

    /// `rate` things a second, in bursts of `burstSeconds` seconds' worth; 0: no bound.
    init(perSecond rate: Int, burstSeconds: Int) {
        self.rate = min(max(rate, 0), Router.maxRate)
        (burst, unit) = (self.rate * burstSeconds, 1)
    }

    /// `rate` things a minute, in bursts of a minute's worth (`rate` things); 0: no bound. A thing
    /// costs 60 units of budgets refilled at `rate` units a second.
    init(perMinute rate: Int) {
        self.rate = min(max(rate, 0), Router.maxRate)
        (burst, unit) = (self.rate * 60, 60)
    }

    /// The keys with a budget: those that spent since the sweep last found their budget full.
    var keys: Dictionary<Key, RateBudget>.Keys { budgets.keys }

    /// Takes `count` things from `key`'s budget at `nowMs`; `false`, taking nothing, when what is
    /// left does not cover them (``RateBudget/take(_:atMs:rate:burst:)``).
    mutating func take(_ count: Int, by key: Key, atMs nowMs: Int64) -> Bool {
        guard rate > 0 else { return true }
        return budgets[key, default: RateBudget(fullAtMs: nowMs, burst: burst)]
            .take(count * unit, atMs: nowMs, rate: rate, burst: burst)
    }

    /// Whether ``take(_:by:atMs:)`` would take `count` things from `key`'s budget at `nowMs`, taking
    /// nothing (a key without a budget has a full one).
    func covers(_ count: Int, by key: Key, atMs nowMs: Int64) -> Bool {
        guard rate > 0, let budget = budgets[key] else { return true }
        return budget.covers(count * unit, atMs: nowMs, rate: rate, burst: burst)
    }

    /// Forgets the budgets full again at `nowMs`: the same as never used.
    mutating func forgetFull(atMs nowMs: Int64) {
        budgets = budgets.filter { !$0.value.isFull(atMs: nowMs, rate: rate, burst: burst) }
    }
}
#endif
