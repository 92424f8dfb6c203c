import Foundation
import NIOHTTP1
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

/// A strict reader of the Prometheus text exposition format 0.0.4: what a scraper would refuse,
/// it refuses. Written here, not borrowed from the exporter, so the exporter cannot agree with
/// itself.
struct PrometheusText {
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    struct Malformed: Error, CustomStringConvertible {
        var line: String
        var why: String
        var description: String { "\(why): \(line)" }
    }

    /// Family name → type (`counter`, `gauge`, `histogram`).
    var types: [String: String] = [:]
    var samples: [Sample] = []

    init(_ text: String) throws {
        for line in text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) {
            if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ").map(String.init)
                guard parts.count == 2, Self.isName(parts[0]), ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[1])
                else { throw Malformed(line: line, why: "bad TYPE line") }
                guard types[parts[0]] == nil else { throw Malformed(line: line, why: "family typed twice") }
                guard !samples.contains(where: { family(of: $0.name) == parts[0] }) else {
                    throw Malformed(line: line, why: "TYPE after the family's samples")
                }
                types[parts[0]] = parts[1]
            } else if line.hasPrefix("#") {
                guard line.hasPrefix("# HELP ") else { throw Malformed(line: line, why: "unknown comment") }
            } else {
                let sample = try Self.sample(line)
                guard types[family(of: sample.name)] != nil else { throw Malformed(line: line, why: "sample of an untyped family") }
                samples.append(sample)
            }
        }
        try checkHistograms()
    }

    /// The family a sample belongs to: a histogram's `_bucket`, `_sum` and `_count` are its own.
    func family(of name: String) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if types[base] == "histogram" { return base }
        }
        return name
    }

    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// Buckets never decrease with `le`, and the `+Inf` bucket equals `_count`.
    private func checkHistograms() throws {
        for (name, type) in types where type == "histogram" {
            var series: [[String: String]: [(Double, Double)]] = [:]
            for sample in samples where sample.name == name + "_bucket" {
                guard let le = sample.labels["le"], let bound = le == "+Inf" ? Double.infinity : Double(le) else {
                    throw Malformed(line: "\(sample)", why: "bucket without a numeric le")
                }
                series[sample.labels.filter { $0.key != "le" }, default: []].append((bound, sample.value))
            }
            for (labels, buckets) in series {
                let sorted = buckets.sorted { $0.0 < $1.0 }
                guard zip(sorted, sorted.dropFirst()).allSatisfy({ $0.1 <= $1.1 }) else {
                    throw Malformed(line: "\(name)\(labels)", why: "buckets decrease")
                }
                guard sorted.last?.0 == .infinity, sorted.last?.1 == value(name + "_count", labels) else {
                    throw Malformed(line: "\(name)\(labels)", why: "+Inf bucket differs from _count")
                }
            }
        }
    }

    static func isName(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, first == "_" || first == ":" || first.isASCIILetter else { return false }
        return text.unicodeScalars.allSatisfy { $0.isASCIILetter || $0.isASCIIDigit || $0 == "_" || $0 == ":" }
    }

    static func sample(_ line: String) throws -> Sample {
        var rest = Substring(line)
        let name = String(rest.prefix { $0 != "{" && $0 != " " })
        guard isName(name) else { throw Malformed(line: line, why: "bad metric name") }
        rest = rest.dropFirst(name.count)
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                let key = String(rest.prefix { $0 != "=" })
                guard isName(key), !key.hasPrefix("__") else { throw Malformed(line: line, why: "bad label name") }
                rest = rest.dropFirst(key.count)
                guard rest.hasPrefix("=\"") else { throw Malformed(line: line, why: "label without a quoted value") }
                rest = rest.dropFirst(2)
                var value = ""
                while let c = rest.first, c != "\"" {
                    rest = rest.dropFirst()
                    if c == "\\" {
                        switch rest.first {
                        case "\\": value.append("\\")
                        case "\"": value.append("\"")
                        case "n": value.append("\n")
                        default: throw Malformed(line: line, why: "bad escape")
                        }
                        rest = rest.dropFirst()
                    } else {
                        value.append(c)
                    }
                }
                guard rest.first == "\"" else { throw Malformed(line: line, why: "unterminated label value") }
                rest = rest.dropFirst()
                guard labels.updateValue(value, forKey: key) == nil else { throw Malformed(line: line, why: "label repeated") }
                if rest.first == "," {
                    rest = rest.dropFirst()
                } else if rest.first != "}" {
                    throw Malformed(line: line, why: "labels not separated by commas")
                }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { throw Malformed(line: line, why: "no space before the value") }
        let fields = rest.dropFirst().split(separator: " ")
        guard (1...2).contains(fields.count), let value = ["+Inf": Double.infinity, "-Inf": -Double.infinity][String(fields[0])] ?? Double(fields[0])
        else { throw Malformed(line: line, why: "bad value") }
        return Sample(name: name, labels: labels, value: value)
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

/// The metrics table in docs/DEPLOYMENT.md, and the names the server's source defines.
enum DocumentedMetrics {
    /// Name → type, from the table's rows (`| \`name\` | type | ...`).
    static func table() throws -> [String: String] {
        let text = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("docs/DEPLOYMENT.md"), encoding: .utf8)
        var table: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            table[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = cells[1]
        }
        return table
    }

    /// Every name in Sources/StorekeeperServer/Support/Metric.swift (`static let x = "name"`).
    static func defined() throws -> Set<String> {
        let source = try String(
            contentsOf: TestPaths.packageRoot.appendingPathComponent("Sources/StorekeeperServer/Support/Metric.swift"), encoding: .utf8)
        return Set(
            source.split(separator: "\n").compactMap { line -> String? in
                guard line.contains("static let"), let open = line.firstIndex(of: "\"") else { return nil }
                return String(line[line.index(after: open)...].prefix { $0 != "\"" })
            })
    }
}

