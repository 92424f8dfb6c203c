/// A named access level of an app (`pro`), unlocked by any of its products: the monthly, the
/// annual and the lifetime product alike. Configured per app (`apps[].entitlements`).
public struct EntitlementDefinition: Codable, Hashable, Sendable {
    public var id: String
    public var products: [String]

    public init(id: String, products: [String]) {
        self.id = id
        self.products = products
    }

    /// What is wrong with this definition alone, each problem naming its field under `prefix`
    /// (`pro.products: …`; no prefix: `products: …`).
    public func problems(prefix: String = "") -> [String] {
        let place = prefix.isEmpty ? "" : prefix + "."
        var problems: [String] = []
        let allowed = id.utf8.allSatisfy { byte in
            (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F || byte == 0x2E
        }
        if id.isEmpty || id.utf8.count > 64 || !allowed { problems.append("\(place)id: 1-64 lower-case letters, digits, '-', '_' or '.'") }
        if products.isEmpty || products.count > 100 { problems.append("\(place)products: 1-100 product ids") }
        if Set(products).count != products.count { problems.append("\(place)products: a product id is listed twice") }
        if products.contains(where: { $0.isEmpty || $0.utf8.count > 255 }) { problems.append("\(place)products: each product id 1-255 bytes") }
        return problems
    }

    /// What is wrong with a list of definitions, each problem naming its place
    /// (`apps[0].entitlements[1].id: …`), duplicate ids included. Products need not be in the
    /// catalog yet: a definition may name a product before it is sold.
    public static func problems(_ definitions: [EntitlementDefinition], prefix: String) -> [String] {
        var problems: [String] = []
        var ids = Set<String>()
        for (index, definition) in definitions.enumerated() {
            let place = "\(prefix)[\(index)]"
            var own = definition.problems(prefix: place)
            if !ids.insert(definition.id).inserted {
                // Reported after the id's own problems, before the products'.
                let at = own.firstIndex { !$0.hasPrefix("\(place).id:") } ?? own.endIndex
                own.insert("\(place).id: duplicate '\(definition.id)'", at: at)
            }
            problems += own
        }
        return problems
    }
}
