#if Tools
/// A set of seqs kept as sorted, disjoint runs of consecutive seqs: a user's unread messages in
/// one conversation, which are mostly one run (everything since its read horizon, less its own
/// messages). Held and stored in the space of its runs, not of its seqs: a user who never reads a
/// busy conversation costs one run, where a list of seqs made every message rewrite them all.
struct SeqRuns: Equatable, Sendable {
    /// The runs, in order; no two touch.
    private(set) var runs: [ClosedRange<UInt64>] = []
    /// The number of seqs held.
    private(set) var count = 0

    init() {}

    /// The set of `seqs` (in any order; a seq given twice counts once). For records of earlier
    /// relays and tests.
    init<Seqs: Sequence<UInt64>>(_ seqs: Seqs) {
        for seq in seqs.sorted() { insert(seq) }
    }

    var isEmpty: Bool { count == 0 }

    /// Every seq held, in order (for tests).
    var seqs: [UInt64] { runs.flatMap { Array($0) } }

    /// Whether `seq` is held (for tests).
    func contains(_ seq: UInt64) -> Bool {
        guard let index = index(of: seq) else { return false }
        return runs[index].contains(seq)
    }

    /// Adds `seq`. A seq above every held one (a new message) costs O(1).
    mutating func insert(_ seq: UInt64) {
        // The first run that ends at or above seq; none when seq is above every held one.
        guard let index = index(of: seq) else {
            if let last = runs.last, last.upperBound + 1 == seq {
                runs[runs.count - 1] = last.lowerBound...seq
            } else {
                runs.append(seq...seq)
            }
            count += 1
            return
        }
        let run = runs[index]
        guard !run.contains(seq) else { return }
        count += 1
        let joinsBefore = index > 0 && runs[index - 1].upperBound + 1 == seq
        let joinsRun = seq + 1 == run.lowerBound
        switch (joinsBefore, joinsRun) {
        case (true, true):
            runs[index - 1] = runs[index - 1].lowerBound...run.upperBound
            runs.remove(at: index)
        case (true, false): runs[index - 1] = runs[index - 1].lowerBound...seq
        case (false, true): runs[index] = seq...run.upperBound
        case (false, false): runs.insert(seq...seq, at: index)
        }
    }

    /// Removes every seq at or below `seq` (what a user has read or cleared).
    mutating func removeAll(through seq: UInt64) {
        // The runs wholly at or below seq go at once, then the first left is cut.
        let above = seq == .max ? runs.count : index(of: seq + 1) ?? runs.count
        count -= runs[..<above].reduce(0) { $0 + $1.count }
        runs.removeFirst(above)
        if let first = runs.first, first.lowerBound <= seq {
            runs[0] = (seq + 1)...first.upperBound
            count -= Int(seq + 1 - first.lowerBound)
        }
    }

    /// Removes `seqs` (recalled, deleted, expired messages); whether any of them was held.
    mutating func remove(_ seqs: Set<UInt64>) -> Bool {
        let before = count
        for seq in seqs {
            guard let index = index(of: seq), runs[index].contains(seq) else { continue }
            let run = runs[index]
            count -= 1
            switch (seq == run.lowerBound, seq == run.upperBound) {
            case (true, true): runs.remove(at: index)
            case (true, false): runs[index] = (seq + 1)...run.upperBound
            case (false, true): runs[index] = run.lowerBound...(seq - 1)
            case (false, false):
                runs[index] = run.lowerBound...(seq - 1)
                runs.insert((seq + 1)...run.upperBound, at: index + 1)
            }
        }
        return count != before
    }

    /// Joins the oldest runs into one, with the seqs between them, until at most `maxRuns` are
    /// left (the seqs held then include those the joined gaps held: a bound on the set's size, at
    /// the cost of counting the gaps).
    mutating func joinOldestRuns(keepingAtMost maxRuns: Int) {
        guard maxRuns > 0, runs.count > maxRuns else { return }
        let joined = runs.count - maxRuns + 1
        let first = runs[0].lowerBound
        let last = runs[joined - 1].upperBound
        count += Int(last - first + 1) - runs[..<joined].reduce(0) { $0 + $1.count }
        runs.replaceSubrange(0..<joined, with: [first...last])
    }

    /// The index of the first run whose upper bound is at or above `seq`, `nil` when there is none.
    private func index(of seq: UInt64) -> Int? {
        var low = 0
        var high = runs.count
        while low < high {
            let mid = (low + high) / 2
            if runs[mid].upperBound < seq { low = mid + 1 } else { high = mid }
        }
        return low < runs.count ? low : nil
    }

    // MARK: Bytes

    /// The top bit of a stored value that ends a run (seqs stay far below it).
    private static let runEnd: UInt64 = 1 << 63

    /// Appends the set as a state record's seq list (``SeqListBytes``): each run's first seq, then,
    /// for a run of more than one, its last seq with the top bit set. A list of single seqs (what
    /// relays before the runs wrote) is the same set in both forms.
    func append(to bytes: inout [UInt8]) {
        var values: [UInt64] = []
        values.reserveCapacity(2 * runs.count)
        for run in runs {
            values.append(run.lowerBound)
            if run.upperBound > run.lowerBound { values.append(run.upperBound | Self.runEnd) }
        }
        SeqListBytes.append(values, to: &bytes)
    }

    /// The set a record's seq list holds (``append(to:)``), or `nil` when it holds none: a length
    /// not a multiple of 8, or (in the form with runs) a seq 0, a seq not above the one before, or
    /// a run's end that does not follow its first seq. A list without runs (what relays before
    /// the runs wrote) is read as they read it: the seqs it names, in any order, less any 0.
    init?(bytes: ArraySlice<UInt8>) {
        guard let values = SeqListBytes.seqs(bytes) else { return nil }
        guard values.contains(where: { $0 & Self.runEnd != 0 }) else {
            self.init(values.lazy.filter { $0 != 0 })
            return
        }
        var runs: [ClosedRange<UInt64>] = []
        runs.reserveCapacity(values.count)
        var open = false  // Whether the last run is a first seq that may take its end.
        for value in values {
            let seq = value & ~Self.runEnd
            guard seq > (runs.last?.upperBound ?? 0) else { return nil }
            if value & Self.runEnd != 0 {
                guard open else { return nil }
                runs[runs.count - 1] = runs[runs.count - 1].lowerBound...seq
                open = false
            } else if let last = runs.last, last.upperBound + 1 == seq {
                // Seqs one after another join one run.
                runs[runs.count - 1] = last.lowerBound...seq
                open = false
            } else {
                runs.append(seq...seq)
                open = true
            }
        }
        self.init()
        self.runs = runs
        // At most 2^63 - 1 seqs (no seq 0, none with the top bit): the sum fits.
        count = runs.reduce(0) { $0 + Int($1.upperBound - $1.lowerBound) + 1 }
    }
}
#endif
