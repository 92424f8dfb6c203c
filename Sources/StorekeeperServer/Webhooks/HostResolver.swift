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
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var raw = v4.pointee.sin_addr
                        addresses.append(IPAddress(bytes: withUnsafeBytes(of: &raw) { Array($0) }))
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var raw = v6.pointee.sin6_addr
                        addresses.append(IPAddress(bytes: withUnsafeBytes(of: &raw) { Array($0) }))
                    }
                default: break
                }
            }
            next = entry.pointee.ai_next
        }
        return addresses
    }
}
