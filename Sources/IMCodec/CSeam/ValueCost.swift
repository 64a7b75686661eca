internal import CIMCodecRuntime
internal import CProtobufC

/// The Swift side of the pre-scan's memory estimate (see "Memory estimate" in
/// Sources/CIMCodecRuntime/prescan.c): what one element of a repeated message field costs a Swift
/// array (the element type's stride; sub-messages are stored inline), looked up by the element's
/// protobuf-c descriptor. Message types not in the schema list are map entries, which become
/// dictionary slots.
enum ValueCost {
    /// A dictionary slot of `[String: String]` (two 16-byte strings at a load factor of at least
    /// 3/8) and its share of the bitmap, rounded up.
    static let mapEntry = 112

    /// Scan options with the element cost table and the bound filled in; the caller sets the limits.
    static var scanOptions: imcodec_scan_options { table.options }

    private struct Table: @unchecked Sendable {
        // The element costs are written once, then only read, and never freed (they live as long
        // as the descriptors they point at).
        let options: imcodec_scan_options
    }

    private static let table: Table = {
        func cost<M: IMCodecMessage>(_ type: M.Type) -> imcodec_element_cost {
            imcodec_element_cost(descriptor: M._protobufCDescriptor.pointer, element_size: MemoryLayout<M>.stride)
        }
        let costs = IMCodecSchema.messageTypes.map { cost($0) }
            .sorted { UInt(bitPattern: $0.descriptor) < UInt(bitPattern: $1.descriptor) }
        let storage = UnsafeMutablePointer<imcodec_element_cost>.allocate(capacity: max(costs.count, 1))
        storage.initialize(from: costs, count: costs.count)
        var options = imcodec_scan_options()
        options.flags = IMCODEC_SCAN_MISMATCH_AS_UNKNOWN | IMCODEC_SCAN_MERGE_REPEATS | IMCODEC_SCAN_LONG_LENGTHS
        options.element_costs = UnsafePointer(storage)
        options.element_cost_count = costs.count
        options.default_element_cost = mapEntry
        let roots: [UnsafePointer<ProtobufCMessageDescriptor>?] = costs.map { $0.descriptor }
        roots.withUnsafeBufferPointer { imcodec_scan_bound(&options, $0.baseAddress, $0.count) }
        return Table(options: options)
    }()

    /// No input has an estimate above `count * perByte + fixed` bytes (imcodec_scan_bound).
    static var bound: (perByte: Int, fixed: Int) { (table.options.bytes_per_input_byte, table.options.fixed_bytes) }

}
