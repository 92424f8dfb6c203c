import Foundation
import Synchronization

/// A small Prometheus registry: counters and histograms kept in memory, gauges computed at
/// scrape time from the database. Text exposition format 0.0.4.
public final class MetricsRegistry: Sendable {
    struct Histogram {
        var buckets: [Double]
        var counts: [Int]
        var sum: Double = 0
        var count: Int = 0
    }

    private let counters = Mutex<[String: [String: Double]]>([:])
    private let histograms = Mutex<[String: [String: Histogram]]>([:])
    static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 4, 5, 6, 8, 10, 15, 30, 60]

    public init() {}

    public func increment(_ name: String, labels: [String: String] = [:], by value: Double = 1) {
        let key = Self.labelText(labels)
        counters.withLock { $0[name, default: [:]][key, default: 0] += value }
    }

    public func observe(_ name: String, labels: [String: String] = [:], value: Double) {
        let key = Self.labelText(labels)
        histograms.withLock { all in
            var h =
                all[name, default: [:]][key] ?? Histogram(buckets: Self.latencyBuckets, counts: Array(repeating: 0, count: Self.latencyBuckets.count))
            for (i, bound) in h.buckets.enumerated() where value <= bound { h.counts[i] += 1 }
            h.sum += value
            h.count += 1
            all[name, default: [:]][key] = h
        }
    }

    public func counterValue(_ name: String, labels: [String: String] = [:]) -> Double {
        counters.withLock { $0[name]?[Self.labelText(labels)] ?? 0 }
    }

    /// Renders counters and histograms, then `gauges` (name → labels → value).
    public func render(gauges: [(name: String, help: String, values: [([String: String], Double)])]) -> String {
        var out = ""
        for (name, help, values) in gauges {
            out += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n"
            for (labels, value) in values { out += "\(name)\(Self.labelText(labels)) \(Self.format(value))\n" }
        }
        for (name, series) in counters.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            out += "# TYPE \(name) counter\n"
            for (labels, value) in series.sorted(by: { $0.key < $1.key }) { out += "\(name)\(labels) \(Self.format(value))\n" }
        }
        for (name, series) in histograms.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            out += "# TYPE \(name) histogram\n"
            for (labels, h) in series.sorted(by: { $0.key < $1.key }) {
                let inner = labels.isEmpty ? "" : String(labels.dropFirst().dropLast()) + ","
                for (i, bound) in h.buckets.enumerated() {
                    out += "\(name)_bucket{\(inner)le=\"\(Self.format(bound))\"} \(h.counts[i])\n"
                }
                out += "\(name)_bucket{\(inner)le=\"+Inf\"} \(h.count)\n"
                out += "\(name)_sum\(labels) \(Self.format(h.sum))\n\(name)_count\(labels) \(h.count)\n"
            }
        }
        return out
    }

    static func labelText(_ labels: [String: String]) -> String {
        guard !labels.isEmpty else { return "" }
        let parts = labels.sorted { $0.key < $1.key }.map { key, value in
            let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
            return "\(key)=\"\(escaped)\""
        }
        return "{" + parts.joined(separator: ",") + "}"
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
