// The two UIKit classes StorekeeperKit's StoreKit adapter names, declared for Linux only (the
// SDK's Package.swift declares this module on a Linux host), so that the adapter's iOS branch is
// type-checked in CI. Never shipped to apps: on Apple platforms the manifest does not declare it
// and the real framework is imported.

/// As Apple documents it (developer.apple.com/documentation/uikit/uiresponder): the base of the
/// responder chain, main-actor isolated.
@MainActor
open class UIResponder {
    public init() {}
}

/// As Apple documents it (developer.apple.com/documentation/uikit/uiscene): one instance of the
/// app's user interface; the window StoreKit shows a purchase confirmation near
/// (`Product.purchase(confirmIn:options:)`).
@MainActor
open class UIScene: UIResponder {}

/// As Apple documents it (developer.apple.com/documentation/uikit/uiwindowscene): a scene that
/// manages the app's windows; the one StoreKit shows its sheets in (manage subscriptions, refund
/// requests).
@MainActor
open class UIWindowScene: UIScene {}
