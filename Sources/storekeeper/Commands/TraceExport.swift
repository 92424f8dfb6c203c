import ServiceLifecycle

#if OTel
import OTel
#endif

/// Where the spans (docs/DEPLOYMENT.md, "Traces") go. Built with `--traits OTel`, `serve` and
/// `worker` bootstrap swift-otel's tracer, configured by the standard `OTEL_*` variables
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_TRACES_SAMPLER`, `OTEL_SDK_DISABLED`, …) and export over
/// OTLP/HTTP; its exporter runs as one more service of the group, so it flushes on SIGTERM. Metrics
/// stay with Prometheus and logs with swift-log. Without the trait there is nothing to run: the
/// spans go to the no-op tracer, at no cost.
enum TraceExport {
    static func service(serviceName: String) throws -> (any Service)? {
        #if OTel
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.metrics.enabled = false
        configuration.logs.enabled = false
        return try OTel.bootstrap(configuration: configuration)
        #else
        return nil
        #endif
    }
}
