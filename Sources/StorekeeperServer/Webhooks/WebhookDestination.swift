import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a webhook may go. A receiver is a service on the internet; an operator key that can aim
/// signed POSTs (and read back their answers) at loopback, the cloud's metadata service or the
/// private network would turn Storekeeper into a way in. Checked when an endpoint is registered
/// (the URL's host as written) and again before every delivery (every address the name resolves
/// to). `allowPrivate` and `allowedNetworks` open it for receivers on the operator's own network.
public struct WebhookDestinationPolicy: Sendable, Hashable {
    public var allowPrivate: Bool
    public var allowedNetworks: [IPNetwork]

    public init(allowPrivate: Bool = false, allowedNetworks: [IPNetwork] = []) {
        self.allowPrivate = allowPrivate
        self.allowedNetworks = allowedNetworks
    }

    /// Why the host of a URL as registered is refused; nil when it may be used. Names are
    /// judged by their reserved suffixes here and by what they resolve to at delivery.
    public func refusal(host rawHost: String) -> String? {
        let host = rawHost.lowercased()
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), let address = IPAddress(ipv6: String(host.dropFirst().dropLast())) else {
                return "'\(rawHost)' is not an IPv6 address"
            }
            return refusal(address: address)
        }
        if let address = IPAddress(canonicalIPv4: host) { return refusal(address: address) }
        if Self.isNumeric(host) {
            // 2852039166, 0x7f000001, 0177.0.0.1, 127.1: C-library parsers read these as
            // addresses, and no name has a numeric last label.
            return "'\(rawHost)' is a numeric host in a non-canonical form"
        }
        let trimmed = host.hasSuffix(".") ? String(host.dropLast()) : host
        for reserved in Self.reservedNames where trimmed == reserved || trimmed.hasSuffix("." + reserved) {
            return "'\(rawHost)' is a name reserved for local networks ('\(reserved)')"
        }
        return nil
    }

    /// The host of an endpoint URL, as written (an IPv6 literal with its brackets).
    static func host(of url: String) -> String? {
        guard let start = url.range(of: "://")?.upperBound else { return nil }
        let authority = url[start...].prefix { $0 != "/" }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            return String(authority[...close])
        }
        let host = authority.prefix { $0 != ":" }
        return host.isEmpty ? nil : String(host)
    }

    /// True when the last label is a number (decimal, octal or `0x` hex), as in every
    /// non-canonical spelling of an IPv4 address.
    static func isNumeric(_ host: String) -> Bool {
        let trimmed = host.hasSuffix(".") ? host.dropLast() : Substring(host)
        guard let last = trimmed.split(separator: ".", omittingEmptySubsequences: false).last, !last.isEmpty else { return false }
        if last.hasPrefix("0x") { return last.dropFirst(2).allSatisfy(\.isHexDigit) }
        return last.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// Why an address is refused; nil when it is public (or allowed by configuration).
    public func refusal(address: IPAddress) -> String? {
        if allowedNetworks.contains(where: { $0.contains(address) }) { return nil }
        guard let range = address.specialRange else { return nil }
        if allowPrivate, range != "unspecified", range != "multicast" { return nil }
        return "\(address) is \(range)"
    }

    /// Suffixes that name hosts on a local network or a cloud's own services, never a receiver
    /// on the internet (RFC 6761, RFC 6762, RFC 8375; `internal` is reserved by ICANN for private
    /// use, as in `metadata.google.internal`).
    static let reservedNames = ["localhost", "local", "localdomain", "internal", "home.arpa", "intranet", "lan"]
}

