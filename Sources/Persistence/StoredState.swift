import Foundation

/// A state column holding a value this build does not know: a newer version wrote it, or the
/// row was edited by hand. Reading it as some default state would let a lifecycle move the row
/// on from the wrong place, so the read fails instead and the row is left as it is.
public struct UnknownStoredState: Error, CustomStringConvertible {
    public var column: String
    public var value: String
    public var description: String { "unknown stored state '\(value)' in \(column)" }
}

extension RawRepresentable where RawValue == String {
    /// The state a row stores in `column`, or `UnknownStoredState`.
    public static func stored(_ raw: String, column: String) throws -> Self {
        guard let state = Self(rawValue: raw) else { throw UnknownStoredState(column: column, value: raw) }
        return state
    }
}
