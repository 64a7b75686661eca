// A child process for the tests: started with posix_spawn, its standard streams from and to files.
//
// Not Foundation's `Process`: on Linux, `Process.run()` of Swift 6.3.1 copies each entry of
// /proc/self/fd as a whole 256-byte `dirent.d_name` while it looks for the highest open
// descriptor, and reads past the end of glibc's 32 KiB directory buffer once the process has more
// than about 1,350 descriptors open (swift-corelibs-foundation pull request 5472, merged after
// 6.3.1). The relay suites hold up to 2,000 at once (clients and in-process relays), so a test that
// started a child beside them crashed the whole test process (SIGSEGV in `Process.run()`, seen in
// `RelayTLSTests`). swift-subprocess, which closes descriptors with `close_range`, is async only;
// these helpers are called from synchronous code (protoc, python3, the CLI) as well.

#if os(Linux) || os(macOS)
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A started child process.
public final class ChildProcess: @unchecked Sendable {
    /// How a child ended.
    public enum Termination: Equatable, Sendable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)

        /// The exit status, or the signal's number (as `Process.terminationStatus` gives them).
        public var status: Int32 {
            switch self {
            case .exited(let status), .signalled(let status): return status
            }
        }
    }

    /// Why a child could not be started.
    public struct SpawnError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The child's process id.
    public let pid: pid_t
    /// Guards ``ended`` and the reaping: while it is held, the pid is not reaped, so not reused.
    private let lock: UnsafeMutablePointer<pthread_mutex_t>
    private var ended: Termination?

    /// Starts `executable` (a path; with `searchPath`, a name looked up in `PATH`) with
    /// `arguments`, in `directory` (default: this process's), with `environment` (default: this
    /// process's). Standard input reads the file at `input` (default: /dev/null); standard output
    /// and error write to the files at `output` and `error` (created or emptied; default:
    /// /dev/null), or error goes where output goes (`errorToOutput`). The child holds no other
    /// descriptor of this process, blocks no signal, takes default actions for all of them, and
    /// has a process group of its own (as `Process` gives it). A `PATH` search (`searchPath`) uses
    /// this process's `PATH`.
    public init(
        _ executable: String,
        _ arguments: [String],
        searchPath: Bool = false,
        directory: String? = nil,
        environment: [String: String]? = nil,
        input: String? = nil,
        output: String? = nil,
        error: String? = nil,
        errorToOutput: Bool = false
    ) throws {
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t? = nil
        var attributes: posix_spawnattr_t? = nil
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        func check(_ code: Int32, _ what: String) throws {
            guard code == 0 else { throw SpawnError(description: "\(what): \(String(cString: strerror(code)))") }
        }
        let writeFlags = O_WRONLY | O_CREAT | O_TRUNC
        try check(posix_spawn_file_actions_addopen(&actions, 0, input ?? "/dev/null", O_RDONLY, 0), "stdin")
        try check(posix_spawn_file_actions_addopen(&actions, 1, output ?? "/dev/null", writeFlags, 0o644), "stdout")
        if errorToOutput {
            try check(posix_spawn_file_actions_adddup2(&actions, 1, 2), "stderr")
        } else {
            try check(posix_spawn_file_actions_addopen(&actions, 2, error ?? "/dev/null", writeFlags, 0o644), "stderr")
        }
        try Self.closeTheRest(&actions)
        if let directory {
            typealias ChangeDirectory = @convention(c) (UnsafeMutableRawPointer, UnsafePointer<CChar>) -> Int32
            guard let symbol = dlsym(Self.defaultHandle, "posix_spawn_file_actions_addchdir_np") else {
                throw SpawnError(
                    description: "posix_spawn_file_actions_addchdir_np is missing: cannot start in \(directory)"
                )
            }
            let code = withUnsafeMutablePointer(to: &actions) {
                unsafeBitCast(symbol, to: ChangeDirectory.self)(UnsafeMutableRawPointer($0), directory)
            }
            try check(code, "working directory \(directory)")
        }

        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        try check(posix_spawnattr_setsigmask(&attributes, &none), "signal mask")
        try check(posix_spawnattr_setsigdefault(&attributes, &all), "signal defaults")
        try check(posix_spawnattr_setpgroup(&attributes, 0), "process group")
        var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP)
        #if canImport(Darwin)
        flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #endif
        try check(posix_spawnattr_setflags(&attributes, Int16(flags)), "flags")

        let argv = [executable] + arguments
        let (path, search) = (executable, searchPath)
        let environmentLines = environment.map { $0.map { "\($0.key)=\($0.value)" } }
        var pid = pid_t()
        let code = Self.withCStrings(argv) { argvPointers in
            if let environmentLines {
                return Self.withCStrings(environmentLines) { envp in
                    search
                        ? posix_spawnp(&pid, path, &actions, &attributes, argvPointers, envp)
                        : posix_spawn(&pid, path, &actions, &attributes, argvPointers, envp)
                }
            }
            #if canImport(Darwin)
            let inherited = _NSGetEnviron().pointee
            #else
            let inherited = environ
            #endif
            return search
                ? posix_spawnp(&pid, path, &actions, &attributes, argvPointers, inherited)
                : posix_spawn(&pid, path, &actions, &attributes, argvPointers, inherited)
        }
        try check(code, "cannot start \(executable)")
        self.pid = pid
        // Made once the child runs: an init that throws leaves nothing allocated.
        lock = .allocate(capacity: 1)
        pthread_mutex_init(lock, nil)
    }

    /// A child still running when its last reference goes is killed and reaped (no zombie).
    deinit {
        // Reaped first if it ended: a pid reaped elsewhere may be another process's by now.
        if reap() == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        }
        pthread_mutex_destroy(lock)
        lock.deallocate()
    }

    /// `dlsym`'s handle for "any loaded image".
    #if canImport(Darwin)
    private static var defaultHandle: UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: -2) }
    #else
    private static var defaultHandle: UnsafeMutableRawPointer? { nil }
    #endif

    /// Adds a close of every descriptor from 3 on: glibc's posix_spawn_file_actions_addclosefrom_np
    /// (2.34; looked up, since Swift does not see it), else one close per descriptor open now.
    /// (Darwin: `POSIX_SPAWN_CLOEXEC_DEFAULT` does it.)
    private static func closeTheRest<Actions>(_ actions: inout Actions) throws {
        #if canImport(Glibc) || canImport(Musl)
        typealias CloseFrom = @convention(c) (UnsafeMutableRawPointer, Int32) -> Int32
        if let symbol = dlsym(defaultHandle, "posix_spawn_file_actions_addclosefrom_np") {
            let code = withUnsafeMutablePointer(to: &actions) {
                unsafeBitCast(symbol, to: CloseFrom.self)(UnsafeMutableRawPointer($0), 3)
            }
            guard code == 0 else { throw SpawnError(description: "closefrom: \(String(cString: strerror(code)))") }
            return
        }
        guard let directory = opendir("/proc/self/fd") else { return }
        var open: [Int32] = []
        while let entry = readdir(directory) {
            // The name's bytes only, up to its NUL (the record may be shorter than `d_name`).
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            if let fd = Int32(name), fd > 2 { open.append(fd) }
        }
        let own = dirfd(directory)
        closedir(directory)
        withUnsafeMutablePointer(to: &actions) { pointer in
            pointer.withMemoryRebound(to: posix_spawn_file_actions_t.self, capacity: 1) { typed in
                for fd in open where fd != own { posix_spawn_file_actions_addclose(typed, fd) }
            }
        }
        #endif
    }

    /// Calls `body` with `strings` as a NULL-terminated array of C strings.
    private static func withCStrings<R>(
        _ strings: [String],
        _ body: ([UnsafeMutablePointer<CChar>?]) -> R
    ) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        defer { for pointer in pointers { free(pointer) } }
        pointers.append(nil)
        return body(pointers)
    }

    /// How the child ended, or `nil` while it runs (reaps it once it ended).
    public var termination: Termination? {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return reap()
    }

    /// ``termination``, with ``lock`` held.
    private func reap() -> Termination? {
        guard ended == nil else { return ended }
        var status: Int32 = 0
        var reaped: pid_t
        repeat { reaped = waitpid(pid, &status, WNOHANG) } while reaped == -1 && errno == EINTR
        if reaped == pid {
            // WIFEXITED and friends are macros Swift does not import.
            let signal = status & 0x7f
            ended = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
        } else if reaped == -1 && errno == ECHILD {
            ended = .exited(-1)  // Not a child of this process any more (reaped elsewhere).
        }
        return ended
    }

    /// Whether the child still runs.
    public var isRunning: Bool { termination == nil }

    /// Sends `signal` to the child while it runs (under ``lock``: a child not yet reaped keeps its pid).
    public func signal(_ signal: Int32) {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        if reap() == nil { kill(pid, signal) }
    }

    /// Waits until the child ended, checking every millisecond or so.
    @discardableResult
    public func waitUntilExit() -> Termination {
        var pause: UInt32 = 200
        while true {
            if let ended = termination { return ended }
            usleep(pause)
            pause = min(pause * 2, 10_000)
        }
    }

    /// Runs `executable` to its end, its input `input` (bytes, through a temporary file), and
    /// returns how it ended and what it wrote to standard output and error.
    public static func run(
        _ executable: String,
        _ arguments: [String],
        searchPath: Bool = false,
        directory: String? = nil,
        environment: [String: String]? = nil,
        input: [UInt8]? = nil,
        errorToOutput: Bool = false
    ) throws -> (termination: Termination, output: [UInt8], error: [UInt8]) {
        let folder = try TemporaryFiles()
        defer { folder.remove() }
        let inputPath = try input.map { bytes in
            let path = folder.path + "/input"
            try writeFile(path, bytes)
            return path
        }
        let child = try ChildProcess(
            executable,
            arguments,
            searchPath: searchPath,
            directory: directory,
            environment: environment,
            input: inputPath,
            output: folder.path + "/output",
            error: folder.path + "/error",
            errorToOutput: errorToOutput
        )
        let termination = child.waitUntilExit()
        return (termination, readFile(folder.path + "/output"), readFile(folder.path + "/error"))
    }

    /// The bytes of the file at `path` (none when it cannot be read).
    public static func readFile(_ path: String) -> [UInt8] {
        guard let file = fopen(path, "rb") else { return [] }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        return bytes
    }

    /// Writes `bytes` to the file at `path`.
    public static func writeFile(_ path: String, _ bytes: [UInt8]) throws {
        guard let file = fopen(path, "wb") else {
            throw SpawnError(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        guard bytes.isEmpty || fwrite(bytes, 1, bytes.count, file) == bytes.count else {
            throw SpawnError(description: "cannot write \(path)")
        }
    }
}

/// A directory of its own under the temporary directory, removed with what it holds.
private struct TemporaryFiles {
    let path: String

    init() throws {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array((base + "/imcodec-child-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw ChildProcess.SpawnError(description: "mkdtemp: \(String(cString: strerror(errno)))")
        }
        path = String(cString: made)
    }

    func remove() {
        for name in ["input", "output", "error"] { unlink(path + "/" + name) }
        rmdir(path)
    }
}
#endif
