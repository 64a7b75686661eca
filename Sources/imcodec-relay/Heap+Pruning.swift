#if Tools
import HeapModule

/// A heap of timed entries some of which go stale before their time (the relay's disappearing
/// messages and poll closings: a message recalled, or dropped by retention, leaves its entry
/// behind until the entry's time comes, which may be days or years away).
struct PrunedHeap<Element: Comparable> {
    /// The entries, soonest first; stale ones among them until the next pruning.
    private(set) var heap = Heap<Element>()
    /// Below this size the heap is never pruned.
    let minimumPruneAt: Int
    /// The size past which the heap is pruned next: twice the live entries at the last pruning,
    /// so a pruning's cost is paid by the inserts since the one before.
    private var pruneAt: Int

    /// An empty heap, pruned from `minimumPruneAt` entries on (1,024 in the relay; tests use fewer).
    init(minimumPruneAt: Int = 1024) {
        self.minimumPruneAt = minimumPruneAt
        pruneAt = minimumPruneAt
    }

    var min: Element? { heap.min }
    var count: Int { heap.count }

    mutating func removeMin() { _ = heap.removeMin() }

    /// Inserts `element`; when the heap has grown past ``pruneAt``, keeps only the entries `isLive`
    /// says are still due.
    mutating func insert(_ element: Element, isLive: (Element) -> Bool) {
        heap.insert(element)
        guard heap.count > pruneAt else { return }
        heap = Heap(heap.unordered.filter(isLive))
        pruneAt = Swift.max(minimumPruneAt, 2 * heap.count)
    }
}
#endif