/// An IPv4 network in CIDR form (`10.0.0.0/8`, `fd00::/8`).
public struct IPNetwork: Sendable, Hashable, Codable, CustomStringConvertible {
    public var address: IPAddress
    public var prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2, let length = Int(parts[1]),
            let address = IPAddress(canonicalIPv4: parts[0]) ?? IPAddress(ipv6: parts[0]),
            (0...(address.bytes.count * 8)).contains(length)
        else { return nil }
        self.address = address
        prefixLength = length
    }

    public func contains(_ other: IPAddress) -> Bool {
        guard other.bytes.count == address.bytes.count else { return false }
        var bits = prefixLength
        for (a, b) in zip(address.bytes, other.bytes) {
            guard bits > 0 else { return true }
            let mask: UInt8 = bits >= 8 ? 0xff : ~(0xff >> UInt8(bits))
            if a & mask != b & mask { return false }
            bits -= 8
        }
        return true
    }

    public var description: String { "\(address)/\(prefixLength)" }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let network = IPNetwork(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not a CIDR network"))
        }
        self = network
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// An IPv4 (4 bytes) or IPv6 (16 bytes) address.
public struct IPAddress: Sendable, Hashable, Codable, CustomStringConvertible {
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Exactly four decimal parts of 0-255 without leading zeros: the one form every parser
    /// reads the same way.
    public init?(canonicalIPv4 text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), part.allSatisfy(\.isNumber),
                part == "0" || part.first != "0", let value = UInt8(part)
            else { return nil }
            bytes.append(value)
        }
        self.bytes = bytes
    }

    public init?(ipv6 text: String) {
        // 16 bytes, not an `in6_addr` (see `HostResolver.bytes(of:at:count:)` for why).
        var storage = [UInt8](repeating: 0, count: 16)
        guard !text.contains("%"), inet_pton(AF_INET6, text, &storage) == 1 else { return nil }
        bytes = storage
    }

    /// The special-purpose range (RFC 6890 and successors) an address falls in, named; nil for
    /// a public address. IPv4 embedded in IPv6 (mapped, NAT64, 6to4) is judged as the IPv4.
    var specialRange: String? {
        if bytes.count == 4 { return Self.ipv4Range(bytes) }
        let b = bytes
        if b.allSatisfy({ $0 == 0 }) { return "unspecified" }
        if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return "loopback" }
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xff && b[11] == 0xff { return Self.ipv4Range(Array(b[12..<16])) ?? nil }
        if b[0..<12].allSatisfy({ $0 == 0 }) { return "IPv4-compatible (deprecated)" }
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xff, b[3] == 0x9b { return Self.ipv4Range(Array(b[12..<16])) ?? "NAT64" }
        if b[0] == 0x20, b[1] == 0x02 { return Self.ipv4Range(Array(b[2..<6])) }
        if b[0] == 0xff { return "multicast" }
        if b[0] & 0xfe == 0xfc { return "unique-local" }
        if b[0] == 0xfe, b[1] & 0xc0 == 0x80 { return "link-local" }
        if b[0] == 0xfe, b[1] & 0xc0 == 0xc0 { return "site-local (deprecated)" }
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0d, b[3] == 0xb8 { return "documentation" }
        if b[0] == 0x01, b[1] == 0x00, b[2..<8].allSatisfy({ $0 == 0 }) { return "discard-only" }
        return nil
    }

    private static func ipv4Range(_ b: [UInt8]) -> String? {
        switch (b[0], b[1], b[2]) {
        case (0, _, _): b.allSatisfy { $0 == 0 } ? "unspecified" : "this-network"
        case (10, _, _): "private"
        case (100, 64...127, _): "shared address space (carrier-grade NAT)"
        case (127, _, _): "loopback"
        case (169, 254, _): "link-local (cloud metadata)"
        case (172, 16...31, _): "private"
        case (192, 0, 0): "IETF protocol assignments"
        case (192, 0, 2), (198, 51, 100), (203, 0, 113): "documentation"
        case (192, 168, _): "private"
        case (198, 18...19, _): "benchmarking"
        case (224...239, _, _): "multicast"
        case (240...255, _, _): "reserved"
        default: nil
        }
    }

    public var description: String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard bytes.withUnsafeBytes({ inet_ntop(AF_INET6, $0.baseAddress, &text, socklen_t(text.count)) }) != nil else { return "?" }
        let written = text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: written, as: UTF8.self)
    }
}
