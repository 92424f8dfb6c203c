/// The one version of Storekeeper, server and SDK alike: `storekeeper --version`, `/healthz`
/// and StorekeeperKit's `Storekeeper.version` report it, and a test holds the SDK's copy equal to
/// this one (the SDK is a package of its own and cannot import the server's). It changes with
/// every release (CHANGELOG.md); what each part of it promises is in docs/COMPATIBILITY.md.
public enum StorekeeperVersion {
    public static let current = "0.9.0"
}