@Suite("metrics: swift-metrics into swift-prometheus, every name documented")
struct MetricsTests {
    @Test("a scrape after a verified purchase parses as Prometheus text, and every family of ours is in the documented table")
    func exposition() async throws {
        try await withStack { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let verified = try await stack.api.postReceipt(appUserId: "metrics", receipt: purchase.receipt, wait: TestWait.seconds)
            #expect(verified.json["state"] as? String == "verified")

            // Counters are bumped just after the outcome they count is stored: polled, not read once.
            var scrape = try PrometheusText("")
            _ = try await stack.whenSettled {
                scrape = try PrometheusText(try await stack.api.http.send(.GET, "/metrics").text)
                return scrape.value("storekeeper_grants_total") == 1
            }
            #expect(scrape.value("storekeeper_grants_total") == 1)
            #expect(scrape.value("storekeeper_receipts_accepted_total", ["app": "demo"]) == 1)
            #expect(scrape.value("storekeeper_verifications", ["state": "verified"]) == 1)
            #expect(scrape.value("storekeeper_verifications", ["state": "invalid"]) == 0, "every state is listed, zeros too")
            #expect(scrape.value("storekeeper_verifications_flagged") == 0)
            let calls = scrape.samples.filter { $0.name == "storekeeper_apple_responses_total" }.map(\.value).reduce(0, +)
            let timed = scrape.samples.filter { $0.name == "storekeeper_apple_request_duration_seconds_count" }.map(\.value).reduce(0, +)
            #expect(calls >= 1 && timed == calls, "each Apple call is counted and timed once")
            #expect(scrape.types["storekeeper_apple_request_duration_seconds"] == "histogram")

            let table = try DocumentedMetrics.table()
            for (name, type) in scrape.types where name.hasPrefix("storekeeper_") {
                #expect(table[name] == type, "\(name) (\(type)) is not in docs/DEPLOYMENT.md's metrics table as such")
            }
            let defined = try DocumentedMetrics.defined()
            #expect(defined.count > 30)
            #expect(defined == Set(table.keys.filter { $0.hasPrefix("storekeeper_") }), "Metric.swift and the documented table differ")
        }
    }

    @Test("the real binary: Hummingbird's HTTP metrics land in the same registry, under the documented names")
    func binary() async throws {
        let binary = try #require(TestPaths.storekeeperBinary(), "build the executable first: swift build")
        let stack = try await LocalStack.start(startServer: false)
        var configuration = stack.configuration
        configuration.port = 0
        try await ChildSetup.withServer(binary: binary, stack: stack, configuration, name: "metrics") { server in
            let http = HTTPJSONClient(httpClient: stack.httpClient, baseURL: server.baseURL)
            #expect(try await http.send(.GET, "/healthz").status == 200)
            #expect(try await http.send(.GET, "/v1/no-such-route").status == 404)
            let scrape = try PrometheusText(try await http.send(.GET, "/metrics").text)
            let healthz = ["http_route": "/healthz", "http_request_method": "GET", "http_response_status_code": "200"]
            #expect(scrape.value("http_server_requests_total", healthz) == 1)
            #expect(scrape.value("http_server_request_duration_seconds_count", healthz) == 1)
            #expect(scrape.value("storekeeper_jobs", ["state": "available"]) == 0)
            let table = try DocumentedMetrics.table()
            #expect(scrape.types.keys.contains { $0.hasPrefix("http_server_") })
            for (name, type) in scrape.types {
                #expect(table[name] == type, "\(name) (\(type)) is not in docs/DEPLOYMENT.md's metrics table as such")
            }
        }
    }
}
