import Mustache

/// Renders a console page: its template with its view model, inside the layout. The edge hands it
/// what a page shows and who is looking; it knows nothing of HTTP, sessions or storage.
public struct ConsoleRenderer: Sendable {
    /// What every page's frame shows: the title, a notice, and when someone is signed in, who, their
    /// form token and the apps to navigate to.
    public struct Layout: Sendable {
        public struct App: Sendable {
            public var id: String
        }

        public var title: String
        public var notice: String?
        public var signedIn: Bool
        public var `operator`: String
        public var role: String
        public var csrf: String
        public var apps: [App]
        /// The page's body, rendered first and placed unescaped (the layout's only `{{{…}}}`).
        var body = ""

        /// The frame of a page shown to someone not signed in (the sign-in, a refusal).
        public init(title: String, notice: String?) {
            self.title = title
            self.notice = notice
            signedIn = false
            self.operator = ""
            role = ""
            csrf = ""
            apps = []
        }

        public init(title: String, notice: String?, operator: String, role: String, csrf: String, appIds: [String]) {
            self.title = title
            self.notice = notice
            signedIn = true
            self.operator = `operator`
            self.role = role
            self.csrf = csrf
            apps = appIds.map { App(id: $0) }
        }
    }

    private let library: MustacheLibrary

    public init() throws {
        library = try ConsoleTemplates.library()
    }

    /// The page's view model rendered with its template, inside the layout.
    public func render<Page: ConsolePage>(_ page: Page, layout: Layout) -> String {
        var framed = layout
        framed.body = library.render(page, withTemplate: Page.template) ?? ""
        return library.render(framed, withTemplate: "layout") ?? ""
    }
}
