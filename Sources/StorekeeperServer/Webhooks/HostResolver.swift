import Foundation
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every address a host name resolves to, by the system's resolver (the one the HTTP client
/// connects through), on NIO's blocking-work pool so no request thread waits on DNS.
struct HostResolver: Sendable {
    func addresses(of host: String) async throws -> [IPAddress] {
        try await NIOThreadPool.singleton.runIfActive { try Self.lookup(host) }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func lookup(_ host: String) throws -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else { throw Failure(description: "cannot resolve '\(host)': \(String(cString: gai_strerror(status)))") }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var next = list
        while let entry = next {
            if let address = entry.pointee.ai_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET: addresses.append(IPAddress(bytes: Self.bytes(of: address, at: 4, count: 4)))
                case AF_INET6: addresses.append(IPAddress(bytes: Self.bytes(of: address, at: 8, count: 16)))
                default: break
                }
            }
            next = entry.pointee.ai_next
        }
        return addresses
    }

    /// The address inside a socket address, read at its fixed offset: `sin_addr` is 4 bytes into
    /// a `sockaddr_in` and `sin6_addr` 8 bytes into a `sockaddr_in6` (RFC 3493's layout, on Linux
    /// and the BSDs alike). Not through the structs' fields: Swift finds `<netinet/in.h>` now in
    /// Glibc, now in NIO's C shim, depending on module build order, and a field reached through
    /// the shim fails the build under `MemberImportVisibility`.
    static func bytes(of address: UnsafeMutablePointer<sockaddr>, at offset: Int, count: Int) -> [UInt8] {
        Array(UnsafeRawBufferPointer(start: UnsafeRawPointer(address).advanced(by: offset), count: count))
    }
}
