#if os(Linux)
import Glibc
import IMCodecTestSupport
import Testing

/// ``ChildProcess``, which starts every child process of the tests (protoc, python3, the CLI, the
/// relay): what a child gets, and that it starts while the test process holds many descriptors, as
/// the relay suites make it (Foundation's `Process.run()` crashed there, see ChildProcess.swift).
@Suite("Child processes of the tests")
struct ChildProcessTests {
    /// A child started while this process holds 1,500 more descriptors than it did holds none of
    /// them: only its standard streams (and the one `ls` opens to read the directory).
    @Test func aChildStartsBesideManyDescriptorsAndInheritsNone() throws {
        // The soft limit at the hard one, as the relay sets it at start (the relay suites share it).
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        try #require(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        try #require(limit.rlim_cur >= 4_000, "the open-file limit is \(limit.rlim_cur)")
        let extra = (0..<1_500).map { _ in open("/dev/null", O_RDONLY) }
        defer { for fd in extra where fd >= 0 { close(fd) } }
        try #require(!extra.contains(-1), "could not open 1,500 descriptors")
        let (termination, output, _) = try ChildProcess.run("/bin/ls", ["/proc/self/fd"])
        #expect(termination == .exited(0))
        let listed = String(decoding: output, as: UTF8.self).split(separator: "\n")
        let onlyItsOwn = Set(listed) == ["0", "1", "2", "3"]
        #expect(onlyItsOwn, "the child held \(listed.count) descriptors")
    }

    /// Exit statuses and signals, standard input, output and error, the working directory, the
    /// environment, a name found in `PATH`, no blocked signal, and an executable that is not there.
    @Test func aChildGetsWhatItIsGivenAndSaysHowItEnded() throws {
        #expect(try ChildProcess.run("/bin/sh", ["-c", "exit 3"]).termination == .exited(3))
        #expect(try ChildProcess.run("/bin/sh", ["-c", "kill -TERM $$"]).termination == .signalled(SIGTERM))
        let echoed = try ChildProcess.run("cat", [], searchPath: true, input: [1, 2, 0, 255])
        #expect(echoed.termination == .exited(0) && echoed.output == [1, 2, 0, 255])
        let both = try ChildProcess.run("/bin/sh", ["-c", "echo out; echo err >&2"], errorToOutput: true)
        #expect(String(decoding: both.output, as: UTF8.self) == "out\nerr\n" && both.error.isEmpty)
        let apart = try ChildProcess.run("/bin/sh", ["-c", "echo out; echo err >&2"])
        #expect(apart.output == Array("out\n".utf8) && apart.error == Array("err\n".utf8))
        let place = try ChildProcess.run(
            "/bin/sh",
            ["-c", "pwd; echo $GREETING"],
            directory: "/usr",
            environment: [
                "GREETING": "hi", "PATH": "/usr/bin:/bin",
            ]
        )
        #expect(String(decoding: place.output, as: UTF8.self) == "/usr\nhi\n")
        let mask = try ChildProcess.run("/bin/grep", ["^SigBlk", "/proc/self/status"])
        #expect(String(decoding: mask.output, as: UTF8.self) == "SigBlk:\t0000000000000000\n")
        #expect(throws: ChildProcess.SpawnError.self) { try ChildProcess.run("/nonexistent/imcodec", []) }
        #expect(throws: ChildProcess.SpawnError.self) {
            try ChildProcess.run("/bin/true", [], directory: "/nonexistent")
        }
    }

    /// A child still running when its last reference goes is killed and reaped: no process, and
    /// no zombie, is left behind.
    @Test func aChildDroppedWhileRunningIsKilledAndReaped() throws {
        var pid: pid_t = 0
        do {
            let child = try ChildProcess("/bin/sleep", ["60"])
            pid = child.pid
            #expect(child.isRunning)
        }
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "process \(pid) is still there")
    }

    /// A running child: it runs until it is signalled, then says so.
    @Test func aRunningChildStopsOnASignal() throws {
        let child = try ChildProcess("/bin/sleep", ["60"])
        #expect(child.isRunning && child.termination == nil)
        child.signal(SIGKILL)
        #expect(child.waitUntilExit() == .signalled(SIGKILL))
        #expect(!child.isRunning)
    }
}
#endif
