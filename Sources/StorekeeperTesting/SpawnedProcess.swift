public import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, for the tests and benchmarks that run the real
/// `storekeeper` binary.
///
/// Why not Foundation's `Process`: on this toolchain (Swift 6.3.1 on Linux) `Process.run()` lists
/// /proc/self/fd copying 256 bytes of every directory entry, and now and then reads past the end of
/// glibc's buffer and crashes the whole test run (swift-corelibs-foundation pull request 5472, fixed
/// after 6.3.1). A clean-clone CI run crashed that way.
public final class SpawnedProcess: Sendable {
    /// How the child ended.
    public enum Termination: Sendable, Hashable {
        case exited(Int32)
        case signalled(Int32)
    }

    /// Where one of the child's standard streams goes.
    public enum Output: Sendable, Hashable {
        /// The parent's own stream.
        case inherit
        case discard
        /// Appended to this file (created if missing).
        case file(String)
    }

    public struct SpawnError: Error, CustomStringConvertible {
        public var executable: String
        public var code: Int32
        public var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
    }

    public let pid: pid_t
    private let ended = Mutex<(termination: Termination?, waiters: [CheckedContinuation<Termination, Never>])>((nil, []))
    private let exitSignal = DispatchSemaphore(value: 0)

    /// Starts `executable arguments…` with `environment` (this process's when nil) and standard
    /// input from /dev/null. Every descriptor but the three standard ones is closed in the child.
    public init(
        executable: String, arguments: [String], environment: [String: String]? = nil, standardOutput: Output = .inherit,
        standardError: Output = .inherit
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        Self.direct(standardOutput, to: 1, &actions)
        if standardError == standardOutput, standardOutput != .inherit {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            Self.direct(standardError, to: 2, &actions)
        }
        Self.closeInheritedDescriptors(&actions)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in variables { free(pointer) } }
        var child = pid_t()
        let code = posix_spawn(&child, executable, &actions, nil, argv, variables)
        guard code == 0 else { throw SpawnError(executable: executable, code: code) }
        pid = child
        // One thread waits for the child, so its exit is reaped once and every waiter learns it.
        let thread = Thread { [self] in reap() }
        thread.name = "spawned-\(child)"
        thread.start()
    }

    public var isRunning: Bool { ended.withLock { $0.termination == nil } }
    public var termination: Termination? { ended.withLock { $0.termination } }

    /// Sends `signal` unless the child is known to have ended.
    public func send(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Blocks until the child ended.
    @discardableResult
    public func waitUntilExit() -> Termination {
        if let termination { return termination }
        exitSignal.wait()
        exitSignal.signal()
        return termination ?? .signalled(0)
    }

    /// Until the child ended, without blocking a thread.
    public func exit() async -> Termination {
        await withCheckedContinuation { continuation in
            let known: Termination? = ended.withLock { state in
                if state.termination == nil { state.waiters.append(continuation) }
                return state.termination
            }
            if let known { continuation.resume(returning: known) }
        }
    }

    private func reap() {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { break }
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as functions.
        let termination: Termination = status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
        let waiters = ended.withLock { state in
            state.termination = termination
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: termination) }
        exitSignal.signal()
    }

    private static func direct(_ output: Output, to descriptor: Int32, _ actions: inout posix_spawn_file_actions_t) {
        switch output {
        case .inherit: break
        case .discard: posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_WRONLY, 0)
        case .file(let path): posix_spawn_file_actions_addopen(&actions, descriptor, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), looked up at run time
    /// because the Glibc module does not export it. Without it, the parent's descriptors are
    /// marked close-on-exec instead, so a child never holds another test's pipe or socket open.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, 3)
            return
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in names.compactMap(Int32.init) where descriptor > 2 {
            _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
        }
    }
}
