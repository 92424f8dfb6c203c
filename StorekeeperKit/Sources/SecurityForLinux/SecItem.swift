// The Keychain calls StorekeeperKit makes (`KeychainNewestAnswers`), declared for Linux only (the
// SDK's Package.swift declares this module on a Linux host), so that the same file Xcode compiles
// is type-checked, and run, in CI. Never shipped to apps: on Apple platforms the manifest does not
// declare it and the real framework is imported. The items live in this process's memory.
//
// Apple declares the attribute keys and values as `CFString` and the queries as `CFDictionary`;
// Linux has no bridging from `[String: Any]` to `CFDictionary`, so here both are their Swift
// counterparts, which keeps every call site (`kSecClass as String`, `query as CFDictionary`)
// spelled as on Apple platforms.

import Foundation

/// developer.apple.com/documentation/security/osstatus
public typealias OSStatus = Int32
/// developer.apple.com/documentation/corefoundation/cftyperef
public typealias CFTypeRef = AnyObject
/// developer.apple.com/documentation/corefoundation/cfdictionary
public typealias CFDictionary = [String: Any]
/// developer.apple.com/documentation/corefoundation/cfstring
public typealias CFString = String

/// developer.apple.com/documentation/security/errsecsuccess
public let errSecSuccess: OSStatus = 0
/// developer.apple.com/documentation/security/errsecitemnotfound
public let errSecItemNotFound: OSStatus = -25300
/// developer.apple.com/documentation/security/errsecduplicateitem
public let errSecDuplicateItem: OSStatus = -25299
/// developer.apple.com/documentation/security/errsecparam
public let errSecParam: OSStatus = -50

/// developer.apple.com/documentation/security/ksecclass
public let kSecClass: CFString = "class"
/// developer.apple.com/documentation/security/ksecclassgenericpassword
public let kSecClassGenericPassword: CFString = "genp"
/// developer.apple.com/documentation/security/ksecattrservice
public let kSecAttrService: CFString = "svce"
/// developer.apple.com/documentation/security/ksecattraccount
public let kSecAttrAccount: CFString = "acct"
/// developer.apple.com/documentation/security/ksecvaluedata
public let kSecValueData: CFString = "v_Data"
/// developer.apple.com/documentation/security/ksecreturndata
public let kSecReturnData: CFString = "r_Data"
/// developer.apple.com/documentation/security/ksecmatchlimit
public let kSecMatchLimit: CFString = "m_Limit"
/// developer.apple.com/documentation/security/ksecmatchlimitone
public let kSecMatchLimitOne: CFString = "m_LimitOne"
/// developer.apple.com/documentation/security/ksecattraccessible
public let kSecAttrAccessible: CFString = "pdmn"
/// developer.apple.com/documentation/security/ksecattraccessibleafterfirstunlockthisdeviceonly
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"

/// The stand-in's keychain: generic-password items by service and account.
private final class Keychain: @unchecked Sendable {
    static let shared = Keychain()
    private let lock = NSLock()
    private var items: [String: [String: Any]] = [:]

    static func key(_ query: CFDictionary) -> String? {
        guard query[kSecClass] as? String == kSecClassGenericPassword, let service = query[kSecAttrService] as? String,
            let account = query[kSecAttrAccount] as? String
        else { return nil }
        return service + "\u{0}" + account
    }

    func with<T>(_ body: (inout [String: [String: Any]]) -> T) -> T { lock.withLock { body(&items) } }
}

/// developer.apple.com/documentation/security/secitemcopymatching(_:_:): the item the query
/// names; with `kSecReturnData`, its data in `result`.
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    guard let key = Keychain.key(query) else { return errSecParam }
    return Keychain.shared.with { items in
        guard let item = items[key] else { return errSecItemNotFound }
        if query[kSecReturnData] as? Bool == true, let data = item[kSecValueData] as? Data { result?.pointee = data as AnyObject }
        return errSecSuccess
    }
}

/// developer.apple.com/documentation/security/secitemadd(_:_:): a new item; an existing one is
/// `errSecDuplicateItem`.
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    guard let key = Keychain.key(attributes) else { return errSecParam }
    return Keychain.shared.with { items in
        guard items[key] == nil else { return errSecDuplicateItem }
        items[key] = attributes
        return errSecSuccess
    }
}

/// developer.apple.com/documentation/security/secitemupdate(_:_:): the attributes of the item
/// the query names replaced; none: `errSecItemNotFound`.
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    guard let key = Keychain.key(query) else { return errSecParam }
    return Keychain.shared.with { items in
        guard var item = items[key] else { return errSecItemNotFound }
        item.merge(attributesToUpdate) { $1 }
        items[key] = item
        return errSecSuccess
    }
}
