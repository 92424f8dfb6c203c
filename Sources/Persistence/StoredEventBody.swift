public import StorekeeperDomain
import StorekeeperWire

/// How an event's body column is written: events recorded before M0010 hold the stored
/// dialect (`StoredJSON`, dates in milliseconds), later ones the wire dialect. The column
/// `events.wire` tells them apart, so old rows still decode and are sent in the wire form.
public enum StoredEventBody {
    /// The event from its body column.
    public static func event(body: String?, wire: Bool) -> SubscriberEvent? {
        wire ? WireJSON.decode(SubscriberEvent.self, body) : StoredJSON.decode(SubscriberEvent.self, body)
    }

    /// The body a webhook posts: the column as it is when it holds the wire form.
    public static func wireBody(body: String, wire: Bool) -> String? {
        if wire { return body }
        return StoredJSON.decode(SubscriberEvent.self, body).map { WireJSON.encode($0) }
    }
}
