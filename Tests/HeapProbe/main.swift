// imcodec-heap-probe: the heap of decoding, measured in a process that does nothing else, by
// counting every allocation and free of the process (the test-only allocation counter,
// Tests/AllocationCounter, interposes the allocator). Not a product for users: it exists for the
// tests and for `Fuzz/run --heap`.
//
//     imcodec-heap-probe FILE [--max-input-size N] [--max-depth N] [--max-field-count N]
//                             [--max-decoded-memory N]
//         One decode of FILE as a Frame (OneDecode.swift); HardeningTests spawns it, so that other
//         suites running in the test process meanwhile are not counted.
//     imcodec-heap-probe --report [FIXTURES_DIR]
//         The peak heap of decoding the adversarial families, inputs near the limit, history pages
//         and the larger fixtures, one line each, checked against the documented bound
//         (Report.swift); exits 1 when a decode passes it. `Fuzz/run --heap` runs it.
import CAllocationCounter
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("imcodec-heap-probe: \(message)\n".utf8))
    exit(2)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let first = arguments.first else {
    fail("usage: imcodec-heap-probe FILE [--max-input-size N] ... | --report [DIR]")
}
if first == "--report" {
    guard allocation_counter_is_active() != 0 else { fail("the allocator is not interposed; cannot measure") }
    exit(Report.run(fixtures: arguments.dropFirst().first))
}
print(OneDecode.run(arguments))
