import Foundation
import StorekeeperDomain
import StorekeeperWire
import Testing
import WireSamples

@testable import StorekeeperServer

/// Events are stored, posted to webhooks and served by the feed in the form the outbox wrote
/// (the domain's), while `GET /v1/subscribers/{id}` writes the wire module's `Subscriber`: the
/// two must be one shape, or a backend would read one thing from a webhook and another from the
/// GET. Each sample of the wire module, every optional field set, is read as the domain reads a
/// stored event, written back as the outbox writes it, and mapped as the API maps it.
@Suite("stored events in the wire form")
struct StoredEventWireFormTests {
    @Test(
        "every field of an event and its subscriber view survives the stored form, which is the wire form",
        arguments: [
            SubscriberSamples.event, SubscriberSamples.minimalEvent,
        ])
    func storedFormIsWireForm(_ sample: Subscriber.Event) throws {
        let wire = WireJSON.encode(sample)
        let stored = try #require(WireJSON.decode(SubscriberEvent.self, wire), "the outbox's type reads the wire form")
        // Compared as written: an instant is exact to Apple's millisecond, not to a Double's bit.
        #expect(try Self.parsed(WireJSON.encode(Subscriber.Event(stored))) == Self.parsed(wire), "nothing lost or changed through the domain")
        #expect(try Self.parsed(WireJSON.encode(stored)) == Self.parsed(wire), "the outbox writes what the wire module writes")
        if let view = stored.entitlements {
            let answered = WireJSON.encode(Subscriber(view))
            #expect(try Self.parsed(answered) == Self.parsed(WireJSON.encode(view)), "the view the GET writes is the one the event carries")
        }
    }

    private static func parsed(_ text: String) throws -> NSDictionary {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary)
    }
}
