extension Storekeeper {
    /// The release of Storekeeper this SDK belongs to (CHANGELOG.md): the same number the
    /// server reports on `/healthz` and `storekeeper --version`, checked equal by the server's
    /// tests. An app that pins this version knows which server features it can use.
    public static let version = "0.9.0"
}
