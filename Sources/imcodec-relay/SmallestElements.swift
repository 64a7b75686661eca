#if Tools
import HeapModule

/// The `capacity` smallest of the elements inserted, in a heap of that many: what a page of a long
/// list needs (a conversation list page's entries, a list entry's read horizons), found by walking
/// the list once instead of sorting it whole.
struct SmallestElements<Element: Comparable> {
    private var heap = Heap<Element>()
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// The largest element kept once `capacity` are: one above it would not be kept (`nil` until then).
    var largest: Element? { heap.count == capacity ? heap.max : nil }

    /// Keeps `element` when it is among the `capacity` smallest so far.
    mutating func insert(_ element: Element) {
        if heap.count < capacity {
            heap.insert(element)
        } else if let max = heap.max, element < max {
            heap.replaceMax(with: element)
        }
    }

    /// The elements kept, smallest first.
    var sorted: [Element] { heap.unordered.sorted() }
}
#endif
