/// One option of a page's select (an environment, an interval, a state), and whether it is the one
/// shown.
public struct ConsoleChoice: Sendable, Hashable {
    public var value: String
    public var selected: Bool

    public init(value: String, selected: Bool) {
        self.value = value
        self.selected = selected
    }

    /// Every value, the one asked for selected.
    public static func options(_ values: [String], selected: String?) -> [ConsoleChoice] {
        values.map { ConsoleChoice(value: $0, selected: $0 == selected) }
    }
}
