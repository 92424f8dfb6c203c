import Foundation

/// The address a request's budgets are counted against. Behind a load balancer every
/// connection comes from the balancer, so one client's flood would spend every client's
/// budget; `X-Forwarded-For` names the client, but anyone can send that header. So it is read
/// only when the connection comes from a configured trusted proxy, and then from its right
/// end: each trusted proxy appends the address it saw, so the nearest hop that is not itself
/// trusted is the client as far as anything trustworthy knows. What a client wrote to the left
/// of that is never read.
enum ClientAddress {
    static let forwardedForHeader = "X-Forwarded-For"

    /// `peer`: the connection's address; `forwardedFor`: every `X-Forwarded-For` field, in order.
    static func resolve(peer: String?, forwardedFor: [String], trusted: [IPNetwork]) -> String? {
        guard let peer, let peerAddress = parse(peer), trusted.contains(where: { $0.contains(peerAddress) }) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        var nearest = peerAddress.description
        for hop in hops.reversed() {
            // A hop no proxy would write (a name, a port, garbage): the proxy that passed it on is
            // the last address known.
            guard let address = parse(hop) else { return nearest }
            guard trusted.contains(where: { $0.contains(address) }) else { return address.description }
            nearest = address.description
        }
        return nearest
    }

    private static func parse(_ text: String) -> IPAddress? {
        IPAddress(canonicalIPv4: text) ?? IPAddress(ipv6: text)
    }
}
