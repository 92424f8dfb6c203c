import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Start-up failures an operator must fix before anything runs, each reported as one line and
/// a non-zero exit instead of a crash or a stack of service errors.
struct StartupFailure: Error, CustomStringConvertible {
    var description: String
}

enum StartupCheck {
    /// Fails when `host:port` cannot be listened on (in use, not an address of this machine,
    /// privileged). Checked before any service starts: the HTTP server's own bind failure comes
    /// after the other services started, and surfaced as a crash.
    static func portIsFree(host: String, port: Int, what: String) throws {
        guard port != 0 else { return }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        hints.ai_flags = AI_PASSIVE
        var list: UnsafeMutablePointer<addrinfo>?
        let lookup = getaddrinfo(host, String(port), &hints, &list)
        guard lookup == 0, let first = list else {
            throw StartupFailure(description: "cannot listen for \(what) on \(host):\(port): unknown host '\(host)'")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0 {
            let reason = String(cString: strerror(errno))
            throw StartupFailure(description: "cannot listen for \(what) on \(host):\(port): \(reason.lowercased())")
        }
    }
}
