/// How many of something are in one state: a figure card of the health and webhooks pages.
public struct ConsoleCount: Sendable, Hashable {
    public var state: String
    public var count: Int
}
