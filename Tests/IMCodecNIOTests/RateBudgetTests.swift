#if Tools
import Testing

@testable import imcodec_relay

/// ``RateBudget``, the token bucket behind the relay's per-user budgets (Router+RateLimits.swift):
/// full at the start, refilled at its rate up to its burst, a take past what is left refused
/// without taking anything, one larger than the burst let through only when full (a debt), a clock
/// that moves back refilling nothing, and a budget full again seen as one never used.
@Suite("Relay: rate budgets")
struct RateBudgetTests {
    /// A budget with its rate and burst (`#expect` cannot call a mutating method).
    private final class Budget {
        var budget: RateBudget
        let rate: Int
        let burst: Int
        init(atMs nowMs: Int64, rate: Int, burst: Int) {
            (budget, self.rate, self.burst) = (RateBudget(fullAtMs: nowMs, burst: burst), rate, burst)
        }
        func take(_ cost: Int, at nowMs: Int64) -> Bool { budget.take(cost, atMs: nowMs, rate: rate, burst: burst) }
        func isFull(at nowMs: Int64) -> Bool { budget.isFull(atMs: nowMs, rate: rate, burst: burst) }
        func covers(_ cost: Int, at nowMs: Int64) -> Bool { budget.covers(cost, atMs: nowMs, rate: rate, burst: burst) }
    }

    @Test func refillsAtItsRateUpToItsBurst() {
        let budget = Budget(atMs: 10_000, rate: 5, burst: 20)
        #expect(budget.isFull(at: 10_000))
        for _ in 0..<20 { #expect(budget.take(1, at: 10_000)) }
        #expect(!budget.take(1, at: 10_000))
        // 5 a second: one every 200 ms, and a refused take costs nothing.
        #expect(!budget.take(1, at: 10_199))
        #expect(budget.take(1, at: 10_200))
        #expect(!budget.take(2, at: 10_500))
        #expect(budget.take(2, at: 10_600))
        // An hour idle fills it to the burst, not past it.
        #expect(budget.isFull(at: 3_610_600))
        #expect(budget.take(20, at: 3_610_600))
        #expect(!budget.take(1, at: 3_610_600))
    }

    @Test func aTakeLargerThanTheBurstGoesWhenFullAndLeavesADebt() {
        let budget = Budget(atMs: 0, rate: 10, burst: 50)
        #expect(budget.take(1, at: 0))
        // Not full: 49 left, a take of 60 waits until it is.
        #expect(!budget.take(60, at: 0))
        #expect(budget.take(60, at: 100))
        // 10 owed: 1.1 s pays it and gives 1; 5 s more fill it.
        #expect(!budget.take(1, at: 1_199))
        #expect(budget.take(1, at: 1_200))
        #expect(!budget.isFull(at: 6_199))
        #expect(budget.isFull(at: 6_200))
    }

    /// A time before the latest seen (a clock that moved back, or a history request's mark-read
    /// spent after its store read, by the request's arrival) refills nothing, then or later. Before,
    /// the budget counted on from the older time, and refilled the same interval twice.
    @Test func aClockThatMovesBackRefillsNothing() {
        let budget = Budget(atMs: 50_000, rate: 1, burst: 2)
        #expect(budget.take(2, at: 50_000))
        #expect(!budget.take(1, at: 40_000))
        // Measured from the latest time seen: a second after 50 s gives one, not one after 40 s.
        #expect(!budget.take(1, at: 41_000))
        #expect(!budget.take(1, at: 50_999))
        #expect(budget.take(1, at: 51_000))
        // A take at an older time still takes what is left, and no more.
        #expect(budget.take(1, at: 53_000))
        #expect(budget.take(1, at: 52_500))
        #expect(!budget.take(1, at: 52_600))
    }

    /// `covers` answers as `take` would and takes nothing (a join checks its joins before its
    /// fan-out is spent, and takes one only once both pass).
    @Test func coversAnswersAsTakeWouldAndTakesNothing() {
        let budget = Budget(atMs: 0, rate: 10, burst: 50)
        for _ in 0..<3 { #expect(budget.covers(60, at: 0)) }
        #expect(budget.take(40, at: 0))
        #expect(!budget.covers(11, at: 0))
        #expect(budget.covers(10, at: 0))
        #expect(budget.covers(11, at: 100))
        #expect(budget.take(11, at: 100))
        #expect(!budget.take(1, at: 100))
        #expect(!budget.covers(1, at: 100))
    }

    @Test func extremeRatesAndCostsNeitherTrapNorWrap() {
        let largest = Budget(atMs: .min, rate: .max, burst: .max)
        #expect(largest.take(.max, at: .max))
        #expect(!largest.take(1, at: .max))
        #expect(!largest.isFull(at: .min))
        let negative = Budget(atMs: 0, rate: -3, burst: -5)
        #expect(negative.take(-1, at: 0))
    }
}
#endif
