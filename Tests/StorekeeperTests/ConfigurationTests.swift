import AppStoreClient
import Configuration
import Foundation
import SimulatorSetup
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

@Suite("configuration")
struct ConfigurationTests {
    @Test("a bad configuration fails at start with messages naming each bad key")
    func namesBadKeys() throws {
        let file =
            #"{"adminKey":"short","apps":[{"id":"Bad Id","bundleId":"","apiKey":"k","serverAPI":{"issuerId":"i","keyId":"k","privateKeyPEM":"not a key"},"products":[{"productId":"p","type":"auto_renewable","status":"ready_for_sale"},{"productId":"s","type":"non_renewing","status":"ready_for_sale"}]}],"workers":0,"databasePath":"postgres://db.internal/payments?pool=3","outagePolicy":{"provisionalSeconds":0},"notificationGapFill":{"intervalSeconds":0},"serverAPIEndpoints":{"production":"nowhere","sandbox":"https://x"},"receiptTrust":{"revocation":{"mode":"hard_fail","timeoutSeconds":0}},"prot":8080}"#
        #expect(throws: ConfigurationLoader.Failure.self) { try ConfigurationLoader.parse(Data(file.utf8)) }
        do {
            _ = try ConfigurationLoader.parse(Data(file.utf8))
        } catch let failure as ConfigurationLoader.Failure {
            #expect(failure.problems == ["prot: unknown key"])
        }
        let fixed = file.replacingOccurrences(of: #","prot":8080"#, with: "")
        var configuration = try ConfigurationLoader.parse(Data(fixed.utf8))
        let problems = configuration.validationProblems()
        for key in [
            "adminKey:", "apps[0].id:", "apps[0].bundleId:", "apps[0].apiKey:", "apps[0].sharedSecret:", "apps[0].products[1].duration:", "workers:",
            "databasePath:", "outagePolicy:", "apps[0].serverAPI.privateKeyPEM:", "notificationGapFill:", "serverAPIEndpoints.production:",
            "receiptTrust.revocation.timeoutSeconds:",
        ] {
            #expect(problems.contains { $0.hasPrefix(key) }, "no problem reported for \(key): \(problems)")
        }
        let wrongType = #"{"port":"eighty"}"#
        do {
            _ = try ConfigurationLoader.parse(Data(wrongType.utf8))
            Issue.record("a string port must be refused")
        } catch let failure as ConfigurationLoader.Failure {
            #expect(failure.problems.first?.hasPrefix("port:") == true)
        }
        configuration = DemoConfiguration.configuration()
        #expect(configuration.validationProblems().isEmpty)
        let loader = ConfigurationLoader(environment: ["STOREKEEPER_PORT": "not-a-port"])
        #expect(throws: ConfigurationLoader.Failure.self) { try loader.load(file: nil, base: DemoConfiguration.configuration()) }
        let env = ConfigurationLoader(environment: ["STOREKEEPER_PORT": "9999", "STOREKEEPER_WORKERS": "7"])
        let loaded = try env.load(file: nil, base: DemoConfiguration.configuration()) { $0.workers = 9 }
        #expect(loaded.port == 9999 && loaded.workers == 9)
    }

    /// A value for every setting, each unlike its default and valid together.
    static let samples: [String: ConfigContent] = [
        "host": .string("0.0.0.0"), "port": .int(9443), "databasePath": .string("/var/lib/storekeeper/layer.sqlite"),
        "sqliteSynchronousFull": .bool(false), "adminKey": .string("admin-key-from-a-layer-0123"),
        "appleEndpoints.production": .string("https://apple.example/verifyReceipt"),
        "appleEndpoints.sandbox": .string("https://sandbox.apple.example/verifyReceipt"), "workers": .int(77),
        "runWorkers": .bool(false), "attemptTimeoutSeconds": .double(12.5), "appleTimeouts.connectSeconds": .double(2.5),
        "appleTimeouts.readSeconds": .double(9), "leaseSeconds": .double(240), "retry.base": .double(3), "retry.cap": .double(300),
        "retry.jitter": .double(0.1), "flagAfterSeconds": .double(600), "excludeOldTransactions": .bool(true),
        "bindingPolicy": .string("transfer"), "maxBodyBytes": .int(4096), "maxWaitSeconds": .double(5),
        "idleTimeoutSeconds": .double(11), "requestTimeoutSeconds": .double(22), "maxConnections": .int(100),
        "shutdownGraceSeconds": .double(4), "eventRetentionDays": .double(7), "lapseSweepSeconds": .double(45), "webhooks.timeoutSeconds": .double(3),
        "webhooks.retrySchedule.delays": .doubleArray([1, 2.5, 60]), "webhooks.retrySchedule.maximumAge": .double(1000),
        "webhooks.retrySchedule.jitter": .double(0.3), "webhooks.retrySchedule.maximumRetryAfter": .double(500),
        "webhooks.allowPrivateDestinations": .bool(true), "webhooks.allowedDestinationNetworks": .stringArray(["10.0.0.0/8", "fd00::/8"]),
        "webhooks.heldRecheckSeconds": .double(15), "appleHealth.enabled": .bool(false), "appleHealth.degradedAfterFailures": .int(2),
        "appleHealth.downAfterFailures": .int(4), "appleHealth.probeBaseSeconds": .double(0.5), "appleHealth.probeCapSeconds": .double(3),
        "appleHealth.releasePerSecond": .double(25), "outagePolicy.enabled": .bool(true), "outagePolicy.afterSeconds": .double(60),
        "outagePolicy.provisionalSeconds": .double(3600), "serverAPIEndpoints.production": .string("https://api.example"),
        "serverAPIEndpoints.sandbox": .string("https://sandbox-api.example"), "serverAPIRateLimitShare": .double(0.5),
        "trustedProxies": .stringArray(["10.0.0.0/8"]), "adminKeyGuessesPerSecond": .double(2),
        "offerSignaturesPerUserPerDay": .int(5),
        "notificationGapFill.enabled": .bool(false),
        "notificationGapFill.intervalSeconds": .double(120), "notificationGapFill.lookbackSeconds": .double(7200),
        "notificationGapFill.onlyFailures": .bool(false), "receiptTrust.enabled": .bool(false), "receiptTrust.appleRoots": .bool(false),
        "receiptTrust.extraRootsPEM": .stringArray(["-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"]),
        "receiptTrust.requireAppleMarkers": .bool(false), "receiptTrust.revocation.mode": .string("soft_fail"),
        "receiptTrust.revocation.cacheSeconds": .double(60), "receiptTrust.revocation.responderOverride": .string("http://ocsp.example/"),
        "receiptTrust.revocation.timeoutSeconds": .double(4),
        "console.operators": .stringArray(["ops:read_only:scrypt$15$8$1$do6hnn93dLcSPKWXRa9xJg==$5sVjoIHKloXY0a8Fk6qN0U9pvfpljIcakm5qoGNT8dI="]),
        "console.sessionMinutes": .double(60),
    ]

    /// The configuration as its properties are named (its `Encodable` form), flattened to
    /// dotted keys: independent of the settings table, so a key that lands in the wrong property
    /// is seen.
    static func flattened(_ configuration: StorekeeperConfiguration) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(configuration)) as! [String: Any]
        var flat: [String: Any] = [:]
        func walk(_ object: [String: Any], _ prefix: String) {
            for (key, value) in object where !(prefix.isEmpty && key == "apps") {
                let path = prefix.isEmpty ? key : prefix + "." + key
                if let inner = value as? [String: Any] { walk(inner, path) } else { flat[path] = value }
            }
        }
        walk(object, "")
        return flat
    }

    static func expectSamplesLanded(_ configuration: StorekeeperConfiguration, through layer: String) throws {
        let flat = try flattened(configuration)
        for (key, sample) in samples {
            let found = flat[key]
            let matches: Bool =
                switch sample {
                case .string(let s): found as? String == s
                case .int(let n): (found as? NSNumber)?.intValue == n
                case .double(let d): (found as? NSNumber)?.doubleValue == d
                case .bool(let b): (found as? NSNumber)?.boolValue == b
                case .stringArray(let a): found as? [String] == a
                case .doubleArray(let a): (found as? [NSNumber])?.map(\.doubleValue) == a
                default: false
                }
            #expect(matches, "\(key) through \(layer): expected \(sample), found \(String(describing: found))")
        }
    }

    @Test(
        "every setting lands in its property through the file, the environment and flags (swift-configuration); each is documented"
    )
    func everySettingThroughEveryLayer() throws {
        #expect(Set(Self.samples.keys) == Set(ConfigurationSetting.all.map(\.key)), "a setting was added or renamed: give it a sample")
        // The settings table is the configuration: every property but `apps` is a setting.
        var full = StorekeeperConfiguration()
        full.maxConnections = 1
        full.receiptTrust.revocation.responderOverride = "http://x"
        #expect(Set(try Self.flattened(full).keys) == Set(ConfigurationSetting.all.map(\.key)))

        // The file: nested objects, as the README shows them.
        var object: [String: Any] = [:]
        func put(_ value: Any, at path: ArraySlice<String>, in object: inout [String: Any]) {
            if path.count == 1 { object[path.first!] = value; return }
            var inner = object[path.first!] as? [String: Any] ?? [:]
            put(value, at: path.dropFirst(), in: &inner)
            object[path.first!] = inner
        }
        for (key, sample) in Self.samples {
            let value: Any =
                switch sample {
                case .string(let s): s
                case .int(let n): n
                case .double(let d): d
                case .bool(let b): b
                case .stringArray(let a): a
                case .doubleArray(let a): a
                default: ""
                }
            put(value, at: ArraySlice(key.split(separator: ".").map(String.init)), in: &object)
        }
        let demo = DemoConfiguration.configuration()
        object["apps"] = try JSONSerialization.jsonObject(with: JSONEncoder().encode(demo.apps))
        let fromFile = try ConfigurationLoader.parse(JSONSerialization.data(withJSONObject: object))
        try Self.expectSamplesLanded(fromFile, through: "the file")
        #expect(fromFile.apps == demo.apps && fromFile.validationProblems().isEmpty)

        // The environment: each setting's variable, as text.
        var environment: [String: String] = [:]
        for setting in ConfigurationSetting.all {
            environment[setting.variable] =
                switch Self.samples[setting.key]! {
                case .string(let s): s
                case .int(let n): "\(n)"
                case .double(let d): "\(d)"
                case .bool(let b): "\(b)"
                case .stringArray(let a): a.joined(separator: ",")
                case .doubleArray(let a): a.map { "\($0)" }.joined(separator: ",")
                default: ""
                }
        }
        try Self.expectSamplesLanded(ConfigurationLoader(environment: environment).load(file: nil, base: demo), through: "the environment")

        // Flags: typed values under the same keys.
        try Self.expectSamplesLanded(ConfigurationLoader(environment: [:]).load(file: nil, base: demo, flags: Self.samples), through: "flags")

        // Every key and its variable in the reference table of docs/DEPLOYMENT.md.
        let deployment = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("docs/DEPLOYMENT.md"), encoding: .utf8)
        for setting in ConfigurationSetting.all {
            let row = "| `\(setting.key)` | \(setting.typeName) | `\(setting.variable)` |"
            let listed = deployment.contains(row)
            #expect(listed, "docs/DEPLOYMENT.md does not list \(row)")
        }
    }

    @Test("flags win over the environment, the environment over the file, the file over the defaults")
    func layersInOrder() throws {
        let path = LocalStack.temporaryDatabasePath() + ".json"
        var demo = DemoConfiguration.configuration()
        demo.port = 1111
        demo.workers = 11
        demo.leaseSeconds = 300
        try JSONEncoder().encode(demo).write(to: URL(fileURLWithPath: path))
        let loader = ConfigurationLoader(environment: ["STOREKEEPER_CONFIG": path, "STOREKEEPER_PORT": "2222", "STOREKEEPER_WORKERS": "22"])
        let loaded = try loader.load(file: nil, flags: ["workers": .int(33)])
        #expect(loaded.port == 2222 && loaded.workers == 33 && loaded.leaseSeconds == 300 && loaded.host == demo.host)
        #expect(loaded.apps == demo.apps)
    }

    @Test("a reporting currency's rates file is read beside the configuration and merged; a bad line or a second, different rate is named")
    func ratesFile() throws {
        let directory = (LocalStack.temporaryDatabasePath() as NSString).deletingLastPathComponent
        var demo = DemoConfiguration.configuration()
        demo.apps[0].reporting = ReportingCurrency(currency: "USD", rates: ["2026-11": ["EUR": "1.085"]], ratesFile: "rates.csv")
        let path = directory + "/storekeeper.json"
        try JSONEncoder().encode(demo).write(to: URL(fileURLWithPath: path))
        func load(_ csv: String) throws -> StorekeeperConfiguration {
            try Data(csv.utf8).write(to: URL(fileURLWithPath: directory + "/rates.csv"))
            return try ConfigurationLoader(environment: [:]).load(file: path)
        }
        let loaded = try load("month,currency,rate\n2026-11,EUR,1.0850\n# finance, December\n2026-12, EUR ,1.0912\n2026-12,GBP,1.27\n\n")
        #expect(loaded.apps[0].reporting?.rates == ["2026-11": ["EUR": "1.085"], "2026-12": ["EUR": "1.0912", "GBP": "1.27"]])
        for (csv, problem) in [
            ("2026-11,EUR,1.0851\n", "line 1: 2026-11 EUR is 1.085 already; a rate is given once"),
            ("2026-13,EUR,1\n", "line 1: expected a month as YYYY-MM, an ISO 4217 code and a positive decimal of at most 6 places"),
            ("month,currency,rate\n2026-12,EUR\n", "line 2: expected month,currency,rate"),
            ("2026-12,eur,-1\n", "line 1: expected a month as YYYY-MM, an ISO 4217 code and a positive decimal of at most 6 places"),
        ] {
            #expect(throws: ConfigurationLoader.Failure.self) { try load(csv) }
            do {
                _ = try load(csv)
            } catch let failure as ConfigurationLoader.Failure {
                #expect(failure.problems == ["apps[0].reporting.ratesFile 'rates.csv' \(problem)"])
            }
        }
        try FileManager.default.removeItem(atPath: directory + "/rates.csv")
        #expect(throws: ConfigurationLoader.Failure.self) { try ConfigurationLoader(environment: [:]).load(file: path) }
    }

    @Test("a value of the wrong type names its variable or key; a secret's value is never repeated")
    func wrongTypes() throws {
        for (variable, bad, type) in [
            ("STOREKEEPER_PORT", "eighty", "int"), ("STOREKEEPER_WORKERS", "7.5", "int"), ("STOREKEEPER_ATTEMPT_TIMEOUT", "soon", "double"),
            ("STOREKEEPER_RUN_WORKERS", "maybe", "bool"), ("STOREKEEPER_WEBHOOKS_RETRY_SCHEDULE_DELAYS", "5,soon", "list of numbers"),
        ] {
            do {
                _ = try ConfigurationLoader(environment: [variable: bad]).load(file: nil, base: DemoConfiguration.configuration())
                Issue.record("\(variable)=\(bad) must be refused")
            } catch let failure as ConfigurationLoader.Failure {
                #expect(failure.problems == ["\(variable): '\(bad)' is not a valid \(type)"])
            }
        }
        for (variable, bad, problem) in [
            ("STOREKEEPER_BINDING_POLICY", "steal", "must be one of 'refuse', 'transfer'"),
            ("STOREKEEPER_WEBHOOKS_ALLOWED_DESTINATION_NETWORKS", "10.0.0.0/8,10/8", "'10/8' is not a CIDR network"),
        ] {
            do {
                _ = try ConfigurationLoader(environment: [variable: bad]).load(file: nil, base: DemoConfiguration.configuration())
                Issue.record("\(variable)=\(bad) must be refused")
            } catch let failure as ConfigurationLoader.Failure {
                #expect(failure.problems == ["\(variable): \(problem)"])
            }
        }
        for (file, problem) in [
            (#"{"port":"eighty"}"#, "port: expected int"),
            (#"{"appleTimeouts":5}"#, "appleTimeouts: expected an object"),
            (#"{"appleTimeouts":{"conectSeconds":1}}"#, "appleTimeouts.conectSeconds: unknown key"),
            (#"{"host":{"name":"x"}}"#, "host: expected a value, found an object"),
            (#"{"receiptTrust":{"revocation":{"mode":"always"}}}"#, "receiptTrust.revocation.mode: must be one of 'off', 'soft_fail', 'hard_fail'"),
            (#"{"apps":{"id":"x"}}"#, "apps: expected a list of apps"),
        ] {
            do {
                _ = try ConfigurationLoader.parse(Data(file.utf8))
                Issue.record("\(file) must be refused")
            } catch let failure as ConfigurationLoader.Failure {
                #expect(failure.problems == [problem], "\(file)")
            }
        }
        do {
            _ = try ConfigurationLoader.parse(Data(#"{"webhooks":{"retrySchedule":{"delays":[5,"soon"]}}}"#.utf8))
            Issue.record("a list mixing numbers and text must be refused")
        } catch let failure as ConfigurationLoader.Failure {
            #expect(failure.problems.count == 1 && failure.problems[0].contains("webhooks.retrySchedule.delays"))
        }
        do {
            _ = try ConfigurationLoader(environment: ["STOREKEEPER_ADMIN_KEY": "short"]).load(file: nil, base: DemoConfiguration.configuration())
            Issue.record("a short admin key must be refused")
        } catch let failure as ConfigurationLoader.Failure {
            #expect(!failure.description.contains("'short'"))
        }
    }

    @Test("Apple's hosts: the ones Apple recommends since 2026 by default, the older ones when configured; phase timeouts read and checked")
    func appleHostsAndTimeouts() throws {
        let defaults = try ConfigurationLoader.parse(Data(#"{"adminKey":"admin-key-0123456789abcdef","apps":[]}"#.utf8))
        #expect(defaults.serverAPIEndpoints.production == "https://api.storekit.apple.com")
        #expect(defaults.serverAPIEndpoints.sandbox == "https://api.storekit-sandbox.apple.com")
        #expect(defaults.appleTimeouts == AppleTimeouts(connectSeconds: 5, readSeconds: 20))
        let older = try ConfigurationLoader.parse(
            Data(
                #"""
                {"serverAPIEndpoints":{"production":"https://api.storekit.itunes.apple.com","sandbox":"https://api.storekit-sandbox.itunes.apple.com"},
                 "appleTimeouts":{"connectSeconds":2}}
                """#.utf8))
        #expect(older.serverAPIEndpoints.production == "https://api.storekit.itunes.apple.com")
        #expect(older.appleTimeouts == AppleTimeouts(connectSeconds: 2, readSeconds: 20))
        var bad = DemoConfiguration.configuration()
        bad.appleTimeouts.readSeconds = 0
        #expect(bad.validationProblems().contains { $0.hasPrefix("appleTimeouts") })
    }
}

@Suite("configuration: offers")
struct OfferConfigurationTests {
    @Test(
        "offers name auto-renewable products of the app once each; groups hold the app's auto-renewables, each in one group; the signing key is a P-256 key"
    )
    func problems() {
        var configuration = DemoConfiguration.configuration()
        #expect(configuration.validationProblems().isEmpty, "the demo's offer is valid")
        configuration.apps[0].offers += [
            OfferDefinition(id: "coins", productId: "com.example.coins100"),
            OfferDefinition(id: "pro_comeback", productId: "com.example.pro.monthly"),
            OfferDefinition(id: "", productId: "com.example.pro.monthly"),
        ]
        configuration.apps[0].subscriptionGroups = ["a": ["com.example.pro.monthly"], "b": ["com.example.pro.monthly", "com.example.removeads"]]
        configuration.apps[0].offerSigning = ServerAPIKeyConfiguration(issuerId: "i", keyId: "k", privateKeyPEM: "not a key")
        let problems = configuration.validationProblems()
        #expect(problems.contains("apps[0].offers[1].productId: 'com.example.coins100' is not an auto-renewable product of the app"), "\(problems)")
        #expect(problems.contains("apps[0].offers[2].id: duplicate 'pro_comeback' for this product"), "\(problems)")
        #expect(problems.contains { $0.hasPrefix("apps[0].offers[3].id: 1-64 bytes") }, "\(problems)")
        #expect(problems.contains("apps[0].subscriptionGroups.b: 'com.example.pro.monthly' is in two groups"), "\(problems)")
        #expect(problems.contains("apps[0].subscriptionGroups.b: 'com.example.removeads' is not an auto-renewable product of the app"), "\(problems)")
        #expect(problems.contains("apps[0].offerSigning.privateKeyPEM: not a PEM P-256 private key (the .p8 file)"), "\(problems)")
    }

    @Test("an app's offers, groups and signing key read from a file; the key defaults to the Server API key")
    func decoding() throws {
        let json = #"""
            {"id": "a", "bundleId": "com.example.a", "apiKey": "k", "offers": [{"id": "o", "productId": "p"},
             {"id": "w", "productId": "p", "kind": "win_back", "audience": "lapsed"}], "subscriptionGroups": {"g": ["p"]}}
            """#
        let app = try JSONDecoder().decode(AppConfiguration.self, from: Data(json.utf8))
        #expect(
            app.offers == [OfferDefinition(id: "o", productId: "p"), OfferDefinition(id: "w", productId: "p", kind: .winBack, audience: .lapsed)])
        #expect(app.subscriptionGroups == ["g": ["p"]] && app.offerSigningCredentials == nil)
        var keyed = app
        keyed.serverAPI = .generated(keyId: "K1")
        #expect(keyed.offerSigningCredentials?.keyId == "K1" && keyed.offerSigningCredentials?.bundleId == "com.example.a")
    }
}
