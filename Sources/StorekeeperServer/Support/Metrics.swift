import CoreMetrics
import Metrics
public import Prometheus
import Synchronization

/// The server's metrics: recorded through swift-metrics into a swift-prometheus registry of this
/// server's own, so several servers in one process (the tests, the benchmarks) never mix their
/// counts, and the process-wide `MetricsSystem` (which Hummingbird's `MetricsMiddleware` and other
/// libraries report to) can be pointed at the same registry with ``factory``.
///
/// Counters and histograms are kept as they happen; gauges are read from the database at scrape
/// time and set just before the registry renders, so they are never stale by more than a scrape.
public final class MetricsRegistry: Sendable {
    /// The registry `/metrics` renders.
    public let prometheus: PrometheusCollectorRegistry
    /// For `MetricsSystem.bootstrap`: the process's other metrics land in the same registry.
    public let factory: PrometheusMetricsFactory
    /// Seconds: Apple answers in tens of milliseconds when well and in seconds when not, and
    /// webhook receivers anywhere between, so the buckets reach a minute.
    static let latencyBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .seconds(2), .seconds(3), .seconds(4), .seconds(5), .seconds(6), .seconds(8),
        .seconds(10), .seconds(15), .seconds(30), .seconds(60),
    ]

    /// Hummingbird's `MetricsMiddleware` names its series after OpenTelemetry's conventions
    /// (dots, no unit); Prometheus's conventions want the unit and `_total` in the name.
    static let prometheusNames = [
        "hb.requests": "http_server_requests_total", "hb.request.errors": "http_server_request_errors_total",
        "http.server.request.duration": "http_server_request_duration_seconds",
        "http.server.active_requests": "http_server_active_requests",
    ]

    public init(prometheus: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.prometheus = prometheus
        var factory = PrometheusMetricsFactory(registry: prometheus)
        factory.defaultDurationHistogramBuckets = Self.latencyBuckets
        factory.nameAndLabelSanitizer = { name, labels in (Self.prometheusNames[name] ?? name, labels) }
        self.factory = factory
    }

    /// Points the process's `MetricsSystem` at this registry (once per process: `serve` calls it),
    /// so HTTP metrics from Hummingbird's `MetricsMiddleware` are scraped beside the server's own.
    public func bootstrapProcess() {
        MetricsSystem.bootstrap(factory)
    }

    public func increment(_ name: String, labels: [String: String] = [:], by value: Int = 1) {
        Counter(label: name, dimensions: Self.dimensions(labels), factory: factory).increment(by: value)
    }

    /// The webhook series of each endpoint this process has recorded, so a deleted endpoint's can
    /// be removed (`/metrics` names only endpoints that exist), and the endpoints removed: an
    /// attempt that ends after its endpoint was deleted is not recorded again (ids are generated,
    /// never reused). One lock for both, so a removal and a late attempt cannot interleave.
    private let webhooks = Mutex<WebhookSeries>(WebhookSeries())

    private struct WebhookSeries {
        var live: [String: (attempts: Prometheus.DurationHistogram, outcomes: [String: Prometheus.Counter])] = [:]
        var forgotten: Set<String> = []
    }

    /// One webhook attempt to `endpoint`: its duration and how it ended (`delivered`, `retry`, `dead`).
    func webhookAttempt(endpoint: String, outcome: String, duration: Duration) {
        webhooks.withLock { series in
            guard !series.forgotten.contains(endpoint) else { return }
            var entry =
                series.live[endpoint]
                ?? (
                    prometheus.makeDurationHistogram(
                        descriptor: MetricNameDescriptor(metricName: Metric.webhookAttemptDurationSeconds, unitName: "", helpText: ""),
                        labels: [("endpoint", endpoint)], buckets: Self.latencyBuckets),
                    [:]
                )
            entry.attempts.record(duration)
            let counter =
                entry.outcomes[outcome]
                ?? prometheus.makeCounter(
                    descriptor: MetricNameDescriptor(metricName: Metric.webhookDeliveriesTotal, unitName: "", helpText: ""),
                    labels: Self.dimensions(["endpoint": endpoint, "outcome": outcome]))
            counter.increment()
            entry.outcomes[outcome] = counter
            series.live[endpoint] = entry
        }
    }

    /// Removes the webhook series of every endpoint not in `live` (deleted here or by another
    /// process of the deployment), so their ids leave `/metrics`.
    func forgetWebhookEndpoints(keeping live: Set<String>) {
        webhooks.withLock { series in
            for (id, entry) in series.live where !live.contains(id) {
                prometheus.unregisterDurationHistogram(entry.attempts)
                for counter in entry.outcomes.values { prometheus.unregisterCounter(counter) }
                series.live[id] = nil
                series.forgotten.insert(id)
            }
        }
    }

    /// A duration into the histogram `name` (Prometheus renders it in seconds).
    public func observe(_ name: String, labels: [String: String] = [:], duration: Duration) {
        Timer(label: name, dimensions: Self.dimensions(labels), factory: factory).record(duration: duration)
    }

    /// Sets `gauges` (name, help, label sets and values), then renders the whole registry in the
    /// text exposition format 0.0.4. Every gauge lists all of its label sets each time (zeros
    /// included), so none keeps a value from an earlier scrape.
    public func render(gauges: [(name: String, help: String, values: [([String: String], Double)])]) -> String {
        for (name, help, values) in gauges {
            // Our names carry their unit already (`_seconds`, `_total`), so none is appended.
            let descriptor = MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
            for (labels, value) in values {
                prometheus.makeGauge(descriptor: descriptor, labels: Self.dimensions(labels)).set(value)
            }
        }
        return prometheus.emitToString()
    }

    /// Labels in name order: a series has one spelling whatever order a call site wrote them in.
    static func dimensions(_ labels: [String: String]) -> [(String, String)] {
        labels.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}
