/// A strict JSON document (RFC 8259) parsed into a flat "tape" of nodes (implementation detail of
/// ``ProtoJSONParser``).
///
/// The tokenizer is a loop with an explicit stack, never recursion, and it stops at a nesting limit,
/// so hostile input such as a million `[` costs neither stack nor unbounded memory. Nodes are laid
/// out in document order; a container's members follow it and its `end` says where its subtree
/// stops, so a reader skips a subtree in O(1):
///
///     {"a":[1,2],"b":"x"}   →   0 object(count 2, end 7)  1 string "a"  2 array(count 2, end 5)
///                               3 number 1  4 number 2  5 string "b"  6 string "x"
///
/// An object holds a key node (a string) before each member value.
struct JSONTape {
    enum Kind: UInt8 {
        case null, `false`, `true`, number, string, array, object
    }

    /// One value; 16 bytes (32-bit fields: the tokenizer refuses text of 4 GiB or more).
    struct Node {
        private var _kind: Kind
        private var _offset: UInt32
        private var _a: UInt32
        private var _b: UInt32

        init(kind: Kind, offset: Int, a: Int, b: Int) {
            _kind = kind
            _offset = UInt32(truncatingIfNeeded: offset)
            _a = UInt32(truncatingIfNeeded: a)
            _b = UInt32(truncatingIfNeeded: b)
        }

        var kind: Kind { _kind }
        /// Byte offset in the JSON text of the value's first byte.
        var offset: Int { Int(_offset) }
        /// string / number: where its bytes start in ``JSONTape/text``; array / object: member count.
        var a: Int {
            get { Int(_a) }
            set { _a = UInt32(truncatingIfNeeded: newValue) }
        }
        /// string / number: its byte count; array / object: the index of the first node after it.
        var b: Int {
            get { Int(_b) }
            set { _b = UInt32(truncatingIfNeeded: newValue) }
        }
    }

    /// Every node, in document order.
    /// The most arrays and objects that were open at once.
    var deepest = 0
    var nodes: [Node] = []
    /// The decoded bytes of every string (escapes resolved, UTF-8) and the text of every number.
    var text: [UInt8] = []

    /// The index of the first node after node `index` and its subtree.
    @inline(__always)
    func next(after index: Int) -> Int {
        let node = nodes[index]
        return node.kind == .array || node.kind == .object ? node.b : index + 1
    }

    /// The bytes of a string or number node.
    @inline(__always)
    func bytes(_ index: Int) -> ArraySlice<UInt8> {
        let node = nodes[index]
        return text[node.a..<node.a + node.b]
    }

    /// The string or number node's bytes as a Swift string.
    func string(_ index: Int) -> String {
        String(decoding: bytes(index), as: UTF8.self)
    }

    /// A short description of a node's JSON type, for error messages.
    func typeName(_ index: Int) -> String {
        switch nodes[index].kind {
        case .null: "null"
        case .false, .true: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
