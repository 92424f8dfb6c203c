import Foundation
import InMemoryTracing
import StorekeeperTesting
import Testing
import Tracing

@Suite("tracing through swift-distributed-tracing")
struct TracingTests {
    @Test("one receipt's spans: the request, its submission and write; the job that verified it, its call to Apple and its database work")
    func oneReceipt() async throws {
        // Scoped to this task and those it starts (the stack's server, workers and clients), so
        // no other test's work lands here.
        let tracer = InMemoryTracer()
        try await withTracer(tracer) {
            try await withStack { stack in
                let device = try await stack.simulator.createDevice(bundleId: demoBundle)
                let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
                let verified = try await stack.api.postReceipt(appUserId: "traced", receipt: purchase.receipt, wait: 30)
                let id = try #require(verified.json["id"] as? String)
                #expect(verified.json["state"] as? String == "verified")

                // The request's span ends once its body is written, just after the client has it.
                let string = { (value: String) in SpanAttribute.string(value) }
                var spans: [FinishedInMemorySpan] = []
                _ = try await eventually {
                    spans = tracer.finishedSpans
                    return spans.contains { $0.kind == .server && $0.attributes.get("http.route") == string("/v1/receipts") }
                }

                let submit = try #require(
                    spans.first { $0.operationName == "submit evidence" && $0.attributes.get("storekeeper.verification.id") == string(id) },
                    "a span names the verification the request made")
                let request = try #require(spans.first { $0.spanID == submit.parentSpanID }, "the submission runs inside the request's span")
                #expect(request.kind == .server)
                #expect(request.operationName == "/v1/receipts")
                #expect(request.attributes.get("http.response.status_code") == .int64(200))
                #expect(
                    spans.contains { $0.parentSpanID == submit.spanID && $0.operationName == "sqlite write" },
                    "the submission's write is a child of its span")

                let job = try #require(
                    spans.first { $0.operationName.hasPrefix("job ") && $0.attributes.get("storekeeper.job.subject") == string(id) },
                    "the job that verified it carries the verification's id")
                #expect(job.kind == .consumer)
                #expect(job.traceID != request.traceID, "the job runs later, in a trace of its own")
                let inJob = spans.filter { $0.traceID == job.traceID }
                let apple = try #require(inJob.first { $0.operationName == "apple.verify_receipt" }, "the call to Apple is in the job's trace")
                #expect(apple.kind == .client)
                #expect(apple.attributes.get("http.response.status_code") == .int64(200))
                #expect(inJob.contains { $0.operationName == "sqlite write" }, "the grant's write is in the job's trace")
            }
        }
    }
}
