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
                let verified = try await stack.api.postReceipt(appUserId: "traced", receipt: purchase.receipt, wait: TestWait.seconds)
                let id = try #require(verified.json["id"] as? String)
                #expect(verified.json["state"] as? String == "verified")

                // The request's span ends once its body is written, just after the client has it;
                // the job's span when its handler returns, which may be later still. A busy machine
                // may time out an attempt's call to Apple and retry it: the attempt that verified is
                // the one whose call Apple answered, whichever attempt that was.
                let string = { (value: String) in SpanAttribute.string(value) }
                func isJob(_ span: FinishedInMemorySpan) -> Bool {
                    span.operationName.hasPrefix("job ") && span.attributes.get("storekeeper.job.subject") == string(id)
                }
                func answeredCall(_ span: FinishedInMemorySpan) -> Bool {
                    span.operationName == "apple.verify_receipt" && span.attributes.get("http.response.status_code") == .int64(200)
                }
                var spans: [FinishedInMemorySpan] = []
                _ = try await eventually {
                    spans = tracer.finishedSpans
                    let answered = Set(spans.filter(answeredCall).map(\.traceID))
                    return spans.contains { $0.kind == .server && $0.attributes.get("http.route") == string("/v1/receipts") }
                        && spans.contains { isJob($0) && answered.contains($0.traceID) }
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

                let answered = Set(spans.filter(answeredCall).map(\.traceID))
                let job = try #require(
                    spans.first { isJob($0) && answered.contains($0.traceID) },
                    "the job that verified it carries the verification's id, and its call to Apple was answered 200")
                #expect(job.kind == .consumer)
                #expect(job.traceID != request.traceID, "the job runs later, in a trace of its own")
                let inJob = spans.filter { $0.traceID == job.traceID }
                let apple = try #require(inJob.first(where: answeredCall), "the call to Apple is in the job's trace")
                #expect(apple.kind == .client)
                #expect(inJob.contains { $0.operationName == "sqlite write" }, "the grant's write is in the job's trace")
            }
        }
    }
}
