public import Mustache

/// The console's pages as Mustache templates, compiled once at start from the files in
/// `Templates/` (embedded in the binary by SwiftPM, so the server stays one file): a designer
/// edits them and the stylesheet without reading Swift. Every value goes through `{{…}}`, which
/// escapes HTML; `{{{…}}}` only takes a page's body the console rendered itself. No script
/// anywhere: the Content-Security-Policy forbids it.
public enum ConsoleTemplates {
    public static func library() throws -> MustacheLibrary {
        var library = MustacheLibrary()
        for (name, bytes) in all { try library.register(String(decoding: bytes, as: UTF8.self), named: name) }
        return library
    }

    static let all: [(String, [UInt8])] = [
        ("layout", PackageResources.layout_mustache), ("login", PackageResources.login_mustache),
        ("overview", PackageResources.overview_mustache), ("customers", PackageResources.customers_mustache),
        ("customer", PackageResources.customer_mustache), ("verifications", PackageResources.verifications_mustache),
        ("message", PackageResources.message_mustache), ("ledger", PackageResources.ledger_mustache),
        ("health", PackageResources.health_mustache), ("webhooks", PackageResources.webhooks_mustache),
        ("verificationHead", PackageResources.verificationHead_mustache), ("verificationRow", PackageResources.verificationRow_mustache),
        ("chart", PackageResources.chart_mustache),
    ]

    /// Served at /console/static/console.css: a page carries no inline style either.
    public static let stylesheet = String(decoding: PackageResources.console_css, as: UTF8.self)
}
